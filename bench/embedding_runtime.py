"""Embedding runtimes side by side: tokens/s against the roofline, query latency, and the quality gate.

Run: .venv/bin/python -m bench.embedding_runtime [--runtimes torch-bf16,torch-fp32,onnx,onnx-int8]
     [--passages 500] [--batch 8] [--gate-batches 4,8,16] [--no-roofline]

Why: the embedding runtime is a setting (`nodes/embedding/embedding_runtime.py`); its default must be the
fastest one that keeps retrieval quality. One run measures every runtime on the same texts, in
turn, on an otherwise idle machine:

* **throughput** — the Debian FAQ set's passages (bench/datasets.py: real Russian documentation,
  the relevant passages of all 161 questions plus distractors up to ``--passages``), each with
  the document prompt, embedded through grove's own `Embedder` (length-sorted batches of
  ``--batch``): tokens/s, and that as a share of the roofline's ceiling for the runtime's precision
  (bench/roofline.py, measured first in the same run);
* **query latency** — every question embedded alone with the query prompt, as a chat turn does:
  median and p90 in ms;
* **quality gate** — MRR@10 and nDCG@10 of the 161 questions over those passages by cosine, and the
  mean cosine of each vector to PyTorch fp32's. The gate: MRR@10 and nDCG@10 within 0.01 of PyTorch
  bf16 (the vectors grove shipped before; PyTorch fp32 when bf16 is not run), each the mean over the passages embedded in batches of
  every size in ``--gate-batches``. One batch size is not enough for int8: its activations are
  quantised per tensor, so a passage's vector depends on the other passages padded into its batch,
  and the same export's MRR@10 moved by 0.01 between batches of 4, 8 and 16 (bench/README.md). The
  spread column shows that range. The product-level check, through Postgres with the
  rerankers, is `bench/retrieval_eval.py` with ``GROVE_EMBEDDING_RUNTIME`` set.

Runtimes: ``torch-bf16`` and ``torch-fp32`` (the PyTorch model in that dtype), ``onnx`` (fp32
export), ``onnx-int8`` (every linear layer int8, the MLPs smoothed first: nodes/embedding/onnx_export.py),
``onnx-int8-reduced`` and ``onnx-u8u8`` (the int8 kinds that do not saturate without VNNI), ``onnx-auto``
(what this CPU's probe chose: nodes/embedding/int8_verdict.py). The CPU line comes first (bench/cpu.py).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.cpu import describe_cpu
from bench.datasets import load_ru_eval
from bench.roofline import measure
from grove.core.settings import get_settings, reset_settings
from nodes.embedding.embedder import Embedder, get_embedder, reset_embedder

RUNTIMES = {  # bench name → (embedding_runtime, embedding_dtype)
    "torch-bf16": ("torch", "bfloat16"),
    "torch-fp32": ("torch", "float32"),
    "onnx": ("onnx", "float32"),
    "onnx-int8": ("onnx-int8", "float32"),
    "onnx-int8-reduced": ("onnx-int8-reduced", "float32"),
    "onnx-u8u8": ("onnx-u8u8", "float32"),
    "onnx-auto": ("onnx-auto", "float32"),
}
PRECISION = {"torch-bf16": "bf16", "torch-fp32": "fp32", "onnx": "fp32", "onnx-int8": "int8",
             "onnx-int8-reduced": "int8", "onnx-u8u8": "int8", "onnx-auto": "int8"}
GATE = 0.01


@dataclass(frozen=True)
class Quality:
    """Ranking quality of one runtime's vectors on one set."""

    mrr10: float
    ndcg10: float


def ranking_quality(queries: np.ndarray, passages: np.ndarray, relevant: Sequence[set[int]]) -> Quality:
    """MRR@10 and nDCG@10 (binary gains) of ranking ``passages`` by cosine for each query row."""
    scores = queries @ passages.T
    mrr = ndcg = 0.0
    for row, rel in zip(scores, relevant):
        top = np.argsort(-row)[:10]
        hits = [i for i, p in enumerate(top) if int(p) in rel]
        mrr += 1.0 / (hits[0] + 1) if hits else 0.0
        dcg = sum(1.0 / math.log2(i + 2) for i in hits)
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(rel), 10)))
        ndcg += dcg / ideal if ideal else 0.0
    n = max(1, len(relevant))
    return Quality(mrr / n, ndcg / n)


def mean_quality(runs: Sequence[Quality]) -> Quality:
    """Each metric's mean over runs of the same vectors' ranking (passages embedded in different batches)."""
    return Quality(statistics.mean(q.mrr10 for q in runs), statistics.mean(q.ndcg10 for q in runs))


def passes_gate(candidate: Quality, reference: Quality, tolerance: float = GATE) -> bool:
    """The runtime keeps quality: neither metric more than ``tolerance`` below the reference."""
    return candidate.mrr10 >= reference.mrr10 - tolerance and candidate.ndcg10 >= reference.ndcg10 - tolerance


