"""Chat-turn latency without the LLM at 100k chunks: history + embed + HNSW + rerank + fit + store.

Run: .venv/bin/python -m bench.chat_latency [--chunks 100000] [--turns 60]

Setup (not timed): a temporary embedded Postgres with `--chunks` chunks of ~600 characters
spread over 100 owners (1 % each, the filtered case), their vectors random unit vectors (the
worst case for HNSW; latency, not recall, is measured here), the HNSW index built after the load,
and 15 stored Q/A pairs of ~80 words per answer for every owner. Each timed turn runs the node
functions the chat flow runs, in order, for one user; "fit" is the dialogue guards plus fitting the
history and the fragments into the model's window (counted with the local model's vocabulary).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.support import temporary_store

QUESTIONS = [
    "Чем подкормить ремонтантную малину весной?", "Когда обрезать смородину?",
    "Как укрыть ежевику на зиму?", "Какая почва нужна голубике?", "Как часто поливать клубнику?",
    "Что делать с тлёй на крыжовнике?", "Когда собирать жимолость?", "Как размножать малину?",
]
WORDS = ("малина смородина голубика почва полив азот калий фосфор обрезка побег корень лист ягода "
         "весна осень зима лето укрытие мульча удобрение сорт урожай куст").split()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()

    with temporary_store():
        run(args)


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="grove-bench-"))
    from grove.db import transaction

    rng = np.random.default_rng(1)
    words = random.Random(1)
    owners = 100
    started = time.perf_counter()
    with transaction() as conn:
        conn.execute("drop index document_chunks_embedding_hnsw")
        doc_ids = [conn.execute(
            "insert into documents (owner_id, source_type, source_identifier, content_hash)"
            " values (%s, 'pdf', %s, %s) returning id", (o, f"doc{o}.pdf", f"h{o}")).fetchone()["id"]
            for o in range(1, owners + 1)]
        with conn.cursor().copy(
            "copy document_chunks (document_id, owner_id, source_type, source_identifier, position,"
            " chunk_text, content_hash, embedding) from stdin with (format binary)") as copy:
            copy.set_types(["bigint", "bigint", "text", "text", "integer", "text", "text", "vector"])
            for n in range(args.chunks):
                owner = n % owners + 1
                vector = rng.standard_normal(768).astype(np.float32)
                text = " ".join(words.choice(WORDS) for _ in range(80))
                copy.write_row((doc_ids[owner - 1], owner, "pdf", f"doc{owner}.pdf", n, text, str(n),
                                vector / np.linalg.norm(vector)))
    loaded = time.perf_counter()
    with transaction() as conn:
        conn.execute("set maintenance_work_mem = '1GB'")
        conn.execute("create index document_chunks_embedding_hnsw on document_chunks"
                     " using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 256)")
    built = time.perf_counter()
    print(f"setup: {args.chunks} chunks loaded in {loaded - started:.0f} s, HNSW built in {built - loaded:.0f} s")

    from flows.chat import fitted_history, rag_tool, with_fragments
    from nodes.chat_history import load_history, store_pair
    from nodes.embedder import get_embedder
    from nodes.rerank_fragments import rerank
    from nodes.retrieve import search
    from nodes.turn_policy import prepare_turn

    for owner in range(1, owners + 1):
        for n in range(15):
            store_pair.fn(owner, "bench", QUESTIONS[n % len(QUESTIONS)],
                          " ".join(words.choice(WORDS) for _ in range(80)))
    embedder = get_embedder()
    embedder.embed_query("прогрев")
    rerank("прогрев", search(1, embedder.embed_query("прогрев"), 30), 10)
    stages: dict[str, list[float]] = {k: [] for k in ("history", "embed", "hnsw", "rerank", "fit", "store", "total")}
    counts, shown_counts = [], []
    for turn in range(args.turns):
        user = turn % owners + 1
        question = QUESTIONS[turn % len(QUESTIONS)]
        t0 = time.perf_counter()
        history = load_history.fn(user, "bench", pairs=15)
        t1 = time.perf_counter()
        vector = embedder.embed_query(question)
        t2 = time.perf_counter()
        candidates = search(user, vector, 30)
        t3 = time.perf_counter()
        top = rerank(question, candidates, 10)
        t4 = time.perf_counter()
        policy = prepare_turn(question, history)
        kept = fitted_history(question, history, policy, [rag_tool()])
        _, shown = with_fragments(question, kept, policy, "call", question, top)
        t5 = time.perf_counter()
        store_pair.fn(user, "bench", question, " ".join(f.text[:50] for f in shown[:2]))
        t6 = time.perf_counter()
        for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - t0)):
            stages[key].append(value * 1000)
        counts.append(len(candidates))
        shown_counts.append(len(shown))
    print(f"{args.turns} turns, {owners} owners (1 % of the table each), candidates per search: "
          f"min {min(counts)}; fragments fitted into the local model's window: median "
          f"{statistics.median(shown_counts):.0f} of {len(top)}")
    for key, values in stages.items():
        print(f"  {key:8} p50 {statistics.median(values):7.1f} ms   p95 {percentile(values, 95):7.1f} ms")


if __name__ == "__main__":
    main()
