"""OpenDocument text (`nodes.ingestion.formats.odt`): headings with their outline level, paragraphs
and list items, table rows once each, in document order; title and author from meta.xml; claimed
by the `mimetype` part."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.odt import FORMAT

NAMESPACES = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
              'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
              'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"')
BODY = ("<text:p>Вступление.</text:p>"
        '<text:h text:outline-level="1">Посадка</text:h>'
        "<text:list><text:list-item><text:p>Выкопать яму.</text:p></text:list-item>"
        "<text:list-item><text:p>Полить <text:span>обильно</text:span>.</text:p></text:list-item></text:list>"
        '<text:h text:outline-level="3">Глубина</text:h>'
        "<text:p>Сорок сантиметров.</text:p>"
        "<table:table><table:table-row><table:table-cell><text:p>Сорт</text:p></table:table-cell>"
        "<table:table-cell><text:p>Глубина, см</text:p></table:table-cell></table:table-row>"
        "<table:table-row><table:table-cell/><table:table-cell/></table:table-row></table:table>"
        "<text:h>Уход</text:h><text:p/>")


def _odt(path: Path, body: str, meta: str | None, mimetype: str = "application/vnd.oasis.opendocument.text") -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", mimetype)
        archive.writestr("content.xml", f'<office:document-content {NAMESPACES}><office:body><office:text>{body}'
                                        "</office:text></office:body></office:document-content>")
        if meta is not None:
            archive.writestr("meta.xml", '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:'
                                         'xmlns:office:1.0" xmlns:dc="http://purl.org/dc/elements/1.1/">'
                                         f"<office:meta>{meta}</office:meta></office:document-meta>")
    return path


def test_headings_lists_and_table_rows_in_document_order(tmp_path: Path) -> None:
    doc = FORMAT.parse(Upload.open(_odt(tmp_path / "сад.odt", BODY, None), "сад.odt", None))
    assert doc.source_type == "odt"
    assert doc.text.split("\n\n") == ["Вступление.", "Посадка", "Выкопать яму.", "Полить обильно.",
                                      "Глубина", "Сорок сантиметров.", "Сорт | Глубина, см", "Уход"]
    assert [s.path for s in doc.sections] == [[], ["Посадка"], ["Посадка", "Глубина"], ["Уход"]]  # level 1 default
    assert doc.meta == {"tables": 1}


def test_title_and_author_from_meta_else_the_first_heading(tmp_path: Path) -> None:
    meta = "<dc:title>Календарь</dc:title><dc:creator>Анна Садовая</dc:creator>"
    with_meta = FORMAT.parse(Upload.open(_odt(tmp_path / "a.odt", BODY, meta), "a.odt", None))
    assert (with_meta.title, with_meta.author) == ("Календарь", "Анна Садовая")
    junk = FORMAT.parse(Upload.open(_odt(tmp_path / "b.odt", BODY, "<dc:title>Без названия</dc:title>"), "b.odt", None))
    assert (junk.title, junk.author) == ("Посадка", None)


def test_an_odt_without_text_and_an_odt_without_a_body(tmp_path: Path) -> None:
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(Upload.open(_odt(tmp_path / "e.odt", "<text:p> </text:p>", None), "e.odt", None))
    assert caught.value.user_message == "В файле «e.odt» нет текста — индексировать нечего."
    path = tmp_path / "nobody.odt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        archive.writestr("content.xml", f"<office:document-content {NAMESPACES}/>")
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(Upload.open(path, "nobody.odt", None))
    assert caught.value.user_message == "Не удалось открыть ODT: файл повреждён."


def test_odt_is_claimed_by_its_mimetype_and_other_opendocuments_are_named(tmp_path: Path) -> None:
    assert detect(Upload.open(_odt(tmp_path / "file", BODY, None), "file", None)) is FORMAT
    sheet = _odt(tmp_path / "table.ods", BODY, None, mimetype="application/vnd.oasis.opendocument.spreadsheet")
    with pytest.raises(IngestError) as caught:
        detect(Upload.open(sheet, "table.ods", None))
    assert caught.value.user_message.startswith(
        "Этот тип файла не поддерживается: документ OpenDocument (не текстовый).")


def test_the_paragraphs_of_one_table_cell_stay_separate_words(tmp_path: Path) -> None:
    body = ("<table:table><table:table-row><table:table-cell><text:p>Сроки</text:p></table:table-cell>"
            "<table:table-cell><text:p>Май</text:p><text:p>Июнь</text:p></table:table-cell>"
            "</table:table-row></table:table>")
    doc = FORMAT.parse(Upload.open(_odt(tmp_path / "c.odt", body, None), "c.odt", None))
    assert doc.text == "Сроки | Май Июнь"


def test_spaces_tabs_and_line_breaks_written_as_elements_part_words(tmp_path: Path) -> None:
    """«Один<text:s/>два»: WordGrinder writes every space so, LibreOffice a run of spaces, a tab and a
    line break inside a paragraph; read as text alone they glued the words on both sides."""
    body = ("<text:p>Выкопать<text:s/>яму<text:s text:c=\"3\"/>глубиной<text:tab/>40 см."
            "<text:line-break/>Полить<!-- примечание --> обильно.</text:p>")
    doc = FORMAT.parse(Upload.open(_odt(tmp_path / "s.odt", body, None), "s.odt", None))
    assert doc.text == "Выкопать яму глубиной 40 см. Полить обильно."
