"""Retrieval evaluation on three Russian sets: the product's own numbers, configurations side by side.

Run: .venv/bin/python -m bench.retrieval_eval [--sets texlive,gimp,debian] [--sweep] [--li-questions 10]

What is measured is what a user gets. Documents go in through the production ingestion path — the
`ingest` flow that `grove ingest` runs (parse → chunk → embed → store in Postgres, on a temporary
embedded Postgres and Prefect server), one user id per set and chunking mode — and every question
goes through the production retrieval functions, the ones the tasks of `rag-db-query` wrap:
EmbeddingGemma's query vector → `nodes.retrieve.first_stage` (30 candidates, HNSW alone or fused
with full-text search, with the per-user filter) → `nodes.rerank_fragments.rerank` (top 10). Only
Prefect's per-task bookkeeping is left out of the query side, so that the 30 candidates can be
scored too (recall@30) and the configurations share one query vector per question.

Sets (all frozen; nothing here edits a question or a relevance judgement):

* ``texlive`` — bench/sets/texlive_pdf_ru.json: 70 natural questions over the Russian TeX Live
  2021 guide (a 46-page PDF), ingested as a file.
* ``gimp`` — bench/sets/gimp_html_ru.json: 70 natural questions over 25 pages of the Russian GIMP
  2.10 manual (HTML). The file parsers do not take HTML files yet, so by default (``--html-via
  auto``) the pages are served on a loopback HTTP server and ingested as links
  (``GROVE_ALLOW_LOOPBACK_URLS=true``) — trafilatura, the production link path. Once a file parser
  accepts ``.html``, ``auto`` ingests them as files instead (``--html-via link|file`` forces one).
  For both sets a chunk is relevant when it contains one of the question's needles after
  whitespace normalisation (runs of whitespace collapsed, soft hyphens dropped). The sets'
  SHA256SUMS and every document's sha256 are checked first; the bench refuses to run on a
  mismatch.
* ``debian`` — the Debian FAQ set of bench/datasets.py (161 queries: FAQ questions and section
  headings of the Russian Debian FAQ and aptitude manual; Russian man pages as distractors). Its
  relevance is defined on the builder's passages (the answer's own text, the heading excluded), not
  on any chunking. Choice made here: the builder's passages of each source file are joined back
  into one text file (passages separated by a blank line) and that file is ingested through the
  production path, so production parsing, chunking and vectors are what is measured; a production
  chunk is relevant to a query when at least half of the chunk, or at least half of the answer,
  lies in their overlap (chunks are located in the document by their normalised text, so the
  overlap is exact in characters). Re-ingesting the FAQ's HTML pages instead would put each
  heading — the query — into the text next to its answer and turn the set into string matching,
  which would flatter full-text search most of all.

Metrics, per set and configuration: hit@1, hit@5, hit@10 (a relevant chunk at rank ≤ k of the
final top 10), MRR@10, and recall@30 — the share of a question's needles (debian: of its relevant
chunks) found among the 30 first-stage candidates, averaged over questions. Per question the bench
also counts wins and losses between configurations that differ in one factor (chunking, first
stage, reranker) by reciprocal rank, with a two-sided sign test.

Ingested stores are cached in ``.grove/cache/retrieval-eval/`` as the rows the production path
wrote, keyed by the document's sha256, the ingestion settings (chunking mode, sizes, model,
dtype, windows) and a hash of the ingestion code (flows/ingest.py, the parsers, chunker,
embedder, store): any change to them re-ingests. A cache hit loads the rows into the fresh
Postgres, where the generated full-text columns and the indexes are built by Postgres as on insert.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import json
import math
import os
import pickle
import re
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SETS_DIR = Path(__file__).resolve().parent / "sets"
CACHE_DIR = PROJECT_ROOT / ".grove" / "cache" / "retrieval-eval"
# The code a document passes through on its way into Postgres; its hash is part of the cache key.
INGESTION_CODE = ("flows/ingest.py", "nodes/parse_files.py", "nodes/fetch_url.py", "nodes/chunk_document.py",
                  "nodes/embedder.py", "nodes/document_store.py", "nodes/ingest_types.py", "nodes/html_text.py",
                  "nodes/pdf_text.py", "chunking/*.py")
INGESTION_SETTINGS = ("chunking", "chunk_target_chars", "chunk_overlap_chars", "late_window_tokens",
                      "late_window_overlap_tokens", "embedding_model", "embedding_dtype",
                      "embedding_max_tokens", "embedding_document_prompt", "embedding_document_title_prompt",
                      "chunk_merge_chars", "chunk_context")
CANDIDATES, TOP_K = 30, 10
SET_NAMES = ("texlive", "gimp", "debian")
CHUNKINGS = ("late", "naive")
FIRST_STAGES = ("vector", "hybrid")
RERANKERS = ("none", "bm25-fusion")
INGEST_BATCH = 40

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


# --------------------------------------------------------------------------- sets


@dataclass
class Doc:
    """One document to ingest: a local file (PDF, text, HTML) with its sha256."""

    path: Path
    sha256: str
    kind: str  # "file" | "html"


@dataclass
class Question:
    id: str
    text: str
    needles: list[str] = field(default_factory=list)  # needle sets
    answer: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # debian: doc name → spans


@dataclass
class EvalSet:
    name: str
    docs: list[Doc]
    questions: list[Question]
    # debian: normalised text of each ingested document, to locate chunks in it
    texts: dict[str, str] = field(default_factory=dict)

    @property
    def needle_based(self) -> bool:
        return not self.texts


def verify_frozen_sets() -> None:
    """sha256 of each set's JSON against SHA256SUMS; a mismatch stops the bench."""
    for line in (SETS_DIR / "SHA256SUMS").read_text().splitlines():
        if not line.strip():
            continue
        expected, name = line.split(maxsplit=1)
        actual = sha256_file(SETS_DIR / name.strip().lstrip("*"))
        if actual != expected:
            raise SystemExit(f"bench/sets/{name}: sha256 {actual} does not match SHA256SUMS ({expected}); "
                             "the frozen sets must not be edited — refusing to run")


