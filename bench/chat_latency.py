"""Chat-turn latency without the LLM at 100k chunks: history + embed + first stage + rerank + fit + store.

Run: .venv/bin/python -m bench.chat_latency [--chunks 100000] [--turns 60] [--first-stage vector,hybrid]

Setup (not timed): a temporary embedded Postgres with `--chunks` chunks of ~600 characters
spread over 100 owners (1 % each, the filtered case). The chunk texts are real Russian text:
sentences of Debian's Russian FAQ, aptitude manual and man pages (bench/datasets.py; packages
debian-faq-ru, aptitude-doc-ru, manpages-ru), drawn at random and packed to ~600 characters, so
the full-text branch of the hybrid query has realistic terms, lengths and match counts. Their
vectors are random unit vectors (the worst case for HNSW; latency, not recall, is measured here).
The HNSW index is built after the load; then the full-text columns of migration
20261123002100 are added to the loaded table, timed, which is what that migration costs on an
existing store of this size (`--load-with-fts` loads with the columns in place instead). 15
stored Q/A pairs of ~80 words per answer for every owner. Each timed turn runs the node
functions the chat flow runs, in order, for one user, once per first stage; "fit" is the dialogue
guards plus fitting the history and the fragments into the model's window (counted with the
local model's vocabulary).
"""

from __future__ import annotations

from grove.core.settings import get_settings
import argparse
import random
import re
import statistics
import time
from collections.abc import Iterator

import numpy as np

from bench.support import temporary_store

QUESTIONS = [
    "Как зафиксировать пакет, чтобы он не обновлялся?", "Как удалить пакет вместе с файлами настроек?",
    "Где хранятся списки источников для apt?", "Что делать со сломанными зависимостями?",
    "Как узнать, какому пакету принадлежит файл?", "Чем aptitude отличается от apt-get?",
    "Как обновить систему до нового выпуска Debian?", "Как посмотреть справку по команде ls?",
]
WORDS = ("пакет система файл команда обновление установка зависимость архив репозиторий ядро "
         "настройка параметр каталог пользователь сервер выпуск версия").split()
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[А-ЯЁA-Z0-9«(])")


def debian_sentences() -> list[str]:
    """Sentences of the Russian Debian documentation (bench/datasets.py's passages)."""
    from bench.datasets import load_ru_eval

    sentences = []
    for passage in load_ru_eval().passages:
        for sentence in _SENTENCE_END.split(" ".join(passage.text.split())):
            if 20 <= len(sentence) <= 400:
                sentences.append(sentence)
    return sentences


def chunk_texts(sentences: list[str], count: int, rng: random.Random, target: int = 600) -> Iterator[str]:
    """`count` chunk texts of about `target` characters, each of random real sentences."""
    for _ in range(count):
        parts, length = [], 0
        while length < target:
            sentence = rng.choice(sentences)
            parts.append(sentence)
            length += len(sentence) + 1
        yield " ".join(parts)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--first-stage", default="vector,hybrid", help="first stages to time, in turn")
    parser.add_argument("--load-with-fts", action="store_true",
                        help="load with the full-text columns in place (skip timing their migration)")
    args = parser.parse_args()

    with temporary_store():
        run(args)


_FTS_MIGRATION = "20261123002100_chunk_full_text_search.sql"


