"""A real Russian retrieval evaluation set built from Debian documentation packages.

Why this source: the machines here reach no model or data-set hub, and packaged copies of
SberQuAD/MIRACL/BEIR download their data at run time. Debian, however, ships Russian
documentation written and translated by people outside this project, and some of it is a FAQ:
a question heading followed by its answer. That gives natural questions with known answers.

Sources (Debian packages that must be installed; see `ensure_installed`):

* ``debian-faq-ru`` — "Часто задаваемые вопросы о Debian GNU/Linux" (DocBook HTML under
  /usr/share/doc/debian/FAQ/ru). Licence: verbatim/modified copies and translations permitted
  provided the notice is kept (Copyright © 1996-2021 Software in the Public Interest; see
  /usr/share/doc/debian-faq-ru/copyright).
* ``aptitude-doc-ru`` — the Russian aptitude user manual (HTML under
  /usr/share/doc/aptitude/html/ru), GPL-2+.
* ``manpages-ru`` — Russian translations of Linux man pages (/usr/share/man/ru), GPL-3+ for the
  translations (the originals carry their own free licences). Used only as distractors. Rendered
  to text with groff (package ``groff-base``, a dependency of ``man-db``).

How queries and relevance are derived (no human judged anything here):

* Every DocBook section of the two HTML manuals is one unit: its heading plus its *own* text
  (paragraphs, lists, examples), excluding its subsections, which are units of their own.
* A unit becomes a query when its heading has at least two Cyrillic words of three or more
  letters (so "Что такое Debian GNU/Linux?" counts, "8.1.1. dpkg" does not), is not a
  "Глава N." chapter title, and its own text is at least ``MIN_ANSWER_CHARS`` long with at
  least ``MIN_BODY_CYRILLIC`` of its letters Cyrillic. (The Russian FAQ translation is partly
  unfinished: some answers are wholly English and are dropped as queries; others are Russian
  with English paragraphs, commands and package names, and are kept.) Kinds:
  - ``"question"``: the heading contains "?" (e.g. "Как зафиксировать (hold) пакет?"),
    including the three question/answer pairs of the aptitude manual's FAQ chapter;
  - ``"heading"``: any other heading (e.g. "Управление сломанными пакетами").
  The query text is the heading without its number. The relevant passages are the chunks of
  that unit's own text — and only those; the heading is *not* part of any passage (otherwise the
  task is string matching). A unit whose text spans more than ``MAX_RELEVANT`` chunks is too
  broad to be "the answer" and gives no query. A parent question whose answer continues in
  subsections gets only its own text as relevant, so recall is, if anything, under-counted.
* All other units (English headings, chapter intros, short or English bodies) still become
  passages, and so do chunks of the Russian man pages: same-domain distractors (Linux, packages,
  files), which makes the task harder than random filler would.

Passages are packed from paragraphs to roughly ``TARGET_CHARS`` characters (hard limit
``MAX_CHARS``; a lone overlong paragraph is split at sentence ends). Man pages contribute at most
``MAX_CHUNKS_PER_MANPAGE`` chunks each (from the top: ИМЯ/ОПИСАНИЕ first), to keep the corpus
at a size that can be embedded on a 2-core CPU in minutes.

The built set is cached as JSON in ``.grove/cache/eval/``; the cache key includes the installed
package versions and ``BUILD_VERSION``.

Run ``.venv/bin/python -m bench.datasets`` to build and print statistics.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

REQUIRED_PACKAGES: tuple[str, ...] = ("debian-faq-ru", "aptitude-doc-ru", "manpages-ru")
INSTALL_COMMAND = (
    "apt-get update && apt-get install -y --no-install-recommends " + " ".join(REQUIRED_PACKAGES)
)

FAQ_DIR = Path("/usr/share/doc/debian/FAQ/ru")
APTITUDE_DIR = Path("/usr/share/doc/aptitude/html/ru")
MAN_DIR = Path("/usr/share/man/ru")

BUILD_VERSION = 3
TARGET_CHARS = 900
MAX_CHARS = 1500
MIN_ANSWER_CHARS = 40
MAX_CHUNKS_PER_MANPAGE = 6
MAX_RELEVANT = 5
MIN_BODY_CYRILLIC = 0.25

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = PROJECT_ROOT / ".grove" / "cache" / "eval"


@dataclass(frozen=True)
class Query:
    """A question (or section heading) and the ids of the passages that answer it."""

    id: str
    text: str
    relevant_ids: tuple[str, ...]
    kind: str = "question"  # "question" | "heading"


@dataclass(frozen=True)
class Passage:
    """A chunk-sized piece of real Russian text; `source` names package and section."""

    id: str
    text: str
    source: str


@dataclass
class EvalSet:
    queries: list[Query]
    passages: list[Passage]
    meta: dict[str, object] = field(default_factory=dict)

    def split(self, tune_fraction: float = 0.4) -> tuple[list[Query], list[Query]]:
        """Deterministic (hash-based) split into a tuning part and a held-out part."""
        tune, held = [], []
        for query in self.queries:
            bucket = int(hashlib.sha1(query.id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            (tune if bucket < tune_fraction else held).append(query)
        return tune, held


# --------------------------------------------------------------------------- packages


def installed_versions() -> dict[str, str | None]:
    """Installed version of each required package (None if not installed)."""
    versions: dict[str, str | None] = {}
    for name in REQUIRED_PACKAGES:
        try:
            out = subprocess.run(
                ["dpkg-query", "-W", "-f=${Status}\t${Version}", name],
                capture_output=True, text=True, check=False,
            ).stdout
        except FileNotFoundError:  # not a Debian system
            out = ""
        status, _, version = out.partition("\t")
        versions[name] = version if status.endswith("installed") and version else None
    return versions


def ensure_installed() -> dict[str, str]:
    """Fail with the apt-get command to run if a source package (or groff) is missing."""
    versions = installed_versions()
    missing = [name for name, version in versions.items() if version is None]
    if missing or shutil.which("groff") is None:
        what = ", ".join(missing + ([] if shutil.which("groff") else ["groff (groff-base)"]))
        raise RuntimeError(
            f"The Russian evaluation set is built from Debian documentation packages; missing: "
            f"{what}. Install them as root with:\n  {INSTALL_COMMAND} groff-base"
        )
    return {name: str(version) for name, version in versions.items()}


# --------------------------------------------------------------------------- text helpers

_CYR = re.compile(r"[а-яё]", re.IGNORECASE)
_LETTER = re.compile(r"[a-zа-яё]", re.IGNORECASE)
_NUMBER_PREFIX = re.compile(r"^\s*(?:\d+\.)+\s*")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[А-ЯЁA-Z0-9«\"(])")


def cyrillic_share(text: str) -> float:
    letters = len(_LETTER.findall(text))
    return len(_CYR.findall(text)) / letters if letters else 0.0


def _squash(text: str) -> str:
    return " ".join(text.split())


def _split_long(paragraph: str) -> list[str]:
    """Split an overlong paragraph at sentence ends (or spaces as a last resort)."""
    pieces: list[str] = []
    current = ""
    for sentence in _SENTENCE_END.split(paragraph):
        while len(sentence) > MAX_CHARS:  # no sentence end: cut at a space
            cut = sentence.rfind(" ", 0, TARGET_CHARS) or TARGET_CHARS
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > TARGET_CHARS:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return pieces


def pack_paragraphs(paragraphs: Iterable[str]) -> list[str]:
    """Greedy packing of paragraphs into chunks of ~TARGET_CHARS (never above MAX_CHARS)."""
    chunks: list[str] = []
    current = ""
    for raw in paragraphs:
        paragraph = _squash(raw)
        if not paragraph:
            continue
        parts = _split_long(paragraph) if len(paragraph) > MAX_CHARS else [paragraph]
        for part in parts:
            if current and len(current) + 1 + len(part) > TARGET_CHARS:
                chunks.append(current)
                current = part
            else:
                current = f"{current}\n{part}" if current else part
    if current:
        chunks.append(current)
    # A tiny tail is merged back when it fits, so passages stay chunk-sized.
    if len(chunks) >= 2 and len(chunks[-1]) < 200 and len(chunks[-2]) + len(chunks[-1]) < MAX_CHARS:
        chunks[-2:] = [chunks[-2] + "\n" + chunks[-1]]
    return chunks


# --------------------------------------------------------------------------- DocBook HTML

_BLOCK_TAGS = {"p", "pre", "li", "dt", "dd", "tr", "h5", "h6", "div", "table", "blockquote"}
_SECTION_CLASSES = {"section", "chapter", "preface", "sect1", "sect2", "sect3", "appendix"}


@dataclass
class _Unit:
    source: str
    anchor: str
    title: str
    paragraphs: list[str]


def _classes(element) -> set[str]:  # noqa: ANN001 - lxml element
    return set((element.get("class") or "").split())


def _paragraphs(element) -> list[str]:  # noqa: ANN001
    """Block-level texts of an element (innermost blocks; tables row by row)."""
    blocks = [
        el for el in element.iter()
        if isinstance(el.tag, str) and el.tag in {"p", "pre", "dt", "tr", "h5", "h6"}
    ]
    if not blocks:
        text = _squash(element.text_content())
        return [text] if text else []
    out = []
    for block in blocks:
        if any(anc in blocks for anc in block.iterancestors()):
            continue
        text = _squash(block.text_content())
        if text:
            out.append(text)
    return out


def _docbook_units(path: Path, source: str) -> Iterator[_Unit]:
    from lxml import html

    root = html.parse(str(path)).getroot()
    for el in root.iter("div"):
        if not (_classes(el) & _SECTION_CLASSES):
            continue
        heads = el.xpath('./div[@class="titlepage"]//*[self::h1 or self::h2 or self::h3 or self::h4]')
        if not heads:
            continue
        anchors = heads[0].xpath(".//a[@id]/@id")
        anchor = anchors[0] if anchors else f"{path.stem}-{_squash(heads[0].text_content())}"
        title = _NUMBER_PREFIX.sub("", _squash(heads[0].text_content()))
        paragraphs: list[str] = []
        qanda: list[_Unit] = []
        for child in el:
            classes = _classes(child)
            if classes & (_SECTION_CLASSES | {"titlepage", "toc", "navheader", "navfooter"}):
                continue
            if "qandaset" in classes:
                qanda.extend(_qanda_units(child, path, source))
                continue
            if "epigraph" in classes:  # quotations, not the section's content
                continue
            paragraphs.extend(_paragraphs(child))
        yield _Unit(source, f"{path.stem}#{anchor}", title, paragraphs)
        yield from qanda


def _qanda_units(qandaset, path: Path, source: str) -> Iterator[_Unit]:  # noqa: ANN001
    for entry in qandaset.xpath('.//tr[@class="question"]'):
        answer = entry.getnext()
        if answer is None or answer.get("class") != "answer":
            continue
        anchors = entry.xpath(".//a[@id]/@id")
        title = _NUMBER_PREFIX.sub("", _squash(entry.text_content()))
        anchor = anchors[-1] if anchors else title[:40]
        yield _Unit(source, f"{path.stem}#{anchor}", title, _paragraphs(answer))


def _all_docbook_units() -> list[_Unit]:
    units: list[_Unit] = []
    for path in sorted(FAQ_DIR.glob("*.ru.html")):
        if path.name == "index.ru.html":  # table of contents only
            continue
        units.extend(_docbook_units(path, "debian-faq-ru"))
    for path in sorted(APTITUDE_DIR.glob("*.html")):
        if path.name == "index.html":
            continue
        units.extend(_docbook_units(path, "aptitude-doc-ru"))
    return units


def _query_kind(title: str, body: str) -> str | None:
    russian_words = len(re.findall(r"[а-яё]{3,}", title, re.IGNORECASE))
    if russian_words < 2 or title.startswith(("Глава", "Chapter")):
        return None
    if len(body) < MIN_ANSWER_CHARS or cyrillic_share(body) < MIN_BODY_CYRILLIC:
        return None
    return "question" if "?" in title else "heading"


# --------------------------------------------------------------------------- man pages

_MAN_HEADING = re.compile(r"^\S.*$")


def _render_manpage(path: Path) -> str:
    source = gzip.decompress(path.read_bytes())
    out = subprocess.run(
        ["groff", "-k", "-Kutf8", "-t", "-man", "-Tutf8", "-rLL=110n", "-rHY=0", "-P-cbou"],
        input=source, capture_output=True, check=False,
    ).stdout.decode("utf-8", "replace")
    lines = out.splitlines()
    # Drop the running header (first non-empty line) and footer (last non-empty line).
    nonempty = [i for i, line in enumerate(lines) if line.strip()]
    if len(nonempty) >= 2:
        lines = lines[nonempty[0] + 1 : nonempty[-1]]
    return "\n".join(lines)


def _manpage_paragraphs(text: str) -> list[str]:
    """Paragraphs of a rendered man page; section headings (column 0) are dropped."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        if not line.strip() or _MAN_HEADING.match(line):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        current.append(line.strip())
    if current:
        paragraphs.append(" ".join(current))
    return paragraphs


