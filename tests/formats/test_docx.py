"""DOCX (`nodes.ingestion.formats.docx`), written with python-docx: outline levels (direct, and
inherited through a style's base), merged cells once, the «Title» paragraph standing in for a
junk title; claimed as a zip holding word/document.xml."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.docx import BROKEN, FORMAT


def _outline(properties: object, level: int) -> None:
    element = OxmlElement("w:outlineLvl")
    element.set(qn("w:val"), str(level))
    properties.append(element)  # type: ignore[attr-defined]


def _garden(path: Path, *, core_title: str | None) -> Path:
    document = docx.Document()
    document.add_paragraph("Садовый календарь", style="Title")
    document.add_paragraph("Вступление без заголовка.")
    # a custom style based on a custom style that sets outline level 0 (= heading 1)
    chapter = document.styles.add_style("Раздел", WD_STYLE_TYPE.PARAGRAPH)
    _outline(chapter.element.get_or_add_pPr(), 0)
    sub = document.styles.add_style("Подраздел основа", WD_STYLE_TYPE.PARAGRAPH)
    sub.base_style = chapter
    document.add_paragraph("Весна", style="Подраздел основа")  # inherits level 1 from its base
    document.add_paragraph("Яблони белят в марте.")
    direct = document.add_paragraph("Полив")
    _outline(direct._p.get_or_add_pPr(), 1)  # a directly set outline level 2
    document.add_paragraph("Поливают по утрам.")
    body = document.add_paragraph("Обычный абзац с outline level 9.")
    _outline(body._p.get_or_add_pPr(), 9)  # 9 is body text
    table = document.add_table(rows=2, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "Сроки полива"
    for cell, value in zip(table.rows[1].cells, ["Май", "Июнь", "Июль"]):
        cell.text = value
    if core_title is not None:
        document.core_properties.title = core_title
    document.save(str(path))
    return path


def _upload(path: Path, name: str | None = None) -> Upload:
    return Upload.open(path, name or path.name, None)


def test_outline_levels_direct_and_inherited_become_sections(tmp_path: Path) -> None:
    doc = FORMAT.parse(_upload(_garden(tmp_path / "сад.docx", core_title=None)))
    assert doc.source_type == "docx"
    assert [s.path for s in doc.sections] == [[], ["Весна"], ["Весна", "Полив"]]
    polivat = doc.sections[2]
    assert doc.text[polivat.start:polivat.end].startswith("Полив\n\nПоливают по утрам.\n\nОбычный абзац")
    assert doc.meta == {"paragraphs": 7, "tables": 1}


def test_merged_cells_are_read_once(tmp_path: Path) -> None:
    doc = FORMAT.parse(_upload(_garden(tmp_path / "сад.docx", core_title=None)))
    assert doc.text.endswith("Сроки полива\nМай | Июнь | Июль")


@pytest.mark.parametrize("core_title, expected", [
    (None, "Садовый календарь"),                          # no title: the «Title» paragraph
    ("Microsoft Word - сад.docx", "Садовый календарь"),   # a junk title: the same
    ("Календарь садовода 2025", "Календарь садовода 2025"),  # a real title is kept
])
def test_title_from_core_properties_else_the_title_paragraph(tmp_path: Path, core_title: str | None,
                                                             expected: str) -> None:
    assert FORMAT.parse(_upload(_garden(tmp_path / "сад.docx", core_title=core_title))).title == expected


def test_without_a_title_paragraph_the_first_heading_then_the_file_name(tmp_path: Path) -> None:
    document = docx.Document()
    document.add_paragraph("Текст до заголовка.")
    document.add_heading("Осенние работы", level=2)
    document.save(str(tmp_path / "осень.docx"))
    assert FORMAT.parse(_upload(tmp_path / "осень.docx")).title == "Осенние работы"
    plain = docx.Document()
    plain.add_paragraph("Только текст.")
    plain.save(str(tmp_path / "заметка.docx"))
    assert FORMAT.parse(_upload(tmp_path / "заметка.docx")).title == "заметка"


def test_docx_is_claimed_by_its_document_part_whatever_its_name(tmp_path: Path) -> None:
    path = _garden(tmp_path / "download.bin", core_title=None)
    assert detect(_upload(path, "download.bin")) is FORMAT
    other = tmp_path / "other.docx"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    assert not FORMAT.claims(_upload(other))


def test_a_docx_whose_document_part_is_not_xml_is_broken(tmp_path: Path) -> None:
    path = tmp_path / "bad.docx"
    source = _garden(tmp_path / "good.docx", core_title=None)
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w") as archive:
        for item in original.infolist():
            data = b"<w:document" if item.filename == "word/document.xml" else original.read(item)
            archive.writestr(item, data)
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(_upload(path))
    assert caught.value.user_message == BROKEN and "bad.docx" in caught.value.reason
