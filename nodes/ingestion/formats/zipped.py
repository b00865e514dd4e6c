"""Zipped XML formats (ODT, EPUB, PPTX, XLSX, …): each reads the parts it needs with lxml
(already in the dependency tree) into blocks — (text, heading level) in reading order — that
become text and sections here, as DOCX's do.

`zip_format` registers such a format; `read_zip` opens the archive (its central directory was bomb-checked by `Upload.zip_names`),
runs a format's reader and turns whatever a hostile or cut archive raises into the format's
«файл повреждён»; `document` makes the blocks an `ExtractedDocument`, with a junk title
replaced by the first heading (where a format's headings are titles) or the file name.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from nodes.ingestion.native import with_libxml
from nodes.ingestion.formats.base import Blocks, Format, Upload, empty, file_stem, is_junk_title, sections_from_blocks
from grove.core.ingest_types import ExtractedDocument, IngestError

NS = {
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
# No entities, no network: a document's XML cannot make the parser fetch or expand anything.
XML_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)

# What a hostile or cut archive raises while its parts are read (lxml's XMLSyntaxError is a SyntaxError).
BROKEN = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, KeyError,
          AttributeError, SyntaxError, IndexError, TypeError)


@dataclass
class Parsed:
    """What a zipped format yields before it becomes an ExtractedDocument."""

    source_type: str
    blocks: Blocks
    title: str | None = None
    author: str | None = None
    meta: dict[str, int] = field(default_factory=dict)
    heading_is_title: bool = False  # the first heading may stand in for a missing title


def xml(archive: zipfile.ZipFile, part: str) -> etree._Element:
    return etree.fromstring(archive.read(part), XML_PARSER)


# Empty elements that stand for white space: OpenDocument's spaces, tabs and line breaks («Один<text:s/>два»
# is two words; WordGrinder writes every space so), XHTML's and DrawingML's line breaks.
XHTML = "http://www.w3.org/1999/xhtml"
SPACES = frozenset({f"{{{NS['text']}}}s", f"{{{NS['text']}}}tab", f"{{{NS['text']}}}line-break",
                    f"{{{XHTML}}}br", "br", f"{{{NS['a']}}}br"})


def text_of(element: etree._Element) -> str:
    """The element's text as `itertext` reads it (no comment's or instruction's own text, an unexpanded
    entity as written), with the space elements as spaces, collapsed to single spaces."""
    pieces: list[str] = []

    def walk(node: etree._Element) -> None:
        if node.tag in SPACES:
            pieces.append(" ")
        elif isinstance(node.tag, str) or node.tag is etree.Entity:
            pieces.append(node.text or "")
        for child in node:
            walk(child)
            pieces.append(child.tail or "")

    walk(element)
    return " ".join("".join(pieces).split())


def first(root: etree._Element, path: str) -> str | None:
    found = root.find(path, NS)
    return (text_of(found) or None) if found is not None else None


def has_parts(*parts: str) -> Callable[[Upload], bool]:
    """`Format.accepts` for a zip recognised by the parts it holds."""
    return lambda upload: all(part in upload.zip_names for part in parts)


def has_mimetype(mimetype: str) -> Callable[[Upload], bool]:
    """`Format.accepts` for a zip recognised by its `mimetype` part (OpenDocument, EPUB)."""
    return lambda upload: upload.zip_mimetype == mimetype


def zip_format(reader: Callable[[zipfile.ZipFile], Parsed], *, name: str, label: str,
               accepts: Callable[[Upload], bool], order: float) -> Format:
    """A zipped XML format: claimed by a zip's parts (`accepts`), named by its extension, read by
    `reader` through `read_zip`."""
    def parse(upload: Upload) -> ExtractedDocument:
        return read_zip(upload, fmt, reader)

    fmt = Format(name=name, label=label, parse=parse, hint=label, order=order, signatures=frozenset({"zip"}),
                 accepts=accepts, extensions=frozenset({f".{name}"}))
    return fmt


@with_libxml
def read_zip(upload: Upload, fmt: Format, reader: Callable[[zipfile.ZipFile], Parsed]) -> ExtractedDocument:
    """Run `reader` on the archive; a failure is the format's «файл повреждён», an archive
    without text is «нет текста»."""
    try:
        with zipfile.ZipFile(upload.path) as archive:
            parsed = reader(archive)
    except IngestError:
        raise
    except BROKEN as exc:
        raise IngestError(fmt.broken, f"{fmt.label} {upload.name}: {exc!r}") from exc
    return document(parsed, upload.name)


def document(parsed: Parsed, name: str) -> ExtractedDocument:
    if not parsed.blocks:
        raise empty(name, f"{parsed.source_type.upper()} {name} has no text")
    text, sections = sections_from_blocks(parsed.blocks)
    title = parsed.title
    if is_junk_title(title):
        heading = next((" ".join(t.split()) for t, level in parsed.blocks if level), None)
        title = (heading if parsed.heading_is_title else None) or file_stem(name)
    return ExtractedDocument(source_type=parsed.source_type, source_identifier=name, title=title,
                             author=parsed.author, text=text, sections=sections, meta=dict(parsed.meta))
