#!/usr/bin/env python3
"""Check the needles of the frozen retrieval sets against the installed documents.

Standalone: standard library only, plus the `pdftotext` command from poppler-utils
for PDF documents. It never imports the project's packages, so the check is
independent of the project's own parsers.

    python3 bench/sets/check_needles.py                  # every *.json next to this file
    python3 bench/sets/check_needles.py kicad.json -v    # one set, one line per needle

Text extraction
  PDF   `pdftotext FILE -` (no -layout), one page per form feed. A second, raw view
        is rebuilt from `pdftotext -tsv` (words as printed, line by line, hyphens at
        line ends kept) to tell which needles only match because pdftotext joined a
        hyphenated line break, and which cross a printed line break.
  HTML  visible text of <body> (no <head>, <script>, <style>), with a line break at
        every block element (p, div, li, td, dt, dd, h1-h6, br, ...), so a needle
        that spans two blocks is reported.
  DOCX  the paragraphs of word/document.xml in document order (table cells' paragraphs
        included), read with zipfile and ElementTree; a needle that spans two
        paragraphs (or two table cells) is reported as crossing a block.
  RST   reStructuredText committed as plain text (`"format": "rst"`, uploaded as a .txt
        file): the lines of the UTF-8 file as they are, markup kept; a needle must stay
        within one source line, and one that spans two lines is reported as crossing a
        line.
  EPUB  the spine's chapters in reading order (META-INF/container.xml -> the package
        document -> spine), each chapter's visible XHTML text split at block elements as
        for HTML; one unit per chapter, labelled `FILE:CHAPTER`.
  ODT   the paragraphs and headings (text:p, text:h) of content.xml in document order,
        table cells' and list items' paragraphs included; text:s, text:tab and
        text:line-break read as whitespace. A needle that spans two paragraphs is
        reported as crossing a block.
  TXT   plain UTF-8 text (`"format": "txt"`): the lines of the file as they are, as for RST;
        a needle must stay within one source line.
  MD    Markdown committed as it is (`"format": "md"`, uploaded as a .md file): the lines of
        the UTF-8 file as they are, markup kept, as for RST and TXT; a needle must stay within
        one source line.
  FB2   FictionBook 2 (`"format": "fb2"`): the paragraph-level elements of every <body> in
        document order (p, v, subtitle, text-author, and table cells td/th; section titles'
        paragraphs included), each one block; embedded pictures (<binary>) are not text. A
        needle that spans two blocks is reported as crossing a block.
  RTF   Rich Text (`"format": "rtf"`), read by a small control-word reader: groups that are
        not text (\\fonttbl, \\colortbl, \\stylesheet, \\info, \\pict, and every \\* destination)
        skipped, \\uN escapes (with \\ucN fallback characters dropped) and \\'hh escapes (in the
        file's \\ansicpg code page, cp1252 without one) decoded; \\par, \\sect, \\page, \\cell and
        \\row end a block, \\line and \\tab are whitespace. A needle that spans two blocks is
        reported as crossing a block.
  PPTX  PowerPoint (`"format": "pptx"`): the slides ppt/slides/slideN.xml in number order,
        one unit per slide (labelled `FILE:slide N`), each drawing paragraph (a:p, the text
        of its a:t runs, a:br as a line break) one block. A needle that spans two paragraphs
        is reported as crossing a block.

A document's `path` may be relative: it is then relative to the set file's folder.
A PDF shipped gzip-compressed (`*.pdf.gz`, `"compression": "gzip"`) is decompressed to a
temporary file first; the set's `sha256` is that of the shipped `.gz` file, and
`uncompressed_sha256`, when given, is checked against the decompressed PDF.

Questions with `"answerable": false` (the silent sets) have no needles. Each lists
`absent_terms`: words and stems that were checked, while writing, not to occur in the
documents; the checker counts them (case-insensitive, after normalisation) and reports
any that occur.

Answerable questions may list `facts` (sets AI and AJ on): 1-3 alternatives, each a short
span copied verbatim from one of that question's needles, the minimum words any correct answer
must state. The checker verifies that every fact is a substring of one of the question's
needles after whitespace normalisation (case-insensitive) and reports any that is not; a
question without `facts` (the earlier sets) is not checked for them.

Matching rule (the bench's relevance rule): after normalisation - soft hyphens
removed, every run of whitespace (including no-break spaces) collapsed to one
space, case kept - a text contains a needle when the needle is a substring.

Printed per set: questions, needles, needles found, needles missing, needles that
occur more than once, needles that cross a line/block or page break, needles that
need pdftotext's de-hyphenation, questions with no needle found, and any mismatch
between the `occurrences` recorded in the set and the ones counted now, and the facts
found in no needle. The exit status is 1 when a needle is missing, a document is missing,
a recorded count differs, or a fact is in none of its question's needles.
"""
import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from xml.etree import ElementTree

