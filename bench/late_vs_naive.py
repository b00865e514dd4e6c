"""Late vs naive chunking on a real Russian retrieval set (bench/datasets.py: Debian's Russian FAQ and
aptitude manual, with Russian man pages as distractors).

Run: .venv/bin/python -m bench.late_vs_naive

Same chunks, two kinds of vectors: the passages of each source file are joined back into one
document; "naive" embeds every passage alone (document prompt), "late" pools each passage's span
from the token embeddings of its whole document (windows of 2,048 tokens, 256 overlap).
Exact cosine search over all passages; nDCG@10 and recall@10 over every query.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.datasets import dataset_fingerprint, load_ru_eval
from chunking import Chunk, late_chunk_embeddings, naive_chunk_embeddings

CACHE = Path(__file__).resolve().parent.parent / ".grove" / "cache" / "eval"


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    gains = sum(1 / math.log2(i + 2) for i, pid in enumerate(ranked[:10]) if pid in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return gains / ideal if ideal else 0.0


def evaluate(passage_ids: list[str], vectors: np.ndarray, query_vectors: np.ndarray,
             relevant: list[set[str]]) -> tuple[float, float]:
    scores = query_vectors @ vectors.T
    ndcgs, recalls = [], []
    for row, rel in zip(scores, relevant):
        top = [passage_ids[i] for i in np.argsort(-row)[:10]]
        ndcgs.append(ndcg_at_10(top, rel))
        recalls.append(len(rel & set(top)) / len(rel))
    return float(np.mean(ndcgs)), float(np.mean(recalls))


def main() -> None:
    import argparse

    from nodes.embedding.embedder import get_embedder

    parser = argparse.ArgumentParser()
    parser.add_argument("--window", type=int, default=None, help="late-chunking window (tokens)")
    parser.add_argument("--overlap", type=int, default=None)
    args = parser.parse_args()

    data = load_ru_eval()
    embedder = get_embedder()
    model, settings = embedder.model, embedder.settings
    documents: dict[str, list[int]] = defaultdict(list)
    for index, passage in enumerate(data.passages):
        documents[passage.source.split("#", 1)[0]].append(index)
    key = hashlib.sha256("".join(p.id for p in data.passages).encode()).hexdigest()[:12]
    CACHE.mkdir(parents=True, exist_ok=True)
    window = args.window or settings.late_window_tokens
    overlap = args.overlap if args.overlap is not None else settings.late_window_overlap_tokens
    paths = {"late": CACHE / f"late_{key}_{settings.embedding_dtype}"
                             f"{'' if window == 2048 else f'_w{window}o{overlap}'}.npy",
             "naive": CACHE / f"naive_{key}_{settings.embedding_dtype}.npy"}
    timings: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    # bench.rerank_eval caches exactly the naive vectors (document prompt, same order): reuse them.
    shared = CACHE / f"corpus_{dataset_fingerprint(data)}_embeddinggemma-300m_bf16.npy"
    if not paths["naive"].exists() and shared.exists() and settings.embedding_dtype == "bfloat16":
        paths["naive"] = shared
    for mode, path in paths.items():
        if path.exists():
            vectors[mode] = np.load(path)
            continue
        result = np.zeros((len(data.passages), embedder.dim), dtype=np.float32)
        started = time.perf_counter()
        for n, indexes in enumerate(documents.values()):
            texts = [data.passages[i].text for i in indexes]
            if mode == "naive":
                with embedder.lock:
                    result[indexes] = naive_chunk_embeddings(
                        model, texts, prompt=settings.embedding_document_prompt, batch_size=8)
                continue
            text, chunks = "", []
            for position, piece in enumerate(texts):
                if text:
                    text += "\n\n"
                start = len(text)
                text += piece
                chunks.append(Chunk(start=start, end=len(text), text=piece, position=position,
                                    overlap_start=start))
            with embedder.lock:
                result[indexes] = late_chunk_embeddings(
                    model, text, chunks, prompt=settings.embedding_document_prompt,
                    window_tokens=window, overlap_tokens=overlap)
            if n % 20 == 0:
                print(f"  {mode}: {n}/{len(documents)} documents", flush=True)
        timings[mode] = time.perf_counter() - started
        np.save(path, result)
        vectors[mode] = result
    query_vectors = embedder.embed_queries([q.text for q in data.queries])
    ids = [p.id for p in data.passages]
    relevant = [set(q.relevant_ids) for q in data.queries]
    print(f"{len(data.queries)} queries, {len(ids)} passages in {len(documents)} documents; "
          f"late windows {window} tokens, overlap {overlap}")
    print(f"{'':8} nDCG@10  recall@10")
    for mode in ("naive", "late"):
        ndcg, recall = evaluate(ids, vectors[mode], query_vectors, relevant)
        extra = f"   (embedded in {timings[mode]:.0f} s)" if mode in timings else ""
        print(f"{mode:8} {ndcg:7.3f}  {recall:9.3f}{extra}")


if __name__ == "__main__":
    main()
