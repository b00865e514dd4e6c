"""Progress is handed to the work that reports it (grove/core/progress.py): a branch binds the watcher's
callback to its source, and the nodes that take long tell that step between batches and pages."""

from __future__ import annotations

from grove.core.settings import get_settings
from pathlib import Path

import pytest

from flows.ingest import ingest
from grove.core.ingest_types import IngestItem
from grove.core.progress import Callback, of_source, quiet
from nodes.ingestion.parse_files import parse_file
from tests.support.documents import make_scanned_pdf

Seen = list[tuple[str, str, float, float]]


def recorder(into: Seen) -> Callback:
    return lambda source, stage, done, total: into.append((source, stage, done, total))


def test_nobody_watching_is_the_quiet_step() -> None:
    assert of_source(None, "малина.pdf") is quiet
    quiet("embed", 1, 2)  # a no-op, not an error


def test_a_step_tells_the_callback_for_its_own_source() -> None:
    seen: Seen = []
    a, b = of_source(recorder(seen), "a.pdf"), of_source(recorder(seen), "b.docx")
    a("chunking", 1, 4)
    b("chunking", 2, 4)
    a("embedding", 3, 4)
    assert seen == [("a.pdf", "chunking", 1, 4), ("b.docx", "chunking", 2, 4), ("a.pdf", "embedding", 3, 4)]


def test_ocr_tells_its_pages_to_the_step_it_is_handed(tmp_path: Path) -> None:
    scan = make_scanned_pdf(tmp_path / "скан.pdf", [["Жимолость цветёт первой"], ["из ягодных культур."]])
    seen: Seen = []
    parse_file(str(scan), "скан.pdf", "application/pdf", get_settings(), of_source(recorder(seen), "скан.pdf"))
    assert seen == [("скан.pdf", "ocr", 0, 2), ("скан.pdf", "ocr", 1, 2), ("скан.pdf", "ocr", 2, 2)]


@pytest.mark.models
@pytest.mark.timeout(600)
def test_each_branch_of_an_ingestion_reports_its_own_stages(store: str, user_id: int) -> None:
    """The branches run in threads of their own: each gets the callback as a parameter."""
    items = [IngestItem(kind="text", source_identifier=f"заметка {n}", text=f"Малину {n} раз подкармливают весной "
                        "азотом, а осенью калием и фосфором, чтобы кусты перезимовали.") for n in (1, 2)]
    seen: Seen = []
    outcomes = ingest(items, user_id, progress=recorder(seen))
    assert [o.status for o in outcomes] == ["indexed", "indexed"]
    for item in items:
        stages = [stage for source, stage, _, _ in seen if source == item.label]
        assert stages[0] == "extract" and stages[-1] == "done" and {"embed", "store"} <= set(stages), seen


def test_a_callback_that_raises_stops_the_ingestion_of_that_item(store: str, user_id: int) -> None:
    class Cancelled(Exception):
        pass

    def cancel(source: str, stage: str, done: float, total: float) -> None:
        if stage == "embed":
            raise Cancelled(source)

    item = IngestItem(kind="text", source_identifier="заметка", text="Голубику мульчируют хвоей и корой.")
    [outcome] = ingest([item], user_id, progress=cancel)
    assert outcome.status == "failed"
