"""An answer shown while the local model writes it: one Telegram message, edited at a steady pace.

Why: on 2 cores the local model writes about 20 tokens a second, so a 150-word answer takes
half a minute; with only "typing…" to look at, users think the bot hangs. While a turn runs
inside :func:`streaming`, every plain answer the local model streams (`nodes.answering.llm.complete`)
is shown as a draft message: sent once the first words exist, then edited at most every
``stream_edit_interval`` seconds (Telegram allows about one message a second per chat and
20 a minute in a group), never while a ``retry_after`` from Telegram is pending. Text that came
too soon is shown when the pace allows, even if the model says nothing more meanwhile (an
answer's opening stays on screen whole while the rest of the prompt is read). The draft
is plain text with a trailing «…»: the model's Markdown is only converted once it is whole.

The turn's answer then *replaces* the draft: its first piece edits the draft message (with the
source block, formatting and buttons), further pieces of a long answer follow as new messages
(`nodes.telegram.reply.deliver_row`). The answer itself still goes through the outbox, so what
the user finally reads is exactly what was stored, delivered once; the draft is only a view.
A turn that fails after the draft appeared deletes it. A process that dies mid-answer leaves the
draft as it was; the turn runs again from the inbox and answers in a new message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from grove.core.messages import Origin
from grove.core.settings import get_settings

log = logging.getLogger(__name__)

__all__ = ["Draft", "DraftApi", "after", "beneath", "current_sink", "paused", "streaming"]

MORE = " …"
GROUP_INTERVAL = 3.0  # seconds between edits in a group: Telegram allows 20 messages a minute there


class DraftApi(Protocol):
    """The Bot API calls a draft needs; raises `RetryLater` for flood control."""

    def send(self, chat_id: int, text: str) -> int: ...

    def edit(self, chat_id: int, message_id: int, text: str) -> None: ...

    def delete(self, chat_id: int, message_id: int) -> None: ...


class RetryLater(Exception):
    """Telegram asked to wait (`retry_after` seconds) before the next call."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"retry after {seconds} s")
        self.seconds = seconds


Cancel = Callable[[], None]
Schedule = Callable[[float, Callable[[], None]], Cancel]


def in_a_thread(delay: float, action: Callable[[], None]) -> Cancel:
    """`action` after `delay` seconds, on a timer thread; returns its cancel."""
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer.cancel


@dataclass
class Draft:
    """The message a streamed answer is shown in; :meth:`show` is the model's text sink.

    `schedule` (when given) shows text held back by the pace once the pace allows; without it,
    such text waits for the model's next words.
    """

    chat_id: int
    api: DraftApi
    interval: float = 1.5
    first_chars: int = 40
    clock: Callable[[], float] = time.monotonic
    schedule: Schedule | None = None
    message_id: int | None = None
    shown: str = ""
    _not_before: float = 0.0
    _broken: bool = False
    _closed: bool = False
    _calls: int = 0  # show() calls so far: held text older than what was shown is dropped
    _waiting: tuple[int, str] = (0, "")
    _cancel: Cancel | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _held: threading.Lock = field(default_factory=threading.Lock)  # guards `_waiting` and `_cancel`

    def show(self, text: str) -> None:
        """The whole answer so far: sent or edited in when the pace allows, else held for later."""
        text = text.strip()
        if self._closed or self._broken or not text or (len(text) < self.first_chars and self.message_id is None):
            return
        with self._held:
            self._calls += 1
            call = self._calls
        if not self._lock.acquire(blocking=False):
            self._hold(call, text, self.interval)  # a call is in flight
            return
        try:
            now = self.clock()
            if now < self._not_before:
                self._hold(call, text, self._not_before - now)
                return
            view = _view(text)
            if view == self.shown:
                return
            try:
                if self.message_id is None:
                    self.message_id = self.api.send(self.chat_id, view)
                else:
                    self.api.edit(self.chat_id, self.message_id, view)
            except RetryLater as exc:
                self._not_before = now + exc.seconds
                log.info("draft of chat %s: Telegram asks to wait %.0f s", self.chat_id, exc.seconds)
                self._hold(call, text, exc.seconds)
                return
            except Exception as exc:  # noqa: BLE001 - a view must never break the answer
                log.info("draft of chat %s stopped: %s", self.chat_id, exc)
                self._broken = True
                return
            self.shown = view
            self._not_before = now + self.interval
            with self._held:
                if self._waiting[0] < call:  # held before this text: older, never shown after it
                    self._waiting = (0, "")
        finally:
            self._lock.release()

    def _hold(self, call: int, text: str, delay: float) -> None:
        """The newest text, shown after `delay` unless newer text is shown first."""
        with self._held:
            if call > self._waiting[0]:
                self._waiting = (call, text)
            if self.schedule is not None and self._cancel is None and not self._closed:
                self._cancel = self.schedule(max(delay, 0.05), self._shown_late)

    def _shown_late(self) -> None:
        with self._held:
            self._cancel = None
            (_, text), self._waiting = self._waiting, (0, "")
        if text:
            self.show(text)

    def close(self) -> None:
        """The turn's own reply comes next: nothing held back may overwrite it."""
        with self._lock, self._held:
            self._closed = True
            if self._cancel is not None:
                self._cancel()
                self._cancel = None

    def discard(self) -> None:
        """The turn failed: the half-written answer goes away (best effort)."""
        if self.message_id is None:
            return
        try:
            self.api.delete(self.chat_id, self.message_id)
        except Exception as exc:  # noqa: BLE001
            log.info("could not delete the draft %s: %s", self.message_id, exc)
        self.message_id = None


