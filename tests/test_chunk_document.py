"""Chunks carry the page they came from, or the media time they cover."""

from __future__ import annotations

from grove.core.ingest_types import ExtractedDocument, Segment
from grove.core.settings import get_settings
from nodes.ingestion.chunk_document import ChunkedDocument, chunk
from nodes.ingestion.media.transcript import render_transcript


def chunk_of(document: ExtractedDocument) -> ChunkedDocument:
    """The document chunked with the settings as the test set them (what the ingest flow hands)."""
    return chunk(document, get_settings())


def test_transcript_chunks_carry_the_time_they_cover(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_CHUNK_TARGET_CHARS="300", GROVE_CHUNK_OVERLAP_CHARS="0")
    segments = [Segment(start=10.0 * n, end=10.0 * n + 8, text=f"Фраза номер {n} о посадке малины весной.")
                for n in range(30)]
    text = render_transcript(segments).text
    result = chunk_of(ExtractedDocument(source_type="voice", source_identifier="v.ogg", text=text,
                                     segments=segments))
    assert len(result.records) > 2
    for record in result.records:
        numbers = [int(w) for w in record.text.replace(".", " ").split() if w.isdigit()]
        assert record.ts_start is not None and record.ts_end is not None
        assert record.ts_start <= 10.0 * min(numbers) and record.ts_end >= 10.0 * max(numbers) + 8
    assert result.records[-1].ts_end == 298.0


def test_pdf_chunks_carry_their_page(env) -> None:  # type: ignore[no-untyped-def]
    pages = ["Первая страница про смородину.", "Вторая страница про крыжовник."]
    result = chunk_of(ExtractedDocument(source_type="pdf", source_identifier="a.pdf",
                                     text="\n\n".join(pages), pages=pages))
    assert [(r.page, r.text) for r in result.records] == [(1, pages[0]), (2, pages[1])]


def test_manual_chunks_carry_page_labels_and_sections(env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from nodes.ingestion.parse_files import parse_file
    from tests.support.documents import make_manual_pdf

    env(GROVE_CHUNK_TARGET_CHARS="1000", GROVE_CHUNK_OVERLAP_CHARS="200")
    document = parse_file(str(make_manual_pdf(tmp_path / "manual.pdf")), "manual.pdf", None, get_settings())
    result = chunk_of(document)
    by_section = {r.section: r for r in result.records}
    linux = by_section["1 Установка → 1.2 Linux"]
    assert (linux.page, linux.page_label) == (5, "2")  # physical page 5 prints «2»
    assert linux.text.startswith("1.2 Linux\n") and "journalctl" in linux.text
    assert by_section["Предисловие"].page_label == "ii"
    assert all(r.page != 3 for r in result.records)  # the blank page gives no chunk
    # the bare chapter heading travels with its first section instead of standing alone
    windows = next(r for r in result.records if r.section == "1 Установка → 1.1 Windows")
    assert windows.text.startswith("1 Установка\n1.1 Windows\n")
    assert all(len(r.text) > 100 for r in result.records)


def test_a_heading_equal_to_the_title_is_not_repeated_in_the_path(env) -> None:  # type: ignore[no-untyped-def]
    from grove.core.ingest_types import Section

    text = "Сад\n\nВступление про сад.\n\nМалина\n\nМалину подвязывают весной."
    cut = text.index("Малина")
    document = ExtractedDocument(source_type="html", source_identifier="sad.html", title="Сад", text=text,
                                 sections=[Section(start=0, end=cut, path=["Сад"]),
                                           Section(start=cut, end=len(text), path=["Сад", "Малина"])])
    env(GROVE_CHUNK_MERGE_CHARS="0")
    assert [r.section for r in chunk_of(document).records] == [None, "Малина"]
