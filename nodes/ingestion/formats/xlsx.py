"""Excel (XLSX): one section per sheet (its name), one line per row: «cell | cell | …»."""

from __future__ import annotations

import posixpath
import zipfile

from lxml import etree

from nodes.ingestion.formats.base import Blocks
from nodes.ingestion.formats.zipped import NS, Parsed, has_parts, text_of, xml, zip_format


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    if "xl/sharedStrings.xml" not in archive.namelist():
        return []
    return [text_of(si) for si in xml(archive, "xl/sharedStrings.xml").iterfind("s:si", NS)]


def _cell(cell: etree._Element, strings: list[str]) -> str:
    kind = cell.get("t")
    if kind == "inlineStr":
        return text_of(cell)
    value: str = cell.findtext("s:v", default="", namespaces=NS) or ""
    if kind == "s" and value.isdigit() and int(value) < len(strings):
        return strings[int(value)]
    return value


def read(archive: zipfile.ZipFile) -> Parsed:
    workbook = xml(archive, "xl/workbook.xml")
    relations = xml(archive, "xl/_rels/workbook.xml.rels")
    targets = {r.get("Id"): r.get("Target") for r in relations.iterfind("rel:Relationship", NS)}
    strings = _shared_strings(archive)
    blocks: Blocks = []
    sheets = workbook.findall(".//s:sheets/s:sheet", NS)
    for sheet in sheets:
        target = targets.get(sheet.get(f"{{{NS['r']}}}id"), "")
        part = posixpath.normpath(posixpath.join("xl", target.lstrip("/").removeprefix("xl/")))
        if part not in archive.namelist():
            continue
        rows = []
        for row in xml(archive, part).iterfind(".//s:sheetData/s:row", NS):
            cells = [_cell(c, strings) for c in row.iterfind("s:c", NS)]
            if any(cells):
                rows.append(" | ".join(cells))
        if rows:
            blocks.append((sheet.get("name") or "Лист", 1))
            blocks += [(r, 0) for r in rows]
    return Parsed("xlsx", blocks, meta={"sheets": len(sheets)})


FORMAT = zip_format(read, name="xlsx", label="XLSX", accepts=has_parts("xl/workbook.xml"), order=60)
