"""PDF text without layout debris: the cleaning half of reading a PDF (`nodes.ingestion.formats.pdf`).

A page's text layer still carries its layout: words hyphenated at line ends, running headers and footers,
"continued on next page" markers, blank pages, dot leaders. Running lines are *detected*, never listed: a
line at a page edge is running when it repeats (digits masked) on several pages in a row, or carries the
page's printed number where the document numbers its pages (:func:`strip_running_lines`). Hyphenation is
joined only between lowercase letters of one script, and a form the document hyphenates elsewhere keeps its
hyphen (:func:`join_hyphenation`). Wrapped lines are joined after this (`nodes.ingestion.formats.wrapped_lines`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from nodes.ingestion.formats.wrapped_lines import FULL_LINE_SHARE, body_line_length

PAGE_SEPARATOR = "\n\n"
"""Between pages in the document text (as `chunking.join_pages` joins them)."""

EDGE_LINES = 3
"""How many lines at the top and at the bottom of a page may be running lines."""
MAX_RUNNING_LINE_CHARS = 160
MIN_REPEATS = 3
MAX_REPEATS_NEEDED = 5
REPEAT_SHARE = 0.1
"""A line repeated at page edges on max(MIN_REPEATS, min(MAX_REPEATS_NEEDED, REPEAT_SHARE × pages))
pages in a row is running: 3 in a short document, 5 from 50 pages on (a chapter's running head
repeats at least that often)."""
MAX_RUN_GAP = 2
"""Pages "in a row" may skip one page: books alternate chapter and section heads on facing pages."""
NUMBERED_SHARE = 0.5
"""Edge lines carrying the page's own number are running when at least this share of pages has one."""


_DIGITS = re.compile(r"\d+")
_NUMBER_DECORATION = re.compile(r"[#\s\-–—./|()\[\]]+")
_LINE = re.compile(r"[^\n]*\S[^\n]*")  # a non-blank line
_SPACES = re.compile(r"\s+")
_HYPHEN_BREAK = re.compile(r"([^\W_]+)-[ \t]*\n[ \t]*([^\W_]+)")
_WORDS = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_SOFT_HYPHEN_BREAK = re.compile(r"\u00ad[ \t]*\n[ \t]*")
_EDGE_PUNCTUATION = re.compile(r"^[\W_]+|[\W_]+$")
# Russian hyphenated particles and prepositions (orthography: «что-то», «кое-где», «из-за»).
_PARTICLES = {"то", "либо", "нибудь", "таки"}
_PREFIXES = {"кое", "кой"}
# the interrogative pronouns and adverbs these particles attach to (кто-то, какой-нибудь, где-либо)
_PRONOUN_STEMS = ("кто", "кого", "кому", "кем", "ком", "что", "чего", "чему", "чем", "чём", "как",
                  "чей", "чь", "где", "куда", "откуда", "когда", "почему", "зачем", "сколько")
_HYPHENATED_PREPOSITIONS = {("из", "за"), ("из", "под")}


def _script(letter: str) -> str:
    if "а" <= letter.lower() <= "я" or letter.lower() == "ё":
        return "cyrillic"
    if letter.isascii():
        return "latin"
    return "other"


# --- running headers and footers -------------------------------------------------


@dataclass
class RunningLines:
    """What :func:`strip_running_lines` removed, for the run's record and the bench."""

    pages: list[str]
    removed: list[tuple[int, str]] = field(default_factory=list)  # (page index, line)


def _mask(line: str) -> str:
    return _DIGITS.sub("#", _SPACES.sub(" ", line).strip()).lower()


def _carries_number(line: str, numbers: set[str]) -> bool:
    """The line starts or ends with the page's own number (label or physical): «12 Глава 3»,
    «Установка 12», «— xii —»."""
    words = _EDGE_PUNCTUATION.sub("", line).split()
    return bool(words) and (words[0].lower() in numbers or words[-1].lower() in numbers)


def _looks_running(masked: str) -> bool:
    """Words, or a bare page number in decoration («— # —», «# / #»); not «# }» or «# if$»."""
    letters = sum(ch.isalpha() for ch in masked)
    return letters >= 3 or not _NUMBER_DECORATION.sub("", masked)


def _longest_run(pages: list[int]) -> int:
    """The most occurrences in a row, allowing one page between two (alternate-page heads)."""
    best = run = 0
    previous = None
    for page in pages:
        run = run + 1 if previous is not None and page - previous <= MAX_RUN_GAP else 1
        best = max(best, run)
        previous = page
    return best


