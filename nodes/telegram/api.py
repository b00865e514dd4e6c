"""The Bot API as grove calls it: a `BotApi` is handed to the one sender, like httpx's transport.

Flows and tasks are plain functions in threads, while python-telegram-bot's `Bot` is async. `LoopBot`
runs a real `Bot` on an event loop it is given or starts; the entry point of a process (the bot,
a worker, a served deployment) opens it once and closes it at exit. Tests hand in the same
`LoopBot` pointed at the Bot API stand-in, or an object of their own with these methods.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol, TypeVar

from telegram import Bot, File, InlineKeyboardMarkup, Message
from telegram.error import RetryAfter
from telegram.request import HTTPXRequest

from grove.core.settings import Settings

T = TypeVar("T")

TELEGRAM_TEXT_LIMIT = 4096


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


def retry_after_seconds(exc: RetryAfter) -> float:
    """Telegram's `retry_after` in seconds (PTB gives a timedelta or a number)."""
    wait = exc.retry_after
    return wait.total_seconds() if hasattr(wait, "total_seconds") else float(wait)


class BotApi(Protocol):
    """The `telegram.Bot` methods grove uses, blocking. Errors are PTB's (`RetryAfter`, `BadRequest`, …)."""

    def send_message(self, chat_id: int, text: str, *, parse_mode: str | None = None,
                     reply_markup: InlineKeyboardMarkup | None = None) -> Message: ...

    def edit_message_text(self, text: str, *, chat_id: int, message_id: int, parse_mode: str | None = None,
                          reply_markup: InlineKeyboardMarkup | None = None) -> Message | bool: ...

    def delete_message(self, chat_id: int, message_id: int) -> bool: ...

    def send_message_draft(self, chat_id: int, draft_id: int, text: str) -> bool: ...

    def answer_callback_query(self, callback_query_id: str, text: str | None = None) -> bool: ...

    def send_chat_action(self, chat_id: int, action: str) -> bool: ...

    def get_file(self, file_id: str) -> File: ...

    def download(self, file: File, target: Path) -> Path:
        """`File.download_to_drive`: the file's bytes written to `target`."""
        ...


class LoopBot:
    """A `telegram.Bot` whose calls block the calling thread until its event loop has run them.

    A view (draft, toast, typing) waits at most `quick` seconds, a message `timeout`, a download
    `download_timeout`: a stalled Bot API delays a turn, never holds it for good.
    """

    quick = 15.0
    timeout = 60.0
    download_timeout = 300.0

    def __init__(self, bot: Bot, loop: asyncio.AbstractEventLoop, thread: threading.Thread | None = None) -> None:
        self.bot, self.loop, self._thread = bot, loop, thread
        self._initialized = False
        self._lock = threading.Lock()

    @classmethod
    def open(cls, settings: Settings) -> LoopBot:
        """A Bot against `settings.telegram_api_url` on an event-loop thread of its own. It meets Telegram
        at its first call (`Bot.initialize`), not here: a worker started while Telegram is out of reach
        starts all the same, and its replies wait in the outbox."""
        if not settings.bot_token:
            raise RuntimeError("TELEGRAM_BOT_TOKEN is not set: cannot reply over Telegram")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="telegram-bot", daemon=True)
        thread.start()
        url = settings.telegram_api_url
        bot = Bot(settings.bot_token, base_url=f"{url}/bot", base_file_url=f"{url}/file/bot",
                  local_mode=settings.telegram_local_mode,
                  request=HTTPXRequest(connection_pool_size=settings.telegram_connections, pool_timeout=30.0))
        return cls(bot, loop, thread)

    def close(self) -> None:
        """Shut the Bot down, and its loop when `open` started it."""
        try:
            asyncio.run_coroutine_threadsafe(self.bot.shutdown(), self.loop).result(10)
        finally:
            if self._thread is not None:
                self.loop.call_soon_threadsafe(self.loop.stop)
                self._thread.join(5)

    def __repr__(self) -> str:  # what a run's trace shows for it
        return f"LoopBot({self.bot.base_url.split('/bot')[0]})"

    def _run(self, call: Coroutine[Any, Any, T], timeout: float) -> T:
        try:
            self._initialize()
        except BaseException:
            call.close()  # never awaited: closed, so nothing warns about it
            raise
        return asyncio.run_coroutine_threadsafe(call, self.loop).result(timeout)

    def _initialize(self) -> None:
        """`Bot.initialize` (its `getMe`) once, before the first call; tried again at the next call if it failed."""
        with self._lock:
            if not self._initialized:
                asyncio.run_coroutine_threadsafe(self.bot.initialize(), self.loop).result(self.timeout)
                self._initialized = True

    def send_message(self, chat_id: int, text: str, *, parse_mode: str | None = None,
                     reply_markup: InlineKeyboardMarkup | None = None) -> Message:
        return self._run(self.bot.send_message(chat_id=chat_id, text=text, parse_mode=parse_mode,
                                               reply_markup=reply_markup), self.timeout)

    def edit_message_text(self, text: str, *, chat_id: int, message_id: int, parse_mode: str | None = None,
                          reply_markup: InlineKeyboardMarkup | None = None) -> Message | bool:
        return self._run(self.bot.edit_message_text(text, chat_id=chat_id, message_id=message_id,
                                                    parse_mode=parse_mode, reply_markup=reply_markup), self.timeout)

    def delete_message(self, chat_id: int, message_id: int) -> bool:
        return self._run(self.bot.delete_message(chat_id=chat_id, message_id=message_id), self.quick)

    def send_message_draft(self, chat_id: int, draft_id: int, text: str) -> bool:
        # The «Стоп» button Telegram draws under a native draft (can_stop) keeps what was written.
        return self._run(self.bot.send_message_draft(chat_id=chat_id, draft_id=draft_id, text=text,
                                                     api_kwargs={"can_stop": True, "keep_on_stop": True}),
                         self.quick)

    def answer_callback_query(self, callback_query_id: str, text: str | None = None) -> bool:
        return self._run(self.bot.answer_callback_query(callback_query_id, text=text), self.quick)

    def send_chat_action(self, chat_id: int, action: str) -> bool:
        return self._run(self.bot.send_chat_action(chat_id, action), self.quick)

    def get_file(self, file_id: str) -> File:
        return self._run(self.bot.get_file(file_id), self.timeout)

    def download(self, file: File, target: Path) -> Path:
        return self._run(file.download_to_drive(target), self.download_timeout)
