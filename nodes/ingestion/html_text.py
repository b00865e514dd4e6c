"""HTML to text as a reader sees it: one path for web pages and local HTML files.

trafilatura tells an article from the page around it well, but renders the text lossily: it drops inline
elements whose class looks like boilerplate (menu names), figure captions, some headings and lists. So
trafilatura only decides **where** the content is (the deepest element holding ``CONTAINER_SHARE`` of the
text it kept), and our own pass over that container renders **what** it says: every inline element, lists
after their lead-in, table rows, ``<pre>``, h1–h6 as section spans. The page's landmarks and link-only
blocks (navigation, unless a list's items) are left out; with nothing found, the whole body is rendered.
Figures: bench/README.md, «HTML extraction» (bench.html_extraction).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


from grove.core.ingest_types import ExtractedDocument, Section
from nodes.ingestion.native import with_libxml

# elements that never carry readable text
_SKIP_TAGS = {
    "script", "style", "noscript", "template", "svg", "math", "canvas", "iframe", "object",
    "embed", "head", "title", "meta", "link", "button", "input", "select", "textarea", "option",
    "img", "picture", "video", "audio", "source", "track", "map", "area", "dialog",
}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
# elements after which a reader sees a new line
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dir",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup",
    "hr", "html", "legend", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary",
    "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}
_LIST_TAGS = {"ul", "ol", "menu", "dir"}
_TIGHT_CONTEXTS = {"li", "dd"}  # a second block inside an item stays with the item
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
_WORD = re.compile(r"\w+", re.U)
_BREAK = "\u2028"  # a <br> while inline text is collected (U+2028 LINE SEPARATOR)

CONTAINER_SHARE = 0.9
"""The main container is the deepest element holding this share of the text trafilatura kept."""
KEPT_WORD_SHARE = 0.5
"""A block counts as kept by trafilatura when this share of its words is in trafilatura's text."""
MIN_PROSE_WORDS = 8
"""Kept blocks outside the main container need this many words to be taken."""
LINK_ONLY_SHARE = 0.9
"""A block whose text is at least this share link text is navigation (unless a lead-in line
introduces it as a list)."""
_AROUND_TAGS = {"nav", "footer"}
_AROUND_ROLES = {"navigation", "contentinfo", "search"}
"""The page's own marks for what is around its content (HTML's ``<nav>``/``<footer>``, ARIA's
landmark roles): never the main text, whatever trafilatura thinks. On a short help page yelp's
licence footer is longer than the page, and trafilatura took the footer for the article."""


@dataclass
class _Block:
    """One rendered block: its text, how it joins the previous block, where it came from."""

    text: str
    element: Any
    tight: bool = False  # joined to the previous block with one newline (list items, rows)
    heading: int = 0  # 1-6 for h1-h6
    link_chars: int = 0
    after_lead_in: bool = False  # an item of a list introduced by a line ending with ':'


@dataclass
class HtmlExtraction:
    """The readable text of a page, its title and metadata, and its sections (h1–h6)."""

    text: str
    title: str | None = None
    author: str | None = None
    date: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)


# --- rendering ---------------------------------------------------------------------


def _tag(element: Any) -> str:
    tag = element.tag
    if not isinstance(tag, str):
        return ""  # comments, processing instructions
    return tag.rsplit("}", 1)[-1].lower()  # XHTML namespaces


def _hidden(element: Any) -> bool:
    """Hidden from the reader by the page itself."""
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    return bool(_HIDDEN_STYLE.search(element.get("style") or ""))


