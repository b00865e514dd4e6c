"""The Telegram side: python-telegram-bot receives updates and hands each to a flow.

Handlers only translate a PTB `Update` into an `IncomingUpdate` and dispatch it;
all behaviour lives in the flows, so ops see every update as a flow run.
Updates of one user are handled in order; different users run concurrently.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Message, Update
from telegram.ext import (
    Application,
    ApplicationBuilder,
    BaseUpdateProcessor,
    ContextTypes,
    ExtBot,
    TypeHandler,
)
from telegram.request import HTTPXRequest

from grove.messages import Attachment, IncomingUpdate, parse_command
from grove.settings import Settings

log = logging.getLogger(__name__)

Dispatch = Callable[[IncomingUpdate], Awaitable[Any]]


class PerUserUpdateProcessor(BaseUpdateProcessor):
    """Concurrent across users, strictly ordered within one user (a press, then a message)."""

    def __init__(self, max_concurrent_updates: int = 32) -> None:
        super().__init__(max_concurrent_updates)
        self._locks: dict[int, asyncio.Lock] = {}

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        user = update.effective_user if isinstance(update, Update) else None
        if user is None:
            await coroutine
            return
        lock = self._locks.setdefault(user.id, asyncio.Lock())
        try:
            async with lock:
                await coroutine
        finally:
            if not lock.locked():
                self._locks.pop(user.id, None)

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass


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


def to_incoming(update: Update) -> IncomingUpdate | None:
    """Translate a PTB update; None for kinds grove does not handle (channel posts, …)."""
    user, chat = update.effective_user, update.effective_chat
    if user is None or chat is None:
        return None
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
    )


def build_application(settings: Settings, dispatch: Dispatch) -> Application:
    """A PTB Application against `settings.telegram_api_url` that dispatches every update."""
    token = settings.bot_token
    if not token:
        raise RuntimeError("TELEGRAM_BOT_TOKEN is not set")
    api = settings.telegram_api_url.rstrip("/")

    async def on_update(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not isinstance(update, Update):
            return
        incoming = to_incoming(update)
        if incoming is None:
            log.info("ignoring update %s of an unsupported kind", update.update_id)
            return
        await dispatch(incoming)

    async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        # A failed update is logged (its flow run shows the reason); polling goes on.
        log.error("update %r failed: %s", getattr(update, "update_id", update), context.error,
                  exc_info=context.error)

    bot = TolerantBot(
        token,
        base_url=f"{api}/bot",
        base_file_url=f"{api}/file/bot",
        request=HTTPXRequest(connection_pool_size=64),
        get_updates_request=HTTPXRequest(read_timeout=settings.telegram_poll_timeout + 10),
    )
    application = (
        ApplicationBuilder().bot(bot).concurrent_updates(PerUserUpdateProcessor()).build()
    )
    application.add_handler(TypeHandler(Update, on_update))
    application.add_error_handler(on_error)
    return application


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


def inline_dispatch(run_flow: Callable[[IncomingUpdate], Any]) -> Dispatch:
    """Run the flow in a worker thread of this process (flows are plain sync functions)."""

    async def dispatch(update: IncomingUpdate) -> None:
        await asyncio.to_thread(run_flow, update)

    return dispatch
