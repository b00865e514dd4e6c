"""Progress of long work, for whoever is watching: a CLI progress bar, or nobody.

Nodes call `report(...)`; a caller that wants updates wraps the flow call in
`reporting(callback)`. A context variable carries the callback into Prefect's
task threads, so flows and task signatures stay free of UI concerns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Callback = Callable[[str, str, float, float], None]  # (source, stage, done, total)

_callback: ContextVar[Callback | None] = ContextVar("grove_progress", default=None)


def report(source: str, stage: str, done: float, total: float) -> None:
    callback = _callback.get()
    if callback is not None:
        callback(source, stage, done, total)


@contextmanager
def reporting(callback: Callback) -> Iterator[None]:
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)