def _view(text: str) -> str:
    """What the draft shows: the text's first Telegram-sized piece, marked as unfinished."""
    from nodes.telegram.reply import TELEGRAM_TEXT_LIMIT, split_text

    return split_text(text, TELEGRAM_TEXT_LIMIT - len(MORE))[0] + MORE


_sink: ContextVar[Callable[[str], None] | None] = ContextVar("grove_answer_sink", default=None)


def current_sink() -> Callable[[str], None] | None:
    """Where a streamed plain answer goes in this context (None: nowhere)."""
    return _sink.get()


@contextmanager
def beneath(text: str) -> Iterator[None]:
    """Show `text` in the draft now, and under the model's words once they come.

    With the local model the first words of an answer come after the whole prompt is read
    (about 15 s for four fragments on 2 cores); the passages that answer the question are
    known a second after the question. So they are shown at once, where the final answer
    puts them: under the model's words.
    """
    sink = _sink.get()
    if sink is None or not text.strip():
        yield
        return
    sink(text)
    token = _sink.set(lambda written: sink(f"{written.rstrip()}\n\n{text}" if written.strip() else text))
    try:
        yield
    finally:
        _sink.reset(token)


@contextmanager
def after(text: str) -> Iterator[None]:
    """Model calls in this block continue `text`: the draft shows it before their words
    (an answer asked in two parts, `nodes/answering/opening.py`)."""
    sink = _sink.get()
    if sink is None or not text:
        yield
        return
    token = _sink.set(lambda written: sink(text + written))
    try:
        yield
    finally:
        _sink.reset(token)


@contextmanager
def paused() -> Iterator[None]:
    """Model calls in this block are not shown (a plan's intermediate steps)."""
    token = _sink.set(None)
    try:
        yield
    finally:
        _sink.reset(token)


class _TelegramApi:
    """The draft's calls through the process's Bot (`nodes.telegram.reply.telegram_bot`)."""

    def _call(self, action: Callable[[Any], Any]) -> Any:
        from telegram.error import RetryAfter

        from nodes.telegram.reply import retry_after_seconds, telegram_bot

        try:
            return telegram_bot().call(action, timeout=15)
        except RetryAfter as exc:
            raise RetryLater(retry_after_seconds(exc)) from exc

    def send(self, chat_id: int, text: str) -> int:
        return int(self._call(lambda b: b.send_message(chat_id=chat_id, text=text)).message_id)

    def edit(self, chat_id: int, message_id: int, text: str) -> None:
        self._call(lambda b: b.edit_message_text(text, chat_id=chat_id, message_id=message_id))

    def delete(self, chat_id: int, message_id: int) -> None:
        self._call(lambda b: b.delete_message(chat_id=chat_id, message_id=message_id))


@contextmanager
def streaming(origin: Origin, chat_id: int, api: DraftApi | None = None) -> Iterator[Draft | None]:
    """Show the local model's answers of this block in a draft message (Telegram only, if enabled).

    Yields the draft (its ``message_id`` is what the final reply replaces) or None when nothing
    is streamed. An exception leaving the block deletes the draft.
    """
    settings = get_settings()
    if origin != "telegram" or not settings.stream_answers:
        yield None
        return
    interval = settings.stream_edit_interval if chat_id > 0 else max(settings.stream_edit_interval, GROUP_INTERVAL)
    draft = Draft(chat_id, api or _TelegramApi(), interval=interval, first_chars=settings.stream_first_chars,
                  schedule=in_a_thread)
    token = _sink.set(draft.show)
    try:
        yield draft
    except BaseException:
        draft.close()
        draft.discard()
        raise
    finally:
        draft.close()
        _sink.reset(token)
