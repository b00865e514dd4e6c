"""The project's Russian evaluation sets as users' stores, filled through the production path.

Used by bench/search_gate.py and bench/answer_eval.py, which need what a user of grove
would have: each set's documents ingested by the `ingest` flow that `grove ingest` runs
(parser → chunker → embedder → store), one owner id per set, and its questions with a
way to tell whether a stored chunk holds the answer.

Sets (nothing here edits a set):

* ``texlive`` — bench/sets/texlive_pdf_ru.json, 70 questions over the Russian TeX Live 2021
  guide (PDF, ingested as a file);
* ``gimp`` — bench/sets/gimp_html_ru.json, 70 questions over 25 pages of the Russian GIMP
  manual. When the file parsers take ``.html`` the pages are ingested as files; otherwise
  they are served on 127.0.0.1 and ingested as links (trafilatura, the production link path);
* ``debian`` — bench/datasets.py's Debian FAQ set (161 questions: FAQ questions and section
  headings of the Russian Debian FAQ and aptitude manual). The passages of each source file
  are joined back into one text file and ingested; a chunk holds the answer when at least
  half of the chunk, or half of the answer, lies in their overlap (chunks are located in
  the document's normalised text). By default only the FAQ and aptitude files are ingested
  — the man pages the builder adds as distractors are 70 % of its text and would triple
  the ingestion time on this machine; ``with_distractors=True`` adds them.

For the needle sets a chunk holds the answer when it contains one of the question's needles
after the sets' normalisation (soft hyphens dropped, whitespace runs collapsed). The sets'
SHA256SUMS and each document's sha256 are checked before anything runs.

What the production path wrote for each document is cached in ``.grove/cache/eval-stores/``
(the document row and its chunk rows, generated columns left to Postgres), keyed by the
document's sha256, the ingestion settings and a hash of the ingestion code, so a change to
any of them ingests again.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import pickle
import re
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SETS_DIR = Path(__file__).resolve().parent / "sets"
CACHE_DIR = PROJECT_ROOT / ".grove" / "cache" / "eval-stores"
INGESTION_CODE = ("flows/ingest.py", "nodes/parse_files.py", "nodes/fetch_url.py", "nodes/chunk_document.py",
                  "nodes/embedder.py", "nodes/document_store.py", "nodes/ingest_types.py", "chunking/*.py",
                  "supabase/migrations/*.sql")
INGESTION_SETTINGS = ("chunking", "chunk_target_chars", "chunk_overlap_chars", "late_window_tokens",
                      "late_window_overlap_tokens", "embedding_model", "embedding_dtype",
                      "embedding_max_tokens", "embedding_document_prompt")
SET_NAMES = ("texlive", "gimp", "debian")
OWNERS = {name: 8_000_000 + i for i, name in enumerate(SET_NAMES)}

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The sets' matching rule: soft hyphens dropped, whitespace runs (no-break ones too) → one space."""
    return _WS.sub(" ", text.replace("\u00ad", "")).strip()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class Doc:
    path: Path
    sha256: str
    kind: str  # "file" | "html"


@dataclass
class Question:
    id: str
    text: str
    needles: list[str] = field(default_factory=list)
    answer: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # debian: file → spans


@dataclass
class EvalSet:
    name: str
    docs: list[Doc]
    questions: list[Question]
    texts: dict[str, str] = field(default_factory=dict)  # debian: normalised text of each file

    @property
    def owner(self) -> int:
        return OWNERS[self.name]


# --------------------------------------------------------------------------- loading


def verify_frozen_sets() -> None:
    for line in (SETS_DIR / "SHA256SUMS").read_text().splitlines():
        if line.strip():
            expected, name = line.split(maxsplit=1)
            if sha256_file(SETS_DIR / name.strip().lstrip("*")) != expected:
                raise SystemExit(f"bench/sets/{name}: sha256 differs from SHA256SUMS; the sets are frozen")


def load_needle_set(file_name: str, name: str) -> EvalSet:
    data = json.loads((SETS_DIR / file_name).read_text(encoding="utf-8"))
    docs = []
    for entry in data["documents"]:
        path = Path(entry["path"])
        if not path.exists():
            raise SystemExit(f"{path} is missing: see bench/sets/README.md, 'Install the documents'")
        if sha256_file(path) != entry["sha256"]:
            raise SystemExit(f"{path}: not the document {file_name} was written for")
        docs.append(Doc(path, entry["sha256"], "html" if entry["format"] == "html" else "file"))
    questions = [Question(q["id"], q["question"], needles=[normalise(n) for n in q["needles"]])
                 for q in data["questions"]]
    return EvalSet(name, docs, questions)