def _edges(lines: list[str]) -> list[int]:
    """Indexes of the lines that may be running lines: the first and last EDGE_LINES."""
    count = len(lines)
    return sorted(set(range(min(EDGE_LINES, count))) | set(range(max(0, count - EDGE_LINES), count)))


def strip_running_lines(pages: Sequence[str], labels: Sequence[str]) -> RunningLines:
    """Remove running headers/footers and page-number lines, detected across the pages.

    A candidate is one of the first or last `EDGE_LINES` non-empty lines of a page.
    It is removed when (a) its digit-masked form is a candidate on enough pages in a
    row (see `REPEAT_SHARE`; a gap of one page is allowed, for running heads on
    alternate pages) and has words or is a bare page number — a line of code or a
    chapter opener that happens to top a few scattered pages is not running — or
    (b) it starts or ends with the page's own number and at least `NUMBERED_SHARE`
    of the pages have such a line at that edge (top or bottom: where the document
    numbers its pages), or it is nothing but the page's number; at most one per page
    edge, so a numbered heading right under a running head stays. Lines are
    removed from each edge inwards and only while they qualify, so text between
    two kept lines is never touched.
    """
    spans = [[m.span() for m in _LINE.finditer(page)] for page in pages]
    split = [[page[a:b] for a, b in page_spans] for page, page_spans in zip(pages, spans)]
    with_text = [lines for lines in split if lines]
    if len(with_text) < 2:
        return RunningLines(list(pages))
    numbers = [{labels[i].lower(), str(i + 1)} if i < len(labels) else {str(i + 1)}
               for i in range(len(pages))]
    seen_on: dict[str, list[int]] = {}  # masked edge line -> the text pages it sits on
    numbered_pages = {True: 0, False: 0}  # top edge, bottom edge: pages with a numbered line there
    text_page = -1
    for index, lines in enumerate(split):
        if not lines:
            continue
        text_page += 1
        edge = [lines[i] for i in _edges(lines) if len(lines[i]) <= MAX_RUNNING_LINE_CHARS]
        for key in {_mask(line) for line in edge}:
            seen_on.setdefault(key, []).append(text_page)
        for at_top, near in ((True, lines[:EDGE_LINES]), (False, lines[-EDGE_LINES:])):
            numbered_pages[at_top] += any(_carries_number(line, numbers[index]) for line in near
                                       if len(line) <= MAX_RUNNING_LINE_CHARS)
    needed = max(MIN_REPEATS, min(MAX_REPEATS_NEEDED, math.ceil(REPEAT_SHARE * len(with_text))))
    repeated = {key for key, found in seen_on.items() if _looks_running(key) and _longest_run(found) >= needed}
    numbered = {edge: count >= max(2, NUMBERED_SHARE * len(with_text)) for edge, count in numbered_pages.items()}

    body_line = body_line_length(pages)

    def prose(lines: list[str], at: int, top: bool) -> bool:
        """A full-width line that runs on into its neighbour as one sentence: body text,
        however often it repeats (a running line is set apart from the text)."""
        line = lines[at].strip()
        if len(line) < FULL_LINE_SHARE * body_line:
            return False
        if top:
            return at + 1 < len(lines) and lines[at + 1].strip()[:1].islower()
        previous = lines[at - 1].strip() if at > 0 else ""
        return bool(previous) and (line[:1].islower() or previous.endswith(("-", ",")))

    def running(line: str, index: int, top: bool, number_used: bool) -> tuple[bool, bool]:
        if len(line) > MAX_RUNNING_LINE_CHARS:
            return False, number_used
        if _mask(line) in repeated:
            return True, number_used
        if not number_used and _carries_number(line, numbers[index]) and (
                numbered[top] or _EDGE_PUNCTUATION.sub("", line).lower() in numbers[index]):
            return True, True  # this edge is where the pages are numbered, or the line is just the number
        return False, number_used

    result = RunningLines([])
    for index, (page, lines, line_spans) in enumerate(zip(pages, split, spans)):
        if not lines:
            result.pages.append("")
            continue
        top, bottom = 0, len(lines)
        used = False
        while top < min(EDGE_LINES, bottom) and not prose(lines, top, True):
            is_running, used = running(lines[top], index, True, used)
            if not is_running:
                break
            top += 1
        used = False
        while bottom > top and len(lines) - bottom < EDGE_LINES and not prose(lines, bottom - 1, False):
            is_running, used = running(lines[bottom - 1], index, False, used)
            if not is_running:
                break
            bottom -= 1
        result.removed.extend((index, line.strip()) for line in lines[:top] + lines[bottom:])
        # the page from its first to its last kept line, line breaks and blank lines as they were
        kept = page[line_spans[top][0] : line_spans[bottom - 1][1]].strip() if bottom > top else ""
        result.pages.append(kept)
    return result


