"""Plain text and Markdown, and every decoding of text in grove.

A text file (or a text/plain page) tries a BOM, strict UTF-8 and BOM-less UTF-16, then
charset-normalizer among the Cyrillic code pages; binary junk is refused (`decode_text`,
`decode_declared`). A web page or HTML file tries a BOM, the declared charset, `<meta charset>`,
strict UTF-8, then charset-normalizer's guess (`decode_body`). A plain text's lines wrapped inside a
sentence are joined (`wrapped_lines`); Markdown is rendered to the text its reader sees, its headings
becoming sections (`markdown_text`)."""

from __future__ import annotations

import codecs
import re
import unicodedata

from typing import TYPE_CHECKING

from nodes.ingestion.formats import wrapped_lines
from nodes.ingestion.formats.base import Format, Upload, clean_text, empty
from grove.core.ingest_types import ExtractedDocument, IngestError

if TYPE_CHECKING:
    from markdown_it.token import Token

    from nodes.ingestion.html_text import HtmlExtraction

_FALLBACK_CODEPAGES = ["cp1251", "koi8_r", "cp866"]
MARKDOWN_EXTENSIONS = {".md", ".markdown"}
MARKDOWN_MIME_TYPES = {"text/markdown", "text/x-markdown"}


def _utf16_without_bom(data: bytes) -> str | None:
    """'utf-16-le'/'utf-16-be' for BOM-less UTF-16, else None.

    Latin and Cyrillic text in UTF-16 has a high byte of 0x00 or 0x04 in (almost)
    every code unit, at odd offsets for LE and even offsets for BE; single-byte
    encodings never look like that (0x00 and 0x04 are control characters there).
    """
    if len(data) < 2 or len(data) % 2:
        return None
    sample = data[: 64 * 1024]
    units = len(sample) // 2
    for codec, high in (("utf-16-le", sample[1::2]), ("utf-16-be", sample[0::2])):
        typical = high.count(0) + high.count(4)
        if typical >= 0.95 * units:
            return codec
    return None


