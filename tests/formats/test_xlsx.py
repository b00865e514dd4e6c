"""Excel (`nodes.ingestion.formats.xlsx`): one section per sheet, one line per row; shared,
inline and numeric cells; sheets found through the workbook's relationships."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.xlsx import FORMAT

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
REL = "http://schemas.openxmlformats.org/package/2006/relationships"


def _sheet(rows: str) -> str:
    return f'<worksheet xmlns="{S}"><sheetData>{rows}</sheetData></worksheet>'


def _xlsx(path: Path, sheets: list[tuple[str, str, str | None]], strings: list[str] | None) -> Path:
    """`sheets`: (name, relationship target, sheet XML or None for a missing part)."""
    listed = "".join(f'<sheet name="{name}" sheetId="{n}" r:id="rId{n}"/>' for n, (name, _, _) in enumerate(sheets, 1))
    rels = "".join(f'<Relationship Id="rId{n}" Target="{target}"/>' for n, (_, target, _) in enumerate(sheets, 1))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("xl/workbook.xml", f'<workbook xmlns="{S}" xmlns:r="{R}"><sheets>{listed}</sheets></workbook>')
        archive.writestr("xl/_rels/workbook.xml.rels", f'<Relationships xmlns="{REL}">{rels}</Relationships>')
        if strings is not None:
            items = "".join(f"<si>{s}</si>" for s in strings)
            archive.writestr("xl/sharedStrings.xml", f'<sst xmlns="{S}">{items}</sst>')
        for _, target, body in sheets:
            if body is not None:
                archive.writestr("xl/" + target.lstrip("/").removeprefix("xl/"), body)
    return path


def test_shared_inline_and_numeric_cells_sheet_by_sheet(tmp_path: Path) -> None:
    strings = ["<t>Сорт</t>", "<t>Урожай</t>", "<r><t>Ге</t></r><r><t>ракл</t></r>"]  # a rich-text string
    first = _sheet('<row r="1"><c t="s"><v>0</v></c><c t="s"><v>1</v></c></row>'
                   '<row r="2"><c t="s"><v>2</v></c><c><v>12.5</v></c></row>'
                   '<row r="3"><c/><c t="s"><v/></c></row>'                       # an empty row: no line
                   '<row r="4"><c t="inlineStr"><is><t>Полка</t></is></c><c t="s"><v>99</v></c></row>')
    second = _sheet('<row r="1"><c t="b"><v>1</v></c><c t="str"><v>итог</v></c></row>')
    path = _xlsx(tmp_path / "урожай.xlsx", [("2025", "worksheets/sheet1.xml", first),
                                            ("Итоги", "/xl/worksheets/sheet2.xml", second),  # absolute target
                                            ("Пустой", "worksheets/sheet3.xml", _sheet("")),
                                            ("Потерян", "worksheets/sheet9.xml", None)], strings)
    doc = FORMAT.parse(Upload.open(path, "урожай.xlsx", None))
    assert doc.text.split("\n\n") == ["2025", "Сорт | Урожай", "Геракл | 12.5", "Полка | 99", "Итоги", "1 | итог"]
    assert [s.path for s in doc.sections] == [["2025"], ["Итоги"]]
    assert doc.meta == {"sheets": 4} and doc.title == "урожай"


def test_a_workbook_without_shared_strings_reads_its_numbers(tmp_path: Path) -> None:
    path = _xlsx(tmp_path / "n.xlsx", [("Лист1", "worksheets/sheet1.xml", _sheet('<row><c><v>42</v></c></row>'))],
                 None)
    assert FORMAT.parse(Upload.open(path, "n.xlsx", None)).text == "Лист1\n\n42"


def test_a_workbook_of_empty_sheets_has_no_text(tmp_path: Path) -> None:
    path = _xlsx(tmp_path / "e.xlsx", [("Лист1", "worksheets/sheet1.xml", _sheet(""))], None)
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(Upload.open(path, "e.xlsx", None))
    assert caught.value.user_message == "В файле «e.xlsx» нет текста — индексировать нечего."


def test_xlsx_is_claimed_by_its_workbook_part(tmp_path: Path) -> None:
    path = _xlsx(tmp_path / "export", [("Лист1", "worksheets/sheet1.xml", _sheet(""))], None)
    assert detect(Upload.open(path, "export", None)) is FORMAT
