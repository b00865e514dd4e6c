"""The Telegram side: python-telegram-bot receives updates, the inbox keeps them, lanes run them.

Handlers only translate a PTB `Update` into an `IncomingUpdate` and hand it to the dispatcher; all
behaviour lives in the flows, so ops see every update as a run. Nothing acknowledged is lost: PTB queues
every update before it acknowledges it (the next polling offset, the webhook's 200), and the queue used
here stores each update in the inbox (Postgres) first. With the store down the put fails: polling fetches
the same batch again and the webhook answers 500, so Telegram retries.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, cast, get_args

from telegram import BotCommand, BotCommandScopeChat, Message, Update
from telegram.error import NetworkError, TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    ContextTypes,
    ExtBot,
    TypeHandler,
)
from telegram.request import HTTPXRequest

from grove.store import inbox
from grove.store.db import StoreUnavailable
from grove.core.messages import STOP_TOAST, Attachment, ChatType, Command, IncomingUpdate, parse_command, stop_token
from grove.core.shutdown import stop_answer
from grove.core.settings import Settings

log = logging.getLogger(__name__)

Submit = Callable[[IncomingUpdate], Any]
# Telegram's own stop on a draft (Bot API 10.3) is an update type this python-telegram-bot does
# not list yet: asked for by name, or Telegram never sends it.
ALLOWED_UPDATES = [*Update.ALL_TYPES, "stopped_message_generation"]
App = Application[Any, Any, Any, Any, Any, Any]  # PTB's generic parameters (bot, context, data, job queue) are not narrowed here


class DurableUpdateQueue(asyncio.Queue):  # type: ignore[type-arg]
    """PTB's update queue, storing each update in the inbox before it is queued (see module doc).

    A «Стоп» is taken here, on receipt, out of its user's order (their answer is the update in
    flight) and is not stored: it means nothing once its answer is over."""

    def __init__(self, announce: Callable[[int, int, int | None], object] | None = None) -> None:
        super().__init__()
        self.announce = announce  # carries a stop to other processes (turns on task workers)
        self.stopped: dict[int, bool] = {}  # update id -> whether its «Стоп» stopped an answer

    async def put(self, item: Any) -> None:
        if isinstance(item, Update) and (stop := stop_request(item)) is not None:
            stopped = stop_answer(*stop)
            if not stopped and self.announce is not None:
                await asyncio.to_thread(self.announce, *stop)
                stopped = True  # as far as the bot can tell: the worker streaming it will stop
            self.stopped[item.update_id] = stopped
            await super().put(item)  # for its handler to answer the press
            return
        if isinstance(item, Update):
            try:
                await asyncio.to_thread(store_update, item)
            except StoreUnavailable as exc:
                raise NetworkError(f"the inbox is unavailable, update {item.update_id} not taken: {exc}") from exc
        await super().put(item)


def store_update(update: Update) -> bool:
    """Keep one update in the inbox (idempotent): who sent it and the update as PTB read it."""
    user, chat = update.effective_user, update.effective_chat
    return inbox.store(update.update_id, user.id if user else None, chat.id if chat else None,
                       update.to_dict())


def stop_request(update: Update) -> tuple[int, int, int | None] | None:
    """(chat, token, user) of a «Стоп»: Telegram's own on a draft (`stopped_message_generation`,
    Bot API 10.3, read from PTB's `api_kwargs`) or the button under a streamed answer."""
    stopped = update.api_kwargs.get("stopped_message_generation")
    if isinstance(stopped, dict):
        chat, draft_id = stopped.get("chat"), stopped.get("draft_id")
        if isinstance(chat, dict) and isinstance(chat.get("id"), int) and isinstance(draft_id, int):
            return chat["id"], draft_id, chat["id"]  # drafts are private chats: the chat is the user
        return None
    query = update.callback_query
    if query is None or not query.data or query.message is None:
        return None
    token = stop_token(query.data)
    return (query.message.chat.id, token, query.from_user.id) if token is not None else None


def parse_stored(payload: dict[str, Any]) -> IncomingUpdate | None:
    """An inbox row back into what the flows take (recovery after a restart)."""
    return to_incoming(Update.de_json(payload, None))


