"""Telegram reply node: the one way a flow talks back to a user.

On the `telegram` origin it calls the Bot API through python-telegram-bot; on
the `console` origin it prints, so the local console drives the same flows.
Flows may run in a worker far from the bot process, so the node owns its own
`telegram.Bot`: one per process, on a private event-loop thread, initialised
once (PTB's Bot is async; our flows and tasks are plain functions).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prefect import task
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup

from grove.messages import Origin, Reply
from grove.settings import get_settings

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

    def __init__(self, token: str, api_url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="telegram-bot", daemon=True)
        self.thread.start()
        self.bot = Bot(token, base_url=f"{api_url}/bot", base_file_url=f"{api_url}/file/bot")
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


_bots: dict[tuple[str, str], _BotThread] = {}
_bots_lock = threading.Lock()


def telegram_bot() -> _BotThread:
    settings = get_settings()
    token = settings.bot_token
    if not token:
        raise RuntimeError("TELEGRAM_BOT_TOKEN is not set: cannot reply over Telegram")
    key = (token, settings.telegram_api_url)
    with _bots_lock:
        if key not in _bots:
            _bots[key] = _BotThread(token, settings.telegram_api_url)
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


def _print_reply(reply: Reply) -> None:
    print(f"\n🤖 {reply.text}")
    for row in reply.buttons:
        print("   " + "  ".join(f"[{b.label}]" for b in row))


@task(name="send-reply", retries=3, retry_delay_seconds=[1, 3, 9])
def send_reply(origin: Origin, reply: Reply) -> list[int]:
    """Send one reply (split at Telegram's 4096-char limit); returns the sent message ids.

    The buttons go on the last piece, so the keyboard sits under the end of the text.
    """
    pieces = split_text(reply.text)
    if origin == "console":
        _print_reply(reply)
        return []
    bot = telegram_bot()
    sent: list[int] = []
    for index, piece in enumerate(pieces):
        markup = _markup(reply) if index == len(pieces) - 1 else None
        kwargs: dict[str, Any] = {"chat_id": reply.chat_id, "text": piece, "reply_markup": markup}
        if reply.parse_mode:
            kwargs["parse_mode"] = reply.parse_mode
        message = bot.call(lambda b, kw=kwargs: b.send_message(**kw))
        sent.append(message.message_id)
    return sent


@task(name="answer-callback", retries=2, retry_delay_seconds=1)
def answer_callback(origin: Origin, callback_id: str | None, text: str | None = None) -> None:
    """Stop the button's loading spinner in the client (Telegram requires an answer)."""
    if origin != "telegram" or not callback_id:
        return
    bot = telegram_bot()
    bot.call(lambda b: b.answer_callback_query(callback_id, text=text))


@contextmanager
def typing_indicator(origin: Origin, chat_id: int, every: float = 4.0) -> Iterator[None]:
    """Keep "typing…" visible for the whole of a long step (Telegram shows it ~5 s per call)."""
    if origin != "telegram":
        yield
        return
    stop = threading.Event()

    def keep_typing() -> None:
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


@task(name="send-typing")
def send_typing(origin: Origin, chat_id: int) -> None:
    """Show "typing…" while a long flow works; best effort, never fails the flow."""
    if origin != "telegram":
        return
    try:
        telegram_bot().call(lambda b: b.send_chat_action(chat_id, "typing"), timeout=10)
    except Exception:  # noqa: BLE001 - an indicator must not break the answer
        pass
