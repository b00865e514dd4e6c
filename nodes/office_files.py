"""Zipped document formats beside DOCX: OpenDocument text, EPUB, PowerPoint and Excel.

Each is a zip of XML parts, so each parser reads the parts it needs with lxml (already in
the dependency tree) and turns them into blocks — (text, heading level) in reading order —
that `parse_files.sections_from_blocks` makes into text and sections, as DOCX does. The
zip's central directory has been checked against zip bombs before any parser here runs.

A parser is an entry of `ZIP_PARSERS`, keyed by what `zip_kind` recognises in the archive;
adding a format is adding a function and an entry.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

Blocks = list[tuple[str, int]]  # (text, heading level; 0 for body text)

_NS = {
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "opf": "http://www.idpf.org/2007/opf",
    "container": "urn:oasis:names:tc:opendocument:xmlns:container",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "s": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
_HTML_PARSER = etree.HTMLParser(no_network=True)


@dataclass
class Parsed:
    """What a zipped format yields before it becomes an ExtractedDocument."""

    source_type: str
    blocks: Blocks
    title: str | None = None
    author: str | None = None
    meta: dict[str, int] = field(default_factory=dict)


def _xml(archive: zipfile.ZipFile, part: str) -> etree._Element:
    return etree.fromstring(archive.read(part), _PARSER)


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _first(root: etree._Element, path: str) -> str | None:
    found = root.find(path, _NS)
    return (_text(found) or None) if found is not None else None


# --- OpenDocument text (ODT) -------------------------------------------------------


def parse_odt(archive: zipfile.ZipFile) -> Parsed:
    """Headings (`text:h` with their outline level), paragraphs and list items, table rows."""
    root = _xml(archive, "content.xml")
    body = root.find("office:body/office:text", _NS)
    blocks: Blocks = []
    for element in body.iter(f"{{{_NS['text']}}}h", f"{{{_NS['text']}}}p", f"{{{_NS['table']}}}table-row"):
        if element.tag.endswith("table-row"):
            cells = [_text(cell) for cell in element.findall("table:table-cell", _NS)]
            if any(cells):
                blocks.append((" | ".join(cells), 0))
            continue
        if element.getparent() is not None and element.getparent().tag.endswith("table-cell"):
            continue  # a cell's paragraph: already in its row
        text = _text(element)
        if text:
            level = int(element.get(f"{{{_NS['text']}}}outline-level", "1")) if element.tag.endswith("}h") else 0
            blocks.append((text, level))
    tables = len(body.findall(".//table:table", _NS))
    title = author = None
    if "meta.xml" in archive.namelist():
        meta = _xml(archive, "meta.xml")
        title, author = _first(meta, ".//dc:title"), _first(meta, ".//dc:creator")
    return Parsed("odt", blocks, title, author, {"tables": tables})


# --- EPUB ---------------------------------------------------------------------------

_HEADING = re.compile(r"^h([1-6])$")
_BLOCK_TAGS = {"p", "li", "pre", "blockquote", "dt", "dd", "td", "th", "figcaption"}


def _html_blocks(markup: bytes) -> Blocks:
    """Headings and text blocks of one XHTML chapter, in document order."""
    root = etree.fromstring(markup, _HTML_PARSER)
    if root is None:
        return []
    blocks: Blocks = []
    for element in root.iter():
        tag = element.tag if isinstance(element.tag, str) else ""
        tag = tag.rsplit("}", 1)[-1].lower()
        heading = _HEADING.match(tag)
        if heading or tag in _BLOCK_TAGS:
            # a block inside another block (a <p> in an <li>) is read with its parent
            if any(isinstance(a.tag, str) and a.tag.rsplit("}", 1)[-1].lower() in _BLOCK_TAGS
                   for a in element.iterancestors()):
                continue
            text = _text(element)
            if text:
                blocks.append((text, int(heading.group(1)) if heading else 0))
    return blocks


def parse_epub(archive: zipfile.ZipFile) -> Parsed:
    """The spine's chapters in reading order (container.xml → the package document → spine)."""
    container = _xml(archive, "META-INF/container.xml")
    rootfile = container.find(".//container:rootfile", _NS)
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path:
        raise ValueError("EPUB without a package document")
    package = _xml(archive, opf_path)
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item.get("href") for item in package.iterfind(".//opf:manifest/opf:item", _NS)}
    chapters = [manifest[ref.get("idref")] for ref in package.iterfind(".//opf:spine/opf:itemref", _NS)
                if ref.get("idref") in manifest]
    blocks: Blocks = []
    names = set(archive.namelist())
    for href in chapters:
        part = posixpath.normpath(posixpath.join(base, href.split("#", 1)[0]))
        if part in names:
            blocks += _html_blocks(archive.read(part))
    return Parsed("epub", blocks, _first(package, ".//dc:title"), _first(package, ".//dc:creator"),
                  {"chapters": len(chapters)})