_WS = re.compile(r"\s+")


def normalise(text):
    return _WS.sub(" ", text.replace("\u00ad", "")).strip()


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------- PDF


def pdf_pages(path):
    """Pages of `pdftotext FILE -` (no -layout), each a list of lines."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"],
                         check=True, capture_output=True).stdout.decode("utf-8")
    pages = out.split("\f")
    if pages and not pages[-1].strip():
        pages = pages[:-1]
    return [p.split("\n") for p in pages]


def pdf_raw_pages(path):
    """Pages rebuilt from `pdftotext -tsv`: printed words, printed lines, hyphens kept."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", "-tsv", str(path), "-"],
                         check=True, capture_output=True).stdout.decode("utf-8")
    pages, lines = [], None
    for row in out.split("\n")[1:]:
        cols = row.split("\t")
        if len(cols) < 12:
            continue
        level, word = cols[0], cols[11]
        if level == "1":
            lines = []
            pages.append(lines)
        elif level == "4":
            lines.append([])
        elif level == "5" and lines is not None:
            if not lines:
                lines.append([])
            lines[-1].append(word)
    return [[" ".join(words) for words in page] for page in pages]


# ---------------------------------------------------------------- HTML

_BLOCK = {"address", "article", "aside", "blockquote", "body", "br", "caption", "dd",
          "div", "dl", "dt", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
          "h4", "h5", "h6", "header", "hr", "html", "li", "main", "nav", "ol", "p", "pre",
          "section", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
_SKIP = {"head", "script", "style", "title", "template", "noscript"}


class _Visible(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in _SKIP:
            self.skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag, attrs):
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_blocks(path):
    """Visible text of an HTML page as a list of block-level pieces."""
    parser = _Visible()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    parser.close()
    return [b for b in (normalise(x) for x in "".join(parser.parts).split("\n")) if b]


# ---------------------------------------------------------------- DOCX

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def docx_paragraphs(path):
    """Paragraph texts of word/document.xml in document order, table cells included."""
    root = ElementTree.fromstring(zipfile.ZipFile(path).read("word/document.xml"))
    found = []
    for paragraph in root.iter(_W + "p"):
        parts = []
        for element in paragraph.iter():
            if element.tag == _W + "t":
                parts.append(element.text or "")
            elif element.tag == _W + "tab":
                parts.append("\t")
            elif element.tag in (_W + "br", _W + "cr"):
                parts.append("\n")
        found.append("".join(parts))
    return [p for p in (normalise(x) for x in found) if p]


# ---------------------------------------------------------------- EPUB

_OPF = "{http://www.idpf.org/2007/opf}"
_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"


def epub_chapters(path):
    """(chapter path, blocks) for each spine item of an EPUB, in reading order."""
    import posixpath
    z = zipfile.ZipFile(path)
    container = ElementTree.fromstring(z.read("META-INF/container.xml"))
    opf_path = container.find(f".//{_CONTAINER}rootfile").get("full-path")
    package = ElementTree.fromstring(z.read(opf_path))
    base = posixpath.dirname(opf_path)
    manifest = {i.get("id"): i.get("href") for i in package.iter(_OPF + "item")}
    chapters = []
    for ref in package.iter(_OPF + "itemref"):
        href = manifest.get(ref.get("idref"))
        if href is None:
            continue
        part = posixpath.normpath(posixpath.join(base, href.split("#", 1)[0]))
        parser = _Visible()
        parser.feed(z.read(part).decode("utf-8"))
        parser.close()
        blocks = [b for b in (normalise(x) for x in "".join(parser.parts).split("\n")) if b]
        chapters.append((part, blocks))
    return chapters


# ---------------------------------------------------------------- ODT

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"


def _odt_text(element, parts):
    if element.text:
        parts.append(element.text)
    for child in element:
        if child.tag == _TEXT + "s":
            parts.append(" " * int(child.get(_TEXT + "c", "1")))
        elif child.tag in (_TEXT + "tab", _TEXT + "line-break"):
            parts.append(" ")
        elif child.tag in (_TEXT + "p", _TEXT + "h", _TEXT + "note"):
            pass  # a paragraph inside a paragraph (a note) is a block of its own
        else:
            _odt_text(child, parts)
        if child.tail:
            parts.append(child.tail)


def odt_paragraphs(path):
    """Paragraph and heading texts of content.xml in document order, table cells included."""
    root = ElementTree.fromstring(zipfile.ZipFile(path).read("content.xml"))
    found = []
    for element in root.iter():
        if element.tag in (_TEXT + "p", _TEXT + "h"):
            parts = []
            _odt_text(element, parts)
            found.append("".join(parts))
    return [p for p in (normalise(x) for x in found) if p]


# ---------------------------------------------------------------- FB2

_FB = "{http://www.gribuser.ru/xml/fictionbook/2.0}"
_FB_BLOCKS = {_FB + t for t in ("p", "v", "subtitle", "text-author", "td", "th")}


def fb2_blocks(path):
    """Paragraph-level texts of every <body> of a FictionBook 2 file, in document order."""
    root = ElementTree.fromstring(Path(path).read_bytes())
    found = []
    for body in root.iter(_FB + "body"):
        for element in body.iter():
            if element.tag in _FB_BLOCKS:
                found.append("".join(element.itertext()))
    return [p for p in (normalise(x) for x in found) if p]


# ---------------------------------------------------------------- RTF

_RTF_TOKEN = re.compile(rb"\\([a-zA-Z]+)(-?\d+)? ?|\\'([0-9a-fA-F]{2})|\\(.)|([{}])|([\r\n]+)|([^\\{}\r\n]+)", re.S)
_RTF_SKIP = {b"fonttbl", b"colortbl", b"stylesheet", b"info", b"pict", b"header", b"footer",
             b"headerl", b"headerr", b"footerl", b"footerr", b"object", b"themedata", b"listtable",
             b"listoverridetable", b"revtbl", b"rsidtbl", b"generator", b"xmlnstbl", b"latentstyles"}
_RTF_BREAK = {b"par", b"sect", b"page", b"cell", b"row"}
_RTF_SPACE = {b"line": " ", b"tab": " ", b"emdash": "\u2014", b"endash": "\u2013", b"bullet": "\u2022",
              b"lquote": "\u2018", b"rquote": "\u2019", b"ldblquote": "\u201c", b"rdblquote": "\u201d"}


def rtf_paragraphs(path):
    """Blocks of an RTF file: its text split at \\par (and section, page, cell, row ends)."""
    data = Path(path).read_bytes()
    cp = re.search(rb"\\ansicpg(\d+)", data)
    codepage = f"cp{int(cp.group(1))}" if cp else "cp1252"
    blocks, current = [], []
    stack = []                    # (skipping, uc) of the enclosing groups
    skipping, uc, pending_skip, group_start = False, 1, 0, False
    for m in _RTF_TOKEN.finditer(data):
        word, arg, hexbyte, symbol, brace, newline, plain = m.groups()
        if brace == b"{":
            stack.append((skipping, uc))
            group_start = True
            continue
        if brace == b"}":
            skipping, uc = stack.pop() if stack else (False, 1)
            group_start = False
            continue
        first, group_start = group_start, False
        if newline:
            continue
        if symbol == b"*" and first:
            skipping = True
            continue
        if word is not None:
            if first and word in _RTF_SKIP:
                skipping = True
            if skipping:
                continue
            if word == b"uc":
                uc = int(arg or 1)
            elif word == b"u":
                code = int(arg)
                current.append(chr(code + 65536 if code < 0 else code))
                pending_skip = uc
                continue
            elif word in _RTF_BREAK:
                blocks.append("".join(current))
                current = []
            elif word in _RTF_SPACE:
                current.append(_RTF_SPACE[word])
            pending_skip = 0
            continue
        if skipping:
            continue
        if hexbyte is not None:
            if pending_skip:
                pending_skip -= 1
            else:
                current.append(bytes([int(hexbyte, 16)]).decode(codepage, errors="replace"))
            continue
        if symbol is not None:
            if pending_skip:
                pending_skip -= 1
            elif symbol in b"\\{}":
                current.append(symbol.decode())
            elif symbol == b"~":
                current.append("\u00a0")
            elif symbol == b"_":
                current.append("\u2011")
            continue                # \- (optional hyphen) and other symbols: no text
        if plain:
            text = plain.decode(codepage, errors="replace")
            if pending_skip:
                dropped = min(pending_skip, len(text))
                text, pending_skip = text[dropped:], pending_skip - dropped
            current.append(text)
    blocks.append("".join(current))
    return [p for p in (normalise(x) for x in blocks) if p]


# ---------------------------------------------------------------- PPTX

_PPTX_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"


def pptx_slides(path):
    """(slide number, paragraphs) of every slide ppt/slides/slideN.xml, in number order."""
    with zipfile.ZipFile(path) as archive:
        names = [(int(m.group(1)), n) for n in archive.namelist()
                 if (m := re.fullmatch(r"ppt/slides/slide(\d+)\.xml", n))]
        slides = []
        for number, name in sorted(names):
            root = ElementTree.fromstring(archive.read(name))
            paragraphs = []
            for para in root.iter(_PPTX_A + "p"):
                parts = []
                for element in para.iter():
                    if element.tag == _PPTX_A + "t":
                        parts.append(element.text or "")
                    elif element.tag == _PPTX_A + "br":
                        parts.append("\n")
                paragraphs.append("".join(parts))
            slides.append((number, [p for p in (normalise(x) for x in paragraphs) if p]))
    return slides


# ---------------------------------------------------------------- RST / plain text


def text_lines(path):
    """Non-blank lines of a UTF-8 text file (reStructuredText kept verbatim, markup included)."""
    return [x for x in (normalise(line) for line in Path(path).read_text(encoding="utf-8").splitlines()) if x]


# ---------------------------------------------------------------- corpus


class Unit:
    """One PDF page or one HTML file."""

    def __init__(self, file, page, pieces, raw_pieces=None):
        self.file, self.page = file, page
        self.pieces = [normalise(p) for p in pieces]          # lines or blocks
        self.text = normalise(" ".join(pieces))
        self.raw_pieces = None if raw_pieces is None else [normalise(p) for p in raw_pieces]
        self.raw_text = None if raw_pieces is None else normalise(" ".join(raw_pieces))

    def label(self):
        return self.file if self.page is None else f"{self.file} p.{self.page}"


def document_path(doc, set_path):
    path = Path(doc["path"])
    return path if path.is_absolute() else Path(set_path).resolve().parent / path


def is_gzipped(doc, path):
    return doc.get("compression") == "gzip" or Path(path).suffix == ".gz"


def load_units(doc, set_path="."):
    path = document_path(doc, set_path)
    name = path.name
    if doc["format"] == "pdf":
        if is_gzipped(doc, path):
            with tempfile.NamedTemporaryFile(suffix=".pdf") as tmp:
                tmp.write(gzip.decompress(path.read_bytes()))
                tmp.flush()
                pages, raw = pdf_pages(tmp.name), pdf_raw_pages(tmp.name)
        else:
            pages, raw = pdf_pages(path), pdf_raw_pages(path)
        first, last = doc.get("pages") or (1, len(pages))
        units = []
        for i in range(first, last + 1):
            raw_lines = raw[i - 1] if i - 1 < len(raw) else []
            units.append(Unit(name, i, pages[i - 1], raw_lines))
        return units
    if doc["format"] == "html":
        return [Unit(name, None, html_blocks(path))]
    if doc["format"] == "docx":
        return [Unit(name, None, docx_paragraphs(path))]
    if doc["format"] == "rst":
        return [Unit(name, None, text_lines(path))]
    if doc["format"] == "epub":
        return [Unit(f"{name}:{part}", None, blocks) for part, blocks in epub_chapters(path)]
    if doc["format"] == "odt":
        return [Unit(name, None, odt_paragraphs(path))]
    if doc["format"] in ("txt", "md"):
        return [Unit(name, None, text_lines(path))]
    if doc["format"] == "fb2":
        return [Unit(name, None, fb2_blocks(path))]
    if doc["format"] == "rtf":
        return [Unit(name, None, rtf_paragraphs(path))]
    if doc["format"] == "pptx":
        return [Unit(f"{name}:slide {number}", None, blocks) for number, blocks in pptx_slides(path)]
    raise ValueError(f"unknown format {doc['format']!r}")


def check_needle(needle, units, corpus, raw_corpus):
    n = normalise(needle)
    info = {"needle": needle, "count": corpus.count(n) if n else 0, "where": [],
            "crosses_piece": False, "crosses_unit": False, "needs_dehyphenation": False}
    if not n:
        return info
    for u in units:
        if n in u.text:
            info["where"].append(u.label())
            if not any(n in p for p in u.pieces):
                info["crosses_piece"] = True
    if info["count"] > sum(u.text.count(n) for u in units):
        info["crosses_unit"] = True
    if raw_corpus is not None and info["count"] and n not in raw_corpus:
        info["needs_dehyphenation"] = True
    return info


def facts_outside_needles(question):
    """The question's `facts` that are no substring of any of its needles (normalised, case-folded)."""
    needles = [normalise(n).lower() for n in question.get("needles", [])]
    return [f for f in question.get("facts", [])
            if not normalise(f) or not any(normalise(f).lower() in n for n in needles)]


def check_set(path, verbose=False):
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    problems = 0
    units = []
    print(f"== {data['name']}  ({Path(path).name}; {data['package']['name']} "
          f"{data['package']['version']})")
    for doc in data["documents"]:
        p = document_path(doc, path)
        if not p.exists():
            print(f"   MISSING DOCUMENT {p}  (install the package, see README.md)")
            problems += 1
            continue
        digest = sha256(p)
        if digest != doc["sha256"]:
            print(f"   SHA256 DIFFERS for {p}: {digest} (set says {doc['sha256']})")
            problems += 1
        if doc.get("uncompressed_sha256") and is_gzipped(doc, p):
            inner = hashlib.sha256(gzip.decompress(p.read_bytes())).hexdigest()
            if inner != doc["uncompressed_sha256"]:
                print(f"   SHA256 OF DECOMPRESSED {p} DIFFERS: {inner} "
                      f"(set says {doc['uncompressed_sha256']})")
                problems += 1
        units.extend(load_units(doc, path))
    if problems and not units:
        return problems
    corpus = " ".join(u.text for u in units)
    raws = [u.raw_text for u in units if u.raw_text is not None]
    raw_corpus = " ".join(raws) if raws else None
    piece_word = "line" if raw_corpus is not None or {d["format"] for d in data["documents"]} in ({"rst"}, {"txt"}, {"md"}) else "block"

    n_needles = found = missing = multi = crossing = unit_cross = dehyph = 0
    q_without = []
    mismatched = []
    n_facts = 0
    bad_facts = []
    kinds = {}
    silent = []
    folded = corpus.lower()
    for q in data["questions"]:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
        if q.get("answerable", True) is False:
            silent.append(q["id"])
            if q["needles"]:
                print(f"   {q['id']} is unanswerable but has needles")
                problems += 1
            present = [(t, folded.count(normalise(t).lower())) for t in q.get("absent_terms", [])]
            present = [(t, n) for t, n in present if n]
            if present or verbose:
                print(f"   {q['id']} [unanswerable; absent terms "
                      + (", ".join(f"{t!r} FOUND x{n}" for t, n in present) or "all absent") + "]")
            problems += len(present)
            continue
        n_facts += len(q.get("facts", []))
        for fact in facts_outside_needles(q):
            bad_facts.append((q["id"], fact))
        counts = []
        any_found = False
        for needle in q["needles"]:
            info = check_needle(needle, units, corpus, raw_corpus)
            n_needles += 1
            counts.append(info["count"])
            flags = []
            if info["count"]:
                found += 1
                any_found = True
            else:
                missing += 1
                flags.append("MISSING")
            if info["count"] > 1:
                multi += 1
                flags.append(f"x{info['count']}")
            if info["crosses_piece"]:
                crossing += 1
                flags.append(f"crosses {piece_word} break")
            if info["crosses_unit"]:
                unit_cross += 1
                flags.append("crosses page break")
            if info["needs_dehyphenation"]:
                dehyph += 1
                flags.append("only after de-hyphenation")
            if verbose or "MISSING" in flags:
                where = ", ".join(info["where"]) or "-"
                print(f"   {q['id']} [{'; '.join(flags) or 'ok'}] {needle!r} @ {where}")
        if not any_found:
            q_without.append(q["id"])
        recorded = q.get("occurrences")
        if recorded is not None and list(recorded) != counts:
            mismatched.append((q["id"], recorded, counts))

    print(f"   documents: {len(data['documents'])}, units: {len(units)}, "
          f"characters: {len(corpus)}")
    print(f"   questions: {len(data['questions'])}  kinds: "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"   needles: {n_needles}  found: {found}  missing: {missing}  "
          f"occurring >1 time: {multi}")
    print(f"   needles crossing a {piece_word} break: {crossing}  crossing a page break: "
          f"{unit_cross}  matching only after de-hyphenation: {dehyph}")
    print(f"   questions with no needle found: {len(q_without)} {' '.join(q_without)}")
    if n_facts or bad_facts:
        print(f"   facts: {n_facts}  in no needle of their question: {len(bad_facts)}")
    for qid, fact in bad_facts:
        print(f"   FACT NOT IN A NEEDLE {qid}: {fact!r}")
    if silent:
        print(f"   unanswerable questions (no needles, absent terms checked): {len(silent)}")
    for qid, rec, now in mismatched:
        print(f"   OCCURRENCES DIFFER {qid}: recorded {rec}, counted {now}")
    return problems + missing + len(mismatched) + len(bad_facts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sets", nargs="*", help="set JSON files (default: every *.json here)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per needle")
    args = ap.parse_args(argv)
    here = Path(__file__).resolve().parent
    # every needle set here (a file with its documents; the consultation replay script has none)
    paths = [Path(s) for s in args.sets] or sorted(
        p for p in here.glob("*.json") if "documents" in json.loads(p.read_text(encoding="utf-8")))
    bad = 0
    for p in paths:
        bad += check_set(p, args.verbose)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
