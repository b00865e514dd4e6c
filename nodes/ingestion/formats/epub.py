"""EPUB: the spine's chapters in reading order (container.xml → the package document →
spine), each chapter's headings and text blocks."""

from __future__ import annotations

import posixpath
import re
import zipfile

from lxml import etree

from nodes.ingestion.formats.base import Blocks
from nodes.ingestion.formats.zipped import NS, Parsed, first, has_mimetype, text_of, xml, zip_format

_XML_DECLARED = re.compile(rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def _parser(markup: bytes) -> etree.HTMLParser:
    """An HTML parser told the chapter's encoding: the XML declaration's, else UTF-8 — XML's default,
    which an EPUB chapter may leave undeclared (lxml's HTML parser would guess Latin-1)."""
    declared = _XML_DECLARED.match(markup)
    return etree.HTMLParser(no_network=True, encoding=declared.group(1).decode() if declared else "utf-8")
_HEADING = re.compile(r"^h([1-6])$")
_BLOCK_TAGS = {"p", "li", "pre", "blockquote", "dt", "dd", "td", "th", "figcaption"}


def _tag(element: etree._Element) -> str:
    return element.tag.rsplit("}", 1)[-1].lower() if isinstance(element.tag, str) else ""


def _bare_div(element: etree._Element, tag: str) -> bool:
    """A <div> holding text but no paragraph or heading of its own (some EPUBs write a chapter so):
    read as one block, or its text would be lost."""
    return tag == "div" and not any(_tag(d) in _BLOCK_TAGS or _HEADING.match(_tag(d)) or _tag(d) == "div"
                                    for d in element.iterdescendants())


def chapter_blocks(markup: bytes) -> Blocks:
    """Headings and text blocks of one XHTML chapter, in document order."""
    root = etree.fromstring(markup, _parser(markup))
    if root is None:
        return []
    blocks: Blocks = []
    for element in root.iter():
        tag = _tag(element)
        heading = _HEADING.match(tag)
        if heading or tag in _BLOCK_TAGS or _bare_div(element, tag):
            # a block inside another block (a <p> in an <li>) is read with its parent
            if any(_tag(a) in _BLOCK_TAGS for a in element.iterancestors()):
                continue
            text = text_of(element)
            if text:
                blocks.append((text, int(heading.group(1)) if heading else 0))
    return blocks


def read(archive: zipfile.ZipFile) -> Parsed:
    container = xml(archive, "META-INF/container.xml")
    rootfile = container.find(".//container:rootfile", NS)
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path:
        raise ValueError("EPUB without a package document")
    package = xml(archive, opf_path)
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item.get("href") for item in package.iterfind(".//opf:manifest/opf:item", NS)}
    chapters = [manifest[ref.get("idref")] for ref in package.iterfind(".//opf:spine/opf:itemref", NS)
                if ref.get("idref") in manifest]
    blocks: Blocks = []
    names = set(archive.namelist())
    for href in chapters:
        part = posixpath.normpath(posixpath.join(base, href.split("#", 1)[0]))
        if part in names:
            blocks += chapter_blocks(archive.read(part))
    return Parsed("epub", blocks, first(package, ".//dc:title"), first(package, ".//dc:creator"),
                  {"chapters": len(chapters)}, heading_is_title=True)


FORMAT = zip_format(read, name="epub", label="EPUB", accepts=has_mimetype("application/epub+zip"), order=40)
