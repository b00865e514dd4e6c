"""One lock per native parser that must never be entered from two threads at once.

The ingestion branches of one message run in threads (`flows.ingest`) and meet, in parsing, native code
unsafe under that: **libxml2** (lxml; trafilatura, python-docx, the zipped XML formats, FB2, EPUB, HTML),
whose concurrent use now and then aborts the process (trafilatura issues #840, #925), and **PDFium**
(pypdfium2), which forbids calls from two threads even on different documents. A lock per parse costs
little: embedding, outside the locks, is nearly all of an ingest. The locks are re-entrant; what a locked
parse builds is freed before the lock is let go (parse inside a function, close PDFium objects explicitly).
Figures: bench/README.md, «PDF text layer and extraction loss» (tests.support.extraction_stress).
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

LIBXML = threading.RLock()
"""Held around every parse that builds or walks lxml trees (trafilatura included)."""
PDFIUM = threading.RLock()
"""Held around every PDFium call, from opening a document to closing it."""

P = ParamSpec("P")
R = TypeVar("R")


def with_libxml(function: Callable[P, R]) -> Callable[P, R]:
    """`function` runs under `LIBXML`; its lxml trees are freed before the lock is let go."""

    @wraps(function)
    def locked(*args: P.args, **kwargs: P.kwargs) -> R:
        with LIBXML:
            try:
                return function(*args, **kwargs)
            except BaseException as exc:
                drop_locals(exc)
                raise

    return locked


def drop_locals(exc: BaseException | None) -> None:
    """Clear the locals of the frames an exception (and those it chains) keeps alive: a tree in
    them would otherwise be freed wherever the exception is dropped, outside the lock. The
    traceback itself (files, lines) stays readable."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        traceback.clear_frames(exc.__traceback__)
        exc = exc.__cause__ or exc.__context__
