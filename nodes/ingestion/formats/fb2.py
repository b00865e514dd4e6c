"""FictionBook (FB2), the e-book format of Russian libraries, plain or zipped («.fb2.zip»):
the book's title and author from its description, its annotation, then every body's sections
in order — nested sections as nested headings, paragraphs, verse lines, tables and
epigraphs as text. Embedded pictures (base64 `binary` parts) are skipped.

The XML is parsed without entities or network access; its declared encoding (often
windows-1251) is honoured by lxml.
"""

from __future__ import annotations

import zipfile

from lxml import etree

from nodes.ingestion.formats.base import Blocks, Format, Upload
from nodes.ingestion.native import with_libxml
from nodes.ingestion.formats.zipped import BROKEN, XML_PARSER, Parsed, document, text_of
from grove.core.ingest_types import ExtractedDocument, IngestError

_TEXT = {"p", "v", "subtitle", "text-author"}
_CONTAINERS = {"poem", "stanza", "cite", "epigraph", "annotation"}


def _tag(element: etree._Element) -> str:
    return element.tag.rsplit("}", 1)[-1] if isinstance(element.tag, str) else ""


def _child(element: etree._Element | None, *path: str) -> etree._Element | None:
    for name in path:
        if element is None:
            return None
        element = next((c for c in element if _tag(c) == name), None)
    return element


def _walk(element: etree._Element, depth: int, blocks: Blocks, headings: bool = True) -> None:
    """Blocks of a body or section: a section's title is a heading one level below its parent's;
    titles inside poems and epigraphs, and the body's own title, are text."""
    for child in element:
        tag = _tag(child)
        if tag == "section":
            _walk(child, depth + 1, blocks)
        elif tag == "title":
            text = " ".join(filter(None, (text_of(p) for p in child))) or text_of(child)
            if text:
                blocks.append((text, depth if headings else 0))
        elif tag in _TEXT:
            if text := text_of(child):
                blocks.append((text, 0))
        elif tag == "table":
            for row in child:
                cells = [text_of(cell) for cell in row]
                if any(cells):
                    blocks.append((" | ".join(cells), 0))
        elif tag in _CONTAINERS:
            _walk(child, depth, blocks, headings=False)


def read(data: bytes) -> Parsed:
    root = etree.fromstring(data, XML_PARSER)
    if _tag(root) != "FictionBook":
        raise ValueError(f"root element is {_tag(root)!r}, not FictionBook")
    info = _child(root, "description", "title-info")
    title_element = _child(info, "book-title")
    title = text_of(title_element) if title_element is not None else None
    author = _child(info, "author")
    names = [text_of(n) for n in author if _tag(n) in ("first-name", "middle-name", "last-name")] if author is not None else []
    blocks: Blocks = []
    annotation = _child(info, "annotation")
    if annotation is not None:
        _walk(annotation, 0, blocks, headings=False)
    bodies = [element for element in root if _tag(element) == "body"]
    for body in bodies:
        _walk(body, 0, blocks)
    return Parsed("fb2", blocks, title or None, " ".join(n for n in names if n) or None,
                  {"bodies": len(bodies)}, heading_is_title=True)


def _zipped_book(upload: Upload) -> str | None:
    """The one .fb2 inside a «.fb2.zip»."""
    books = [n for n in upload.zip_names if n.lower().endswith(".fb2") and not n.endswith("/")]
    return books[0] if len(books) == 1 else None


@with_libxml
def parse(upload: Upload) -> ExtractedDocument:
    try:
        if upload.signature == "zip":
            with zipfile.ZipFile(upload.path) as archive:
                data = archive.read(_zipped_book(upload) or "")
        else:
            data = upload.path.read_bytes()
        parsed = read(data)
    except BROKEN as exc:  # lxml's XMLSyntaxError is a SyntaxError
        raise IngestError(FORMAT.broken, f"FB2 {upload.name}: {exc!r}") from exc
    return document(parsed, upload.name)


FORMAT = Format(
    name="fb2", label="FB2", parse=parse, hint="FB2", order=45,
    signatures=frozenset({"zip"}), plain=True, accepts=lambda upload: _zipped_book(upload) is not None,
    extensions=frozenset({".fb2"}), mime_types=frozenset({"application/x-fictionbook+xml",
                                                          "application/x-fictionbook"}),
    looks_like=lambda head: b"<FictionBook" in head,
)