def load_debian_set(with_distractors: bool = False) -> EvalSet:
    from bench.datasets import load_ru_eval

    data = load_ru_eval()
    groups: dict[str, list[int]] = defaultdict(list)
    for index, passage in enumerate(data.passages):
        source = passage.source.split("#", 1)[0]
        if with_distractors or not source.startswith("manpages-ru"):
            groups[source].append(index)
    folder = CACHE_DIR / "debian-docs"
    folder.mkdir(parents=True, exist_ok=True)
    docs, texts = [], {}
    where: dict[str, tuple[str, int, int]] = {}
    for source, indexes in groups.items():
        name = re.sub(r"[^\w.-]+", "_", source) + ".txt"
        path = folder / name
        body = "\n\n".join(data.passages[i].text for i in indexes) + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != body:
            path.write_text(body, encoding="utf-8")
        pieces, cursor = [], 0
        for i in indexes:
            piece = normalise(data.passages[i].text)
            where[data.passages[i].id] = (name, cursor, cursor + len(piece))
            pieces.append(piece)
            cursor += len(piece) + 1
        texts[name] = " ".join(pieces)
        docs.append(Doc(path, sha256_file(path), "file"))
    questions = []
    for query in data.queries:
        answer: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for pid in query.relevant_ids:
            if pid in where:
                name, start, end = where[pid]
                answer[name].append((start, end))
        questions.append(Question(query.id, query.text, answer=dict(answer)))
    return EvalSet("debian", docs, questions, texts)


def load_sets(names: Iterable[str], with_distractors: bool = False) -> list[EvalSet]:
    verify_frozen_sets()
    loaders = {"texlive": lambda: load_needle_set("texlive_pdf_ru.json", "texlive"),
               "gimp": lambda: load_needle_set("gimp_html_ru.json", "gimp"),
               "debian": lambda: load_debian_set(with_distractors)}
    return [loaders[name]() for name in names]


# --------------------------------------------------------------------------- relevance


class Judge:
    """Whether a stored chunk holds a question's answer (needle, or overlap with the answer span)."""

    def __init__(self, evalset: EvalSet) -> None:
        self.evalset = evalset
        self._spans: dict[str, tuple[str, tuple[int, int] | None]] = {}

    def _locate(self, text: str, document: str) -> tuple[int, int] | None:
        name = Path(document).name
        body = self.evalset.texts.get(name)
        if body is None:
            return None
        piece = normalise(text)
        start = body.find(piece)
        return (start, start + len(piece)) if start >= 0 else None

    def holds(self, question: Question, text: str, document: str) -> bool:
        if question.needles:
            normalised = normalise(text)
            return any(needle in normalised for needle in question.needles)
        spans = question.answer.get(Path(document).name)
        if not spans:
            return False
        where = self._locate(text, document)
        if where is None:
            return False
        start, end = where
        overlap = sum(max(0, min(end, b) - max(start, a)) for a, b in spans)
        return overlap >= 0.5 * min(end - start, sum(b - a for a, b in spans))


# --------------------------------------------------------------------------- ingestion


