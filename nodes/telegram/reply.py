"""Telegram reply node: the one way grove talks back to a user.

Flows and handlers *return* their replies; the turn that ran them (`grove.app.dispatch.process`),
a background job's end, and a failed turn's apology hand them to `send_reply` — the one
sender. On the `telegram` origin a reply made inside a turn goes to the outbox (it is sent
after the turn commits, see `grove.store.outbox`); outside a turn it is sent at once. On
the `console` origin it prints, so the local console drives the same flows.
Flows may run in a worker far from the bot process, so the node owns its own
`telegram.Bot`: one per process, on a private event-loop thread, initialised
once (PTB's Bot is async; our flows and tasks are plain functions).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TimedOut
from telegram.request import HTTPXRequest

from grove.store import jobs, outbox
from grove.core.messages import Origin, Reply
from grove.core.observe import task
from grove.core.settings import get_settings
from nodes.telegram.html import markdown_html, plain

log = logging.getLogger(__name__)

TELEGRAM_TEXT_LIMIT = 4096
T = TypeVar("T")


def split_text(text: str, limit: int = TELEGRAM_TEXT_LIMIT) -> list[str]:
    """Cut text into pieces of at most `limit` chars at the cleanest boundary available:
    blank line, then line break, then sentence end, then space; hard cut only as a last resort."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for sep in ("\n\n", "\n", ". ", "! ", "? ", " "):
            found = window.rfind(sep)
            if found > limit // 3:
                cut = found + len(sep)
                break
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces or [""]


class _BotThread:
    """A PTB Bot living on its own event loop thread, shared by all tasks of the process."""

    def __init__(self, token: str, api_url: str, local_mode: bool = False, connections: int = 256) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="telegram-bot", daemon=True)
        self.thread.start()
        request = HTTPXRequest(connection_pool_size=connections, pool_timeout=30.0)
        self.bot = Bot(token, base_url=f"{api_url}/bot", base_file_url=f"{api_url}/file/bot", local_mode=local_mode,
                       request=request)
        self.call(lambda bot: bot.initialize())

    def call(self, action: Callable[[Bot], Awaitable[T]], timeout: float = 60) -> T:
        async def run() -> T:
            return await action(self.bot)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.call(lambda bot: bot.shutdown(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


_bots: dict[tuple[str, str, bool], _BotThread] = {}
_bots_lock = threading.Lock()


def telegram_bot() -> _BotThread:
    settings = get_settings()
    token = settings.bot_token
    if not token:
        raise RuntimeError("TELEGRAM_BOT_TOKEN is not set: cannot reply over Telegram")
    key = (token, settings.telegram_api_url, settings.telegram_local_mode)
    with _bots_lock:
        if key not in _bots:
            _bots[key] = _BotThread(token, settings.telegram_api_url, settings.telegram_local_mode,
                                    settings.telegram_connections)
        return _bots[key]


def close_bots() -> None:
    with _bots_lock:
        for bot in _bots.values():
            bot.close()
        _bots.clear()


def _markup(reply: Reply) -> InlineKeyboardMarkup | None:
    if not reply.buttons:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(b.label, callback_data=b.data) for b in row] for row in reply.buttons]
    )


# Console replies made inside a turn wait here until the turn's transaction commits (`console_turn`).
_console_held: ContextVar[list[Reply] | None] = ContextVar("console_held", default=None)


@contextmanager
def console_turn() -> Iterator[None]:
    """Hold the console's replies until the block ends, then print them.

    Like Telegram replies in the outbox, a console reply is shown only once the turn that made
    it has committed: printed mid-turn, «Режим «Чат» включён» could be read and the console
    closed before the mode was stored.
    """
    held: list[Reply] = []
    token = _console_held.set(held)
    try:
        yield
    finally:
        _console_held.reset(token)
    for reply in held:  # not reached when the turn failed: its writes were rolled back too
        _print_reply(reply)


def _print_reply(reply: Reply) -> None:
    print(f"\n🤖 {plain(reply.text) if reply.markdown else reply.text}")
    for row in reply.buttons:
        print("   " + "  ".join(f"[{b.label}]" for b in row))


@task(name="send-reply")
def send_reply(origin: Origin, reply: Reply) -> list[int]:
    """Send one reply (split at Telegram's 4096-char limit); returns the sent message ids.

    Inside a turn (an update or a job being processed) the reply is queued in the outbox
    and delivered once the turn commits; the ids are then known only to the outbox.
    """
    if origin == "console":
        held = _console_held.get()
        if held is not None:
            held.append(reply)
        else:
            _print_reply(reply)
        return []
    if outbox.current_source() is not None:
        row = outbox.add(reply.chat_id, reply.model_dump(mode="json"), edit_of=reply.edits_reply)
        if reply.acknowledges_job is not None:  # the job's progress and result edit this message
            jobs.set_ack(reply.acknowledges_job, row)
        return []
    return send_now(reply)


def send_replies(origin: Origin, replies: list[Reply]) -> None:
    """Send a turn's replies, in order, through `send_reply`."""
    for reply in replies:
        send_reply(origin, reply)


