"""How much of a document survives into its stored chunks: before vs after a parser change.

Run: .venv/bin/python -m bench.extraction_loss [--before-tree DIR]

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

"spacing" counts lost sentences that a chunk holds once every space is removed: words the PDF
extractor glued together («MacOSX» for «Mac OS X») or split — a loss of the extractor's word
spacing, not of the text.

"Before" runs the same measurement on another checkout (``--before-tree``, e.g. an export of the
commit before the change: ``git archive <commit> | tar -x -C /tmp/before``) in a subprocess, so
each side uses its own parser and chunker.
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
_HYPHEN_BREAK = re.compile(r"[^\W\d_]-[ \t]*\n[ \t]*[^\W\d_]")
_WORD = re.compile(r"\w+")
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


def gimp_documents() -> list[Path]:
    """The GIMP set's document list (its questions are not read)."""
    data = json.loads((SETS / "gimp_html_ru.json").read_text(encoding="utf-8"))
    return [Path(d["path"]) for d in data["documents"]]


# --- references -------------------------------------------------------------------


def pdf_reference(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, check=True).stdout
    text = out.decode("utf-8", "replace").replace("\f", "\n\n")
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def html_reference(path: Path, *, content_only: bool) -> list[str]:
    from lxml import html

    raw = path.read_bytes()
    root = html.document_fromstring(raw)
    for bad in root.xpath("//script|//style|//noscript|//head"):
        bad.drop_tree()
    if content_only:
        for nav in root.xpath('//div[contains(@class, "navheader") or contains(@class, "navfooter")]'):
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


def production_chunks(path: Path) -> tuple[str, list[str]]:
    """(document text, chunk texts) as this checkout's parser and chunker make them."""
    from nodes.ingestion.chunk_document import chunk
    from grove.core.ingest_types import ExtractedDocument, IngestError
    from nodes.ingestion.parse_files import parse_file

    try:
        document = parse_file(str(path), path.name, None)
    except IngestError:  # a checkout that parses HTML only behind links: its link path
        from nodes.ingestion.fetch_url import extract_html
        from nodes.ingestion.formats.text import decode_body

        markup, _ = decode_body(path.read_bytes(), None, html=True)
        data = extract_html(markup, f"https://example.org/{path.name}")
        document = ExtractedDocument(source_type="url", source_identifier=path.name,
                                     title=data.get("title"), text=data.get("text") or "")
    return document.text, [c.text for c in chunk(document).records]


def dump(paths: list[Path]) -> None:
    print(json.dumps({str(p): production_chunks(p) for p in paths}, ensure_ascii=False))


def chunks_from(tree: Path | None, paths: list[Path]) -> dict[str, tuple[str, list[str]]]:
    if tree is None:
        return {str(p): production_chunks(p) for p in paths}
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dump", *map(str, paths)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    return {k: (v[0], v[1]) for k, v in json.loads(out).items()}


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
    lost: list[str] = field(default_factory=list)

    def row(self, label: str) -> str:
        return (f"{label:28} {self.in_text / self.reference:7.3f} {self.in_chunk / self.reference:8.3f}"
                f" {self.spacing_only:7d}"
                f" {self.chunks:6d} {self.hyphen_breaks:6d} ({self.chunks_with_breaks:3d})"
                f" {self.margin_hits:6d} ({self.chunks_with_margin:3d}) {self.junk_chunks:5d} {self.small_chunks:5d}")


def measure(reference: list[str], produced: dict[str, tuple[str, list[str]]], keys: list[str],
            margins: list[str] | None = None) -> Loss:
    loss = Loss(reference=len(reference))
    texts = " \n ".join(normalise(produced[k][0]) for k in keys)
    chunks = [c for k in keys for c in produced[k][1]]
    normal_chunks = [normalise(c) for c in chunks]
    for sentence in reference:
        if sentence in texts:
            loss.in_text += 1
        if any(sentence in c for c in normal_chunks):
            loss.in_chunk += 1
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
    if margins:
        wanted = {_SPACES.sub(" ", m).strip() for m in margins}
        for chunk in chunks:
            flat = _SPACES.sub(" ", unicodedata.normalize("NFC", chunk))
            hits = sum(flat.count(m) for m in wanted)
            loss.margin_hits += hits
            loss.chunks_with_margin += hits > 0
    return loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before-tree", type=Path, help="another checkout measured as 'before'")
    parser.add_argument("--dump", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--lost", type=int, default=0, help="print up to N lost sentences per row")
    args = parser.parse_args()
    if args.dump is not None:
        dump([Path(p) for p in args.dump])
        return

    gimp = gimp_documents()
    paths = [PDF_PATH, *gimp]
    sides = {"after": chunks_from(None, paths)}
    if args.before_tree:
        sides = {"before": chunks_from(args.before_tree, paths), **sides}
    pdf_ref = sentences(pdf_reference(PDF_PATH))
    margins = margin_lines(PDF_PATH)
    html_all = sentences(b for p in gimp for b in html_reference(p, content_only=False))
    html_content = sentences(b for p in gimp for b in html_reference(p, content_only=True))
    print(f"TeX Live PDF: {len(pdf_ref)} reference sentences (pdftotext), {len(margins)} margin lines; "
          f"GIMP: {len(gimp)} pages, {len(html_all)} sentences ({len(html_content)} without navigation)")
    print(f"{'document / side':28} {'in text':>7} {'in chunk':>8} {'spacing':>7} {'chunks':>6} {'hyph (chunks)':>12}"
          f" {'margin (chunks)':>14} {'junk':>5} {'<200':>5}")
    gimp_keys = [str(p) for p in gimp]
    for name, produced in sides.items():
        rows = [
            ("PDF " + name, measure(pdf_ref, produced, [str(PDF_PATH)], margins)),
            ("GIMP all " + name, measure(html_all, produced, gimp_keys)),
            ("GIMP content " + name, measure(html_content, produced, gimp_keys)),
        ]
        for label, loss in rows:
            print(loss.row(label))
            for sentence in loss.lost[: args.lost]:
                print(f"      lost: {sentence[:150]}")


if __name__ == "__main__":
    main()