def load_needle_set(file_name: str, name: str) -> EvalSet:
    data = json.loads((SETS_DIR / file_name).read_text(encoding="utf-8"))
    docs = []
    for entry in data["documents"]:
        path = Path(entry["path"])
        if not path.exists():
            raise SystemExit(f"{path} is missing: see bench/sets/README.md, 'Install the documents'")
        actual = sha256_file(path)
        if actual != entry["sha256"]:
            raise SystemExit(f"{path}: sha256 {actual} is not the one {file_name} was written for "
                             f"({entry['sha256']}); refusing to run")
        docs.append(Doc(path, actual, "html" if entry["format"] == "html" else "file"))
    questions = [Question(q["id"], q["question"], needles=[normalise(n) for n in q["needles"]])
                 for q in data["questions"]]
    return EvalSet(name, docs, questions)


def load_debian_set() -> EvalSet:
    """bench/datasets.py's set as text files (one per source file) and answer spans in them."""
    from bench.datasets import load_ru_eval

    data = load_ru_eval()
    groups: dict[str, list[int]] = defaultdict(list)
    for index, passage in enumerate(data.passages):
        groups[passage.source.split("#", 1)[0]].append(index)
    folder = CACHE_DIR / "debian-docs"
    folder.mkdir(parents=True, exist_ok=True)
    docs, texts = [], {}
    where: dict[str, tuple[str, int, int]] = {}  # passage id → (file name, start, end) in normalised text
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
            name, start, end = where[pid]
            answer[name].append((start, end))
        questions.append(Question(query.id, query.text, answer=dict(answer)))
    return EvalSet("debian", docs, questions, texts)


def load_sets(names: Sequence[str]) -> list[EvalSet]:
    verify_frozen_sets()
    loaders: dict[str, Callable[[], EvalSet]] = {
        "texlive": lambda: load_needle_set("texlive_pdf_ru.json", "texlive"),
        "gimp": lambda: load_needle_set("gimp_html_ru.json", "gimp"),
        "debian": load_debian_set,
    }
    return [loaders[name]() for name in names]


# --------------------------------------------------------------------------- relevance


