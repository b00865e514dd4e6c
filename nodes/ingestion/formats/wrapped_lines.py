"""Lines wrapped inside a sentence, joined back: the text as the document reads, not as it was set.

A PDF's text layer keeps its printed lines, and a plain-text or reStructuredText file is often wrapped at
70–80 columns. Quoted back to a user, and read by a small model, such breaks cut sentences in two: the
local model refused over the very passage that answered. Blank lines, headings, lists, indented program
output and code keep their breaks (`wrapped`).
Figures: bench/README.md, «PDF text layer and extraction loss» (bench.extraction_loss).
"""

from __future__ import annotations

from collections.abc import Sequence

from chunking.paragraphs import starts_list_item

FULL_LINE_SHARE = 0.8
"""A line at least this share of the body's line length is set full width: it may wrap."""

_KEEPS_BREAK = (":", ".", "!", "?", "…")
_OPENING = "«„\"("


def body_line_length(texts: Sequence[str]) -> int:
    """The median length of the non-blank lines: the width the document's prose is set to."""
    lengths = sorted(len(line.strip()) for text in texts for line in text.split("\n") if line.strip())
    return lengths[len(lengths) // 2] if lengths else 0


def wrapped(line: str, following: str, body_line: int) -> bool:
    """Whether the line break between two non-blank lines falls inside a sentence.

    Only a full-width line that stops mid-sentence wraps: a shorter one ends its paragraph, a
    heading or a line of program output, and one that ends a sentence may be followed by a term
    of a definition list («пакет&M»). It runs on into a next line that starts lowercase, or with a
    capital or an opening quote when it stops on a letter or «,;» («включая\\nGNU/Linux»). Never
    after a colon (it introduces a list, a command or program output), never into an indented
    line or a list item."""
    line = line.rstrip()
    if following[:1].isspace() or line.endswith(_KEEPS_BREAK) or len(line.strip()) < FULL_LINE_SHARE * body_line:
        return False
    start = following.lstrip()
    if not start or starts_list_item(start, 0, len(start)):
        return False
    if start[0].islower():
        return True
    return (start[0].isalpha() or start[0] in _OPENING) and (line[-1].isalpha() or line.endswith((",", ";")))


def join_wrapped_lines(text: str, body_line: int) -> tuple[str, int]:
    """The text with line breaks inside sentences turned into spaces, and how many were joined.
    A line broken after a slash («/etc/\\nmanpath.config», as WeasyPrint breaks a path) joins without a space."""
    lines = text.split("\n")
    out = lines[:1]
    joined = 0
    for following in lines[1:]:
        line = out[-1]
        if line.strip() and following.strip() and wrapped(line, following, body_line):
            line = line.rstrip()  # a path or a link broken after its slash joins without a space
            out[-1] = f"{line}{'' if line.endswith('/') else ' '}{following.strip()}"
            joined += 1
        else:
            out.append(following)
    return "\n".join(out), joined
