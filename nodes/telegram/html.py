"""The model's Markdown as Telegram HTML: what users see instead of raw `**` and backticks.

Telegram shows Markdown verbatim unless sent with a parse mode, and MarkdownV2 rejects a message for one
unescaped character, so answers go as HTML, which needs only `<`, `>` and `&` escaped: bold, italics, code,
links, headings and lists become their tags or bullets, everything else escaped text. Quoted passages
(lines opening with `>`) and the source list become folded `<blockquote expandable>`s, so the answer's own
words stay on screen. A message Telegram still refuses is re-sent as plain text (`plain`), never lost.
"""

from __future__ import annotations

import html
import re

from grove.core.messages import SOURCES_HEADER

_FENCE = re.compile(r"^\s*```")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"))
_ITALIC = (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"),
           re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])"))
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_TAG = re.compile(r"<(/?)(b|i|s|code|a)\b[^>]*>")
_QUOTED = re.compile(r"^\s{0,3}>\s?(.*)$")
FOLDED_LISTS = (SOURCES_HEADER,)  # a header line whose lines below (to a blank line) fold


def _nested(converted: str) -> bool:
    """Do the tags we made close in order? Overlapping markers («*a **b* c**») make them cross."""
    stack: list[str] = []
    for closing, name in _TAG.findall(converted):
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def _inline(line: str) -> str:
    parts = []
    for piece in _INLINE_CODE.split(line):
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 2:
            parts.append(f"<code>{html.escape(piece[1:-1], quote=False)}</code>")
            continue
        text = html.escape(piece, quote=False)
        text = _LINK.sub(lambda m: f'<a href="{html.escape(html.unescape(m.group(2)))}">{m.group(1)}</a>', text)
        for pattern in _BOLD:
            text = pattern.sub(r"<b>\1</b>", text)
        for pattern in _ITALIC:
            text = pattern.sub(r"<i>\1</i>", text)
        text = _STRIKE.sub(r"<s>\1</s>", text)
        parts.append(text if _nested(text) else html.escape(piece, quote=False))
    return "".join(parts)


def markdown_html(text: str) -> str:
    """Telegram HTML for a Markdown text (one message's worth); quoted lines (`>`) are folded, their
    text escaped as it is (a document's words, not the model's Markdown)."""
    out: list[str] = []
    code: list[str] | None = None
    quoted: list[str] = []
    listing = False  # inside a folded list (the source block), until a blank line
    for line in text.split("\n"):
        if listing and line.strip():
            quoted.append(line.strip())
            continue
        listing = False
        inside = _QUOTED.match(line) if code is None else None
        if quoted and inside is None:
            out.append(_folded(quoted))
            quoted = []
        if inside is not None:
            quoted.append(inside.group(1))
            continue
        if _FENCE.match(line):
            if code is None:
                code = []
            else:
                out.append(f"<pre>{html.escape(chr(10).join(code), quote=False)}</pre>")
                code = None
            continue
        if code is not None:
            code.append(line)
            continue
        if line.strip() in FOLDED_LISTS:
            out.append(_inline(line))
            listing = True
        elif heading := _HEADING.match(line):
            out.append(f"<b>{_inline(heading.group(1))}</b>")
        elif bullet := _BULLET.match(line):
            out.append(f"{bullet.group(1)}• {_inline(bullet.group(2))}")
        else:
            out.append(_inline(line))
    if code is not None:  # an unclosed fence (or a message split inside one) still shows as code
        out.append(f"<pre>{html.escape(chr(10).join(code), quote=False)}</pre>")
    if quoted:
        out.append(_folded(quoted))
    return "\n".join(out)


def _folded(lines: list[str]) -> str:
    """Quoted lines as one expandable blockquote (Telegram shows its first lines and «show more»)."""
    return f"<blockquote expandable>{html.escape(chr(10).join(lines), quote=False)}</blockquote>"


def plain(text: str) -> str:
    """The same text without Markdown markers, for when Telegram refuses the HTML."""
    lines = [line for line in text.split("\n") if not _FENCE.match(line)]
    result = []
    for line in lines:
        if inside := _QUOTED.match(line):
            result.append(inside.group(1))
            continue
        if heading := _HEADING.match(line):
            line = heading.group(1)
        elif bullet := _BULLET.match(line):
            line = f"{bullet.group(1)}• {bullet.group(2)}"
        line = _LINK.sub(r"\1 (\2)", line)
        for pattern in (*_BOLD, *_ITALIC, _STRIKE):
            line = pattern.sub(r"\1", line)
        result.append(_INLINE_CODE.sub(lambda m: m.group(1)[1:-1], line))
    return "\n".join(result)
