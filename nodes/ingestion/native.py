"""One lock per native parser that must never be entered from two threads at once.

The ingestion branches of one message run side by side in threads (`flows.ingest`), and
parsing is where they meet native code that is not safe under that:

* **libxml2** (lxml; trafilatura, python-docx, the zipped XML formats, FB2, EPUB, HTML). Concurrent
  `trafilatura.extract()` aborts the process now and then with SIGSEGV or glibc's «double free or
  corruption» (trafilatura issues #840 and #925, still open on 2.2.0 with lxml 6.1); a grove ingest
  of 11 links died so in 1 of 2 runs. changedetection.io holds one lock around all of its libxml
  parsing for the same reason (PR #4325). In the stress of `tests/support/extraction_stress.py`
  the native crash did not recur in 71 unlocked runs, but 5 of them failed pages with a
  half-imported dateparser (two threads importing it at once); none under the lock
  (bench/README.md).
* **PDFium** (pypdfium2): «not allowed to call pdfium functions simultaneously across different
  threads, not even with different documents» (pypdfium2's documentation). Without this lock the
  stress over 18 PDFs killed the process in 14 of 20 runs (SIGSEGV, SIGTRAP); with it, in none.

Holding a lock for a whole parse costs little: extraction is milliseconds to seconds a document,
embedding the chunks afterwards takes 99 % of an ingest, and it runs outside these locks. The locks
are re-entrant, so a parser that calls another under the same lock (an HTML file through
`html_text.extract`) does not deadlock. What a locked parse builds (trees, PDFium handles) must be
freed before the lock is let go: parse inside a function whose locals die with it, and close
PDFium objects explicitly.
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
