"""How much of a document survives into its stored chunks: before vs after a parser change.

Run: .venv/bin/python -m bench.extraction_loss [--before-tree DIR] [--extractors [--repeat N]]

Documents: the TeX Live guide PDF of `bench/sets/texlive_pdf_ru.json` and the 25 GIMP manual pages
of `bench/sets/gimp_html_ru.json` (only the sets' document lists are read, never their questions).

For every document, an independent extraction is the reference:

* PDF: ``pdftotext FILE -`` (poppler; it re-joins words hyphenated at a line end), blocks split at
  blank lines, lines of a block joined with spaces;
* HTML: the visible ``<body>`` text by a plain lxml walk (a line break at every block element,
  nothing removed but scripts and styles), and a second reference without DocBook's
  ``navheader`` / ``navfooter`` divs (the pages' navigation), reported as "content".

Reference sentences are razdel's sentences of at least 4 words, deduplicated. A sentence
*survives* when, whitespace collapsed, soft hyphens dropped and case folded, it is a substring of
the parsed document text ("in text") and of at least one stored chunk ("in a chunk": the
production parser and chunker with default settings, as `grove ingest` stores them).

Debris in the chunks:

* hyphenation breaks: a letter, '-', a line break, a letter;
* running header/footer text: the PDF's margin lines by geometry (`pdftotext -bbox-layout`: lines
  in the top or bottom 7.5 % of the page, with at least 2 letters), counted when such a line's
  text is inside a chunk;
* junk-only chunks: fewer than 5 words; small chunks: under 200 characters.

"split" counts the sentences that reach a chunk only cut by a line break (a sentence printed over
two lines and never joined back): the reader of a quote, and the model, see it in two pieces.

"markup" counts Markdown syntax left in the chunks: ``**``, ``__``, a link target ``](``, a code
fence, a backslash escape. The Markdown document is the KTurtle handbook of
`bench/sets/kturtle_handbook_md_ru.json`; its reference is pandoc's plain text
(``pandoc -f gfm -t plain --wrap=none``, package pandoc), blocks split at blank lines.

"spacing" counts lost sentences that a chunk holds once every space is removed: words the PDF
extractor glued together («MacOSX» for «Mac OS X») or split — a loss of the extractor's word
spacing, not of the text.

"Before" runs the same measurement on another checkout (``--before-tree``, e.g. an export of the
commit before the change: ``git archive <commit> | tar -x -C /tmp/before``) in a subprocess, so
each side uses its own parser and chunker. "glued" counts runs of 26+ Cyrillic or Latin letters
in the parsed text: words an extractor glued together («поэтомузнаниеLuaможетбыть…»).

``--extractors`` compares PDF text layers instead, on Russian PDFs of three kinds of producer
(`PDF_SOURCES`): LaTeX (pdfTeX, XeTeX, xdvipdfmx) as Debian ships them, LibreOffice exports of
Debian's Russian HTML made here (``soffice --convert-to pdf``), and scans of those pages after OCR
(``pdftoppm`` at 300 dpi, then ``ocrmypdf -l rus+eng``), made into ``.grove/cache/extraction_loss``.
For PDFium (pypdfium2), pdfminer.six and pypdf, each document's raw text: glued runs (and per
1,000 words), pages holding one, characters that are not text (C0 controls, U+FFFD, «(cid:N)»),
PDFium's line-end hyphen marks, words against pdftotext's, share of pdftotext's sentences found
after grove's normalisation and cleaning, seconds per page (best of ``--repeat``); then grove's
whole PDF parse, before (``--before-tree``) and now. Packages: texlive-lang-cyrillic,
instead-doc-ru, installation-guide-amd64, debian-history, libreoffice-writer, ocrmypdf,
tesseract-ocr-rus, poppler-utils.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETS = ROOT / "bench" / "sets"
PDF_PATH = Path("/usr/share/doc/texlive-doc/texlive/texlive-ru/texlive-ru.pdf")
MIN_WORDS = 4
MARGIN_SHARE = 0.075

_SPACES = re.compile(r"\s+")
_LEADER_DOTS = re.compile(r"(?:\.[ \t]*){4,}")
_DASH_SPACE = re.compile(r" ?([—–]) ?")
_BEFORE_CLOSING = re.compile(r" ([,.;:!?)»])")
_AFTER_OPENING = re.compile(r"([(«]) ")
_MARKUP = re.compile(r"\*\*|__|\]\(|```|\\[\\`*_\[\]#()!-]")
_HYPHEN_BREAK = re.compile(r"[^\W\d_]-[ \t]*\n[ \t]*[^\W\d_]")
_WORD = re.compile(r"\w+")
GLUED_LETTERS = 26
_GLUED = re.compile(rf"[а-яёА-ЯЁ]{{{GLUED_LETTERS},}}|[A-Za-z]{{{GLUED_LETTERS},}}")
"""Glued words: runs of 26+ Cyrillic or Latin letters, counted raw (the check of
`nodes.ingestion.formats.pdf_text` leaves TeX control sequences and camelCase names out), defined
here so that every extractor and a checkout without that module are counted the same way."""
_LETTER_WORD = re.compile(r"[^\W\d_]+")
_NOT_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffd]|\(cid:\d+\)")
_HYPHEN_MARKS = re.compile(r"[\x02\ufffe]")
_BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "div", "dl", "dt",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr",
    "li", "main", "nav", "ol", "p", "pre", "section", "table", "tbody", "td", "th", "thead", "tr", "ul",
}


def normalise(text: str) -> str:
    """Whitespace collapsed, soft hyphens and dot leaders dropped, case folded, and no space at
    dashes or before closing punctuation: extractors disagree about those spaces
    («Live—дистрибутива» / «Live — дистрибутива»), and that is no loss."""
    text = _LEADER_DOTS.sub(" ", text.replace("\u00ad", ""))
    text = _SPACES.sub(" ", text).strip().casefold()
    text = _DASH_SPACE.sub(r"\1", text)
    text = _BEFORE_CLOSING.sub(r"\1", text)
    return _AFTER_OPENING.sub(r"\1", text)


def markdown_document() -> Path:
    """The KTurtle set's document (its questions are not read)."""
    data = json.loads((SETS / "kturtle_handbook_md_ru.json").read_text(encoding="utf-8"))
    return (SETS / data["documents"][0]["path"]).resolve()


