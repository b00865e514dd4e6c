"""HNSW recall@10 against exact search on real EmbeddingGemma vectors (issue: chat retrieval).

Run: .venv/bin/python -m bench.hnsw_recall [--passages 100000] [--queries 200] [--m 16] [--ef-construction 64]

Passages are sentences of real text that ship with this machine: the Russian man pages
(`manpages-ru`, rendered with groff) first, then the English man pages, until `--passages`.
They are embedded document-side with the production model; `--queries` further sentences,
held out of the table, are embedded query-side. Embedding is the slow part (≈ 29 sentences/s
on 2 cores), so vectors are saved in `.grove/bench-cache/hnsw-recall/` as they are made and a
re-run continues where the last one stopped.

Measured, for several `hnsw.ef_search` values, with the production index parameters by default
(m = 16, ef_construction = 64, cosine): recall@10 against numpy's exact search over the same
(re-normalised) vectors, unfiltered and filtered to one owner holding 1 % of the table (the
production query of `nodes/retrieval/retrieve.py`, iterative scan), and the median query time. Each setting
runs twice: with the plan Postgres chooses (it may pick an exact path: a sequential scan, or the
owner index and a sort) and with the HNSW index forced, so the index's own recall is measured too.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bench.support import temporary_store

CACHE = Path(__file__).resolve().parent.parent / ".grove" / "bench-cache" / "hnsw-recall"
OWNERS = 100


def sentences(limit: int) -> list[str]:
    """Distinct real sentences (25–400 characters): Russian man pages, then English ones."""
    from razdel import sentenize

    from bench.datasets import _manpage_paragraphs, _render_manpage

    seen: set[str] = set()
    found: list[str] = []
    roots = [Path("/usr/share/man/ru")] + [Path(f"/usr/share/man/man{n}") for n in range(1, 9)]
    for root in roots:
        for path in sorted(root.glob("man*/*") if root.name == "ru" else root.glob("*")):
            try:
                text = _render_manpage(path)
            except Exception:  # noqa: BLE001 - an unrenderable page is just skipped
                continue
            for paragraph in _manpage_paragraphs(text):
                for sentence in sentenize(paragraph):
                    value = sentence.text.strip()
                    if 25 <= len(value) <= 400 and value not in seen:
                        seen.add(value)
                        found.append(value)
                        if len(found) >= limit:
                            return found
    return found


def embed_cached(texts: list[str], name: str, query: bool) -> np.ndarray:
    """Vectors for `texts`, resumed from and saved to the cache in parts of 2,048."""
    from rich.progress import Progress

    from nodes.embedding.embedder import get_embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    embedder = get_embedder()
    part_size = 2048
    parts: list[np.ndarray] = []
    with Progress() as progress:
        bar = progress.add_task(f"embedding {name}", total=len(texts))
        for start in range(0, len(texts), part_size):
            path = CACHE / f"{name}-{start:07d}-{len(texts[start:start + part_size])}.npy"
            if path.exists():
                part = np.load(path)
            else:
                batch = texts[start:start + part_size]
                part = (embedder.embed_queries(batch) if query else embedder.embed_documents(batch))
                part = np.asarray(part, dtype=np.float32)
                np.save(path, part)
            parts.append(part)
            progress.advance(bar, len(part))
    return np.concatenate(parts)


def load(vectors: np.ndarray, m: int, ef_construction: int) -> None:
    from grove.store.db import transaction

    with transaction() as conn:
        conn.execute("drop index document_chunks_embedding_hnsw")
        documents = [conn.execute(
            "insert into documents (owner_id, source_type, source_identifier, content_hash)"
            " values (%s, 'txt', 'man', %s) returning id", (o, f"h{o}")).fetchone()["id"]
            for o in range(1, OWNERS + 1)]
        with conn.cursor().copy(
            "copy document_chunks (document_id, owner_id, source_type, source_identifier, position,"
            " chunk_text, content_hash, embedding) from stdin with (format binary)") as copy:
            copy.set_types(["bigint", "bigint", "text", "text", "integer", "text", "text", "vector"])
            for n, vector in enumerate(vectors):
                owner = n % OWNERS + 1
                copy.write_row((documents[owner - 1], owner, "txt", "man", n, str(n), str(n), vector))
    with transaction() as conn:
        conn.execute("set maintenance_work_mem = '1GB'")
        conn.execute("create index document_chunks_embedding_hnsw on document_chunks"
                     f" using hnsw (embedding vector_cosine_ops) with (m = {m:d}, ef_construction = {ef_construction:d})")


TIE_EPSILON = 1e-5  # cosine distances from numpy and from pgvector differ in the last float32 bits


class Result(NamedTuple):
    recall: float  # |found ∩ exact top 10| / 10
    recall_ties: float  # found rows as close as the 10th exact one count too (near-duplicate sentences)
    ms_p50: float
    plan: str  # "hnsw" when the plan scans the HNSW index, else "exact"


def measure(vectors: np.ndarray, queries: np.ndarray, ef_search: int, filtered: bool, forced: bool) -> Result:
    """Recall@10 against numpy's exact search and the median time, for one setting.

    `forced` makes the planner take the HNSW index (no sequential scan, no sort node); otherwise
    Postgres chooses, as in production: for a small owner it may prefer the owner index and an
    exact sort, and for a high ef_search a sequential scan.
    """
    from grove.store.db import transaction
    from nodes.retrieval.retrieve import _SEARCH, search_in, set_hnsw_scan

    plain_sql = "select position from document_chunks order by embedding <=> %(query)s limit 10"
    recalls, tied, times, plans = [], [], [], []
    positions = np.arange(len(vectors))
    for n, query in enumerate(queries):
        owner = n % OWNERS + 1
        with transaction() as conn:
            if forced:
                for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                    conn.execute(f"set local {setting} = off")
            if n == 0:
                set_hnsw_scan(conn, ef_search, "relaxed_order" if filtered else "off")
                plan = conn.execute("explain " + (_SEARCH if filtered else plain_sql),
                                    {"query": query, "owner": owner, "k": 10}, prepare=False).fetchall()
                plans.append("hnsw" if "embedding_hnsw" in str(plan) else "exact")
            if not filtered:
                set_hnsw_scan(conn, ef_search, "off")
                started = time.perf_counter()
                rows = conn.execute(plain_sql, {"query": query}, prepare=False).fetchall()
                found = [r["position"] for r in rows]
            else:
                started = time.perf_counter()
                found = [int(f.text) for f in search_in(conn, owner, query, 10, ef_search=ef_search)]
            times.append((time.perf_counter() - started) * 1000)
        candidates = positions if not filtered else positions[positions % OWNERS + 1 == owner]
        similarity = vectors[candidates] @ query
        order = np.argsort(-similarity)
        exact = set(candidates[order[:10]].tolist())
        recalls.append(len(set(found) & exact) / 10)
        tenth = 1.0 - similarity[order[9]]
        close_enough = sum(1 for p in found if 1.0 - float(vectors[p] @ query) <= tenth + TIE_EPSILON)
        tied.append(min(close_enough, 10) / 10)
    return Result(float(np.mean(recalls)), float(np.mean(tied)), statistics.median(times), plans[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--m", type=int, default=16, help="HNSW m (production: 16)")
    parser.add_argument("--ef-construction", type=int, default=64, help="HNSW ef_construction (production: 64)")
    args = parser.parse_args()
    texts = sentences(args.passages + args.queries)
    if len(texts) < args.passages + args.queries:
        raise SystemExit(f"only {len(texts)} distinct sentences found on this machine")
    vectors = embed_cached(texts[:args.passages], f"passages{args.passages}", query=False)
    queries = embed_cached(texts[args.passages:], f"queries{args.queries}", query=True)
    # bf16 model outputs are unit length only to ~1e-3; re-normalised, a dot product is exactly the
    # cosine that pgvector ranks by, so numpy's exact search and Postgres's agree.
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with temporary_store():
        started = time.perf_counter()
        load(vectors, args.m, args.ef_construction)
        print(f"{len(vectors)} real vectors loaded and indexed (m {args.m}, ef_construction "
              f"{args.ef_construction}) in {time.perf_counter() - started:.0f} s")
        print(f"{'ef_search':>9}  {'filter':>11}  {'plan':>18}  {'recall@10':>9}  {'with ties':>9}  {'ms p50':>7}")
        for filtered in (False, True):
            for ef in (40, 100, 200):
                for forced in (False, True):
                    r = measure(vectors, queries, ef, filtered, forced)
                    plan = f"{r.plan}{' (forced)' if forced else ''}"
                    print(f"{ef:>9}  {'1 % owner' if filtered else 'none':>11}  {plan:>18}  {r.recall:>9.3f}  "
                          f"{r.recall_ties:>9.3f}  {r.ms_p50:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