def run(args: argparse.Namespace) -> None:
    from grove.store.db import MIGRATIONS_DIR, transaction

    rng = np.random.default_rng(1)
    words = random.Random(1)
    owners = 100
    sentences = debian_sentences()
    with transaction() as conn:
        conn.execute("drop index document_chunks_embedding_hnsw")
        if not args.load_with_fts:  # back to the table as it was before the migration
            conn.execute("alter table document_chunks drop column fts_russian, drop column fts_simple")
    started = time.perf_counter()
    with transaction() as conn:
        doc_ids = [conn.execute(
            "insert into documents (owner_id, source_type, source_identifier, content_hash)"
            " values (%s, 'pdf', %s, %s) returning id", (o, f"doc{o}.pdf", f"h{o}")).fetchone()["id"]
            for o in range(1, owners + 1)]
        with conn.cursor().copy(
            "copy document_chunks (document_id, owner_id, source_type, source_identifier, position,"
            " chunk_text, content_hash, embedding) from stdin with (format binary)") as copy:
            copy.set_types(["bigint", "bigint", "text", "text", "integer", "text", "text", "vector"])
            for n, text in enumerate(chunk_texts(sentences, args.chunks, words)):
                owner = n % owners + 1
                vector = rng.standard_normal(768).astype(np.float32)
                copy.write_row((doc_ids[owner - 1], owner, "pdf", f"doc{owner}.pdf", n, text, str(n),
                                vector / np.linalg.norm(vector)))
    loaded = time.perf_counter()
    with transaction() as conn:
        conn.execute("set maintenance_work_mem = '1GB'")
        conn.execute("create index document_chunks_embedding_hnsw on document_chunks"
                     " using hnsw (embedding vector_cosine_ops) with (m = 16, ef_construction = 256)")
    built = time.perf_counter()
    print(f"setup: {args.chunks} chunks of Debian sentences ({len(sentences)} distinct) loaded in "
          f"{loaded - started:.0f} s, HNSW built in {built - loaded:.0f} s"
          + (" (full-text columns computed during the load)" if args.load_with_fts else ""))
    if not args.load_with_fts:
        sql = (MIGRATIONS_DIR / _FTS_MIGRATION).read_text(encoding="utf-8")
        with transaction() as conn:
            conn.execute("set maintenance_work_mem = '1GB'")
            conn.execute(sql)
        migrated = time.perf_counter()
        with transaction() as conn:
            size = conn.execute("select pg_size_pretty(pg_total_relation_size('document_chunks')) as s"
                                ).fetchone()["s"]
        print(f"migration {_FTS_MIGRATION} on the loaded table (rewrite, HNSW and other indexes "
              f"rebuilt, two GIN indexes built): {migrated - built:.0f} s; document_chunks now {size}")
    with transaction() as conn:
        conn.execute("analyze document_chunks")

    from nodes.answering.chat_prompt import fitted_history, rag_tool, with_fragments
    from nodes.store.chat_history import load_history, store_pair
    from nodes.embedding.embedder import get_embedder
    from nodes.retrieval.rerank_fragments import rerank
    from nodes.retrieval.retrieve import first_stage
    from nodes.answering.turn_policy import prepare_turn

    for owner in range(1, owners + 1):
        for n in range(15):
            store_pair.fn(owner, "bench", QUESTIONS[n % len(QUESTIONS)],
                          " ".join(words.choice(WORDS) for _ in range(80)))
    embedder = get_embedder()
    for mode in args.first_stage.split(","):
        warm = embedder.embed_query("прогрев")
        rerank("прогрев", first_stage(1, "прогрев", warm, 30, get_settings(), mode=mode), 10, get_settings().reranker)  # type: ignore[arg-type]
        stages: dict[str, list[float]] = {k: [] for k in ("history", "embed", "first stage", "rerank", "fit",
                                                          "store", "total")}
        counts, shown_counts = [], []
        for turn in range(args.turns):
            user = turn % owners + 1
            question = QUESTIONS[turn % len(QUESTIONS)]
            t0 = time.perf_counter()
            history = load_history.fn(user, "bench", pairs=15)
            t1 = time.perf_counter()
            vector = embedder.embed_query(question)
            t2 = time.perf_counter()
            candidates = first_stage(user, question, vector, 30, get_settings(), mode=mode)  # type: ignore[arg-type]
            t3 = time.perf_counter()
            top = rerank(question, candidates, 10, get_settings().reranker)
            t4 = time.perf_counter()
            policy = prepare_turn(question, history, get_settings())
            kept = fitted_history(question, history, policy, [rag_tool()], get_settings())
            _, shown = with_fragments(question, kept, policy, "call", question, top, get_settings())
            t5 = time.perf_counter()
            store_pair.fn(user, "bench", question, " ".join(f.text[:50] for f in shown[:2]))
            t6 = time.perf_counter()
            for key, value in zip(stages, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t6 - t0)):
                stages[key].append(value * 1000)
            counts.append(len(candidates))
            shown_counts.append(len(shown))
        print(f"first stage {mode}, rerank {get_settings_reranker()}: {args.turns} turns, {owners} owners "
              f"(1 % of the table each), candidates per search: min {min(counts)}; fragments fitted into "
              f"the local model's window: median {statistics.median(shown_counts):.0f} of {len(top)}")
        for key, values in stages.items():
            print(f"  {key:11} p50 {statistics.median(values):7.1f} ms   p95 {percentile(values, 95):7.1f} ms")


def get_settings_reranker() -> str:
    from grove.core.settings import get_settings

    return get_settings().reranker


if __name__ == "__main__":
    main()