@dataclass
class StoredChunk:
    id: int
    doc_name: str
    text: str
    normalised: str
    span: tuple[int, int] | None = None  # debian: where it lies in its document's normalised text


def locate(chunk: StoredChunk, texts: dict[str, str]) -> None:
    text = texts.get(chunk.doc_name)
    if text is None:
        return
    start = text.find(chunk.normalised)
    if start >= 0:
        chunk.span = (start, start + len(chunk.normalised))


def relevant(question: Question, chunk: StoredChunk) -> bool:
    if question.needles:
        return any(needle in chunk.normalised for needle in question.needles)
    spans = question.answer.get(chunk.doc_name)
    if not spans or chunk.span is None:
        return False
    start, end = chunk.span
    overlap = sum(max(0, min(end, b) - max(start, a)) for a, b in spans)
    answer_length = sum(b - a for a, b in spans)
    return overlap >= 0.5 * min(end - start, answer_length)


def recall_units(question: Question, chunks: Sequence[StoredChunk], store: Sequence[StoredChunk]) -> float:
    """Needle sets: share of needles found in `chunks`; debian: share of the relevant chunks of the store."""
    if question.needles:
        found = sum(any(n in c.normalised for c in chunks) for n in question.needles)
        return found / len(question.needles)
    wanted = {c.id for c in store if relevant(question, c)}
    if not wanted:
        return 0.0
    return len(wanted & {c.id for c in chunks}) / len(wanted)


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
        "select column_name from information_schema.columns"
        " where table_schema = 'public' and table_name = %s and is_generated = 'NEVER'"
        " and is_identity = 'NO' order by ordinal_position", (table,)).fetchall()
    return [r["column_name"] for r in rows if r["column_name"] not in skip]


def dump_document(document_id: int) -> dict[str, Any]:
    """The rows the production path wrote for one document (not ids, not generated columns)."""
    from grove.db import transaction

    with transaction() as conn:
        doc_columns = _columns(conn, "documents", {"created_at"})
        chunk_columns = _columns(conn, "document_chunks", {"document_id", "created_at"})
        document = conn.execute(f"select {', '.join(doc_columns)} from documents where id = %s",
                                (document_id,)).fetchone()
        chunks = conn.execute(f"select {', '.join(chunk_columns)} from document_chunks"
                              " where document_id = %s order by position", (document_id,)).fetchall()
    return {"document": dict(document), "chunks": [dict(c) for c in chunks]}


def load_document(dump: dict[str, Any], owner_id: int) -> None:
    """Insert cached rows for `owner_id` (Postgres computes the generated columns as on ingest)."""
    from psycopg.types.json import Jsonb

    from grove.db import transaction

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
                copy.write_row([document_id, *(_copy_value(v) for v in row.values())])