def load_embedder(name: str, batch: int) -> Embedder:
    """grove's embedder with the process settings switched to a bench runtime."""
    runtime, dtype = RUNTIMES[name]
    os.environ["GROVE_EMBEDDING_RUNTIME"] = runtime
    os.environ["GROVE_EMBEDDING_DTYPE"] = dtype
    os.environ["GROVE_EMBEDDING_BATCH_SIZE"] = str(batch)
    reset_settings()
    reset_embedder()
    return get_embedder()


def model_dir() -> Path:
    settings = get_settings()
    return Path(settings.model_path(settings.embedding_model))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--passages", type=int, default=500)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--gate-batches", default="4,8,16", help="batch sizes the quality gate averages over")
    parser.add_argument("--no-roofline", action="store_true")
    args = parser.parse_args()
    print(describe_cpu())
    data = load_ru_eval()
    wanted = {pid for q in data.queries for pid in q.relevant_ids}
    rest = [p for p in data.passages if p.id not in wanted]
    random.Random(0).shuffle(rest)
    chosen = [p for p in data.passages if p.id in wanted] + rest[: max(0, args.passages - len(wanted))]
    index = {p.id: i for i, p in enumerate(chosen)}
    relevant = [{index[pid] for pid in q.relevant_ids if pid in index} for q in data.queries]
    texts = [p.text for p in chosen]
    questions = [q.text for q in data.queries]

    roof = None
    if not args.no_roofline:
        roof = measure(model_dir(), threads=get_settings().cpu_threads)
        print("roofline (GFLOP/s): " + ", ".join(f"{k} {v / 1e9:.0f}" for k, v in roof.rates.items()))
    print(f"{len(texts)} passages, {len(questions)} questions (Debian FAQ set), batch {args.batch}, "
          f"{get_settings().cpu_threads} threads")

    gate_batches = sorted({int(b) for b in args.gate_batches.split(",") if b} - {args.batch})
    results: dict[str, tuple[np.ndarray, np.ndarray, float, list[float], int, str]] = {}
    qualities: dict[str, list[Quality]] = {}
    for name in [r for r in args.runtimes.split(",") if r]:
        embedder = load_embedder(name, args.batch)
        tokens = sum(embedder.count_tokens(get_settings().embedding_document_prompt + t) + 2 for t in texts)
        embedder.embed_documents(texts[:4])  # warm-up
        start = time.perf_counter()
        passages = embedder.embed_documents(texts)
        seconds = time.perf_counter() - start
        latencies = []
        vectors = []
        for question in questions:
            t0 = time.perf_counter()
            vectors.append(embedder.embed_query(question))
            latencies.append((time.perf_counter() - t0) * 1000)
        results[name] = (np.stack(vectors), passages, seconds, latencies, tokens, embedder.runtime.device)
        qualities[name] = [ranking_quality(results[name][0], passages, relevant)] + [
            ranking_quality(results[name][0], load_embedder(name, size).embed_documents(texts), relevant)
            for size in gate_batches]

    reference = results.get("torch-fp32")
    # the gate's reference: PyTorch bf16 (the vectors grove shipped before) when it ran, else PyTorch fp32
    base_name = next((n for n in ("torch-bf16", "torch-fp32") if n in results), None)
    base_quality = mean_quality(qualities[base_name]) if base_name else None
    print(f"\nMRR@10 and nDCG@10: means over passage batches of {sorted({args.batch, *gate_batches})}")
    print(f"{'runtime':17} {'device':6} {'tokens/s':>9} {'ceiling':>8} {'share':>6} {'query p50':>9} {'p90':>6} "
          f"{'MRR@10':>7} {'spread':>11} {'nDCG@10':>8} {'cos fp32':>8} gate")
    for name, (_queries, passages, seconds, latencies, tokens, device) in results.items():
        quality = mean_quality(qualities[name])
        mrrs = [q.mrr10 for q in qualities[name]]
        rate = tokens / seconds
        ceiling = roof.ceiling(PRECISION[name]) if roof else float("nan")
        cosine = float((passages * reference[1]).sum(axis=1).mean()) if reference else float("nan")
        gate = "—" if base_quality is None else ("pass" if passes_gate(quality, base_quality) else "FAIL")
        p90 = statistics.quantiles(latencies, n=10)[-1]
        print(f"{name:17} {device:6} {rate:9.0f} {ceiling:8.0f} {rate / ceiling:6.0%} {statistics.median(latencies):7.1f}ms "
              f"{p90:4.0f}ms {quality.mrr10:7.3f} {min(mrrs):5.3f}–{max(mrrs):5.3f} {quality.ndcg10:8.3f} {cosine:8.4f} {gate}")


if __name__ == "__main__":
    main()