def deliver_row(row: outbox.OutboxRow, sent: Callable[[int], None]) -> None:
    """Send an outbox row (the `grove.store.outbox.Sender`): the pieces not sent yet, or an edit.

    Telegram's flood control (`retry_after`) is waited out; network errors are retried a
    few times; a refusal for good (chat not found, bot blocked) raises `Undeliverable`.
    """
    reply = Reply.model_validate(row.payload)
    pieces = split_text(reply.text)
    start = row.pieces_sent
    target = row.edit_message_id or reply.replaces_message_id
    if target is not None and start == 0 and _edited(reply, target, pieces):
        sent(target)
        start = 1  # a streamed draft became the first piece; the rest follow as new messages
    for index in range(start, len(pieces)):
        markup = _markup(reply) if index == len(pieces) - 1 else None
        text, mode = _formatted(reply, pieces[index])
        kwargs: dict[str, Any] = {"chat_id": reply.chat_id, "text": text, "reply_markup": markup}
        if mode:
            kwargs["parse_mode"] = mode
        try:
            message = _with_retries(_send(kwargs))
        except outbox.Undeliverable as exc:
            if not (reply.markdown and "entities" in str(exc).lower()):
                raise
            log.warning("Telegram refused the converted HTML (%s): sending the piece as plain text", exc)
            kwargs.update(text=plain(pieces[index]), parse_mode=None)
            message = _with_retries(_send(kwargs))
        sent(message.message_id)


def _send(kwargs: dict[str, Any]) -> Callable[[Bot], Awaitable[Message]]:
    """One `sendMessage` with these arguments, as a Bot API call for `_with_retries`."""
    return lambda bot: bot.send_message(**kwargs)


def _edited(reply: Reply, message_id: int, pieces: list[str]) -> bool:
    """The first piece edited into ``message_id`` (an earlier message or a streamed draft); False:
    it could not be, and the reply goes as new messages."""
    markup = _markup(reply) if len(pieces) == 1 else None
    text, mode = _formatted(reply, pieces[0])
    for attempt in (text, plain(pieces[0])) if reply.markdown else (text,):
        try:
            _with_retries(_edit(attempt, reply.chat_id, message_id, markup, mode if attempt is text else None))
            return True
        except outbox.Undeliverable as exc:
            if "not modified" in str(exc):
                return True
            if "entities" not in str(exc).lower():
                log.info("cannot edit message %s (%s): sending the reply as a new message", message_id, exc)
                return False
            log.warning("Telegram refused the converted HTML (%s): editing in plain text", exc)
    return False


def _edit(text: str, chat_id: int, message_id: int, markup: InlineKeyboardMarkup | None,
          mode: str | None) -> Callable[[Bot], Awaitable[Message | bool]]:
    """One `editMessageText`, as a Bot API call for `_with_retries`."""
    return lambda bot: bot.edit_message_text(text, chat_id=chat_id, message_id=message_id, reply_markup=markup,
                                             parse_mode=mode)


def _formatted(reply: Reply, piece: str) -> tuple[str, str | None]:
    """A piece as sent: a model's Markdown becomes Telegram HTML (split first, so no tag is cut)."""
    if reply.markdown:
        return markdown_html(piece), "HTML"
    return piece, reply.parse_mode


def retry_after_seconds(exc: RetryAfter) -> float:
    """Telegram's `retry_after` in seconds (PTB gives a timedelta or a number)."""
    wait = exc.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)


def _with_retries(action: Callable[[Bot], Awaitable[T]], attempts: int = 4) -> T:
    """One Bot API call: flood control waited out, network errors retried, refusals final."""
    delay = 1.0
    for attempt in range(attempts):
        try:
            return telegram_bot().call(action)
        except RetryAfter as exc:
            wait = retry_after_seconds(exc)
            log.warning("Telegram flood control: waiting %.1f s", wait)
            time.sleep(wait + 0.1)
        except (BadRequest, Forbidden) as exc:
            raise outbox.Undeliverable(str(exc)) from exc
        except (TimedOut, NetworkError, TimeoutError) as exc:
            if attempt == attempts - 1:
                raise
            log.warning("Telegram call failed (%s), retrying in %.0f s", exc, delay)
            time.sleep(delay)
            delay *= 3
    return telegram_bot().call(action)


def edit_text(chat_id: int, message_id: int, text: str) -> bool:
    """Best-effort edit of a message already sent (progress); False when Telegram refused."""
    try:
        _with_retries(lambda b: b.edit_message_text(split_text(text)[0], chat_id=chat_id,
                                                    message_id=message_id), attempts=2)
        return True
    except Exception as exc:  # noqa: BLE001 - progress must never break the work
        log.info("progress edit of message %s failed: %s", message_id, exc)
        return False


def send_now(reply: Reply) -> list[int]:
    """Send at once, bypassing the outbox: for when the store itself is down."""
    ids: list[int] = []
    deliver_row(outbox.OutboxRow(id=0, chat_id=reply.chat_id, payload=reply.model_dump(mode="json"),
                                 edit_message_id=None, pieces_sent=0), ids.append)
    return ids


def answer_callback(origin: Origin, callback_id: str | None, text: str | None = None) -> None:
    """Stop the button's loading spinner in the client; best effort (an old query cannot be answered)."""
    if origin != "telegram" or not callback_id:
        return
    try:
        telegram_bot().call(lambda b: b.answer_callback_query(callback_id, text=text), timeout=15)
    except Exception as exc:  # noqa: BLE001 - the press is handled whether or not the spinner stops
        log.info("could not answer callback query %s: %s", callback_id, exc)


@contextmanager
def typing_indicator(origin: Origin, chat_id: int, every: float = 4.0, after: float = 1.0) -> Iterator[None]:
    """Keep "typing…" visible for the whole of a long step (Telegram shows it ~5 s per call).

    Nothing is sent for a step that ends within `after` seconds: the answer itself is the
    sign of life then, and a burst of quick turns does not cost a Bot API call each.
    """
    if origin != "telegram":
        yield
        return
    stop = threading.Event()

    def keep_typing() -> None:
        if stop.wait(after):
            return
        while not stop.is_set():
            try:
                telegram_bot().call(lambda b: b.send_chat_action(chat_id, "typing"), timeout=10)
            except Exception:  # noqa: BLE001 - an indicator must not break the work
                pass
            stop.wait(every)

    thread = threading.Thread(target=keep_typing, name="typing", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(2)