def gimp_documents() -> list[Path]:
    """The GIMP set's document list (its questions are not read)."""
    data = json.loads((SETS / "gimp_html_ru.json").read_text(encoding="utf-8"))
    return [Path(d["path"]) for d in data["documents"]]


# --- references -------------------------------------------------------------------


def pdf_reference(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, check=True).stdout
    text = out.decode("utf-8", "replace").replace("\f", "\n\n")
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def markdown_reference(path: Path) -> list[str]:
    out = subprocess.run(["pandoc", "-f", "gfm", "-t", "plain", "--wrap=none", str(path)],
                         capture_output=True, check=True).stdout
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", out.decode("utf-8")) if block.strip()]


def html_reference(path: Path, *, content_only: bool) -> list[str]:
    from lxml import html

    raw = path.read_bytes()
    root = html.document_fromstring(raw)
    for bad in root.xpath("//script|//style|//noscript|//head"):
        bad.drop_tree()
    if content_only:
        for nav in root.xpath('//div[contains(@class, "navheader") or contains(@class, "navfooter")]'
                              '|//nav|//footer|//*[@role="navigation" or @role="contentinfo"]'):
            nav.drop_tree()
    parts: list[str] = []

    def walk(element) -> None:  # noqa: ANN001 - lxml element
        tag = element.tag if isinstance(element.tag, str) else ""
        block = tag.lower() in _BLOCK_TAGS
        if block:
            parts.append("\n")
        if tag and element.text:
            parts.append(element.text)
        for child in element:
            walk(child)
        if block:
            parts.append("\n")
        if element.tail:
            parts.append(element.tail)

    body = root.find("body")
    walk(body if body is not None else root)
    return [" ".join(line.split()) for line in "".join(parts).split("\n") if line.strip()]


def sentences(blocks: Iterable[str]) -> list[str]:
    from razdel import sentenize

    seen: dict[str, str] = {}
    for block in blocks:
        for sentence in sentenize(block):
            words = [w for w in _WORD.findall(sentence.text) if any(ch.isalpha() for ch in w)]
            if len(words) >= MIN_WORDS:
                seen.setdefault(normalise(sentence.text), sentence.text)
    return list(seen)


