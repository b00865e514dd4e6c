"""The int8 kinds of the embedding export on this CPU: vectors against fp32 ONNX and PyTorch, and speed.

Run: .venv/bin/python -m bench.int8_probe [--model PATH] [--tiny] [--rounds 7]

Why: ONNX Runtime's u8·s8 MatMul kernels add pairs of products in int16 on CPUs without VNNI
and saturate, so the int8 export that is right on an AVX-512/VNNI CPU drifts on an AVX2-only one
(`nodes/embedding/int8_verdict.py`). This measures every kind of
`nodes.embedding.onnx_export.QUANTISATIONS` on the frozen probe (`nodes/embedding/probe.py`: 8
Russian questions alone with the query prompt, their 8 passages in one batch with the document
prompt), side by side in one run:

* cosine of each vector to the fp32 export's (min, mean) and to PyTorch fp32's (min, mean);
* the rank of each question's own passage among the 8, and whether its top passage is fp32's;
* median time of one query alone and of the 8 passages in one batch, over ``--rounds`` rounds
  in which the runtimes take turns (so a busy machine slows them alike);
* the verdict `onnx-auto` makes on this CPU with the project's gate.

``--tiny`` runs the same on the two-layer random-weight encoder the tests use.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.cpu import describe_cpu
from grove.core.settings import get_settings
from nodes.embedding import probe
from nodes.embedding.int8_verdict import GATE, compare, judge, probe_vectors
from nodes.embedding.onnx_encoder import OnnxEncoder, ensure_export, ensure_quantised
from nodes.embedding.onnx_export import QUANTISATIONS


def torch_vectors(source: Path, prompts: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(source), device="cpu", local_files_only=True, model_kwargs={"dtype": torch.float32})
    queries = np.stack([model.encode([prompts[0] + q], normalize_embeddings=True)[0] for q, _ in probe.PAIRS])
    passages = model.encode([prompts[1] + p for _, p in probe.PAIRS], normalize_embeddings=True, batch_size=8)
    return queries, passages


def timings(folder: Path, precisions: list[str], threads: int, prompts: tuple[str, str], rounds: int) -> dict[str, tuple[float, float]]:
    """Median ms of one query alone and of the probe's passages in one batch, the runtimes taking turns."""
    encoders = {p: OnnxEncoder(folder, p, threads) for p in precisions}
    queries = [prompts[0] + q for q, _ in probe.PAIRS]
    passages = [prompts[1] + p for _, p in probe.PAIRS]
    one: dict[str, list[float]] = {p: [] for p in precisions}
    batch: dict[str, list[float]] = {p: [] for p in precisions}
    for encoder in encoders.values():
        encoder.encode(passages, 8)  # warm-up
    for _ in range(rounds):
        for precision, encoder in encoders.items():
            for query in queries:
                started = time.perf_counter()
                encoder.encode([query], 1)
                one[precision].append(time.perf_counter() - started)
            started = time.perf_counter()
            encoder.encode(passages, 8)
            batch[precision].append(time.perf_counter() - started)
    return {p: (statistics.median(one[p]) * 1000, statistics.median(batch[p]) * 1000) for p in precisions}


def run(source: Path, cache: Path, rounds: int) -> None:
    settings = get_settings()
    prompts = (settings.embedding_query_prompt, settings.embedding_document_prompt)
    threads = settings.cpu_threads
    folder = ensure_export(source, cache)
    precisions = ["fp32", *QUANTISATIONS]
    for precision in QUANTISATIONS:
        ensure_quantised(folder, precision)
    print(f"\nmodel {source} (export {folder}), {threads} threads")
    reference = probe_vectors(folder, "fp32", threads, prompts)
    by_torch = torch_vectors(source, prompts)
    times = timings(folder, precisions, threads, prompts, rounds)
    print(f"{'runtime':18} {'fp32 min':>8} {'mean':>6} {'torch min':>9} {'mean':>6} {'top=fp32':>8} "
          f"{'own ranks':>17} {'query':>8} {'8 passages':>10} gate")
    for precision in precisions:
        measured = probe_vectors(folder, precision, threads, prompts)
        found = compare(precision, measured, reference, GATE)
        to_torch = np.concatenate([(measured[0] * by_torch[0]).sum(axis=1), (measured[1] * by_torch[1]).sum(axis=1)])
        name = "onnx" if precision == "fp32" else f"onnx-{precision}"
        query_ms, batch_ms = times[precision]
        print(f"{name:18} {found.min_cosine:8.4f} {found.mean_cosine:6.4f} {to_torch.min():9.4f} {to_torch.mean():6.4f} "
              f"{found.same_top:>6}/{len(found.ranks)} {' '.join(map(str, found.ranks)):>17} {query_ms:6.0f}ms "
              f"{batch_ms:8.0f}ms {'pass' if found.passed else 'FAIL'}")
    verdict = judge(folder, threads, prompts)
    print(f"onnx-auto on this CPU: {verdict.reason()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a sentence-transformers folder (default: the setting)")
    parser.add_argument("--tiny", action="store_true", help="also the tests' two-layer random-weight encoder")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    settings = get_settings()
    source = args.model or Path(settings.model_path(settings.embedding_model))
    print(describe_cpu())
    print(f"gate: cosine to fp32 min ≥ {GATE.min_cosine}, mean ≥ {GATE.mean_cosine}, every query's top passage fp32's")
    run(source, settings.data_dir / "cache" / "onnx", args.rounds)
    if args.tiny:
        from tests.support.tiny_encoder import build_tiny_encoder

        with tempfile.TemporaryDirectory() as scratch:
            tiny = build_tiny_encoder(Path(scratch), source)
            run(tiny, Path(scratch) / "cache", args.rounds)


if __name__ == "__main__":
    main()
