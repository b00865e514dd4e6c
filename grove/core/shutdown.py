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
from collections.abc import Callable
from typing import Any, TypeVar, cast

log = logging.getLogger(__name__)
R = TypeVar("R")


class Interrupted(BaseException):
    """The process is stopping: the work in flight ends here and runs again after the restart."""


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

    threading.Thread(target=run, name="interruptible-call", daemon=True).start()
    while not done.wait(0.2):
        if _requested.is_set():
            raise Interrupted("the service is stopping")
    ok, value = outcome[0]
    if not ok:
        if _requested.is_set():
            raise Interrupted("the service is stopping") from value
        raise value
    return cast(R, value)


def reset() -> None:
    """Tests only: a process that keeps running after a simulated stop."""
    with _lock:
        _requested.clear()
        _on_request.clear()