class TolerantBot(ExtBot[None]):
    """An ExtBot whose polling survives an update it cannot parse.

    Stock PTB parses a getUpdates batch as a whole: one malformed update makes
    the batch fail, the offset never advances, and the same batch is fetched
    forever, so the bot is dead for everyone. Here the batch is re-read and
    parsed update by update; an unreadable one is logged and replaced by an
    empty `Update` with its id, so the offset moves past it.
    """

    async def get_updates(self, *args: Any, **kwargs: Any) -> tuple[Update, ...]:
        try:
            return await super().get_updates(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any parse error; network errors are re-raised below
            if not _is_parse_error(exc):
                raise
        offset = kwargs.get("offset", args[0] if args else None)
        limit = kwargs.get("limit", args[1] if len(args) > 1 else None)
        raw = await self._post("getUpdates", {"offset": offset, "limit": limit, "timeout": 0})
        parsed: list[Update] = []
        for item in raw or []:
            try:
                update = Update.de_json(item, self)
            except Exception:  # noqa: BLE001 - that is the point: skip what cannot be read
                update_id = item.get("update_id") if isinstance(item, dict) else None
                log.error("skipping an update Telegram sent that cannot be parsed: %r", item)
                if not isinstance(update_id, int):
                    continue
                update = Update(update_id=update_id)
            if update is not None:
                self.insert_callback_data(update)
                parsed.append(update)
        return tuple(parsed)


def _is_parse_error(exc: Exception) -> bool:
    from telegram.error import TelegramError

    return not isinstance(exc, TelegramError)


def _attachments(message: Message) -> list[Attachment]:
    found: list[Attachment] = []
    for kind in ("document", "voice", "audio", "video", "video_note"):
        media = getattr(message, kind, None)
        if media is None:
            continue
        found.append(
            Attachment(
                kind=kind,
                file_id=media.file_id,
                file_unique_id=media.file_unique_id,
                file_name=getattr(media, "file_name", None),
                mime_type=getattr(media, "mime_type", None),
                file_size=media.file_size,
                duration=int(media.duration.total_seconds())
                if hasattr(getattr(media, "duration", None), "total_seconds")
                else getattr(media, "duration", None),
            )
        )
    if message.photo:
        largest = message.photo[-1]
        found.append(
            Attachment(kind="photo", file_id=largest.file_id, file_unique_id=largest.file_unique_id,
                       file_size=largest.file_size)
        )
    return found


BotIdentity = tuple[str | None, int]  # (username, id), from getMe


def addressed_to(message: Message, bot: BotIdentity | None) -> bool:
    """In a group: does the message mention the bot, reply to one of its messages, or carry a
    command for it (`/start@bot`)? Telegram's privacy mode delivers little else; a bare
    `/start` in a group may be meant for any bot and is not taken as addressed.

    Without the bot's identity (an update resumed from the inbox before the bot has asked
    Telegram who it is) nothing counts as addressed: the group gets no reply, never a leak.
    """
    if bot is None:
        return False
    username, bot_id = bot
    replied = message.reply_to_message
    if replied is not None and replied.from_user is not None and replied.from_user.id == bot_id:
        return True
    text = message.text or message.caption or ""
    return bool(username) and re.search(rf"@{re.escape(username or '')}\b", text, re.IGNORECASE) is not None


def to_incoming(update: Update, bot: BotIdentity | None = None) -> IncomingUpdate | None:
    """Translate a PTB update; None for kinds grove does not handle (channel posts, …).

    `bot` (username, id) tells whether a group message is addressed to this bot.
    """
    user, chat = update.effective_user, update.effective_chat
    if user is None or chat is None:
        return None
    chat_type = cast(ChatType, chat.type if chat.type in get_args(ChatType) else "group")
    if update.callback_query is not None:
        query = update.callback_query
        return IncomingUpdate(
            update_id=update.update_id,
            user_id=user.id,
            chat_id=chat.id,
            username=user.username,
            callback_data=query.data or "",
            callback_id=query.id,
            message_id=query.message.message_id if query.message else None,
            chat_type=chat_type,
        )
    message = update.message or update.edited_message
    if message is None:
        return None
    text = message.text or message.caption
    command, args = None, ""
    if message.text:
        command, args = parse_command(message.text)
        if command:
            text = args or None
    return IncomingUpdate(
        update_id=update.update_id,
        user_id=user.id,
        chat_id=chat.id,
        username=user.username,
        text=text,
        command=command,
        command_args=args if command else "",
        message_id=message.message_id,
        attachments=_attachments(message),
        chat_type=chat_type,
        edited=update.message is None,
        addressed=chat_type == "private" or addressed_to(message, bot),
    )


def build_application(settings: Settings, submit: Submit,
                      announce: Callable[[int, int, int | None], object] | None = None,
                      commands: Sequence[Command] = ()) -> App:
    """A PTB Application against `settings.telegram_api_url` whose updates go to `submit`;
    a «Стоп» for an answer streaming in no process of this one goes to `announce`; `commands`
    (the routes' menu, handed in by the app) are set as Telegram's command menu at start."""
    token = settings.bot_token
    if not token:
        raise RuntimeError("TELEGRAM_BOT_TOKEN is not set")
    api = settings.telegram_api_url.rstrip("/")

    async def on_update(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not isinstance(update, Update):
            return
        if stop_request(update) is not None:  # taken on receipt (`DurableUpdateQueue.put`)
            stopped = queue.stopped.pop(update.update_id, False)
            if update.callback_query is not None:
                await update.callback_query.answer(STOP_TOAST if stopped else None)
            return
        incoming = to_incoming(update, (context.bot.username, context.bot.id))
        if incoming is None:
            log.info("ignoring update %s of an unsupported kind", update.update_id)
            return
        submit(incoming)

    async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        log.error("update %r failed: %s", getattr(update, "update_id", update), context.error,
                  exc_info=context.error)

    bot = TolerantBot(
        token,
        base_url=f"{api}/bot",
        base_file_url=f"{api}/file/bot",
        request=HTTPXRequest(connection_pool_size=64),
        local_mode=settings.telegram_local_mode,
        get_updates_request=HTTPXRequest(read_timeout=settings.telegram_poll_timeout + 10),
    )
    async def announce_commands(application: App) -> None:
        if commands:
            await set_commands(application.bot, settings.admin_ids, commands)

    queue = DurableUpdateQueue(announce)
    application = (ApplicationBuilder().bot(bot).update_queue(queue)
                   .post_init(announce_commands).build())
    application.add_handler(TypeHandler(Update, on_update))
    application.add_error_handler(on_error)
    return application


async def set_commands(bot: Any, admin_ids: list[int], commands: Sequence[Command]) -> None:
    """The command menu users see next to the input field (setMyCommands); admins' chats also list
    the admin commands (/moderation).

    A failure is logged, not fatal: the commands work typed, with or without the menu.
    """
    everyone = [BotCommand(c.name, c.menu) for c in commands if not c.admin]
    admin = everyone + [BotCommand(c.name, c.menu) for c in commands if c.admin]
    try:
        await bot.set_my_commands(everyone)
        for admin_id in admin_ids:
            await bot.set_my_commands(admin, scope=BotCommandScopeChat(admin_id))
    except TelegramError as exc:
        log.warning("the command menu could not be set: %s", exc)


def webhook_options(settings: Settings) -> dict[str, Any]:
    """Where PTB's webhook server listens and what it registers with Telegram.

    The path of GROVE_TELEGRAM_WEBHOOK_URL is the path served; with
    GROVE_TELEGRAM_WEBHOOK_SECRET set, requests without Telegram's secret header are refused.
    """
    from urllib.parse import urlsplit

    assert settings.telegram_webhook_url
    options: dict[str, Any] = {
        "listen": settings.telegram_webhook_listen,
        "port": settings.telegram_webhook_port,
        "url_path": urlsplit(settings.telegram_webhook_url).path.lstrip("/"),
        "webhook_url": settings.telegram_webhook_url,
    }
    if settings.telegram_webhook_secret:
        options["secret_token"] = settings.telegram_webhook_secret.get_secret_value()
    return options
