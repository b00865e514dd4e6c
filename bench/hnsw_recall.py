"""HNSW recall@10 against exact search on real EmbeddingGemma vectors (issue: chat retrieval).

Run: .venv/bin/python -m bench.hnsw_recall [--passages 100000] [--queries 200]

Passages are sentences of real text that ship with this machine: the Russian man pages
(`manpages-ru`, rendered with groff) first, then the English man pages, until `--passages`.
They are embedded document-side with the production model; `--queries` further sentences,
held out of the table, are embedded query-side. Embedding is the slow part (≈ 29 sentences/s
on 2 cores), so vectors are saved in `.grove/bench-cache/hnsw-recall/` as they are made and a
re-run continues where the last one stopped.

Measured, for several `hnsw.ef_search` values, with the production index parameters
(m = 16, ef_construction = 64, cosine): recall@10 of the HNSW scan against exact search over
the same vectors, unfiltered and filtered to one owner holding 1 % of the table (iterative
scan, as `nodes/retrieve.py` runs it), and the median query time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

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

    from nodes.embedder import get_embedder

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


def load(vectors: np.ndarray) -> None:
    from grove.db import transaction

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
                     " using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 64)")


def measure(vectors: np.ndarray, queries: np.ndarray, ef_search: int, filtered: bool) -> tuple[float, float]:
    """Mean recall@10 and median milliseconds per query."""
    from grove.db import transaction
    from nodes.retrieve import search_in

    recalls, times = [], []
    positions = np.arange(len(vectors))
    for n, query in enumerate(queries):
        owner = n % OWNERS + 1
        with transaction() as conn:
            if not filtered:
                conn.execute("select set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
                started = time.perf_counter()
                rows = conn.execute("select position from document_chunks order by embedding <=> %s limit 10",
                                    (query,), prepare=False).fetchall()
                found = {r["position"] for r in rows}
            else:
                started = time.perf_counter()
                found = {int(f.text) for f in search_in(conn, owner, query, 10, ef_search=ef_search)}
            times.append((time.perf_counter() - started) * 1000)
        candidates = positions if not filtered else positions[positions % OWNERS + 1 == owner]
        exact = candidates[np.argsort(-(vectors[candidates] @ query))[:10]]
        recalls.append(len(found & set(exact.tolist())) / 10)
    return float(np.mean(recalls)), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts = sentences(args.passages + args.queries)
    if len(texts) < args.passages + args.queries:
        raise SystemExit(f"only {len(texts)} distinct sentences found on this machine")
    vectors = embed_cached(texts[:args.passages], f"passages{args.passages}", query=False)
    queries = embed_cached(texts[args.passages:], f"queries{args.queries}", query=True)
    with temporary_store():
        started = time.perf_counter()
        load(vectors)
        print(f"{len(vectors)} real vectors loaded and indexed in {time.perf_counter() - started:.0f} s")
        print(f"{'ef_search':>9}  {'recall@10':>9}  {'ms p50':>7}  {'1 % owner recall@10':>19}  {'ms p50':>7}")
        for ef in (40, 100, 200):
            plain = measure(vectors, queries, ef, filtered=False)
            owned = measure(vectors, queries, ef, filtered=True)
            print(f"{ef:>9}  {plain[0]:>9.3f}  {plain[1]:>7.1f}  {owned[0]:>19.3f}  {owned[1]:>7.1f}")


if __name__ == "__main__":
    main()
