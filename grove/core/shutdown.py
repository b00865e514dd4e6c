"""Stopping: the one process-wide switch an entry point throws on Ctrl-C or SIGTERM.

Why a switch and not just waiting: a turn waiting on a model can take minutes, and the
services it needs (Postgres last) are stopped in order right after. Waiting would hold the
stop up; stopping the services under it would show the user «база недоступна» for a turn
that was simply cut. So once the switch is thrown, work in flight stops at its next wait —
a model call closes its connection, a retry does not sleep — by raising `Interrupted`. It is
a BaseException, so no handler meant for the turn's own failures turns it into an apology:
the turn's transaction rolls back, nothing is sent, and the update runs again at the next
start (its inbox row is handed back, `grove.store.inbox.release`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

log = logging.getLogger(__name__)
R = TypeVar("R")


class Interrupted(BaseException):
    """The process is stopping: the work in flight ends here and runs again after the restart."""


class Stopped(Exception):
    """The user stopped this answer («Стоп»): the model call in flight ends here, and the turn
    finishes with what was on screen. Unlike `Interrupted` the turn is not run again."""


class StopSwitch:
    """One answer's own stop: thrown from another thread (the bot taking the user's press), it ends
    this context's waits in `call` at once and runs the closers the calls registered (a streamed
    model call shuts its socket, so the model server sees the client gone and frees its slot)."""

    def __init__(self) -> None:
        self._thrown = threading.Event()
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def thrown(self) -> bool:
        return self._thrown.is_set()

    def throw(self) -> None:
        with self._lock:
            if self._thrown.is_set():
                return
            self._thrown.set()
            closers = list(self._closers)
        for close in closers:
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - the stop goes on whatever one closer does
                log.info("while stopping an answer: %s", exc)

    @contextmanager
    def closing(self, close: Callable[[], None]) -> Iterator[None]:
        """`close` runs if the switch is thrown while the block runs (at once if it already was)."""
        with self._lock:
            self._closers.append(close)
            late = self._thrown.is_set()
        if late:
            close()
        try:
            yield
        finally:
            with self._lock:
                self._closers.remove(close)


_answering: dict[tuple[int, int], tuple[int | None, StopSwitch]] = {}  # (chat, token) -> (user, switch)


@contextmanager
def answering(chat_id: int, token: int, user_id: int | None) -> Iterator[StopSwitch]:
    """An answer streaming in `chat_id` that its user can stop by `token` (`stop_answer`); calls
    in this block end with `Stopped` once stopped."""
    switch = StopSwitch()
    with _lock:
        _answering[(chat_id, token)] = (user_id, switch)
    try:
        with stoppable(switch):
            yield switch
    finally:
        with _lock:
            _answering.pop((chat_id, token), None)


def stop_answer(chat_id: int, token: int, user_id: int | None) -> bool:
    """The user's «Стоп»: the answer streaming under `token` in `chat_id` in this process stops at
    once. A press on an answer already over (or streaming elsewhere), or by someone other than
    who asked, does nothing (False)."""
    with _lock:
        user, switch = _answering.get((chat_id, token), (None, None))
    if switch is None or (user_id is not None and user is not None and user_id != user):
        return False
    log.info("chat %s: the user stopped the answer %s", chat_id, token)
    switch.throw()
    return True


_switch: contextvars.ContextVar[StopSwitch | None] = contextvars.ContextVar("grove_stop_switch", default=None)


def current_switch() -> StopSwitch | None:
    return _switch.get()


@contextmanager
def stoppable(switch: StopSwitch) -> Iterator[StopSwitch]:
    """Calls in this block end with `Stopped` once `switch` is thrown."""
    token = _switch.set(switch)
    try:
        yield switch
    finally:
        _switch.reset(token)


_requested = threading.Event()  # process-wide by nature: signals are
_on_request: list[Callable[[], None]] = []
_lock = threading.Lock()


def request() -> None:
    """Throw the switch (idempotent): waits end, then what was registered with `on_request` runs."""
    with _lock:
        if _requested.is_set():
            return
        _requested.set()
        callbacks = list(_on_request)
    for callback in callbacks:
        try:
            callback()
        except Exception as exc:  # noqa: BLE001 - stopping goes on whatever one closer does
            log.info("while stopping: %s", exc)


def requested() -> bool:
    return _requested.is_set()


def on_request(callback: Callable[[], None]) -> None:
    """Run `callback` when the switch is thrown (e.g. close a client whose calls block)."""
    with _lock:
        _on_request.append(callback)
        late = _requested.is_set()
    if late:
        callback()


def check() -> None:
    if _requested.is_set():
        raise Interrupted("the service is stopping")
    switch = _switch.get()
    if switch is not None and switch.thrown:
        raise Stopped("the user stopped the answer")


def wait(seconds: float) -> None:
    """Sleep, unless the switch is thrown meanwhile (then `Interrupted`)."""
    if _requested.wait(seconds):
        raise Interrupted("the service is stopping")


def call(fn: Callable[[], R]) -> R:
    """`fn()`, unless the switch is thrown first: then `Interrupted` at once.

    A blocking socket read cannot be woken from another thread, so the call runs in a helper
    thread (with this thread's context) and this one waits for it or for the switch; a call
    left behind ends with its connection when the process exits.
    """
    check()
    context = contextvars.copy_context()
    done = threading.Event()
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, context.run(fn)))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
            outcome.append((False, exc))
        finally:
            done.set()

    switch = _switch.get()
    threading.Thread(target=run, name="interruptible-call", daemon=True).start()
    while not done.wait(0.05 if switch is not None else 0.2):
        if _requested.is_set():
            raise Interrupted("the service is stopping")
        if switch is not None and switch.thrown:
            raise Stopped("the user stopped the answer")
    ok, value = outcome[0]
    if not ok:
        if _requested.is_set():
            raise Interrupted("the service is stopping") from value
        if switch is not None and switch.thrown:
            raise Stopped("the user stopped the answer") from value
        raise value
    return cast(R, value)


def reset() -> None:
    """Tests only: a process that keeps running after a simulated stop."""
    with _lock:
        _requested.clear()
        _on_request.clear()
