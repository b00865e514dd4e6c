"""OpenDocument text (ODT): headings with their outline level, paragraphs and list items,
table rows, in document order; title and author from meta.xml."""

from __future__ import annotations

import zipfile

from lxml import etree

from nodes.ingestion.formats.base import Blocks
from nodes.ingestion.formats.zipped import NS, Parsed, first, has_mimetype, text_of, xml, zip_format


def _cell_text(cell: etree._Element) -> str:
    """A table cell's paragraphs, one after another with a space («Май», «Июнь» → «Май Июнь»)."""
    paragraphs = cell.findall(".//text:p", NS) + cell.findall(".//text:h", NS)
    return " ".join(t for t in (text_of(p) for p in paragraphs) if t) if paragraphs else text_of(cell)


def read(archive: zipfile.ZipFile) -> Parsed:
    root = xml(archive, "content.xml")
    body = root.find("office:body/office:text", NS)
    blocks: Blocks = []
    for element in body.iter(f"{{{NS['text']}}}h", f"{{{NS['text']}}}p", f"{{{NS['table']}}}table-row"):
        if element.tag.endswith("table-row"):
            cells = [_cell_text(cell) for cell in element.findall("table:table-cell", NS)]
            if any(cells):
                blocks.append((" | ".join(cells), 0))
            continue
        if element.getparent() is not None and element.getparent().tag.endswith("table-cell"):
            continue  # a cell's paragraph: already in its row
        text = text_of(element)
        if text:
            level = int(element.get(f"{{{NS['text']}}}outline-level", "1")) if element.tag.endswith("}h") else 0
            blocks.append((text, level))
    tables = len(body.findall(".//table:table", NS))
    title = author = None
    if "meta.xml" in archive.namelist():
        meta = xml(archive, "meta.xml")
        title, author = first(meta, ".//dc:title"), first(meta, ".//dc:creator")
    return Parsed("odt", blocks, title, author, {"tables": tables}, heading_is_title=True)


FORMAT = zip_format(read, name="odt", label="ODT", accepts=has_mimetype("application/vnd.oasis.opendocument.text"), order=30)
