"""grove/core/progress.py: reports reach the callback of the enclosing `reporting`, in its context only."""

from __future__ import annotations

import contextvars
import threading

import pytest

from grove.core.progress import Callback, report, reporting, step, working_on

Seen = list[tuple[str, str, float, float]]


def recorder(into: Seen) -> Callback:
    return lambda source, stage, done, total: into.append((source, stage, done, total))


def test_nothing_is_reported_without_a_callback() -> None:
    report("малина.pdf", "embedding", 1, 2)  # no callback: a no-op, not an error
    with working_on("малина.pdf"):
        step("embedding", 1, 2)


def test_report_reaches_the_callback_with_its_arguments() -> None:
    seen: Seen = []
    with reporting(recorder(seen)):
        report("малина.pdf", "parsing", 0, 3)
        report("малина.pdf", "parsing", 3, 3)
    report("малина.pdf", "after", 1, 1)  # the block is over: nobody listens
    assert seen == [("малина.pdf", "parsing", 0, 3), ("малина.pdf", "parsing", 3, 3)]


def test_step_reports_for_the_source_being_worked_on_only() -> None:
    seen: Seen = []
    with reporting(recorder(seen)):
        step("outside", 1, 1)  # no source: dropped
        with working_on("a.pdf"):
            step("chunking", 1, 4)
            with working_on("b.docx"):
                step("chunking", 2, 4)
            step("embedding", 3, 4)  # back to the outer source
        step("outside", 1, 1)
    assert seen == [("a.pdf", "chunking", 1, 4), ("b.docx", "chunking", 2, 4), ("a.pdf", "embedding", 3, 4)]


def test_the_innermost_callback_wins_and_the_outer_one_comes_back() -> None:
    outer: Seen = []
    inner: Seen = []
    with reporting(recorder(outer)):
        with reporting(recorder(inner)):
            report("s", "inner", 1, 1)
        report("s", "outer", 1, 1)
    assert [s[1] for s in outer] == ["outer"] and [s[1] for s in inner] == ["inner"]


def test_a_callback_that_raises_stops_the_work_and_the_context_is_restored() -> None:
    class Cancelled(Exception):
        pass

    def cancel(source: str, stage: str, done: float, total: float) -> None:
        if done >= 2:
            raise Cancelled(source)

    finished: list[int] = []
    with pytest.raises(Cancelled, match=r"^x\.pdf$"), reporting(cancel), working_on("x.pdf"):
        for batch in range(5):
            step("embedding", batch, 5)
            finished.append(batch)
    assert finished == [0, 1]
    seen: Seen = []
    with reporting(recorder(seen)):
        step("after", 1, 1)  # working_on was reset by the exception too
    assert seen == []


def test_context_is_carried_into_a_worker_thread_by_copy_context() -> None:
    seen: Seen = []
    with reporting(recorder(seen)), working_on("c.pdf"):
        ctx = contextvars.copy_context()
    worker = threading.Thread(target=ctx.run, args=(step, "ocr", 1, 2))
    worker.start()
    worker.join(5)
    bare = threading.Thread(target=step, args=("ocr", 2, 2))  # a thread without the context sees nothing
    bare.start()
    bare.join(5)
    assert seen == [("c.pdf", "ocr", 1, 2)]