def _copy_value(value: Any) -> Any:
    from nodes.document_store import vector_text

    if hasattr(value, "shape"):  # a pgvector column read back as numpy
        return vector_text(value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return value


class LoopbackSite:
    """A folder served on 127.0.0.1 (the link path refuses loopback unless the setting allows it)."""

    def __init__(self, folder: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(folder))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{name}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


def html_files_parse() -> bool:
    """Whether the file parsers accept an .html file (another change may add an HTML parser)."""
    from nodes.ingest_types import IngestError
    from nodes.parse_files import parse_file

    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe.html"
        probe.write_text("<html><head><title>t</title></head><body><p>Проверка разбора HTML.</p></body></html>",
                         encoding="utf-8")
        try:
            parse_file(str(probe), probe.name, "text/html")
        except IngestError:
            return False
    return True


def ingest_set(evalset: EvalSet, owner_id: int, html_via: str, stats: dict[str, Any]) -> None:
    """Every document of the set for this owner: from the cache, or through the ingest flow."""
    from flows.ingest import ingest
    from grove.ingest_cli import item_for

    via = {"html": html_via, "file": "file"}
    missing: list[tuple[Doc, str]] = []
    for doc in evalset.docs:
        key = cache_key(doc, via[doc.kind])
        path = CACHE_DIR / "stores" / f"{key}.pkl"
        if path.exists():
            load_document(pickle.loads(path.read_bytes()), owner_id)
            stats["cached"] += 1
        else:
            missing.append((doc, key))
    site = None
    try:
        for start in range(0, len(missing), INGEST_BATCH):
            batch = missing[start:start + INGEST_BATCH]
            arguments = {}
            for doc, key in batch:
                if doc.kind == "html" and html_via == "link":
                    if site is None:
                        site = LoopbackSite(doc.path.parent)
                    arguments[site.url(doc.path.name)] = (doc, key)
                else:
                    arguments[str(doc.path)] = (doc, key)
            started = time.perf_counter()
            outcomes = ingest([item_for(a) for a in arguments], owner_id)
            stats["ingest_seconds"] += time.perf_counter() - started
            for argument, outcome in zip(arguments, outcomes):
                doc, key = arguments[argument]
                if outcome.status != "indexed" or outcome.document_id is None:
                    stats["failed"].append(f"{doc.path.name}: {outcome.status} {outcome.reason or ''}")
                    continue
                target = CACHE_DIR / "stores" / f"{key}.pkl"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(pickle.dumps(dump_document(outcome.document_id)))
                stats["ingested"] += 1
            print(f"  {evalset.name}: ingested {min(start + INGEST_BATCH, len(missing))}/{len(missing)} "
                  f"documents ({stats['ingest_seconds']:.0f} s)", flush=True)
    finally:
        if site is not None:
            site.close()


def stored_chunks(evalset: EvalSet, owner_id: int) -> list[StoredChunk]:
    from grove.db import transaction

    with transaction() as conn:
        rows = conn.execute(
            "select c.id, c.chunk_text, d.source_identifier from document_chunks c"
            " join documents d on d.id = c.document_id where c.owner_id = %s and c.is_active",
            (owner_id,)).fetchall()
    chunks = [StoredChunk(r["id"], Path(r["source_identifier"]).name, r["chunk_text"],
                          normalise(r["chunk_text"])) for r in rows]
    for chunk in chunks:
        locate(chunk, evalset.texts)
    return chunks


# --------------------------------------------------------------------------- evaluation


@dataclass
class Outcome:
    """One question under one configuration."""

    rank: int | None  # of the first relevant chunk in the final top 10
    recall30: float
    first_stage_ms: float
    rerank_ms: float

    @property
    def rr(self) -> float:
        return 1.0 / self.rank if self.rank else 0.0


def evaluate(evalset: EvalSet, owner_id: int, store: list[StoredChunk], vectors: Any, first_stage: str,
             reranker: str, questions: Sequence[int] | None = None) -> dict[str, Outcome]:
    from nodes.rerank_fragments import rerank
    from nodes.retrieve import first_stage as run_first_stage

    by_id = {c.id: c for c in store}
    results = {}
    for index in questions if questions is not None else range(len(evalset.questions)):
        question = evalset.questions[index]
        t0 = time.perf_counter()
        candidates = run_first_stage(owner_id, question.text, vectors[index], CANDIDATES, mode=first_stage)
        t1 = time.perf_counter()
        top = rerank(question.text, candidates, TOP_K, name=reranker)
        t2 = time.perf_counter()
        rank = next((n for n, f in enumerate(top, 1) if relevant(question, by_id[f.chunk_id])), None)
        recall = recall_units(question, [by_id[f.chunk_id] for f in candidates], store)
        results[question.id] = Outcome(rank, recall, (t1 - t0) * 1000, (t2 - t1) * 1000)
    return results


def summary(outcomes: Sequence[Outcome]) -> dict[str, float]:
    n = len(outcomes) or 1
    return {
        "hit@1": sum(1 for o in outcomes if o.rank and o.rank <= 1) / n,
        "hit@5": sum(1 for o in outcomes if o.rank and o.rank <= 5) / n,
        "hit@10": sum(1 for o in outcomes if o.rank) / n,
        "MRR@10": sum(o.rr for o in outcomes) / n,
        "recall@30": sum(o.recall30 for o in outcomes) / n,
    }


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test p-value (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def compare(a: dict[str, Outcome], b: dict[str, Outcome]) -> tuple[int, int, int]:
    """(b better, b worse, tied) by reciprocal rank, over the questions both answered."""
    better = sum(1 for q in a if q in b and b[q].rr > a[q].rr)
    worse = sum(1 for q in a if q in b and b[q].rr < a[q].rr)
    return better, worse, sum(1 for q in a if q in b) - better - worse


# --------------------------------------------------------------------------- running


@contextmanager
def prefect_server() -> Iterator[None]:
    """A temporary Prefect server for the ingest flow runs (as `grove ingest` would use)."""
    from grove.prefect_server import PrefectServer
    from tests.conftest import free_port

    work = Path(tempfile.mkdtemp(prefix="grove-bench-prefect-"))
    server = PrefectServer(home=work / "prefect", port=free_port())
    server.start(timeout=180)
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield
    finally:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)
        server.stop()


def use_chunking(mode: str) -> None:
    from grove.settings import reset_settings

    os.environ["GROVE_CHUNKING"] = mode
    reset_settings()


def owner_for(set_index: int, chunking: str) -> int:
    return 9_000_000 + 10 * set_index + CHUNKINGS.index(chunking)


def spread(count: int, n: int) -> list[int]:
    """n question indexes spread evenly over a set (the sets are ordered by document position)."""
    if n >= count:
        return list(range(count))
    return [round(i * (count - 1) / (n - 1)) if n > 1 else 0 for i in range(n)]


def fmt(values: dict[str, float]) -> str:
    return " | ".join(f"{values[k]:.3f}" for k in ("hit@1", "hit@5", "hit@10", "MRR@10", "recall@30"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SET_NAMES))
    parser.add_argument("--chunking", default=",".join(CHUNKINGS))
    parser.add_argument("--first-stage", default=",".join(FIRST_STAGES))
    parser.add_argument("--rerankers", default=",".join(RERANKERS))
    parser.add_argument("--html-via", choices=("auto", "link", "file"), default="auto")
    parser.add_argument("--li-questions", type=int, default=0,
                        help="also run the late-interaction reranker on this many questions per set")
    parser.add_argument("--sweep", action="store_true",
                        help="hybrid fusion parameters (text weight, RRF k, pool) on every set")
    parser.add_argument("--ingest-only", action="store_true")
    parser.add_argument("--misses", action="store_true", help="print the questions no configuration answers")
    args = parser.parse_args()

    os.environ["GROVE_ALLOW_LOOPBACK_URLS"] = "true"
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    sets = load_sets([s for s in args.sets.split(",") if s])
    chunkings = [c for c in args.chunking.split(",") if c]
    from bench.support import temporary_store

    with prefect_server(), temporary_store():
        run(args, sets, chunkings)


def run(args: argparse.Namespace, sets: list[EvalSet], chunkings: list[str]) -> None:
    from nodes.embedder import get_embedder

    html_via = args.html_via
    if html_via == "auto":
        html_via = "file" if html_files_parse() else "link"
    stats: dict[str, Any] = {"cached": 0, "ingested": 0, "failed": [], "ingest_seconds": 0.0}
    stores: dict[tuple[str, str], list[StoredChunk]] = {}
    for set_index, evalset in enumerate(sets):
        for chunking in chunkings:
            use_chunking(chunking)
            owner = owner_for(SET_NAMES.index(evalset.name), chunking)
            ingest_set(evalset, owner, html_via, stats)
            stores[evalset.name, chunking] = stored_chunks(evalset, owner)
    print(f"documents: {stats['cached']} from the cache, {stats['ingested']} ingested through the flow in "
          f"{stats['ingest_seconds']:.0f} s; HTML via {html_via}")
    for failure in stats["failed"]:
        print(f"  failed: {failure}")
    for evalset in sets:
        store = stores[evalset.name, chunkings[0]]
        lost = [q.id for q in evalset.questions if not any(relevant(q, c) for c in store)]
        print(f"{evalset.name}: {len(evalset.questions)} questions, {len(evalset.docs)} documents, "
              f"{len(store)} chunks; no stored chunk holds the answer for {len(lost)}"
              + (f": {', '.join(lost)}" if lost else ""))
    if args.ingest_only:
        return

    embedder = get_embedder()
    started = time.perf_counter()
    vectors = {s.name: embedder.embed_queries([q.text for q in s.questions]) for s in sets}
    count = sum(len(s.questions) for s in sets)
    print(f"query vectors: {count} in {time.perf_counter() - started:.0f} s")
    # Warm-up: pymorphy3's dictionaries, the Postgres caches.
    evaluate(sets[0], owner_for(SET_NAMES.index(sets[0].name), chunkings[0]),
             stores[sets[0].name, chunkings[0]], vectors[sets[0].name], "hybrid", "bm25-fusion", [0, 1])

    configs = [(c, f, r) for c in chunkings for f in args.first_stage.split(",") for r in args.rerankers.split(",")]
    results: dict[tuple[str, str, str, str], dict[str, Outcome]] = {}
    for evalset in sets:
        for chunking, stage, reranker in configs:
            owner = owner_for(SET_NAMES.index(evalset.name), chunking)
            results[evalset.name, chunking, stage, reranker] = evaluate(
                evalset, owner, stores[evalset.name, chunking], vectors[evalset.name], stage, reranker)

    print("\n| set | chunking | first stage | rerank | hit@1 | hit@5 | hit@10 | MRR@10 | recall@30 |"
          " first stage ms (median) | rerank ms (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for evalset in sets:
        for chunking, stage, reranker in configs:
            outcomes = list(results[evalset.name, chunking, stage, reranker].values())
            print(f"| {evalset.name} | {chunking} | {stage} | {reranker} | {fmt(summary(outcomes))} | "
                  f"{statistics.median(o.first_stage_ms for o in outcomes):.1f} | "
                  f"{statistics.median(o.rerank_ms for o in outcomes):.1f} |")
    print("\nMean over the sets (each set weighs the same):\n")
    print("| chunking | first stage | rerank | hit@1 | hit@5 | hit@10 | MRR@10 | recall@30 |")
    print("|---|---|---|---|---|---|---|---|")
    for chunking, stage, reranker in configs:
        per_set = [summary(list(results[s.name, chunking, stage, reranker].values())) for s in sets]
        mean = {k: statistics.mean(p[k] for p in per_set) for k in per_set[0]}
        print(f"| {chunking} | {stage} | {reranker} | {fmt(mean)} |")

    print_wins(sets, configs, results)
    if args.li_questions:
        late_interaction(args, sets, chunkings, stores, vectors, results)
    if args.sweep:
        sweep(sets, chunkings, stores, vectors)
    if args.misses:
        for evalset in sets:
            never = [q for q in evalset.questions
                     if all(results[evalset.name, *c][q.id].rank is None for c in configs)]
            print(f"\n{evalset.name}: {len(never)} questions without a relevant chunk in any top 10:")
            for q in never:
                print(f"  {q.id} {q.text}")


def print_wins(sets: list[EvalSet], configs: list[tuple[str, str, str]],
               results: dict[tuple[str, str, str, str], dict[str, Outcome]]) -> None:
    """Per question, by reciprocal rank: configurations that differ in one factor."""
    print("\nPer question (reciprocal rank in the top 10): B better / worse / tied than A, sign test p\n")
    print("| A → B | fixed | " + " | ".join(s.name for s in sets) + " | all sets |")
    print("|---|---|" + "---|" * (len(sets) + 1))
    factors = (0, 1, 2)
    values = [sorted({c[i] for c in configs}, key=[*CHUNKINGS, *FIRST_STAGES, *RERANKERS].index) for i in factors]
    for factor in factors:
        if len(values[factor]) < 2:
            continue
        a_value, b_value = values[factor][0], values[factor][1]
        others = sorted({tuple(v for i, v in enumerate(c) if i != factor) for c in configs})
        for fixed in others:
            def config(value: str) -> tuple[str, str, str]:
                items = list(fixed)
                items.insert(factor, value)
                return items[0], items[1], items[2]
            cells, total = [], [0, 0, 0]
            for s in sets:
                better, worse, tied = compare(results[s.name, *config(a_value)], results[s.name, *config(b_value)])
                total = [total[0] + better, total[1] + worse, total[2] + tied]
                cells.append(f"{better}/{worse}/{tied} (p {sign_test(better, worse):.2f})")
            cells.append(f"{total[0]}/{total[1]}/{total[2]} (p {sign_test(total[0], total[1]):.3f})")
            print(f"| {a_value} → {b_value} | {'/'.join(fixed)} | " + " | ".join(cells) + " |")


def late_interaction(args: argparse.Namespace, sets: list[EvalSet], chunkings: list[str],
                     stores: dict[tuple[str, str], list[StoredChunk]], vectors: dict[str, Any],
                     results: dict[tuple[str, str, str, str], dict[str, Outcome]]) -> None:
    """The late-interaction stage on a spread of questions per set (it costs seconds a query)."""
    print(f"\nlate-interaction on {args.li_questions} questions per set, against none / bm25-fusion on the "
          "same questions:\n")
    print("| set | chunking | first stage | rerank | hit@1 | hit@5 | hit@10 | MRR@10 | recall@30 | rerank s (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for evalset in sets:
        picked = spread(len(evalset.questions), args.li_questions)
        ids = {evalset.questions[i].id for i in picked}
        for chunking in chunkings:
            owner = owner_for(SET_NAMES.index(evalset.name), chunking)
            for stage in args.first_stage.split(","):
                li = evaluate(evalset, owner, stores[evalset.name, chunking], vectors[evalset.name], stage,
                              "late-interaction", picked)
                for name in args.rerankers.split(","):
                    same = [o for q, o in results[evalset.name, chunking, stage, name].items() if q in ids]
                    print(f"| {evalset.name} | {chunking} | {stage} | {name} | {fmt(summary(same))} | "
                          f"{statistics.median(o.rerank_ms for o in same) / 1000:.3f} |")
                outcomes = list(li.values())
                print(f"| {evalset.name} | {chunking} | {stage} | late-interaction | {fmt(summary(outcomes))} | "
                      f"{statistics.median(o.rerank_ms for o in outcomes) / 1000:.1f} |")


def sweep(sets: list[EvalSet], chunkings: list[str], stores: dict[tuple[str, str], list[StoredChunk]],
          vectors: dict[str, Any]) -> None:
    """Hybrid fusion parameters, no rerank: MRR@10 / recall@30 per set and their mean."""
    from grove.db import transaction
    from nodes.retrieve import hybrid_search_in

    grid = [(w, k, p) for w in (0.5, 0.75, 1.0, 1.5) for k in (20, 60) for p in (30, 60)]
    print("\nHybrid fusion sweep (no rerank): MRR@10 / recall@30\n")
    print("| chunking | text weight | RRF k | pool | " + " | ".join(s.name for s in sets) + " | mean MRR@10 |")
    print("|---|---|---|---|" + "---|" * (len(sets) + 1))
    for chunking in chunkings:
        for weight, rrf_k, pool in grid:
            cells, mrrs = [], []
            for evalset in sets:
                owner = owner_for(SET_NAMES.index(evalset.name), chunking)
                by_id = {c.id: c for c in stores[evalset.name, chunking]}
                outcomes = []
                for index, question in enumerate(evalset.questions):
                    with transaction() as conn:
                        found = hybrid_search_in(conn, owner, question.text, vectors[evalset.name][index],
                                                 CANDIDATES, pool=pool, rrf_k=rrf_k, text_weight=weight)
                    rank = next((n for n, f in enumerate(found[:TOP_K], 1)
                                 if relevant(question, by_id[f.chunk_id])), None)
                    recall = recall_units(question, [by_id[f.chunk_id] for f in found],
                                          stores[evalset.name, chunking])
                    outcomes.append(Outcome(rank, recall, 0.0, 0.0))
                values = summary(outcomes)
                mrrs.append(values["MRR@10"])
                cells.append(f"{values['MRR@10']:.3f} / {values['recall@30']:.3f}")
            print(f"| {chunking} | {weight} | {rrf_k} | {pool} | " + " | ".join(cells)
                  + f" | {statistics.mean(mrrs):.3f} |")


if __name__ == "__main__":
    main()
