"""Zipped XML formats (`nodes.ingestion.formats.zipped`): blocks become an ExtractedDocument,
a junk title is replaced, whatever a broken archive raises becomes «файл повреждён», and the
XML parser neither expands entities nor fetches anything."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload
from nodes.ingestion.formats.zipped import (
    Parsed,
    document,
    first,
    has_mimetype,
    has_parts,
    read_zip,
    text_of,
    xml,
    zip_format,
)


def _zip(path: Path, parts: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, body in parts.items():
            archive.writestr(name, body)
    return path


def test_blocks_become_text_and_sections_with_the_format_meta() -> None:
    parsed = Parsed("demo", [("Глава", 1), ("Текст.", 0)], title="Книга", author="Автор", meta={"parts": 2})
    doc = document(parsed, "book.demo")
    assert (doc.source_type, doc.source_identifier, doc.title, doc.author) == ("demo", "book.demo", "Книга", "Автор")
    assert doc.text == "Глава\n\nТекст." and [s.path for s in doc.sections] == [["Глава"]]
    assert doc.meta == {"parts": 2}


def test_a_junk_title_is_the_first_heading_only_where_headings_are_titles() -> None:
    blocks = [("Вступление.", 0), ("Первая   глава", 2), ("Текст.", 0)]
    assert document(Parsed("demo", blocks, title="Untitled", heading_is_title=True), "x.demo").title == "Первая глава"
    assert document(Parsed("demo", blocks, title="Untitled"), "отчёт.demo").title == "отчёт"
    assert document(Parsed("demo", [("Текст.", 0)], heading_is_title=True), "без.demo").title == "без"


def test_no_blocks_is_no_text() -> None:
    with pytest.raises(IngestError) as caught:
        document(Parsed("demo", []), "пусто.demo")
    assert caught.value.user_message == "В файле «пусто.demo» нет текста — индексировать нечего."
    assert caught.value.reason == "DEMO пусто.demo has no text"


def test_xml_helpers_read_text_and_refuse_entities(tmp_path: Path) -> None:
    path = _zip(tmp_path / "a.zip", {
        "meta.xml": '<m xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title> Сад \n и  <b>огород</b></dc:title>'
                    "<dc:creator/></m>",
        "evil.xml": '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/hostname">]><r>&x;</r>',
    })
    with zipfile.ZipFile(path) as archive:
        root = xml(archive, "meta.xml")
        assert first(root, ".//dc:title") == "Сад и огород"
        assert first(root, ".//dc:creator") is None and first(root, ".//dc:subject") is None
        assert text_of(root) == "Сад и огород"
        evil = xml(archive, "evil.xml")
        assert text_of(evil) == "&x;"  # the external entity stays an unexpanded reference: no file read


def test_formats_are_recognised_by_parts_or_by_the_mimetype_part(tmp_path: Path) -> None:
    upload = Upload.open(_zip(tmp_path / "d.zip", {"mimetype": "application/x-demo", "a/b.xml": "<x/>"}), "d", None)
    assert has_parts("a/b.xml")(upload) and not has_parts("a/b.xml", "c.xml")(upload)
    assert has_mimetype("application/x-demo")(upload) and not has_mimetype("application/epub+zip")(upload)


def _reader(archive: zipfile.ZipFile) -> Parsed:
    return Parsed("demo", [(text_of(xml(archive, "body.xml")), 0)])


def test_a_zip_format_reads_through_its_reader_and_calls_failures_broken(tmp_path: Path) -> None:
    fmt = zip_format(_reader, name="demo", label="DEMO", accepts=has_parts("body.xml"), order=99)
    assert fmt.extensions == frozenset({".demo"}) and fmt.signatures == frozenset({"zip"}) and fmt.hint == "DEMO"
    good = _zip(tmp_path / "good.demo", {"body.xml": "<b>Привет, сад.</b>"})
    assert fmt.parse(Upload.open(good, "good.demo", None)).text == "Привет, сад."
    for name, parts in (("missing.demo", {"other.xml": "<x/>"}),      # KeyError
                        ("cut.demo", {"body.xml": "<b>без конца"})):    # XMLSyntaxError
        with pytest.raises(IngestError) as caught:
            fmt.parse(Upload.open(_zip(tmp_path / name, parts), name, None))
        assert caught.value.user_message == "Не удалось открыть DEMO: файл повреждён."
        assert caught.value.reason.startswith(f"DEMO {name}: ")


def test_a_readers_own_refusal_passes_through(tmp_path: Path) -> None:
    def refusing(archive: zipfile.ZipFile) -> Parsed:
        raise IngestError("Своё сообщение.", "own")

    fmt = zip_format(refusing, name="demo", label="DEMO", accepts=has_parts("x"), order=99)
    upload = Upload.open(_zip(tmp_path / "a.demo", {"x": "y"}), "a.demo", None)
    with pytest.raises(IngestError) as caught:
        read_zip(upload, fmt, refusing)
    assert caught.value.user_message == "Своё сообщение."