class _Renderer:
    """Walks the DOM once, turning block elements into `_Block`s with their full inline text."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self._parts: list[str] = []
        self._link_chars = 0
        self._tight_next = False
        self._marker: str | None = None

    # inline text collects here until a block boundary flushes it
    def _add(self, text: str | None, in_link: bool) -> None:
        if text:
            self._parts.append(text)
            if in_link:
                self._link_chars += len(_SPACES.sub("", text))

    def _flush(self, element: Any) -> None:
        raw = "".join(self._parts)
        self._parts, links = [], self._link_chars
        self._link_chars = 0
        # source line breaks are spaces to a reader; only <br> (the sentinel) breaks a line
        lines = [_SPACES.sub(" ", line).strip() for line in raw.split(_BREAK)]
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        if self._marker is not None:
            text = self._marker + text
            self._marker = None
        self.blocks.append(_Block(text, element, tight=self._tight_next and bool(self.blocks),
                                  link_chars=links))
        self._tight_next = False

    def render(self, element: Any, *, in_link: bool = False, context: str = "") -> None:
        tag = _tag(element)
        if not tag or tag in _SKIP_TAGS or _hidden(element):
            return
        if tag == "br":
            self._parts.append(_BREAK)
            return
        if tag in _HEADINGS:
            self._flush(element)
            text = _SPACES.sub(" ", element.text_content()).strip()
            if text:
                self.blocks.append(_Block(text, element, heading=_HEADINGS[tag]))
            self._marker = None
            return
        if tag == "pre":
            self._flush(element)
            text = element.text_content().strip("\n")
            if text.strip():
                self.blocks.append(_Block((self._marker or "") + text, element,
                                          tight=self._tight_next and bool(self.blocks)))
                self._marker, self._tight_next = None, False
            return
        if tag == "tr":
            self._flush(element)
            cells = [_SPACES.sub(" ", cell.text_content()).strip()
                     for cell in element if _tag(cell) in ("td", "th") and not _hidden(cell)]
            cells = [cell for cell in cells if cell]
            if cells:
                links = sum(len(_SPACES.sub("", a.text_content())) for a in element.iter("a"))
                self.blocks.append(_Block(" | ".join(cells), element, tight=bool(self.blocks)
                                          and _tag(self.blocks[-1].element) == "tr", link_chars=links))
            return
        if tag in _LIST_TAGS:
            self._flush(element)
            self._tight_next = True  # a list follows its lead-in line
            lead_in = bool(self.blocks) and self.blocks[-1].text.rstrip().endswith(":")
            first = len(self.blocks)
            for index, item in enumerate((c for c in element if _tag(c) == "li"), start=1):
                self._marker = f"{index}. " if tag == "ol" else "- "
                self._tight_next = True
                self._render_children(item, in_link=in_link, context="li")
                self._flush(item)
            for block in self.blocks[first:]:
                block.after_lead_in = lead_in
            self._marker = None
            self._tight_next = False
            return
        is_block = tag in _BLOCK_TAGS
        if is_block:
            self._flush(element)
            if tag == "dd" or context in _TIGHT_CONTEXTS:
                self._tight_next = True
        self._render_children(element, in_link=in_link or tag == "a", context=tag if is_block else context)
        if is_block:
            self._flush(element)

    def _render_children(self, element: Any, *, in_link: bool, context: str) -> None:
        self._add(element.text, in_link)
        for child in element:
            self.render(child, in_link=in_link, context=context)
            self._add(child.tail, in_link)


def render_blocks(root: Any) -> list[_Block]:
    renderer = _Renderer()
    renderer.render(root)
    renderer._flush(root)
    return renderer.blocks


# --- main content ------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _kept_by(blocks: list[_Block], reference: str) -> list[bool]:
    """Which blocks trafilatura kept: most of their words occur in its text."""
    known = Counter(_words(reference))
    kept = []
    for block in blocks:
        words = _words(block.text)
        hits = sum(1 for w in words if known[w])
        kept.append(bool(words) and hits >= KEPT_WORD_SHARE * len(words))
    return kept


def _container(root: Any, blocks: list[_Block], kept: list[bool]) -> Any:
    """The deepest element holding `CONTAINER_SHARE` of the kept text (the page's main content)."""
    weight: Counter[Any] = Counter()
    total = 0
    for block, is_kept in zip(blocks, kept):
        if not is_kept:
            continue
        size = len(block.text)
        total += size
        for ancestor in (block.element, *block.element.iterancestors()):
            weight[ancestor] += size
    if not total:
        return root
    node = root
    while True:
        best = max((child for child in node if isinstance(child.tag, str)),
                   key=lambda child: weight[child], default=None)
        if best is None or weight[best] < CONTAINER_SHARE * total:
            return node
        node = best


def _role(element: Any) -> str:
    """The element's ARIA role, lower case ("" for none, and for comments)."""
    return (element.get("role") or "").strip().lower() if _tag(element) else ""


def _around(element: Any) -> bool:
    """The element sits in a part the page itself marks as around its content (`_AROUND_TAGS`)."""
    return any(_tag(e) in _AROUND_TAGS or _role(e) in _AROUND_ROLES for e in (element, *element.iterancestors()))


def _main(body: Any) -> Any:
    """The page's own main landmark (``<main>`` or ``role="main"``), else the body."""
    return next((e for e in body.iter() if _tag(e) == "main" or _role(e) == "main"), body)


def _with_title(container: Any, blocks: list[_Block]) -> Any:
    """The container widened to the page's first h1 when it lies outside: an article starts at its
    title, and trafilatura now and then keeps only the part after the title's first paragraph."""
    title = next((block.element for block in blocks if block.heading == 1), None)
    if title is None or _inside(title, container):
        return container
    ancestors = set(title.iterancestors())
    return next((a for a in container.iterancestors() if a in ancestors), container)


def _inside(element: Any, container: Any) -> bool:
    return element is container or any(a is container for a in element.iterancestors())


def _content(block: _Block, container: Any) -> bool:
    """A block of the main container that is not navigation: links only are navigation,
    unless they are the items of a list its lead-in line introduces («Существует семь
    инструментов:» and a list of links to them)."""
    if not _inside(block.element, container):
        return False
    return bool(block.heading) or block.after_lead_in or not _links_only(block)


def _links_only(block: _Block) -> bool:
    """Nearly all of the block's text (spaces and cell separators aside) is link text."""
    return block.link_chars >= LINK_ONLY_SHARE * len(_SPACES.sub("", block.text.replace(" | ", "")))


def _normal(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def _prose(block: _Block) -> bool:
    """Outside the main container only sentences count: a page's title repeated in its
    navigation bar has all its words in the content too, but it is no content. (The caller
    also wants trafilatura to have kept the block word for word.)"""
    return len(_words(block.text)) >= MIN_PROSE_WORDS and not _links_only(block)


def _join(blocks: list[_Block]) -> tuple[str, list[Section]]:
    """The text, and a section for every heading (its path of enclosing headings)."""
    parts: list[str] = []
    length = 0
    stack: list[tuple[int, str]] = []
    sections: list[Section] = []
    for block in blocks:
        if parts:
            separator = "\n" if block.tight and not block.heading else "\n\n"
            parts.append(separator)
            length += len(separator)
        if block.heading:
            while stack and stack[-1][0] >= block.heading:
                stack.pop()
            stack.append((block.heading, block.text))
            if sections:
                sections[-1].end = length
            elif length:
                sections.append(Section(start=0, end=length, path=[]))
            sections.append(Section(start=length, end=length, path=[t for _, t in stack]))
        parts.append(block.text)
        length += len(block.text)
    if sections:
        sections[-1].end = length
    text = "".join(parts)
    return text, [s for s in sections if text[s.start : s.end].strip()]


def _trafilatura(html: str, url: str | None) -> dict[str, Any]:
    import trafilatura

    document = trafilatura.bare_extraction(
        html, url=url, with_metadata=True, include_comments=False, include_tables=True,
        include_images=False, include_links=False, favor_recall=True,
    )
    if document is None:
        return {}
    return document if isinstance(document, dict) else document.as_dict()


def _page_title(root: Any) -> str | None:
    """`<title>`, else the first h1: for pages trafilatura finds no title in."""
    for found in (root.find(".//title"), next(root.iter("h1"), None)):
        if found is not None:
            text = _SPACES.sub(" ", found.text_content()).strip()
            if text:
                return text
    return None


def parse_tree(html: str) -> Any:
    """The lxml tree of a page (bytes-free: declarations of encoding are dropped first)."""
    from lxml import html as lxml_html

    cleaned = re.sub(r"^\s*<\?xml[^>]*\?>", "", html)
    return lxml_html.document_fromstring(cleaned)


@with_libxml
def extract(html: str, url: str | None = None) -> HtmlExtraction:
    """The page's main text with every inline element, its title, metadata and sections.

    Runs under the process-wide libxml2 lock (`nodes.ingestion.native`): trafilatura and lxml in
    two threads at once may crash the process. Raises ValueError when the markup cannot be
    parsed at all.
    """
    from lxml.etree import ParserError

    try:
        root = parse_tree(html)
    except (ParserError, ValueError) as exc:
        raise ValueError(f"unparseable HTML: {exc}") from exc
    body = root.find("body")
    if body is None:
        body = root
    data = _trafilatura(html, url)
    blocks = render_blocks(body)
    around = [_around(block.element) for block in blocks]
    if not all(around):  # a page that is nothing but its footer keeps it
        blocks = [block for block, is_around in zip(blocks, around) if not is_around]
    kept = _kept_by(blocks, data.get("text") or "")
    container = _with_title(_container(body, blocks, kept), blocks) if any(kept) else _main(body)
    reference = _normal(data.get("text") or "")
    chosen = [block for block, is_kept in zip(blocks, kept)
              if _content(block, container) or (is_kept and _prose(block) and _normal(block.text) in reference)]
    text, sections = _join(chosen)
    meta = {key: str(data[key]) for key in ("sitename", "language", "description") if data.get(key)}
    return HtmlExtraction(
        text=text,
        title=(data.get("title") or _page_title(root) or None),
        author=data.get("author") or None,
        date=data.get("date") or None,
        meta=meta,
        sections=sections,
    )


@with_libxml
def render_whole(html: str) -> HtmlExtraction:
    """Every block of `html` as a reader sees it, with no search for the main content: for markup
    that is all content (Markdown rendered to HTML). The title is the first ``<h1>``."""
    root = parse_tree(f"<html><body>{html}</body></html>")
    text, sections = _join(render_blocks(root.find("body")))
    return HtmlExtraction(text=text, title=_page_title(root), sections=sections)


def to_document(extraction: HtmlExtraction, *, source_type: str, identifier: str,
                meta: dict[str, str | int | float | bool | None] | None = None) -> ExtractedDocument:
    """The extraction as an ExtractedDocument (web pages and local HTML files alike)."""
    return ExtractedDocument(
        source_type=source_type,
        source_identifier=identifier,
        title=extraction.title,
        author=extraction.author,
        published_at=extraction.date,
        text=extraction.text,
        sections=extraction.sections,
        meta={**(meta or {}), **extraction.meta},
    )