def margin_lines(path: Path) -> list[str]:
    """Text lines in the top and bottom margins of every page (geometry, not text)."""
    from lxml import etree

    out = subprocess.run(["pdftotext", "-bbox-layout", str(path), "-"], capture_output=True,
                         check=True).stdout
    root = etree.fromstring(out, etree.HTMLParser(encoding="utf-8"))
    lines: list[str] = []
    for page in root.iter("page"):
        height = float(page.get("height"))
        for line in page.iter("line"):
            y_min, y_max = float(line.get("ymin")), float(line.get("ymax"))
            if y_max <= MARGIN_SHARE * height or y_min >= (1 - MARGIN_SHARE) * height:
                text = " ".join(w.text or "" for w in line.iter("word")).strip()
                if sum(ch.isalpha() for ch in text) >= 2:
                    lines.append(text)
    return lines


# --- the production side (runs in either checkout) ------------------------------------


def production_chunks(path: Path) -> tuple[str, list[str], float, int, int]:
    """(document text, chunk texts, seconds to parse, pages, pages with glued words) as this
    checkout's parser and chunker make them."""
    import time

    from nodes.ingestion.chunk_document import chunk
    from grove.core.ingest_types import ExtractedDocument, IngestError
    from nodes.ingestion.parse_files import parse_file

    started = time.perf_counter()
    try:
        document = parse_file(str(path), path.name, None, *_settings_for(parse_file))
    except IngestError:  # a checkout that parses HTML only behind links: its link path
        from nodes.ingestion.fetch_url import extract_html
        from nodes.ingestion.formats.text import decode_body

        markup, _ = decode_body(path.read_bytes(), None, html=True)
        data = extract_html(markup, f"https://example.org/{path.name}")
        document = ExtractedDocument(source_type="url", source_identifier=path.name,
                                     title=data.get("title"), text=data.get("text") or "")
    seconds = time.perf_counter() - started
    pages = document.pages or []
    glued_pages = sum(1 for page in pages if _GLUED.search(page))
    chunks = chunk(document, *_settings_for(chunk)).records
    return document.text, [c.text for c in chunks], seconds, len(pages), glued_pages


def _settings_for(node: object) -> tuple[object, ...]:
    """The settings, for a checkout whose node is handed them (an older one reads its own)."""
    import inspect

    from grove.core.settings import get_settings

    return (get_settings(),) if "settings" in inspect.signature(node).parameters else ()


def dump(paths: list[Path]) -> None:
    print(json.dumps({str(p): production_chunks(p) for p in paths}, ensure_ascii=False))


Produced = dict[str, tuple[str, list[str], float, int, int]]


def chunks_from(tree: Path | None, paths: list[Path]) -> Produced:
    if tree is None:
        return {str(p): production_chunks(p) for p in paths}
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dump", *map(str, paths)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return {k: (v[0], v[1], v[2], v[3], v[4]) for k, v in json.loads(out).items()}


# --- measurement ------------------------------------------------------------------


@dataclass
class Loss:
    reference: int = 0
    in_text: int = 0
    in_chunk: int = 0
    chunks: int = 0
    hyphen_breaks: int = 0
    chunks_with_breaks: int = 0
    margin_hits: int = 0
    chunks_with_margin: int = 0
    junk_chunks: int = 0
    small_chunks: int = 0
    spacing_only: int = 0  # lost sentences that would match with every space removed
    split: int = 0  # sentences in a chunk only across a line break
    glued: int = 0  # runs of GLUED_LETTERS+ letters in the parsed text
    markup: int = 0  # Markdown syntax left in the chunks
    lost: list[str] = field(default_factory=list)

    def row(self, label: str) -> str:
        return (f"{label:28} {self.in_text / self.reference:7.3f} {self.in_chunk / self.reference:8.3f}"
                f" {self.split:6d} {self.spacing_only:7d} {self.glued:6d} {self.markup:6d}"
                f" {self.chunks:6d} {self.hyphen_breaks:6d} ({self.chunks_with_breaks:3d})"
                f" {self.margin_hits:6d} ({self.chunks_with_margin:3d}) {self.junk_chunks:5d} {self.small_chunks:5d}")


