"""Plain text and Markdown, and every decoding of text in grove.

A text file (or a text/plain page) tries a BOM, strict UTF-8 and BOM-less UTF-16, then
charset-normalizer among the Cyrillic code pages; binary junk is refused (`decode_text`,
`decode_declared`). A web page or HTML file tries a BOM, the declared charset, `<meta charset>`,
strict UTF-8, then charset-normalizer's guess (`decode_body`). Lines wrapped inside a sentence are
joined (`wrapped_lines`; never inside Markdown's fenced code), then Markdown `#` and underlined
headings become sections (not inside fenced code)."""

from __future__ import annotations

import codecs
import re
import unicodedata

from nodes.ingestion.formats import wrapped_lines
from nodes.ingestion.formats.base import Format, Upload, clean_text, empty
from grove.core.ingest_types import ExtractedDocument, IngestError, Section

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


_MD_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def fenced_lines(text: str) -> set[int]:
    """Indexes of the lines of Markdown's fenced code blocks, their fences included."""
    fenced: set[int] = set()
    fence: str | None = None
    for index, line in enumerate(text.split("\n")):
        opened = _MD_FENCE.match(line)
        if fence is not None:
            fenced.add(index)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
            fenced.add(index)
    return fenced


def markdown_sections(text: str) -> list[Section]:
    """Sections of a Markdown text: ATX (`## Title`) and setext (underlined) headings,
    ignoring lines inside fenced code blocks."""
    starts: list[tuple[int, int, str]] = []  # (offset, level, heading)
    fenced = fenced_lines(text)
    offset = 0
    previous: tuple[int, str] | None = None  # the last non-blank paragraph line
    for index, line in enumerate(text.split("\n")):
        if index in fenced:
            previous = None
        elif (atx := _MD_ATX.match(line)) is not None:
            starts.append((offset, len(atx.group(1)), atx.group(2).strip()))
            previous = None
        elif (setext := _MD_SETEXT.match(line)) is not None and previous is not None:
            starts.append((previous[0], 1 if setext.group(1)[0] == "=" else 2, previous[1]))
            previous = None
        else:
            previous = (offset, line.strip()) if line.strip() else None
        offset += len(line) + 1
    blocks_at: list[tuple[int, list[str]]] = []
    stack: list[tuple[int, str]] = []
    for start, level, heading in starts:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, heading))
        blocks_at.append((start, [h for _, h in stack]))
    sections: list[Section] = []
    if blocks_at and blocks_at[0][0] > 0:
        sections.append(Section(start=0, end=blocks_at[0][0], path=[]))
    for i, (start, path) in enumerate(blocks_at):
        end = blocks_at[i + 1][0] if i + 1 < len(blocks_at) else len(text)
        if end > start:
            sections.append(Section(start=start, end=end, path=path))
    return sections


def parse(upload: Upload) -> ExtractedDocument:
    name = upload.name
    text, encoding = decode_text(upload.path.read_bytes(), name)
    text = clean_text(text.lstrip("\ufeff"))
    if not text:
        raise empty(name, f"text file {name} is empty")
    markdown = upload.ext in MARKDOWN_EXTENSIONS or (upload.ext not in FORMAT.extensions
                                                     and upload.mime in MARKDOWN_MIME_TYPES)
    text, joined = wrapped_lines.join_wrapped_lines(text, wrapped_lines.body_line_length([text]),
                                                    keep=fenced_lines(text) if markdown else ())
    title = None
    sections: list[Section] = []
    if markdown:
        heading = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.M)
        title = heading.group(1) if heading else None
        sections = markdown_sections(text)
    return ExtractedDocument(source_type="md" if markdown else "txt", source_identifier=name, title=title,
                             text=text, sections=sections, meta={"encoding": encoding, "lines_joined": joined})


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
