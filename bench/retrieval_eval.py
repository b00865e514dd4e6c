"""Retrieval evaluation on three Russian sets: the product's own numbers, configurations side by side.

Run: .venv/bin/python -m bench.retrieval_eval [--sets texlive,gimp,debian] [--sweep] [--li-questions 10]

What is measured is what a user gets. Documents go in through the production ingestion path — the
`ingest` flow that `grove ingest` runs (parse → chunk → embed → store in Postgres, on a temporary
embedded Postgres and Prefect server), one user id per set and chunking mode — and every question
goes through the production retrieval functions, the ones the tasks of `rag-db-query` wrap:
EmbeddingGemma's query vector → `nodes.retrieval.retrieve.first_stage` (30 candidates, HNSW alone or fused
with full-text search, with the per-user filter) → `nodes.retrieval.rerank_fragments.rerank` (top 10). Only
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
* ``libreoffice``, ``writer``, ``metapost``, ``doublecmd`` — the other needle sets of
  bench/eval_stores.py, by name (``--sets metapost,doublecmd``); the default is
  ``DEFAULT_SET_NAMES``, the five sets before metapost and doublecmd. The silent questions of
  metapost and doublecmd (``EvalSet.silent``) are not retrieval questions and are not asked here.

Metrics, per set and configuration: hit@1, hit@5, hit@10 (a relevant chunk at rank ≤ k of the
final top 10), MRR@10, and recall@30 — the share of a question's needles (debian: of its relevant
chunks) found among the 30 first-stage candidates, averaged over questions. Per question the bench
also counts wins and losses between configurations that differ in one factor (chunking, first
stage, reranker) by reciprocal rank, with a two-sided sign test.

Ingested stores are cached in ``.grove/cache/retrieval-eval/`` (bench/eval_stores.py, the store and
set machinery this bench shares with bench/search_gate.py and bench/answer_eval.py) as the rows the
production path wrote, keyed by the document's sha256, the ingestion settings (chunking mode, sizes,
model, dtype, windows) and a hash of the ingestion code (flows/ingest.py, the parsers, chunker,
embedder, store): any change to them re-ingests. A cache hit loads the rows into the fresh
Postgres, where the generated full-text columns and the indexes are built by Postgres as on insert.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.eval_stores import (
    DEFAULT_SET_NAMES,
    SET_NAMES,
    EvalSet,
    Question,
    StoredChunk,
    html_files_parse,
    ingest_set,
    load_sets,
    new_stats,
    prefect_server,
    relevant,
    stored_chunks,
)

CANDIDATES, TOP_K = 30, 10
CHUNKINGS = ("late", "naive")
FIRST_STAGES = ("vector", "hybrid")
RERANKERS = ("none", "bm25-fusion")


# --------------------------------------------------------------------------- relevance


def recall_units(question: Question, chunks: Sequence[StoredChunk], store: Sequence[StoredChunk]) -> float:
    """Needle sets: share of needles found in `chunks`; debian: share of the relevant chunks of the store."""
    if question.needles:
        found = sum(any(n in c.normalised for c in chunks) for n in question.needles)
        return found / len(question.needles)
    wanted = {c.id for c in store if relevant(question, c)}
    if not wanted:
        return 0.0
    return len(wanted & {c.id for c in chunks}) / len(wanted)


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
    from grove.core.settings import get_settings
    from nodes.retrieval.rerank_fragments import rerank
    from nodes.retrieval.retrieve import first_stage as run_first_stage

    by_id = {c.id: c for c in store}
    results = {}
    for index in questions if questions is not None else range(len(evalset.questions)):
        question = evalset.questions[index]
        t0 = time.perf_counter()
        candidates = run_first_stage(owner_id, question.text, vectors[index], CANDIDATES, get_settings(), mode=first_stage)
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


def use_chunking(mode: str) -> None:
    from grove.core.settings import reset_settings

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
    parser.add_argument("--sets", default=",".join(DEFAULT_SET_NAMES), help=f"any of {', '.join(SET_NAMES)}")
    parser.add_argument("--chunking", default=",".join(CHUNKINGS))
    parser.add_argument("--first-stage", default=",".join(FIRST_STAGES))
    parser.add_argument("--rerankers", default=",".join(RERANKERS))
    parser.add_argument("--html-via", choices=("auto", "link", "file"), default="auto")
    parser.add_argument("--li-questions", type=int, default=0,
                        help="also run the late-interaction reranker on this many questions per set")
    parser.add_argument("--sweep", action="store_true",
                        help="hybrid fusion parameters (text weight, RRF k, pool) on every set")
    parser.add_argument("--rerank-sweep", action="store_true",
                        help="bm25-fusion parameters (fusion, weight, RRF k, pool) over the vector first stage")
    parser.add_argument("--ingest-only", action="store_true")
    parser.add_argument("--misses", action="store_true", help="print the questions no configuration answers")
    args = parser.parse_args()

    os.environ["GROVE_ALLOW_LOOPBACK_URLS"] = "true"
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    sets = load_sets([s for s in args.sets.split(",") if s], with_distractors=True)
    chunkings = [c for c in args.chunking.split(",") if c]
    from bench.support import temporary_store

    with prefect_server(), temporary_store():
        run(args, sets, chunkings)


def run(args: argparse.Namespace, sets: list[EvalSet], chunkings: list[str]) -> None:
    from nodes.embedding.embedder import get_embedder

    html_via = args.html_via
    if html_via == "auto":
        html_via = "file" if html_files_parse() else "link"
    stats = new_stats()
    stores: dict[tuple[str, str], list[StoredChunk]] = {}
    for evalset in sets:
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
    if args.rerank_sweep:
        rerank_sweep(sets, chunkings, stores, vectors)
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
            def config(value: str, fixed: tuple[str, ...] = fixed, factor: int = factor) -> tuple[str, str, str]:
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
    from grove.store.db import transaction
    from nodes.retrieval.retrieve import hybrid_search_in

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


RERANK_GRID: tuple[tuple[str, float, float, int], ...] = (
    *(("rrf", w, k, p) for p in (30, 50) for k in (10, 30, 60) for w in (0.25, 0.4, 0.5, 0.6)),
    *(("linear", w, 0.0, p) for p in (30, 50) for w in (0.2, 0.3, 0.4, 0.5)),
)


def rerank_sweep(sets: list[EvalSet], chunkings: list[str], stores: dict[tuple[str, str], list[StoredChunk]],
                 vectors: dict[str, Any]) -> None:
    """bm25-fusion's parameters over the vector first stage: MRR@10 / hit@10 per set and their mean.

    The candidates of each question are fetched once per pool size through the production first
    stage; only the fusion runs per grid point (about 1–2 ms a question).
    """
    from nodes.retrieval.rerankers import Candidate
    from grove.core.settings import get_settings
    from nodes.retrieval.rerankers.bm25_fusion import BM25FusionReranker
    from nodes.retrieval.retrieve import first_stage as run_first_stage

    pools = sorted({p for *_, p in RERANK_GRID})
    print("\nbm25-fusion sweep (vector first stage): MRR@10 / hit@10\n")
    print("| chunking | fusion | weight | RRF k | pool | " + " | ".join(s.name for s in sets)
          + " | mean MRR@10 | mean hit@10 |")
    print("|---|---|---|---|---|" + "---|" * (len(sets) + 2))
    for chunking in chunkings:
        fetched = {}
        for evalset in sets:
            owner = owner_for(SET_NAMES.index(evalset.name), chunking)
            for pool in pools:
                fetched[evalset.name, pool] = [
                    [Candidate(str(f.chunk_id), f.text, f.distance, f.score)
                     for f in run_first_stage(owner, q.text, vectors[evalset.name][i], pool, get_settings(), mode="vector")]
                    for i, q in enumerate(evalset.questions)]
        for fusion, weight, rrf_k, pool in RERANK_GRID:
            stage = BM25FusionReranker(fusion=fusion, weight=weight, rrf_k=rrf_k or 60.0)  # type: ignore[arg-type]
            cells, mrrs, hits = [], [], []
            for evalset in sets:
                by_id = {str(c.id): c for c in stores[evalset.name, chunking]}
                outcomes = []
                for question, candidates in zip(evalset.questions, fetched[evalset.name, pool], strict=True):
                    top = stage.rerank(question.text, candidates, TOP_K)
                    rank = next((n for n, r in enumerate(top, 1) if relevant(question, by_id[r.id])), None)
                    outcomes.append(Outcome(rank, 0.0, 0.0, 0.0))
                values = summary(outcomes)
                mrrs.append(values["MRR@10"])
                hits.append(values["hit@10"])
                cells.append(f"{values['MRR@10']:.3f} / {values['hit@10']:.3f}")
            print(f"| {chunking} | {fusion} | {weight} | {rrf_k or '-'} | {pool} | " + " | ".join(cells)
                  + f" | {statistics.mean(mrrs):.3f} | {statistics.mean(hits):.3f} |", flush=True)


if __name__ == "__main__":
    main()
