"""Rerank stages on the Russian Debian-docs retrieval set: quality and latency.

Pipeline per query, as in the bot: EmbeddingGemma query embedding -> exact cosine top 30 over the
corpus (numpy stands in for the HNSW index) -> rerank stage -> top 10. Parameters are tuned on the
tuning split (nDCG@10) and every figure in the main table is on the held-out split.

Run: .venv/bin/python -m bench.rerank_eval [--li-latency-queries 20]
The corpus embeddings are cached in .grove/cache/eval/ (first run: several minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.datasets import CACHE_DIR, EvalSet, Query, dataset_fingerprint, load_ru_eval  # noqa: E402
from nodes.rerank import (  # noqa: E402
    DEFAULT_OFFLINE_RERANKER,
    BM25FusionReranker,
    Candidate,
    LateInteractionReranker,
    NoRerank,
    TermStats,
    _lemma,
    _stem,
    analyze,
    bm25_scores,
    fuse,
    load_embedding_model,
)

MODEL_DIR = Path(__file__).resolve().parent.parent / ".grove" / "models" / "embeddinggemma-300m"
N_CANDIDATES = 30
K = 10
WEIGHTS = [round(w, 2) for w in np.arange(0.05, 1.0, 0.05)]


# --------------------------------------------------------------------------- metrics


def metrics_at_k(ranked_ids: Sequence[str], relevant: Sequence[str], k: int = K) -> tuple[float, float, float]:
    """(nDCG@k, recall@k, MRR@k) with binary relevance."""
    rel = set(relevant)
    top = list(ranked_ids[:k])
    dcg = sum(1.0 / np.log2(i + 2) for i, pid in enumerate(top) if pid in rel)
    idcg = sum(1.0 / np.log2(i + 2) for i in range(min(len(rel), k)))
    recall = sum(1 for pid in top if pid in rel) / len(rel)
    mrr = next((1.0 / (i + 1) for i, pid in enumerate(top) if pid in rel), 0.0)
    return dcg / idcg, recall, mrr


def evaluate(rankings: dict[str, list[str]], queries: Sequence[Query]) -> dict[str, float]:
    rows = np.array([metrics_at_k(rankings[q.id], q.relevant_ids) for q in queries])
    return {"ndcg": rows[:, 0].mean(), "recall": rows[:, 1].mean(), "mrr": rows[:, 2].mean(), "per_query": rows[:, 0]}


def order_by(candidates: Sequence[Candidate], scores: np.ndarray) -> list[str]:
    idx = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i].distance, i))
    return [candidates[i].id for i in idx]


# --------------------------------------------------------------------------- embeddings


def corpus_embeddings(model, evalset: EvalSet, li: LateInteractionReranker) -> tuple[np.ndarray, list[np.ndarray]]:  # noqa: ANN001
    """Sentence embeddings (document prompt) and raw content-token embeddings of every passage.

    One forward pass gives both (``output_value=None``); cached as .npy (tokens as float16,
    concatenated, with offsets) so later runs skip the encoding.
    """
    stem = CACHE_DIR / f"corpus_{dataset_fingerprint(evalset)}_embeddinggemma-300m_bf16"
    emb_path, tok_path, off_path = (Path(f"{stem}{suffix}.npy") for suffix in ("", "_tokens", "_offsets"))
    if emb_path.exists() and tok_path.exists() and off_path.exists():
        offsets = np.load(off_path)
        flat = np.load(tok_path, mmap_mode="r")
        tokens = [np.asarray(flat[offsets[i] : offsets[i + 1]], dtype=np.float32) for i in range(len(offsets) - 1)]
        return np.load(emb_path), tokens
    texts = [p.text for p in evalset.passages]
    skip = li._prompt_token_count(li.document_prompt)
    tokenizer = model.tokenizer
    special = {tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id}
    embeddings: list[np.ndarray] = []
    tokens = []
    started = time.perf_counter()
    step = 64
    for start in range(0, len(texts), step):
        outputs = model.encode(texts[start : start + step], prompt=li.document_prompt, output_value=None,
                               batch_size=8, show_progress_bar=False, convert_to_numpy=False)
        for out in outputs:
            embeddings.append(out["sentence_embedding"].float().numpy())
            ids = out["input_ids"].tolist()
            mask = out["attention_mask"].bool().tolist()
            keep = [i for i in range(skip, len(ids)) if mask[i] and ids[i] not in special]
            tokens.append(out["token_embeddings"][keep].float().numpy())
        done = min(start + step, len(texts))
        elapsed = time.perf_counter() - started
        print(f"  encoded {done}/{len(texts)} passages, {done / elapsed:.2f}/s, load {os.getloadavg()[0]:.1f}", flush=True)
    emb = np.stack(embeddings).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    offsets = np.cumsum([0] + [len(t) for t in tokens])
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    np.save(tok_path, np.concatenate(tokens).astype(np.float16))
    np.save(off_path, offsets)
    np.save(emb_path, emb)
    return emb, tokens


def query_embeddings(model, evalset: EvalSet) -> np.ndarray:  # noqa: ANN001
    texts = "\n".join(q.text for q in evalset.queries)
    key = dataset_fingerprint(evalset) + hashlib.sha1(texts.encode()).hexdigest()[:8]
    path = CACHE_DIR / f"queries_{key}_embeddinggemma-300m_bf16.npy"
    if path.exists():
        return np.load(path)
    emb = np.asarray(model.encode_query([q.text for q in evalset.queries], batch_size=16, convert_to_numpy=True), dtype=np.float32)
    np.save(path, emb)
    return emb


# --------------------------------------------------------------------------- helpers


@dataclass
class Row:
    stage: str
    config: str
    held: dict[str, float]
    tune: dict[str, float]
    latency_ms: float | None
    p_value: float | None = None


def paired_p(a: np.ndarray, b: np.ndarray) -> float | None:
    """Two-sided Wilcoxon signed-rank p-value on per-query nDCG@10 (None if all ties)."""
    from scipy.stats import wilcoxon

    if np.allclose(a, b):
        return None
    return float(wilcoxon(a, b, zero_method="wilcox").pvalue)


def timed_median(fn: Callable[[], object], repeats: Sequence[int]) -> float:
    times = []
    for _ in repeats:
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def analyzer_speed(texts_per_query: list[list[str]]) -> dict[str, tuple[float, float]]:
    """ms per query (30 candidates + query) for each analyser: cold (empty cache) and warm."""
    out = {}
    for analyzer, cached in (("pymorphy", _lemma), ("snowball", _stem), ("lower", None)):
        if cached is not None:
            cached.cache_clear()
        analyze("прогрев анализатора", analyzer)  # loads dictionaries, not counted
        if cached is not None:
            cached.cache_clear()
        cold = []
        for texts in texts_per_query:
            started = time.perf_counter()
            for t in texts:
                analyze(t, analyzer)
            cold.append(time.perf_counter() - started)
        warm = []
        for texts in texts_per_query:
            started = time.perf_counter()
            for t in texts:
                analyze(t, analyzer)
            warm.append(time.perf_counter() - started)
        out[analyzer] = (cold[0] * 1000, statistics.median(warm) * 1000)
    return out


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--li-latency-queries", type=int, default=10, help="held-out queries timed uncached for late interaction")
    parser.add_argument("--json", type=Path, default=CACHE_DIR / "rerank_eval_results.json")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(2)
    evalset = load_ru_eval()
    tune, held = evalset.split()
    by_id = {p.id: p for p in evalset.passages}
    print(f"eval set: {len(evalset.queries)} queries (tune {len(tune)}, held-out {len(held)}), {len(evalset.passages)} passages")

    model = load_embedding_model(str(MODEL_DIR))
    li = LateInteractionReranker(model)
    corpus, corpus_tokens = corpus_embeddings(model, evalset, li)
    qemb = query_embeddings(model, evalset)
    ids = [p.id for p in evalset.passages]
    tokens_of = dict(zip(ids, corpus_tokens, strict=True))

    candidates: dict[str, list[Candidate]] = {}
    for qi, query in enumerate(evalset.queries):
        sims = corpus @ qemb[qi]
        top = np.argsort(-sims, kind="stable")[:N_CANDIDATES]
        candidates[query.id] = [Candidate(ids[j], by_id[ids[j]].text, float(1.0 - sims[j])) for j in top]
    texts_of = {q.id: q.text for q in evalset.queries}

    recall30 = np.mean([len(set(q.relevant_ids) & {c.id for c in candidates[q.id]}) / len(q.relevant_ids) for q in held])
    any30 = np.mean([bool(set(q.relevant_ids) & {c.id for c in candidates[q.id]}) for q in held])
    print(f"held-out recall@30 of the vector search: {recall30:.3f} (a relevant passage in top 30: {any30:.3f})")

    def run(scorer: Callable[[Query], np.ndarray], queries: Sequence[Query]) -> dict[str, float]:
        return evaluate({q.id: order_by(candidates[q.id], scorer(q)) for q in queries}, queries)

    def vector(q: Query) -> np.ndarray:
        return np.array([1.0 - c.distance for c in candidates[q.id]])

    rows: list[Row] = []
    base_held = run(vector, held)
    none_stage = NoRerank()
    lat_none = timed_median(lambda: [none_stage.rerank(texts_of[q.id], candidates[q.id]) for q in held[:1]], range(50))
    rows.append(Row("none", "vector order", base_held, run(vector, tune), lat_none))

    # ---- BM25 fusion: grid on the tuning split
    corpus_stats = {a: TermStats.from_texts((p.text for p in evalset.passages), a) for a in ("pymorphy", "snowball", "lower")}
    lexical: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    for analyzer in ("pymorphy", "snowball", "lower"):
        for idf in ("candidates", "corpus"):
            stats = corpus_stats[analyzer] if idf == "corpus" else None
            lexical[(analyzer, idf)] = {
                q.id: bm25_scores(analyze(q.text, analyzer), [analyze(c.text, analyzer) for c in candidates[q.id]], stats=stats)
                for q in evalset.queries
            }
    grid_results = []
    for (analyzer, idf), method, weight in itertools.product(lexical, ("rrf", "linear"), WEIGHTS):
        lex = lexical[(analyzer, idf)]
        scorer = lambda q, lex=lex, method=method, weight=weight: fuse(vector(q), lex[q.id], method=method, weight=weight)  # noqa: E731
        grid_results.append((run(scorer, tune)["ndcg"], analyzer, idf, method, weight, scorer))
    grid_results.sort(key=lambda r: -r[0])
    best_by_analyzer = {}
    for result in grid_results:
        best_by_analyzer.setdefault(result[1], result)
    for analyzer in ("pymorphy", "snowball", "lower"):
        _, _, idf, method, weight, scorer = best_by_analyzer[analyzer]
        held_res = run(scorer, held)
        stage_name = "bm25-fusion" if analyzer == "pymorphy" else f"bm25-fusion[{analyzer}]"
        stage = BM25FusionReranker(analyzer=analyzer, fusion=method, weight=weight, stats=corpus_stats[analyzer] if idf == "corpus" else None)
        latency = timed_median(lambda stage=stage: [stage.rerank(texts_of[q.id], candidates[q.id]) for q in held[:1]], range(20))
        rows.append(Row(stage_name, f"{method} w={weight} idf={idf}", held_res, run(scorer, tune), latency, paired_p(held_res["per_query"], base_held["per_query"])))
    # The module's defaults, as shipped (so the table shows what get_reranker gives).
    shipped = BM25FusionReranker()
    shipped_scorer = lambda q: shipped.scores(q.text, candidates[q.id])  # noqa: E731
    shipped_held = run(shipped_scorer, held)
    rows.append(Row("bm25-fusion (shipped defaults)", f"{shipped.fusion} w={shipped.weight} idf=candidates", shipped_held, run(shipped_scorer, tune), None, paired_p(shipped_held["per_query"], base_held["per_query"])))
    # Plain BM25 alone (weight 1), for reference.
    bm25_only = lambda q: lexical[("pymorphy", "candidates")][q.id]  # noqa: E731
    bm25_only_held = run(bm25_only, held)
    rows.append(Row("bm25 alone", "pymorphy idf=candidates", bm25_only_held, run(bm25_only, tune), None, paired_p(bm25_only_held["per_query"], base_held["per_query"])))

    # ---- late interaction: passage tokens come from the corpus pass; queries are encoded here
    raw_tokens = tokens_of
    query_raw = {q.id: li.content_tokens([q.text], li.query_prompt)[0] for q in evalset.queries}
    li_scores: dict[str, dict[str, np.ndarray]] = {}
    for variant in ("raw", "projected"):
        project = variant == "projected"
        need = {c.id for q in evalset.queries for c in candidates[q.id]}
        doc_vecs = {pid: li.prepare(raw_tokens[pid], project) for pid in need}
        li_scores[variant] = {}
        for q in evalset.queries:
            qv = li.prepare(query_raw[q.id], project)
            li_scores[variant][q.id] = np.array([li.maxsim(qv, doc_vecs[c.id]) for c in candidates[q.id]])
        del doc_vecs
    li_grid = []
    for variant in ("raw", "projected"):
        sc = li_scores[variant]
        li_grid.append((run(lambda q, sc=sc: sc[q.id], tune)["ndcg"], variant, 0.0, lambda q, sc=sc: sc[q.id]))
        for weight in WEIGHTS:
            scorer = lambda q, sc=sc, weight=weight: fuse(vector(q), sc[q.id], method="linear", weight=1.0 - weight)  # noqa: E731
            li_grid.append((run(scorer, tune)["ndcg"], variant, weight, scorer))
    # Pure MaxSim (no fusion) as its own row, then the best tuned fusion.
    li.project = True
    li_latency_queries = held[: args.li_latency_queries]
    li_times, li_agree, loads = [], [], []
    for q in li_latency_queries:  # uncached: what a query really costs
        started = time.perf_counter()
        live = li.rerank(q.text, candidates[q.id])
        li_times.append(time.perf_counter() - started)
        loads.append(os.getloadavg()[0])
        offline = order_by(candidates[q.id], li_scores["projected"][q.id])[:K]
        li_agree.append(len({r.id for r in live} & set(offline)) / K)
    lat_li = statistics.median(li_times) * 1000
    for variant in ("projected", "raw"):
        sc = li_scores[variant]
        pure = lambda q, sc=sc: sc[q.id]  # noqa: E731
        pure_held = run(pure, held)
        rows.append(Row(f"late-interaction[{variant}]", "MaxSim only", pure_held, run(pure, tune), lat_li, paired_p(pure_held["per_query"], base_held["per_query"])))
    fused = [r for r in li_grid if r[2] > 0]
    fused.sort(key=lambda r: -r[0])
    _, variant, weight, scorer = fused[0]
    fused_held = run(scorer, held)
    rows.append(Row("late-interaction+vector", f"{variant} vector_weight={weight}", fused_held, run(scorer, tune), lat_li, paired_p(fused_held["per_query"], base_held["per_query"])))

    # ---- analyser speed (ms per query: 30 candidates + query)
    speed = analyzer_speed([[texts_of[q.id]] + [c.text for c in candidates[q.id]] for q in held[:30]])

    # ---- report
    print()
    print(f"Held-out split: {len(held)} queries ({sum(q.kind == 'question' for q in held)} FAQ questions, "
          f"{sum(q.kind == 'heading' for q in held)} headings); {len(evalset.passages)} passages; "
          f"top {N_CANDIDATES} by exact cosine -> rerank -> top {K}.")
    header = f"{'stage':34s} {'config':34s} {'nDCG@10':>8s} {'R@10':>6s} {'MRR@10':>7s} {'tune nDCG':>9s} {'p vs none':>9s} {'median ms':>9s}"
    print(header)
    print("-" * len(header))
    for row in rows:
        p = "" if row.p_value is None else f"{row.p_value:.3f}"
        lat = "" if row.latency_ms is None else f"{row.latency_ms:.1f}"
        print(f"{row.stage:34s} {row.config:34s} {row.held['ndcg']:8.3f} {row.held['recall']:6.3f} {row.held['mrr']:7.3f} {row.tune['ndcg']:9.3f} {p:>9s} {lat:>9s}")
    print()
    print("p: two-sided Wilcoxon signed-rank on per-query nDCG@10 vs 'none' (held-out).")
    print(f"late-interaction latency: median of {len(li_times)} uncached held-out queries (query + {N_CANDIDATES} passages encoded, 2 threads); "
          f"min {min(li_times) * 1000:.0f} ms, max {max(li_times) * 1000:.0f} ms; 1-min load average meanwhile "
          f"{min(loads):.1f}-{max(loads):.1f} on 2 cores; live top-10 vs cached-token top-10 overlap {np.mean(li_agree):.2f}")
    print("analyser cost per query (query + 30 candidates): " + ", ".join(
        f"{name}: cold {cold:.0f} ms, warm {warm:.1f} ms" for name, (cold, warm) in speed.items()))
    print(f"top-5 BM25 fusion configs on tune: " + "; ".join(
        f"{a}/{i}/{m} w={w}: {n:.3f}" for n, a, i, m, w, _ in grid_results[:5]))
    print(f"DEFAULT_OFFLINE_RERANKER in nodes/rerank.py: {DEFAULT_OFFLINE_RERANKER!r}")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps([
        {"stage": r.stage, "config": r.config, "held": {k: float(v) for k, v in r.held.items() if k != "per_query"},
         "tune_ndcg": float(r.tune["ndcg"]), "p_vs_none": r.p_value, "median_ms": r.latency_ms} for r in rows
    ], indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