# --- dot leaders --------------------------------------------------------------------

_LEADERS = re.compile(r"[ \t]*(?:\.[ \t]+){3,}\.?|[ \t]*\.{5,}[ \t]*")


def strip_leaders(text: str) -> str:
    """Dot leaders of a table of contents («Установка . . . . . . 12») become one space."""
    return _LEADERS.sub(" ", text)


# --- hyphenation -----------------------------------------------------------------


@dataclass
class Hyphenation:
    """The joined text and each decision taken: (left, right, joined?)."""

    text: str
    decisions: list[tuple[str, str, bool]] = field(default_factory=list)


def vocabulary(texts: Sequence[str]) -> Counter[str]:
    """Lower-cased words of the document, hyphenated compounds counted whole («что-то»)."""
    words: Counter[str] = Counter()
    for text in texts:
        unbroken = _HYPHEN_BREAK.sub(" ", text)  # broken words are what we are deciding about
        words.update(word.lower() for word in _WORDS.findall(unbroken))
    return words


def _keeps_hyphen(left: str, right: str, words: Counter[str]) -> bool:
    """Whether «left-» + «right» at a line break is a hyphenated word rather than a broken one."""
    lower_left, lower_right = left.lower(), right.lower()
    if words[f"{lower_left}-{lower_right}"] > words[lower_left + lower_right]:
        return True  # the document writes it with a hyphen elsewhere
    if words[lower_left + lower_right]:
        return False
    if (lower_left, lower_right) in _HYPHENATED_PREPOSITIONS or lower_left in _PREFIXES:
        return True
    return lower_right in _PARTICLES and (words[lower_left] > 0 or lower_left.startswith(_PRONOUN_STEMS))


def join_hyphenation(text: str, words: Counter[str]) -> Hyphenation:
    """Join words broken at a line end: lowercase letter, '-', line break, lowercase letter
    of the same script, unless the hyphen belongs to the word («что-то», «texmf-dist»).
    Any other break at a hyphen («Debian-\nпакет», «i386-\ncygwin», «2010-\n2017») is a
    compound broken at its own hyphen: the hyphen stays and the break goes, unless the
    document writes the joined word elsewhere («META-\nFONT», METAFONT).
    Soft hyphens (U+00AD) at a line end always join."""
    result = Hyphenation("")

    def replace(match: re.Match[str]) -> str:
        left, right = match.group(1), match.group(2)
        if left[-1].isalpha() and right[0].isalpha() and left[-1].islower() and right[0].islower() \
                and _script(left[-1]) == _script(right[0]):
            keep = _keeps_hyphen(left, right, words)
        else:
            keep = words[(left + right).lower()] <= words[f"{left}-{right}".lower()]
        result.decisions.append((left, right, not keep))
        return f"{left}-{right}" if keep else left + right

    text = _SOFT_HYPHEN_BREAK.sub("", text)
    result.text = _HYPHEN_BREAK.sub(replace, text)
    return result


def join_across_pages(pages: list[str], words: Counter[str]) -> int:
    """A word broken at the end of one page continues at the top of the next: move it back.

    Returns how many words were joined. Pages are changed in place.
    """
    joined = 0
    for index in range(len(pages) - 1):
        page, following = pages[index], pages[index + 1]
        if not page.endswith("-") or not following:
            continue
        match = re.match(r"\s*([^\W\d_]+)([^\s]*)\s*", following)
        tail = re.search(r"([^\W\d_]+)-$", page)
        if match is None or tail is None:
            continue
        candidate = join_hyphenation(f"{tail.group(1)}-\n{match.group(1)}", words)
        if not candidate.decisions:
            continue
        pages[index] = page[: tail.start()] + candidate.text + match.group(2)
        pages[index + 1] = following[match.end():]
        joined += 1
    return joined
