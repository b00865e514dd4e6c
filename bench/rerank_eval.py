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
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.datasets import CACHE_DIR, EvalSet, Query, dataset_fingerprint, load_ru_eval  # noqa: E402
from bench.late_interaction import LateInteractionReranker, load_embedding_model  # noqa: E402
from nodes.retrieval.rerankers import DEFAULT_OFFLINE_RERANKER, Candidate  # noqa: E402
from nodes.retrieval.rerankers.bm25_fusion import (  # noqa: E402
    BM25FusionReranker,
    TermStats,
    _lemma,
    _stem,
    analyze,
    bm25_scores,
    fuse,
)
from nodes.retrieval.rerankers.none import NoRerank  # noqa: E402

MODEL_DIR = Path(__file__).resolve().parent.parent / ".grove" / "models" / "embeddinggemma-300m"
N_CANDIDATES = 30
K = 10
WEIGHTS = [round(w, 2) for w in np.arange(0.05, 1.0, 0.05)]
ANALYZERS = ("pymorphy", "snowball", "lower")
N_FOLDS = 5
PRF_DEPTHS = (1, 2, 3, 5, 10)
PRF_BETAS = (0.1, 0.2, 0.3, 0.5, 0.8)
ALT_QUERY_PROMPTS = {
    "question answering": "task: question answering | query: ",
    "fact checking": "task: fact checking | query: ",
    "sentence similarity": "task: sentence similarity | query: ",
}


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

    recall30 = np.mean([len(set(q.relevant_ids) & {c.id for c in candidates[q.id]}) / len(q.relevant_ids) for q in held])
    any30 = np.mean([bool(set(q.relevant_ids) & {c.id for c in candidates[q.id]}) for q in held])
    print(f"held-out recall@30 of the vector search: {recall30:.3f} (a relevant passage in top 30: {any30:.3f})")

    queries = evalset.queries
    n = len(queries)
    position = {q.id: i for i, q in enumerate(queries)}
    tune_idx = np.array([position[q.id] for q in tune])
    held_idx = np.array([position[q.id] for q in held])
    question_idx = np.array([position[q.id] for q in held if q.kind == "question"])
    folds = np.array([int(hashlib.sha1(q.id.encode()).hexdigest()[8:16], 16) % N_FOLDS for q in queries])

    def per_query(scorer: Callable[[Query], np.ndarray]) -> np.ndarray:
        """(n_queries x 3) nDCG@10, recall@10, MRR@10 of a scorer over the candidates."""
        return np.array([metrics_at_k(order_by(candidates[q.id], scorer(q)), q.relevant_ids) for q in queries])

    def vector(q: Query) -> np.ndarray:
        return np.array([1.0 - c.distance for c in candidates[q.id]])

    # family -> {config label -> per-query metrics}; a stage's parameters are chosen within its family
    families: dict[str, dict[str, np.ndarray]] = {"none": {"vector order": per_query(vector)}}

    # ---- BM25 fusion grid
    corpus_stats = {a: TermStats.from_texts((p.text for p in evalset.passages), a) for a in ANALYZERS}
    for analyzer in ANALYZERS:
        family = families.setdefault(f"bm25-fusion[{analyzer}]", {})
        for idf in ("candidates", "corpus"):
            stats = corpus_stats[analyzer] if idf == "corpus" else None
            lex = {
                q.id: bm25_scores(analyze(q.text, analyzer), [analyze(c.text, analyzer) for c in candidates[q.id]], stats=stats)
                for q in queries
            }
            if analyzer == "pymorphy" and idf == "candidates":
                families["bm25 alone (pymorphy)"] = {"weight 1, idf=candidates": per_query(lambda q, lex=lex: lex[q.id])}
            for method, weight in itertools.product(("rrf", "linear"), WEIGHTS):
                scorer = lambda q, lex=lex, m=method, w=weight: fuse(vector(q), lex[q.id], method=m, weight=w)  # noqa: E731
                family[f"{method} w={weight} idf={idf}"] = per_query(scorer)

    # ---- late interaction: passage tokens come from the corpus pass; queries are encoded here
    query_raw = {q.id: li.content_tokens([q.text], li.query_prompt)[0] for q in queries}
    need = {c.id for q in queries for c in candidates[q.id]}
    fused_family = families.setdefault("late-interaction+vector", {})
    for variant in ("projected", "raw"):
        project = variant == "projected"
        doc_vecs = {pid: li.prepare(tokens_of[pid], project) for pid in need}
        late = {}
        for q in queries:
            qv = li.prepare(query_raw[q.id], project)
            late[q.id] = np.array([li.maxsim(qv, doc_vecs[c.id]) for c in candidates[q.id]])
        del doc_vecs
        families[f"late-interaction[{variant}]"] = {"MaxSim only": per_query(lambda q, late=late: late[q.id])}
        for weight in WEIGHTS:
            scorer = lambda q, late=late, w=weight: fuse(vector(q), late[q.id], method="linear", weight=1.0 - w)  # noqa: E731
            fused_family[f"{variant} vector_weight={weight}"] = per_query(scorer)

    # ---- pseudo-relevance feedback (Rocchio): move the query towards its top-k candidates and
    # rescore the 30 with the moved vector; candidate vectors come from the store, no model call
    row_of = {pid: i for i, pid in enumerate(ids)}
    candidate_vectors = {q.id: corpus[[row_of[c.id] for c in candidates[q.id]]] for q in queries}

    def rocchio(q: Query, k: int, beta: float) -> np.ndarray:
        vectors = candidate_vectors[q.id]
        moved = qemb[position[q.id]] + beta * vectors[:k].mean(axis=0)
        return vectors @ (moved / np.linalg.norm(moved))

    prf_family = families.setdefault("prf (Rocchio)", {})
    for k, beta in itertools.product(PRF_DEPTHS, PRF_BETAS):
        prf_family[f"k={k} beta={beta}"] = per_query(lambda q, k=k, beta=beta: rocchio(q, k, beta))

    # ---- a second query embedding under another of the model's task prompts, fused linearly with
    # the search-prompt score (costs one more query embedding per turn)
    prompt_family = families.setdefault("query-prompt fusion", {})
    for task, prompt in ALT_QUERY_PROMPTS.items():
        alt = np.asarray(model.encode([q.text for q in queries], prompt=prompt, batch_size=16, convert_to_numpy=True),
                         dtype=np.float32)
        alt /= np.linalg.norm(alt, axis=1, keepdims=True)
        for weight in WEIGHTS[:10]:
            scorer = lambda q, alt=alt, w=weight: (1 - w) * vector(q) + w * (candidate_vectors[q.id] @ alt[position[q.id]])  # noqa: E731
            prompt_family[f"{task} w={weight}"] = per_query(scorer)

    def best(family: dict[str, np.ndarray], idx: np.ndarray) -> str:
        return max(family, key=lambda label: (family[label][idx, 0].mean(), -list(family).index(label)))

    def cross_validated(family: dict[str, np.ndarray]) -> np.ndarray:
        out = np.zeros((n, 3))
        for fold in range(N_FOLDS):
            test = np.where(folds == fold)[0]
            train = np.where(folds != fold)[0]
            out[test] = family[best(family, train)][test]
        return out

    base = families["none"]["vector order"]

    # ---- latency of each chosen stage, as get_reranker-style objects would run it
    chosen = {name: best(family, tune_idx) for name, family in families.items()}
    latency: dict[str, float] = {}
    none_stage = NoRerank()
    latency["none"] = timed_median(lambda: none_stage.rerank(held[0].text, candidates[held[0].id]), range(50))
    for analyzer in ANALYZERS:
        method, w, idf = _parse_bm25(chosen[f"bm25-fusion[{analyzer}]"])
        stage = BM25FusionReranker(analyzer=analyzer, fusion=method, weight=w, stats=corpus_stats[analyzer] if idf == "corpus" else None)
        stage.rerank(held[0].text, candidates[held[0].id])  # warm the lemma cache as a running bot would be
        latency[f"bm25-fusion[{analyzer}]"] = statistics.median(
            _time(lambda q=q, stage=stage: stage.rerank(q.text, candidates[q.id])) for q in held) * 1000
    variant, vw = chosen["late-interaction+vector"].split(" vector_weight=")
    live = LateInteractionReranker(model, project=variant == "projected", vector_weight=float(vw))
    li_times, loads = [], []
    for q in held[: args.li_latency_queries]:  # uncached: query + 30 passages encoded per call
        li_times.append(_time(lambda q=q: live.rerank(q.text, candidates[q.id])))
        loads.append(os.getloadavg()[0])
    for name in families:
        if name.startswith("late-interaction"):
            latency[name] = statistics.median(li_times) * 1000
    k, beta = (float(v.split("=")[1]) for v in chosen["prf (Rocchio)"].split())
    latency["prf (Rocchio)"] = timed_median(lambda: rocchio(held[0], int(k), beta), range(50))
    latency["query-prompt fusion"] = timed_median(
        lambda: model.encode([held[0].text], prompt=ALT_QUERY_PROMPTS["fact checking"]), range(10))

    # ---- report
    print()
    print(f"Held-out split: {len(held)} queries ({len(question_idx)} FAQ questions, {len(held) - len(question_idx)} headings); "
          f"{len(evalset.passages)} passages; top {N_CANDIDATES} by exact cosine -> rerank -> top {K}. "
          f"Parameters chosen on the tuning split ({len(tune)} queries) by nDCG@10.")
    header = (f"{'stage':28s} {'chosen on tune':30s} {'nDCG@10':>7s} {'R@10':>6s} {'MRR@10':>6s} {'nDCG q-only':>11s} "
              f"{'p vs none':>9s} {'tune nDCG':>9s} {'5-fold CV nDCG':>14s} {'median ms':>9s}")
    print(header)
    print("-" * len(header))
    results = []
    for name, family in families.items():
        label = chosen[name]
        m = family[label]
        cv = cross_validated(family)
        p = paired_p(m[held_idx, 0], base[held_idx, 0])
        lat = latency.get(name)
        print(f"{name:28s} {label:30s} {m[held_idx, 0].mean():7.3f} {m[held_idx, 1].mean():6.3f} {m[held_idx, 2].mean():6.3f} "
              f"{m[question_idx, 0].mean():11.3f} {'' if p is None else f'{p:.3f}':>9s} {m[tune_idx, 0].mean():9.3f} "
              f"{cv[:, 0].mean():14.3f} {'' if lat is None else f'{lat:.1f}':>9s}")
        results.append({"stage": name, "config": label, "held_ndcg": m[held_idx, 0].mean(), "held_recall": m[held_idx, 1].mean(),
                        "held_mrr": m[held_idx, 2].mean(), "held_questions_ndcg": m[question_idx, 0].mean(), "p_vs_none": p,
                        "tune_ndcg": m[tune_idx, 0].mean(), "cv_ndcg": cv[:, 0].mean(), "median_ms": lat})
    print()
    print(f"nDCG q-only: held-out FAQ questions only. p: two-sided Wilcoxon signed-rank on per-query nDCG@10 vs 'none' (held-out). "
          f"5-fold CV: all {n} queries, parameters re-chosen on the other 4 folds.")
    print(f"vector search alone, all {n} queries: nDCG@10 {base[:, 0].mean():.3f}, MRR@10 {base[:, 2].mean():.3f}")
    print(f"late-interaction latency: median of {len(li_times)} uncached held-out queries (query + {N_CANDIDATES} passages encoded, "
          f"bf16, 2 threads), min {min(li_times) * 1000:.0f} ms, max {max(li_times) * 1000:.0f} ms; 1-min load average meanwhile "
          f"{min(loads):.1f}-{max(loads):.1f} (this process included)")
    speed = analyzer_speed([[q.text] + [c.text for c in candidates[q.id]] for q in held[:30]])
    print("analyser cost per query (query + 30 candidates): " + ", ".join(
        f"{name}: cold {cold:.0f} ms, warm {warm:.1f} ms" for name, (cold, warm) in speed.items()))
    bm25_family = families["bm25-fusion[pymorphy]"]
    top5 = sorted(bm25_family, key=lambda lbl: -bm25_family[lbl][tune_idx, 0].mean())[:5]
    print("top-5 bm25-fusion[pymorphy] configs on tune: " + "; ".join(
        f"{lbl}: {bm25_family[lbl][tune_idx, 0].mean():.3f} (held {bm25_family[lbl][held_idx, 0].mean():.3f})" for lbl in top5))
    shipped_bm25 = BM25FusionReranker()
    shipped_li = LateInteractionReranker(model)
    print(f"module defaults: bm25-fusion {shipped_bm25.analyzer}/{shipped_bm25.fusion} w={shipped_bm25.weight} idf="
          f"{'candidates' if shipped_bm25.stats is None else 'corpus'}; late-interaction project={shipped_li.project} "
          f"vector_weight={shipped_li.vector_weight}; DEFAULT_OFFLINE_RERANKER={DEFAULT_OFFLINE_RERANKER!r}")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False, default=float))


def _time(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _parse_bm25(label: str) -> tuple[str, float, str]:
    method, weight, idf = label.split()
    return method, float(weight.removeprefix("w=")), idf.removeprefix("idf=")


if __name__ == "__main__":
    main()
