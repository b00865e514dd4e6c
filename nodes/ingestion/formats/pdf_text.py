"""A PDF's text layer as the document prints it: the reading half of `nodes.ingestion.formats.pdf`.

PDFium (pypdfium2) reads every page: pypdf glues the words of some LaTeX-made PDFs, pdfminer.six is far
slower and misses OCR text layers, while PDFium is fast and gives each character's drawn size, so it alone
gives text and structure. A page failing the `check` (runs of `GLUED_LETTERS`, characters that are no text)
is read again by pypdf, kept when cleaner (`Check.better_than`): a re-read costs little, a glued passage
costs the reader. `normalise` turns PDFium's line-end hyphens back into «-\\n» for `pdf_layout`, drops soft
hyphens and spells out Latin ligatures. `read_text` and `read_runs` run under `nodes.ingestion.native.PDFIUM`.
Figures: bench/README.md, «PDF text layer and extraction loss» (bench.extraction_loss).
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodes.ingestion.formats.base import clean_text
from nodes.ingestion.formats.pdf_structure import Run

GLUED_LETTERS = 26
"""Runs this long are glued words: longer than nearly every Russian word
(«высокопревосходительство» has 24 letters). Latin identifiers reach it too; a TeX control
sequence (after a backslash: «\\pdfsuppresswarningpagegroup») or a camelCase name
(«ScriptScriptPercentScaleDown») is one word, not a glued run."""

_GLUED = re.compile(rf"[а-яёА-ЯЁ]{{{GLUED_LETTERS},}}|(?<![\\\d_A-Za-z])[A-Za-z]{{{GLUED_LETTERS},}}")
_CAMEL_CASE = re.compile(r"[a-z][A-Z]")
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffd]|\(cid:\d+\)")
_WORDS = re.compile(r"[^\W\d_]+")
_HYPHEN_MARK = re.compile(r"[\x02\ufffe][ \t]*")
_INLINE_SOFT_HYPHEN = re.compile(r"\u00ad(?![ \t]*\n)")
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_SPACE_UNITS = frozenset(b" \t\r\n")


def normalise(text: str) -> str:
    """Line ends unified, PDFium's line-end hyphen marks made «-\\n» again, soft hyphens inside a
    line dropped, Latin ligatures spelled out."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _HYPHEN_MARK.sub("-\n", text)
    text = _INLINE_SOFT_HYPHEN.sub("", text)
    return _LIGATURES.sub(lambda match: unicodedata.normalize("NFKC", match.group()), text)


@dataclass(frozen=True)
class Check:
    """What a page's text looks like: its words, glued runs and characters that are not text."""

    words: int
    glued: int
    not_text: int

    @property
    def passed(self) -> bool:
        return not self.glued and not self.not_text

    def better_than(self, other: Check) -> bool:
        """Fewer glued runs, or as many and fewer characters that are not text — and no fewer
        words: a text with fewer words glued some or lost some."""
        if not other.words:  # a page PDFium read nothing on
            return self.words > 0
        cleaner = (self.glued, self.not_text) < (other.glued, other.not_text)
        return cleaner and self.words >= other.words


def check(text: str) -> Check:
    """The page's words (counted with the characters that are not text taken out, so that one
    inside a word does not make two of it), glued runs and characters that are not text."""
    return Check(len(_WORDS.findall(_NOT_TEXT.sub("", text))), len(glued_runs(text)),
                 len(_NOT_TEXT.findall(text)))


def glued_runs(text: str) -> list[str]:
    """The runs of `GLUED_LETTERS`+ letters in `text` that are no identifier."""
    return [run for run in _GLUED.findall(text) if not _CAMEL_CASE.search(run)]


# --- PDFium -------------------------------------------------------------------------


def read_text(pdf: Any, index: int) -> str:
    """One page's clean, normalised text (call under `PDFIUM`)."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range() if textpage.count_chars() > 0 else ""
        finally:
            textpage.close()
    finally:
        page.close()
    return clean_text(normalise(text))


def read_runs(pdf: Any, index: int) -> list[Run]:
    """One page's runs of one drawn font size (call under `PDFIUM`). A call per character, so
    read only for what needs sizes: font-size headings, a title from the largest line."""
    import pypdfium2.raw as pdfium_c

    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            count = max(textpage.count_chars(), 0)
            text = textpage.get_text_range() if count else ""
            sizes = [pdfium_c.FPDFText_GetFontSize(textpage, k) for k in range(count)]
        finally:
            textpage.close()
    finally:
        page.close()
    return _runs(text, sizes)


def _runs(text: str, sizes: Sequence[float]) -> list[Run]:
    """The page's characters grouped into runs of one size, a run ending at each line end.

    PDFium counts characters in UTF-16 units (a character outside the BMP is two), so the text
    is split by units; spaces and line ends PDFium generated take the size of their run. A page
    whose text and sizes do not line up gives no runs (no font headings from it)."""
    units = text.encode("utf-16-le", "surrogatepass")
    if len(units) != 2 * len(sizes):
        return []
    runs: list[Run] = []
    start, size = 0, -1.0

    def close(end: int) -> None:
        if end > start:
            piece = units[2 * start : 2 * end].decode("utf-16-le", "replace")
            runs.append(Run(normalise(piece), max(size, 0.0)))

    for k, drawn in enumerate(sizes):
        low, high = units[2 * k], units[2 * k + 1]
        if high == 0 and low in _SPACE_UNITS:
            if low == 0x0A:  # a line end closes the run
                close(k + 1)
                start, size = k + 1, -1.0
            continue
        if size < 0:
            size = drawn
        elif round(drawn, 1) != round(size, 1):
            close(k)
            start, size = k, drawn
    close(len(sizes))
    return runs


# --- the fallback -------------------------------------------------------------------


def pypdf_pages(source: bytes | Path, indexes: Sequence[int]) -> dict[int, str]:
    """pypdf's clean, normalised text of the pages `indexes` (pages it cannot read are left out)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(source) if isinstance(source, bytes) else source, strict=False)
    if reader.is_encrypted:
        reader.decrypt("")
    texts: dict[int, str] = {}
    for index in indexes:
        try:
            texts[index] = clean_text(normalise(reader.pages[index].extract_text() or ""))
        except Exception:  # pypdf on a page it cannot parse: PDFium's text stays
            continue
    return texts


def recheck(pages: list[str], source: bytes | Path) -> int:
    """Pages that fail `check` read again by pypdf; its text replaces PDFium's where it is
    better (`Check.better_than`). When PDFium read no text at all, every page is asked (pypdf
    may read a font PDFium cannot; else the PDF is a scan). Changes `pages` in place; returns
    how many were replaced."""
    if not any(pages):
        failing = {index: check("") for index in range(len(pages))}
    else:
        failing = {index: found for index, text in enumerate(pages) if not (found := check(text)).passed}
    if not failing:
        return 0
    try:
        others = pypdf_pages(source, sorted(failing))
    except Exception:  # pypdf cannot open what PDFium could: PDFium's text stays
        return 0
    replaced = 0
    for index, text in others.items():
        if check(text).better_than(failing[index]):
            pages[index] = text
            replaced += 1
    return replaced