def code_fingerprint() -> str:
    digest = hashlib.sha256()
    for pattern in INGESTION_CODE:
        for path in sorted(PROJECT_ROOT.glob(pattern)):
            digest.update(path.relative_to(PROJECT_ROOT).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(doc: Doc, via: str) -> str:
    from grove.settings import get_settings

    settings = get_settings()
    values = {name: str(getattr(settings, name)) for name in INGESTION_SETTINGS}
    payload = json.dumps([doc.sha256, doc.path.name, via, values, code_fingerprint()], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def _columns(conn: Any, table: str, skip: set[str]) -> list[str]:
    rows = conn.execute(
        "select column_name from information_schema.columns where table_schema = 'public'"
        " and table_name = %s and is_generated = 'NEVER' and is_identity = 'NO' order by ordinal_position",
        (table,)).fetchall()
    return [r["column_name"] for r in rows if r["column_name"] not in skip]


def dump_document(document_id: int) -> dict[str, Any]:
    """The rows the production path wrote for one document (not ids, not generated columns)."""
    from grove.db import transaction

    with transaction() as conn:
        doc_columns = _columns(conn, "documents", {"created_at", "job_id"})
        chunk_columns = _columns(conn, "document_chunks", {"document_id", "created_at"})
        document = conn.execute(f"select {', '.join(doc_columns)} from documents where id = %s",
                                (document_id,)).fetchone()
        chunks = conn.execute(f"select {', '.join(chunk_columns)} from document_chunks"
                              " where document_id = %s order by position", (document_id,)).fetchall()
    return {"document": dict(document), "chunks": [dict(c) for c in chunks]}


def load_document(dump: dict[str, Any], owner_id: int) -> None:
    """Insert cached rows for `owner_id`; Postgres computes generated columns and indexes as on ingest."""
    from psycopg.types.json import Jsonb

    from grove.db import transaction
    from nodes.document_store import vector_text

    def value(v: Any) -> Any:
        if hasattr(v, "shape"):
            return vector_text(v)
        return json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v

    with transaction() as conn:
        document = {**dump["document"], "owner_id": owner_id}
        keys = list(document)
        document_id = conn.execute(
            f"insert into documents ({', '.join(keys)}) values ({', '.join(['%s'] * len(keys))}) returning id",
            [Jsonb(v) if isinstance(v, dict) else v for v in document.values()]).fetchone()["id"]
        if not dump["chunks"]:
            return
        keys = ["document_id", *dump["chunks"][0].keys()]
        with conn.cursor().copy(f"copy document_chunks ({', '.join(keys)}) from stdin") as copy:
            for chunk in dump["chunks"]:
                row = {**chunk, "owner_id": owner_id}
                copy.write_row([document_id, *(value(v) for v in row.values())])


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # stdlib's signature
        pass


@contextmanager
def loopback_site(folder: Path) -> Iterator[str]:
    """`folder` served on 127.0.0.1; yields the base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(_QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def html_files_parse() -> bool:
    """Whether the file parsers accept an .html file."""
    from nodes.ingest_types import IngestError
    from nodes.parse_files import parse_file

    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.html"
        probe.write_text("<html><head><title>t</title></head><body><p>Проверка разбора HTML.</p></body></html>",
                         encoding="utf-8")
        try:
            parse_file(str(probe), probe.name, "text/html")
        except (IngestError, ValueError):
            return False
    return True


def ingest_set(evalset: EvalSet, batch: int = 20) -> dict[str, Any]:
    """Every document of the set for its owner: from the cache, or through the ingest flow."""
    import os

    from flows.ingest import ingest
    from grove.ingest_cli import item_for

    os.environ["GROVE_ALLOW_LOOPBACK_URLS"] = "true"
    from grove.settings import reset_settings

    reset_settings()
    via_html = "file" if html_files_parse() else "link"
    stats: dict[str, Any] = {"cached": 0, "ingested": 0, "failed": [], "seconds": 0.0, "html_via": via_html}
    missing: list[tuple[Doc, str]] = []
    for doc in evalset.docs:
        key = cache_key(doc, via_html if doc.kind == "html" else "file")
        path = CACHE_DIR / "stores" / f"{key}.pkl"
        if path.exists():
            load_document(pickle.loads(path.read_bytes()), evalset.owner)
            stats["cached"] += 1
        else:
            missing.append((doc, key))
    html_folders = {doc.path.parent for doc, _ in missing if doc.kind == "html"}
    with contextlib_sites(html_folders if via_html == "link" else set()) as sites:
        for start in range(0, len(missing), batch):
            chunk = missing[start:start + batch]
            arguments = [f"{sites[doc.path.parent]}/{doc.path.name}" if doc.path.parent in sites
                         else str(doc.path) for doc, _ in chunk]
            began = time.perf_counter()
            outcomes = ingest([item_for(a) for a in arguments], evalset.owner)
            stats["seconds"] += time.perf_counter() - began
            for (doc, key), outcome in zip(chunk, outcomes):
                if outcome.status != "indexed" or outcome.document_id is None:
                    stats["failed"].append(f"{doc.path.name}: {outcome.status}")
                    continue
                target = CACHE_DIR / "stores" / f"{key}.pkl"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(pickle.dumps(dump_document(outcome.document_id)))
                stats["ingested"] += 1
            print(f"  {evalset.name}: ingested {min(start + batch, len(missing))}/{len(missing)} documents "
                  f"({stats['seconds']:.0f} s)", flush=True)
    return stats


@contextmanager
def contextlib_sites(folders: set[Path]) -> Iterator[dict[Path, str]]:
    """One loopback site per folder of HTML pages to ingest as links."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield {folder: stack.enter_context(loopback_site(folder)) for folder in folders}


@contextmanager
def stores(names: Sequence[str], with_distractors: bool = False) -> Iterator[list[EvalSet]]:
    """A fresh embedded Postgres holding every named set's store (owner = EvalSet.owner)."""
    from bench.support import temporary_store

    sets = load_sets(names, with_distractors)
    with temporary_store():
        for evalset in sets:
            stats = ingest_set(evalset)
            print(f"{evalset.name}: {len(evalset.questions)} questions, {len(evalset.docs)} documents "
                  f"({stats['cached']} cached, {stats['ingested']} ingested in {stats['seconds']:.0f} s, "
                  f"HTML via {stats['html_via']})" + (f"; failed: {stats['failed']}" if stats["failed"] else ""),
                  flush=True)
        yield sets