# --- PowerPoint (PPTX) ----------------------------------------------------------------


def _numbered(names: list[str], pattern: str) -> list[str]:
    found = [(int(m.group(1)), n) for n in names if (m := re.fullmatch(pattern, n))]
    return [n for _, n in sorted(found)]


def parse_pptx(archive: zipfile.ZipFile) -> Parsed:
    """One section per slide («Слайд N: its title»), its paragraphs below."""
    slides = _numbered(archive.namelist(), r"ppt/slides/slide(\d+)\.xml")
    blocks: Blocks = []
    for number, part in enumerate(slides, 1):
        root = _xml(archive, part)
        paragraphs = [_text(p) for p in root.iter(f"{{{_NS['a']}}}p")]
        paragraphs = [p for p in paragraphs if p]
        if not paragraphs:
            continue
        blocks.append((f"Слайд {number}: {paragraphs[0]}", 1))
        blocks += [(p, 0) for p in paragraphs[1:]]
    return Parsed("pptx", blocks, meta={"slides": len(slides)})


# --- Excel (XLSX) -----------------------------------------------------------------------


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    if "xl/sharedStrings.xml" not in archive.namelist():
        return []
    return [_text(si) for si in _xml(archive, "xl/sharedStrings.xml").iterfind("s:si", _NS)]


def _cell(cell: etree._Element, strings: list[str]) -> str:
    kind = cell.get("t")
    if kind == "inlineStr":
        return _text(cell)
    value = cell.findtext("s:v", default="", namespaces=_NS)
    if kind == "s" and value.isdigit() and int(value) < len(strings):
        return strings[int(value)]
    return value


def parse_xlsx(archive: zipfile.ZipFile) -> Parsed:
    """One section per sheet (its name), one line per row: «cell | cell | …»."""
    workbook = _xml(archive, "xl/workbook.xml")
    relations = _xml(archive, "xl/_rels/workbook.xml.rels")
    targets = {r.get("Id"): r.get("Target") for r in relations.iterfind("rel:Relationship", _NS)}
    strings = _shared_strings(archive)
    blocks: Blocks = []
    sheets = workbook.findall(".//s:sheets/s:sheet", _NS)
    for sheet in sheets:
        target = targets.get(sheet.get(f"{{{_NS['r']}}}id"), "")
        part = posixpath.normpath(posixpath.join("xl", target.lstrip("/").removeprefix("xl/")))
        if part not in archive.namelist():
            continue
        rows = []
        for row in _xml(archive, part).iterfind(".//s:sheetData/s:row", _NS):
            cells = [_cell(c, strings) for c in row.iterfind("s:c", _NS)]
            if any(cells):
                rows.append(" | ".join(cells))
        if rows:
            blocks.append((sheet.get("name") or "Лист", 1))
            blocks += [(r, 0) for r in rows]
    return Parsed("xlsx", blocks, meta={"sheets": len(sheets)})


# --- recognising the zip -----------------------------------------------------------------


def zip_kind(archive: zipfile.ZipFile) -> str:
    """Which format a zip is, by its parts: a key of `ZIP_PARSERS`, or a Russian name to refuse."""
    names = set(archive.namelist())
    if "word/document.xml" in names:
        return "docx"
    if "xl/workbook.xml" in names:
        return "xlsx"
    if "ppt/presentation.xml" in names:
        return "pptx"
    mimetype = archive.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
    if mimetype == "application/epub+zip":
        return "epub"
    if mimetype == "application/vnd.oasis.opendocument.text":
        return "odt"
    if mimetype.startswith("application/vnd.oasis.opendocument"):
        return "документ OpenDocument (не текстовый)"
    if "[Content_Types].xml" in names:
        return "документ Office"
    return "ZIP-архив"


ZIP_PARSERS: dict[str, Callable[[zipfile.ZipFile], Parsed]] = {
    "odt": parse_odt,
    "epub": parse_epub,
    "pptx": parse_pptx,
    "xlsx": parse_xlsx,
}

FORMAT_NAMES = {"odt": "ODT", "epub": "EPUB", "pptx": "PPTX", "xlsx": "XLSX", "docx": "DOCX"}