def measure(reference: list[str], produced: Produced, keys: list[str],
            margins: list[str] | None = None) -> Loss:
    loss = Loss(reference=len(reference))
    loss.glued = sum(len(_GLUED.findall(produced[k][0])) for k in keys)
    texts = " \n ".join(normalise(produced[k][0]) for k in keys)
    chunks = [c for k in keys for c in produced[k][1]]
    normal_chunks = [normalise(c) for c in chunks]
    lined_chunks = [normalise(c.replace("\n", " \ue000 ")) for c in chunks]  # a line break kept as a mark
    for sentence in reference:
        if sentence in texts:
            loss.in_text += 1
        if any(sentence in c for c in normal_chunks):
            loss.in_chunk += 1
            loss.split += not any(sentence in c for c in lined_chunks)
        else:
            loss.lost.append(sentence)
    squeezed = [c.replace(" ", "") for c in normal_chunks]
    loss.spacing_only = sum(1 for s in loss.lost if any(s.replace(" ", "") in c for c in squeezed))
    loss.chunks = len(chunks)
    for chunk in chunks:
        breaks = len(_HYPHEN_BREAK.findall(chunk))
        loss.hyphen_breaks += breaks
        loss.chunks_with_breaks += breaks > 0
        words = [w for w in _WORD.findall(chunk) if any(ch.isalpha() for ch in w)]
        loss.junk_chunks += len(words) < 5
        loss.small_chunks += len(chunk.strip()) < 200
        loss.markup += len(_MARKUP.findall(chunk))
    if margins:
        wanted = {_SPACES.sub(" ", m).strip() for m in margins}
        for chunk in chunks:
            flat = _SPACES.sub(" ", unicodedata.normalize("NFC", chunk))
            hits = sum(flat.count(m) for m in wanted)
            loss.margin_hits += hits
            loss.chunks_with_margin += hits > 0
    return loss


# --- PDF text layers: PDFium, pdfminer.six and pypdf on PDFs of three kinds of producer -----


CACHE = ROOT / ".grove" / "cache" / "extraction_loss"
HISTORY = Path("/usr/share/doc/debian-history/docs")
INSTALL = Path("/usr/share/doc/installation-guide-amd64/ru")


@dataclass(frozen=True)
class PdfSource:
    """A Russian PDF: shipped by a Debian package, or made here from one (LibreOffice, OCR)."""

    name: str
    producer: str
    package: str
    make: str  # how: "shipped", "gunzip", "soffice", "ocr"
    origin: Path
    pages: tuple[int, int] | None = None  # for "ocr": the first and last page rendered

    @property
    def path(self) -> Path:
        return self.origin if self.make == "shipped" else CACHE / f"{self.name}.pdf"


PDF_SOURCES = [
    PdfSource("texlive-ru", "LaTeX (pdfTeX)", "texlive-lang-cyrillic", "shipped", PDF_PATH),
    PdfSource("mpman-ru", "LaTeX (pdfTeX)", "texlive-lang-cyrillic", "shipped",
              Path("/usr/share/doc/texlive-doc/metapost/mpman-ru/mpman-ru.pdf")),
    PdfSource("stead3-ru", "LaTeX (XeTeX)", "instead-doc-ru", "shipped",
              Path("/usr/share/doc/instead/manual/pdf/ru/stead3-ru.pdf")),
    PdfSource("install.ru", "DocBook → LaTeX (XeTeX, xdvipdfmx)", "installation-guide-amd64", "gunzip",
              INSTALL / "install.ru.pdf.gz"),
    PdfSource("project-history.ru", "DocBook → LaTeX (XeTeX, xdvipdfmx)", "debian-history", "shipped",
              HISTORY / "project-history.ru.pdf"),
    PdfSource("history-detailed.ru", "LibreOffice 7.4 (HTML → PDF)", "debian-history", "soffice",
              HISTORY / "detailed.ru.html"),
    PdfSource("install-ch06s03.ru", "LibreOffice 7.4 (HTML → PDF)", "installation-guide-amd64", "soffice",
              INSTALL / "ch06s03.html"),
    PdfSource("history-detailed-scan.ru", "scan → ocrmypdf + Tesseract (rus)", "debian-history", "ocr",
              CACHE / "history-detailed.ru.pdf", (1, 6)),
    PdfSource("texlive-scan.ru", "scan → ocrmypdf + Tesseract (rus)", "texlive-lang-cyrillic", "ocr",
              PDF_PATH, (5, 10)),
]