def _control_share(text: str) -> float:
    if not text:
        return 0.0
    sample = text[:200_000]
    bad = sum(
        1 for ch in sample
        if (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v") or ch == "\ufffd"
    )
    return bad / len(sample)


def decode_text(data: bytes, name: str) -> tuple[str, str]:
    """Decode a text file; returns (text, encoding). Raises IngestError on binary junk."""
    junk = IngestError("Файл не похож на текст — внутри двоичные данные.", f"binary content in {name}")
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise IngestError(
                    "Не удалось прочитать текст: файл повреждён (неверная кодировка).",
                    f"{name}: BOM says {codec} but decoding failed: {exc}",
                ) from exc
            encoding = codec
            break
    else:
        utf16 = _utf16_without_bom(data)
        if utf16 is not None:
            try:
                text = data.decode(utf16)
            except UnicodeDecodeError as exc:
                raise junk from exc
            encoding = utf16
        elif b"\x00" in data:
            raise junk  # NUL bytes without the UTF-16 pattern: binary
        else:
            try:
                text, encoding = data.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                from charset_normalizer import from_bytes

                best = from_bytes(data, cp_isolation=_FALLBACK_CODEPAGES).best()
                if best is None:
                    raise junk from None
                encoding = best.encoding
                text = str(best)
    if _control_share(text) > 0.01:
        raise junk
    return text, encoding


def decode_declared(data: bytes, name: str, declared: str | None) -> tuple[str, str]:
    """A text whose charset someone declared (a web server's Content-Type): that charset when the
    bytes decode with it, else the same detection as a file's (`decode_text`)."""
    codec = _known_codec(declared)
    if codec:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            pass
        else:
            if _control_share(text) <= 0.01:
                return text, codec
    return decode_text(data, name)


# --- web pages: a declared charset, a <meta charset>, or a guess ----------------------

_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_\-:.]+)"""
    rb"""|<\?xml[^>]+encoding\s*=\s*["']([a-zA-Z0-9_\-:.]+)""",
    re.I,
)
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def decode_body(body: bytes, declared: str | None, html: bool) -> tuple[str, str]:
    """Text of a page and the encoding used: BOM, then the HTTP header, then
    `<meta charset>`, then strict UTF-8, then charset-normalizer's guess."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return body.decode(codec, errors="replace"), codec
    candidates = [_known_codec(declared)]
    if html:
        match = _META_CHARSET.search(body[:4096])
        declared_in_page = (match.group(1) or match.group(2)) if match else None
        candidates.append(_known_codec(declared_in_page.decode("ascii", "ignore")) if declared_in_page else None)
    candidates.append("utf-8")
    for candidate in candidates:
        if candidate:
            try:
                return body.decode(candidate), candidate
            except (UnicodeDecodeError, LookupError):
                continue
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    guessed = _known_codec(best.encoding) if best else None
    chosen = guessed or _known_codec(declared) or "utf-8"
    return body.decode(chosen, errors="replace"), chosen


_LEFTOVER_LINK = re.compile(r'\[([^\[\]\n]*)\]\([^()\s]+(?:\s+"[^"\n]*")?\)')
_LEFTOVER_CLOSE = re.compile(r'^\]\([^()\s]+(?:\s+"[^"\n]*")?\)')


def _drop_leftover_links(children: list[Token]) -> None:
    """Link syntax the parser left as text, reduced to the link's words. pandoc writes a link inside
    a link («[*[RGB](g.html#rgb "…")*](g.html#rgb)»); CommonMark keeps only the inner one, and the
    outer one's «[» and «](g.html#rgb)» would reach the reader. Code spans are not text tokens."""
    opened: Token | None = None
    for child in children:
        if child.type != "text":
            continue
        child.content = _LEFTOVER_LINK.sub(r"\1", child.content)
        if opened is not None and (close := _LEFTOVER_CLOSE.match(child.content)):
            opened.content = opened.content[:-1]
            child.content = child.content[close.end():]
            opened = None
        if child.content.endswith("["):
            opened = child


def markdown_text(source: str) -> HtmlExtraction:
    """Markdown as its reader sees it: emphasis, code spans, links and escapes become their words,
    code blocks stay as written, list items keep a «- » or «1. », table rows read «cell | cell»,
    and headings become sections. A paragraph's line breaks are spaces, as in any renderer.

    The markup itself never reaches the store: a quote reading «**`вперёд 100`**» or a link
    target «(using-kturtle.html#the-editor "Редактор")» is noise to the user and to the model.
    CommonMark (with tables and strikethrough) renders to HTML, and the HTML renderer every web
    page goes through (`nodes.ingestion.html_text`) turns that into text and sections."""
    from markdown_it import MarkdownIt

    from nodes.ingestion import html_text

    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tokens = parser.parse(source)
    for token in tokens:
        if token.type == "inline" and token.children:
            _drop_leftover_links(token.children)
    return html_text.render_whole(parser.renderer.render(tokens, parser.options, {}))


def parse(upload: Upload) -> ExtractedDocument:
    name = upload.name
    text, encoding = decode_text(upload.path.read_bytes(), name)
    text = clean_text(text.lstrip("\ufeff"))
    if not text:
        raise empty(name, f"text file {name} is empty")
    markdown = upload.ext in MARKDOWN_EXTENSIONS or (upload.ext not in FORMAT.extensions
                                                     and upload.mime in MARKDOWN_MIME_TYPES)
    if markdown:
        rendered = markdown_text(text)
        if not rendered.text.strip():
            raise empty(name, f"Markdown file {name} renders to no text")
        return ExtractedDocument(source_type="md", source_identifier=name, title=rendered.title,
                                 text=rendered.text, sections=rendered.sections, meta={"encoding": encoding})
    text, joined = wrapped_lines.join_wrapped_lines(text, wrapped_lines.body_line_length([text]))
    return ExtractedDocument(source_type="txt", source_identifier=name, text=text,
                             meta={"encoding": encoding, "lines_joined": joined})


def looks_like_text(head: bytes) -> bool:
    """A file with no extension is text when its first bytes decode as text, not binary junk."""
    if not head.strip():
        return False
    try:
        decode_text(head, "the file's first bytes")
    except IngestError:
        return False
    return True


FORMAT = Format(name="text", label="текст", parse=parse, hint="TXT, MD", order=80, looks_like_last=looks_like_text,
                extensions=frozenset({".txt", ".text", *MARKDOWN_EXTENSIONS}),
                mime_types=frozenset({"text/plain", *MARKDOWN_MIME_TYPES}))
