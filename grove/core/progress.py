"""Progress of long work, for whoever is watching: a CLI progress bar, a Telegram message, or nobody.

Nodes call `report(...)` (or `step(...)` for the source being worked on); a caller that
wants updates wraps the work in `reporting(callback)`. Context variables carry the
callback and the current source into worker threads, so flows and task signatures stay
free of UI concerns. A callback may raise to stop the work (a cancelled job): reports
come between batches, so the work stops at the next one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Callback = Callable[[str, str, float, float], None]  # (source, stage, done, total)

_callback: ContextVar[Callback | None] = ContextVar("grove_progress", default=None)
_source: ContextVar[str | None] = ContextVar("grove_progress_source", default=None)


def report(source: str, stage: str, done: float, total: float) -> None:
    callback = _callback.get()
    if callback is not None:
        callback(source, stage, done, total)


def step(stage: str, done: float, total: float) -> None:
    """Report for the source set by `working_on` (nothing outside one)."""
    source = _source.get()
    if source is not None:
        report(source, stage, done, total)


@contextmanager
def working_on(source: str) -> Iterator[None]:
    token = _source.set(source)
    try:
        yield
    finally:
        _source.reset(token)


@contextmanager
def reporting(callback: Callback) -> Iterator[None]:
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)