def _manpage_passages() -> list[Passage]:
    passages: list[Passage] = []
    for path in sorted(MAN_DIR.glob("man*/*.gz")):
        name = path.name.removesuffix(".gz")
        chunks = pack_paragraphs(_manpage_paragraphs(_render_manpage(path)))
        chunks = [c for c in chunks if cyrillic_share(c) >= 0.4 and len(c) >= 150]
        for i, chunk in enumerate(chunks[:MAX_CHUNKS_PER_MANPAGE]):
            passages.append(Passage(f"man:{name}:{i}", chunk, f"manpages-ru/{path.parent.name}/{name}"))
    return passages


# --------------------------------------------------------------------------- build / load


def build_ru_eval() -> EvalSet:
    """Build the set from the installed package files (no cache)."""
    versions = ensure_installed()
    passages: list[Passage] = []
    queries: list[Query] = []
    seen_texts: set[str] = set()

    def add(pid: str, text: str, source: str) -> bool:
        key = hashlib.sha1(_squash(text).lower().encode()).hexdigest()
        if key in seen_texts:
            return False
        seen_texts.add(key)
        passages.append(Passage(pid, text, source))
        return True

    seen_queries: set[str] = set()
    for unit in _all_docbook_units():
        chunks = pack_paragraphs(unit.paragraphs)
        ids = []
        for i, chunk in enumerate(chunks):
            pid = f"{unit.source}:{unit.anchor}:{i}"
            if add(pid, chunk, f"{unit.source}/{unit.anchor}"):
                ids.append(pid)
        body = "\n".join(chunks)
        kind = _query_kind(unit.title, body)
        if kind and 0 < len(ids) <= MAX_RELEVANT and unit.title.lower() not in seen_queries:
            seen_queries.add(unit.title.lower())
            queries.append(Query(f"{unit.source}:{unit.anchor}", unit.title, tuple(ids), kind))

    for passage in _manpage_passages():
        add(passage.id, passage.text, passage.source)

    meta: dict[str, object] = {
        "build_version": BUILD_VERSION,
        "packages": versions,
        "licences": {
            "debian-faq-ru": "SPI permissive (verbatim/modified copies and translations with notice)",
            "aptitude-doc-ru": "GPL-2+",
            "manpages-ru": "GPL-3+ (translations)",
        },
        "derivation": "query = Russian section heading (FAQ question or topical heading); "
        "relevant = chunks of that section's own text (heading excluded)",
    }
    return EvalSet(queries, passages, meta)


