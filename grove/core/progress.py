"""Progress of long work, for whoever is watching: a CLI progress bar, a Telegram message, or nobody.

The caller that watches hands a `Callback` to the work (`flows.ingest.ingest(progress=…)`); each
branch binds it to the source it works on (`of_source`) and hands the resulting `Step` on to the
nodes that take long (the embedder between batches, OCR between pages). A callback may raise to stop
the work (a cancelled job): steps come between batches, so the work stops at the next one.
"""

from __future__ import annotations

from collections.abc import Callable

Callback = Callable[[str, str, float, float], None]
"""(source, stage, done, total): what the watcher is told."""

Step = Callable[[str, float, float], None]
"""(stage, done, total) of the one source a branch works on."""


def quiet(stage: str, done: float, total: float) -> None:
    """The step of work nobody watches."""


def of_source(callback: Callback | None, source: str) -> Step:
    """`callback` for the steps of one source (`quiet` when nobody watches)."""
    if callback is None:
        return quiet
    return lambda stage, done, total: callback(source, stage, done, total)
