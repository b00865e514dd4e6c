"""An answer shown while the local model writes it: Telegram's own draft, or one message edited.

The local model writes slowly, and with only "typing…" to look at users think the bot hangs. :func:`streaming`
opens the turn's draft; its `show` (a :data:`Show`) is handed down, as a parameter, to the model calls that
write the answer — only they reach the screen, not a classifier's label or a plan's steps — and `beneath`,
`after` and `watched` wrap it for the answer's parts. The text is shown as a plain-text draft: in a private
chat Telegram's own (`sendMessageDraft`, shown again every `DRAFT_REFRESH` seconds while the model is
silent), elsewhere a message edited at most every ``stream_edit_interval`` seconds, within Telegram's rate
limits. The draft is only a view: the answer still goes through the outbox (a new message, or an edit of
the draft message), so the user reads what was stored, delivered once; a turn that fails deletes its draft.
Figures: bench/README.md, «Telegram's own draft against the edited message» (bench.draft_stream).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.error import BadRequest, EndPointNotFound, InvalidToken, RetryAfter

from grove.core import shutdown
from grove.core.messages import Origin, stop_data
from grove.core.settings import Settings
from nodes.telegram.api import TELEGRAM_TEXT_LIMIT, BotApi, retry_after_seconds, split_text

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["BotDrafts", "Draft", "DraftApi", "DraftsRefused", "Screen", "Show", "after", "beneath", "streaming", "watched"]

MORE = " …"
STOP_LABEL = "⏹ Стоп"
GROUP_INTERVAL = 3.0  # seconds between edits in a group: Telegram allows 20 messages a minute there
# A native draft is a preview Telegram keeps for 30 s: shown again before that while the model
# is silent (reading a long prompt), or it vanishes.
DRAFT_REFRESH = 20.0
_drafts_refused = threading.Event()  # the server refused sendMessageDraft once: edits from then on


class DraftApi(Protocol):
    """The Bot API calls a draft needs; raises `RetryLater` for flood control."""

    def send(self, chat_id: int, text: str, stop: str | None = None) -> int:
        """A new message; `stop`: the callback data of a «Стоп» button under it."""
        ...

    def edit(self, chat_id: int, message_id: int, text: str, stop: str | None = None) -> None: ...

    def delete(self, chat_id: int, message_id: int) -> None: ...

    def draft(self, chat_id: int, draft_id: int, text: str) -> None:
        """`sendMessageDraft` with Telegram's own stop button (`can_stop`, Bot API 10.3; older
        servers ignore it); raises `DraftsRefused` where the server has no such method."""
        ...


class DraftsRefused(Exception):
    """The Bot API server does not stream drafts (one older than Bot API 9.3)."""


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
    delay: float = 0.0  # nothing shown before this many seconds from `start`: a quick answer is one message
    draft_id: int | None = None  # set: Telegram's own animated draft (`sendMessageDraft`), no message
    stop: str | None = None  # the callback data of the «Стоп» button under a draft message
    message_id: int | None = None
    shown: str = ""
    _refresh: Cancel | None = None
    _not_before: float = 0.0
    _broken: bool = False
    _closed: bool = False
    _calls: int = 0  # show() calls so far: held text older than what was shown is dropped
    _waiting: tuple[int, str] = (0, "")
    _cancel: Cancel | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _held: threading.Lock = field(default_factory=threading.Lock)  # guards `_waiting` and `_cancel`

    def start(self) -> None:
        """A native draft shows Telegram's "Thinking…" placeholder (an empty draft) once `delay` has
        passed with nothing on screen; the model's text waits out the delay too. An answer whole
        before then goes out as its one message: no placeholder, no draft, one Bot API call where a
        draft would cost three (bench/message_path.py)."""
        self._not_before = self.clock() + self.delay
        if self.draft_id is None:
            return
        if self.delay > 0 and self.schedule is not None:  # shown by the refresh, which text shown sooner cancels
            with self._held:
                self._refresh = self.schedule(self.delay, self._show_again)
            return
        with self._lock:
            self._put("")

    def _put(self, view: str) -> None:
        """The view into the chat (the lock held): the native draft, or the message sent or edited;
        a server without drafts is remembered and this draft goes on as a message."""
        if self.draft_id is not None:
            try:
                self.api.draft(self.chat_id, self.draft_id, view)
                self._keep_alive()
                return
            except DraftsRefused as exc:
                log.info("drafts refused by the Bot API server (%s): streaming by edits", exc)
                _drafts_refused.set()
                self.draft_id = None
                if not view:
                    return
        if self.message_id is None:
            self.message_id = self.api.send(self.chat_id, view, stop=self.stop)
        else:
            self.api.edit(self.chat_id, self.message_id, view, stop=self.stop)

    def _keep_alive(self) -> None:
        """Show the native draft again before Telegram lets it lapse, unless newer text comes."""
        if self.schedule is None:
            return
        with self._held:
            if self._refresh is not None:
                self._refresh()
            self._refresh = None if self._closed else self.schedule(DRAFT_REFRESH, self._show_again)

    def _show_again(self) -> None:
        with self._held:
            self._refresh = None
        if not self._lock.acquire(blocking=False):
            return  # a call is in flight: it keeps the draft alive itself
        try:
            if not self._closed and not self._broken and self.draft_id is not None:
                self._put(self.shown)
        except Exception as exc:  # noqa: BLE001 - a view must never break the answer
            log.info("draft of chat %s not refreshed: %s", self.chat_id, exc)
        finally:
            self._lock.release()

    def show(self, text: str) -> None:
        """The whole answer so far: sent or edited in when the pace allows, else held for later."""
        text = text.strip()
        unseen = self.message_id is None and self.draft_id is None
        if self._closed or self._broken or not text or (len(text) < self.first_chars and unseen):
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
                self._put(view)
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
            for cancel in (self._cancel, self._refresh):
                if cancel is not None:
                    cancel()
            self._cancel = self._refresh = None

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
    return split_text(text, TELEGRAM_TEXT_LIMIT - len(MORE))[0] + MORE


Show = Callable[[str], None]  # where a model call's text so far goes: the draft, or a wrapper around it


def beneath(show: Show | None, text: str) -> Show | None:
    """Show `text` in the draft now; the returned `Show` puts the model's words above it.

    With the local model the first words of an answer come after the whole prompt is read
    (about 15 s for four fragments on 2 cores); the passages that answer the question are
    known a second after the question. So they are shown at once, where the final answer
    puts them: under the model's words.
    """
    if show is None or not text.strip():
        return show
    show(text)
    return lambda written: show(f"{written.rstrip()}\n\n{text}" if written.strip() else text)


def after(show: Show | None, text: str) -> Show | None:
    """A model call shown through the result continues `text`: the draft shows it before its words
    (an answer asked in two parts, `nodes/answering/opening.py`)."""
    if show is None or not text:
        return show
    return lambda written: show(text + written)


@dataclass
class Screen:
    """What model calls put on screen: whether a draft is up at all, and their words so far."""

    watching: bool = False
    words: str = ""


def watched(show: Show | None) -> tuple[Show | None, Screen]:
    """`show` noting what the model calls shown through it write (their text still goes on to the
    draft), so a turn cut short after something was on screen can finish with it instead of an apology."""
    screen = Screen()
    if show is None:
        return None, screen
    screen.watching = True  # a draft is up: what the calls write reaches the user

    def noted(written: str) -> None:
        screen.words = written
        show(written)

    return noted, screen


class BotDrafts:
    """The draft's calls through a `BotApi` (the process's, handed to the turn in its `Sender`)."""

    def __init__(self, api: BotApi) -> None:
        self.api = api

    @staticmethod
    def _call(action: Callable[[], T]) -> T:
        try:
            return action()
        except RetryAfter as exc:
            raise RetryLater(retry_after_seconds(exc)) from exc

    def send(self, chat_id: int, text: str, stop: str | None = None) -> int:
        markup = _stop_button(stop)
        return self._call(lambda: self.api.send_message(chat_id, text, reply_markup=markup)).message_id

    def edit(self, chat_id: int, message_id: int, text: str, stop: str | None = None) -> None:
        markup = _stop_button(stop)
        self._call(lambda: self.api.edit_message_text(text, chat_id=chat_id, message_id=message_id,
                                                      reply_markup=markup))

    def delete(self, chat_id: int, message_id: int) -> None:
        self._call(lambda: self.api.delete_message(chat_id, message_id))

    def draft(self, chat_id: int, draft_id: int, text: str) -> None:
        try:  # PTB reports a 404 from a method as InvalidToken, 22.x as EndPointNotFound
            self._call(lambda: self.api.send_message_draft(chat_id, draft_id, text))
        except (EndPointNotFound, InvalidToken, BadRequest) as exc:
            raise DraftsRefused(str(exc)) from exc


def _stop_button(data: str | None) -> InlineKeyboardMarkup | None:
    if data is None:
        return None
    return InlineKeyboardMarkup([[InlineKeyboardButton(STOP_LABEL, callback_data=data)]])


@contextmanager
def streaming(origin: Origin, chat_id: int, api: DraftApi | None, settings: Settings,
              user_id: int | None = None) -> Iterator[Draft | None]:
    """The draft message the turn's answer is shown in while it is written (Telegram only, if the settings
    say so, at their pace), through `api` (None: the process has no bot, and nothing is streamed).

    Yields the draft (its `show` is handed to the answering flow; its ``message_id`` is what the final
    reply replaces) or None when nothing is streamed. An exception leaving the block deletes the draft.
    """
    if origin != "telegram" or api is None or not settings.stream_answers:
        yield None
        return
    interval = settings.stream_edit_interval if chat_id > 0 else max(settings.stream_edit_interval, GROUP_INTERVAL)
    native = settings.stream_drafts and chat_id > 0 and not _drafts_refused.is_set()  # private chats only
    stop = secrets.randbelow(2**31 - 1) + 1  # the native draft's id; the «Стоп» button's token
    draft = Draft(chat_id, api, interval=interval, first_chars=settings.stream_first_chars,
                  schedule=in_a_thread, delay=settings.stream_first_delay, draft_id=stop if native else None,
                  stop=stop_data(stop))
    try:
        draft.start()
    except Exception as exc:  # noqa: BLE001 - the placeholder is a view: the turn goes on without it
        log.info("draft placeholder of chat %s not shown: %s", chat_id, exc)
    try:
        with shutdown.answering(chat_id, stop, user_id):
            yield draft
    except BaseException:
        draft.close()
        draft.discard()
        raise
    finally:
        draft.close()