def prepare(source: PdfSource) -> Path | None:
    """The source's PDF, made into the cache when it is not shipped; None when what it needs is
    not installed."""
    import gzip
    import shutil
    import tempfile

    if source.path.exists():
        return source.path
    if not source.origin.exists():
        return None
    CACHE.mkdir(parents=True, exist_ok=True)
    if source.make == "gunzip":
        source.path.write_bytes(gzip.decompress(source.origin.read_bytes()))
    elif source.make == "soffice":
        if shutil.which("soffice") is None:
            return None
        with tempfile.TemporaryDirectory() as work:
            copy = Path(work) / f"{source.name}.html"
            shutil.copy(source.origin, copy)
            subprocess.run(["soffice", "--headless", "--infilter=HTML (StarWriter)", "--convert-to",
                            "pdf:writer_pdf_Export", "--outdir", str(CACHE), str(copy)],
                           env={**os.environ, "HOME": work}, capture_output=True, check=True)
    elif source.make == "ocr":
        if shutil.which("ocrmypdf") is None or shutil.which("pdftoppm") is None or source.pages is None:
            return None
        from PIL import Image

        with tempfile.TemporaryDirectory() as work:
            first, last = source.pages
            subprocess.run(["pdftoppm", "-r", "300", "-gray", "-f", str(first), "-l", str(last), "-png",
                            str(source.origin), f"{work}/page"], check=True)
            images = [Image.open(p) for p in sorted(Path(work).glob("page-*.png"))]
            scan = Path(work) / "scan.pdf"
            images[0].save(scan, save_all=True, append_images=images[1:], resolution=300)
            subprocess.run(["ocrmypdf", "-q", "-l", "rus+eng", "-j", "1", str(scan), str(source.path)], check=True)
    return source.path if source.path.exists() else None


def pdfium_texts(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path)
    try:
        texts = []
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return texts
    finally:
        pdf.close()


def pdfminer_texts(path: Path) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextContainer

    return ["".join(box.get_text() for box in page if isinstance(box, LTTextContainer))
            for page in extract_pages(path, laparams=LAParams())]


def pypdf_texts(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(path, strict=False).pages]


EXTRACTORS = {"pypdfium2": pdfium_texts, "pdfminer.six": pdfminer_texts, "pypdf": pypdf_texts}


@dataclass
class Layer:
    """One extractor's text of one PDF, raw and as grove would clean it."""

    pages: int
    seconds: float
    glued: int
    glued_pages: int
    words: int
    not_text: int
    hyphen_marks: int
    in_text: float
    examples: list[str]

    def row(self, document: str, producer: str, extractor: str, reference_words: int) -> str:
        rate = 1000 * self.glued / max(self.words, 1)
        return (f"| {document} | {producer} | {extractor} | {self.glued} ({rate:.2f}) | {self.glued_pages}/{self.pages}"
                f" | {self.not_text} | {self.hyphen_marks} | {self.words / max(reference_words, 1):.3f}"
                f" | {self.in_text:.3f} | {self.seconds / max(self.pages, 1):.4f} |")


def clean_like_grove(pages: list[str]) -> str:
    """An extractor's pages through grove's normalisation and cleaning (this checkout's)."""
    from nodes.ingestion.formats.base import clean_text
    from nodes.ingestion.formats.pdf import clean_pages
    from nodes.ingestion.formats.pdf_text import normalise

    cleaned, _ = clean_pages([clean_text(normalise(page)) for page in pages], [str(i + 1) for i in range(len(pages))])
    return "\n\n".join(cleaned)


def measure_layer(pages: list[str], seconds: float, reference: list[str]) -> Layer:
    raw = "\n".join(pages)
    text = normalise(clean_like_grove(pages))
    glued = _GLUED.findall(raw)
    return Layer(pages=len(pages), seconds=seconds, glued=len(glued),
                 glued_pages=sum(1 for page in pages if _GLUED.search(page)),
                 words=len(_LETTER_WORD.findall(_HYPHEN_MARKS.sub("", raw))), not_text=len(_NOT_TEXT.findall(raw)),
                 hyphen_marks=len(_HYPHEN_MARKS.findall(raw)),
                 in_text=sum(1 for sentence in reference if sentence in text) / max(len(reference), 1),
                 examples=glued[:2])


def timed(extract: object, path: Path, repeat: int) -> tuple[list[str], float]:
    import time

    best, pages = float("inf"), []
    for _ in range(repeat):
        started = time.perf_counter()
        pages = extract(path)  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return pages, best