def _cache_path(versions: dict[str, str]) -> Path:
    key = hashlib.sha1(json.dumps([BUILD_VERSION, versions], sort_keys=True).encode()).hexdigest()[:12]
    return CACHE_DIR / f"ru_eval_{key}.json"


def load_ru_eval(cache_dir: Path | None = None) -> EvalSet:
    """The Russian evaluation set, built once from the installed packages and cached as JSON."""
    versions = ensure_installed()
    path = _cache_path(versions)
    if cache_dir is not None:
        path = Path(cache_dir) / path.name
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return EvalSet(
            [Query(q["id"], q["text"], tuple(q["relevant_ids"]), q["kind"]) for q in data["queries"]],
            [Passage(**p) for p in data["passages"]],
            data["meta"],
        )
    evalset = build_ru_eval()
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "meta": evalset.meta,
        "queries": [asdict(q) for q in evalset.queries],
        "passages": [asdict(p) for p in evalset.passages],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=0), encoding="utf-8")
    tmp.replace(path)
    return evalset


def dataset_fingerprint(evalset: EvalSet) -> str:
    """Hash of the passages (ids and texts): the key for cached corpus embeddings."""
    digest = hashlib.sha1()
    for passage in evalset.passages:
        digest.update(passage.id.encode())
        digest.update(passage.text.encode())
    return digest.hexdigest()[:12]


def main() -> None:
    import statistics

    evalset = load_ru_eval()
    lengths = [len(p.text) for p in evalset.passages]
    by_source: dict[str, int] = {}
    for passage in evalset.passages:
        key = passage.source.split("/")[0]
        by_source[key] = by_source.get(key, 0) + 1
    kinds: dict[str, int] = {}
    for query in evalset.queries:
        kinds[query.kind] = kinds.get(query.kind, 0) + 1
    tune, held = evalset.split()
    print(f"queries: {len(evalset.queries)} {kinds}; split tune {len(tune)} / held-out {len(held)}")
    print(f"relevant per query: mean {statistics.mean(len(q.relevant_ids) for q in evalset.queries):.2f}")
    print(f"passages: {len(evalset.passages)} {by_source}")
    print(
        f"passage chars: median {statistics.median(lengths):.0f}, "
        f"p10 {sorted(lengths)[len(lengths) // 10]}, p90 {sorted(lengths)[9 * len(lengths) // 10]}, "
        f"max {max(lengths)}"
    )
    print("packages:", evalset.meta.get("packages"))
    for query in evalset.queries[:5]:
        print(f"  [{query.kind}] {query.text} -> {query.relevant_ids}")


if __name__ == "__main__":
    main()