def compare_extractors(before_tree: Path | None, repeat: int) -> None:
    """The table of bench/README.md «PDF text layer»: each extractor's raw text per document, and
    grove's whole PDF parse before and after (`--before-tree`)."""
    ready = [(source, prepare(source)) for source in PDF_SOURCES]
    missing = [source.name for source, path in ready if path is None]
    if missing:
        print(f"skipped (install their packages, soffice, ocrmypdf): {', '.join(missing)}")
    chosen = [(source, path) for source, path in ready if path is not None]
    paths = [path for _, path in chosen]
    sides = {"grove now": chunks_from(None, paths)}
    if before_tree:
        sides = {"grove before": chunks_from(before_tree, paths), **sides}
    print("| document | producer | extractor | glued runs (per 1,000 words) | pages with one | not-text"
          " characters | U+FFFE/U+0002 marks | words / pdftotext's | sentences in text | s/page |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for source, path in chosen:
        reference_blocks = pdf_reference(path)
        reference = sentences(reference_blocks)
        reference_words = sum(len(_LETTER_WORD.findall(block)) for block in reference_blocks)
        for name, extract in EXTRACTORS.items():
            try:
                pages, seconds = timed(extract, path, repeat)
            except Exception as exc:  # an extractor that cannot read the file at all
                print(f"| {source.name} | {source.producer} | {name} | fails: {type(exc).__name__}: {str(exc)[:60]}"
                      " | | | | | | |", flush=True)
                continue
            layer = measure_layer(pages, seconds, reference)
            print(layer.row(source.name, source.producer, name, reference_words), flush=True)
        for side, produced in sides.items():
            text, _, seconds, count, glued_pages = produced[str(path)]
            glued = _GLUED.findall(text)
            words = len(_LETTER_WORD.findall(text))
            flat = normalise(text)
            survived = sum(1 for sentence in reference if sentence in flat) / max(len(reference), 1)
            print(f"| {source.name} | {source.producer} | **{side}** | {len(glued)} ({1000 * len(glued) / max(words, 1):.2f})"
                  f" | {glued_pages}/{count} | {len(_NOT_TEXT.findall(text))}"
                  f" | {len(_HYPHEN_MARKS.findall(text))} | {words / max(reference_words, 1):.3f} | {survived:.3f}"
                  f" | {seconds / max(count, 1):.4f} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before-tree", type=Path, help="another checkout measured as 'before'")
    parser.add_argument("--dump", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--lost", type=int, default=0, help="print up to N lost sentences per row")
    parser.add_argument("--extractors", action="store_true",
                        help="compare the PDF text layers of PDFium, pdfminer.six and pypdf on PDFs of three producers")
    parser.add_argument("--repeat", type=int, default=3, help="timings: the best of this many runs")
    args = parser.parse_args()
    if args.dump is not None:
        dump([Path(p) for p in args.dump])
        return
    if args.extractors:
        compare_extractors(args.before_tree, args.repeat)
        return

    gimp = gimp_documents()
    markdown = markdown_document()
    paths = [PDF_PATH, *gimp, markdown]
    sides = {"after": chunks_from(None, paths)}
    if args.before_tree:
        sides = {"before": chunks_from(args.before_tree, paths), **sides}
    pdf_ref = sentences(pdf_reference(PDF_PATH))
    margins = margin_lines(PDF_PATH)
    html_all = sentences(b for p in gimp for b in html_reference(p, content_only=False))
    html_content = sentences(b for p in gimp for b in html_reference(p, content_only=True))
    markdown_ref = sentences(markdown_reference(markdown))
    print(f"TeX Live PDF: {len(pdf_ref)} reference sentences (pdftotext), {len(margins)} margin lines; "
          f"GIMP: {len(gimp)} pages, {len(html_all)} sentences ({len(html_content)} without navigation); "
          f"KTurtle Markdown: {len(markdown_ref)} sentences (pandoc)")
    print(f"{'document / side':28} {'in text':>7} {'in chunk':>8} {'split':>6} {'spacing':>7} {'glued':>6} {'markup':>6} {'chunks':>6}"
          f" {'hyph (chunks)':>12}"
          f" {'margin (chunks)':>14} {'junk':>5} {'<200':>5}")
    gimp_keys = [str(p) for p in gimp]
    for name, produced in sides.items():
        rows = [
            ("PDF " + name, measure(pdf_ref, produced, [str(PDF_PATH)], margins)),
            ("GIMP all " + name, measure(html_all, produced, gimp_keys)),
            ("GIMP content " + name, measure(html_content, produced, gimp_keys)),
            ("Markdown " + name, measure(markdown_ref, produced, [str(markdown)])),
        ]
        for label, loss in rows:
            print(loss.row(label))
            for sentence in loss.lost[: args.lost]:
                print(f"      lost: {sentence[:150]}")


if __name__ == "__main__":
    main()
