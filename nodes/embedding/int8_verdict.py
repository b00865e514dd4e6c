"""Which int8 export this CPU may run: each kind checked against the fp32 export where it runs.

ONNX Runtime's quantised MatMul multiplies uint8 activations by int8 weights: with VNNI the products are
summed in int32, but an AVX2-only CPU (``vpmaddubsw``) adds pairs of them in int16 and saturates, and the
vectors drift; 7-bit weights (``reduce_range``) or uint8 weights do not saturate. So ``onnx-auto`` runs the
first kind of `nodes.embedding.onnx_export.QUANTISATIONS` that passes :data:`GATE` on the frozen probe
(`nodes/embedding/probe.py`), else the fp32 export. The verdict is made once per machine and cached in
``int8_verdict.json``, keyed by the export, probe, gate, the kinds' order, ONNX Runtime and CPU flags: any
change is judged again.
Figures: bench/README.md, «int8 on CPUs without VNNI» (bench.int8_probe).
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import tempfile
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from grove.core.cpu import cpu_flags, cpu_kind
from nodes.embedding import probe
from nodes.embedding.onnx_export import QUANTISATIONS

log = logging.getLogger(__name__)

__all__ = ["GATE", "VERDICT_FILE", "Gate", "Probe", "Verdict", "cache_key", "cached_verdict", "compare", "judge", "probe_vectors", "verdict"]

VERDICT_FILE = "int8_verdict.json"


@dataclass(frozen=True)
class Gate:
    """What an int8 export must keep of the fp32 export's vectors on the probe."""

    min_cosine: float
    mean_cosine: float


GATE = Gate(min_cosine=0.97, mean_cosine=0.985)
"""Every probe vector (queries alone, passages in one batch) at cosine ≥ 0.97 to fp32's, their
mean ≥ 0.985, and every query's top passage the one fp32 ranks first.

Set from the probe on EmbeddingGemma (bench/int8_probe.py, bench/README.md). AVX2-only AMD EPYC:
the saturating int8 gives min 0.802, mean 0.919; the kinds that do not saturate give min
0.981–0.983, mean 0.990–0.992 (7-bit weights, uint8 weights). AVX-512/VNNI AMD EPYC: every kind
min 0.981–0.983, mean 0.991–0.992. bf16 PyTorch against fp32 ≈ 0.996. The lowest vectors are passages in a batch: int8 activations
are quantised per tensor, so a passage's vector depends on what is padded beside it. The gate
keeps 0.01 below the kinds that work, so they pass on any CPU that computes them as exactly, and
sits far above what saturation does; the top-passage check is retrieval itself (on the tests'
random-weight encoder the saturating int8 changed the top passage of 3 queries of 8)."""


@dataclass(frozen=True)
class Probe:
    """One export's vectors on the probe against the fp32 export's."""

    precision: str
    min_cosine: float
    mean_cosine: float
    same_top: int  # queries whose top passage is the one fp32 ranks first
    ranks: list[int]  # rank of each query's own passage (1 = first)
    query_ms: float  # median time of one query alone
    passages_ms: float  # time of the probe's passages in one batch
    passed: bool

    def figures(self) -> str:
        return (f"cosine min {self.min_cosine:.3f} mean {self.mean_cosine:.3f} vs fp32, "
                f"same top passage {self.same_top}/{len(self.ranks)}")


@dataclass(frozen=True)
class Verdict:
    """Which export runs on this CPU, and the probes it was chosen by (fp32's first)."""

    precision: str  # "fp32" or a key of QUANTISATIONS
    cpu: str
    probes: list[Probe]

    @property
    def runtime(self) -> str:
        return "onnx" if self.precision == "fp32" else f"onnx-{self.precision}"

    def probe(self, precision: str) -> Probe | None:
        return next((p for p in self.probes if p.precision == precision), None)

    def why(self) -> str:
        """The figures the choice was made by: the chosen kind's probe, and each kind that failed."""
        chosen = self.probe(self.precision)
        why = [f"probe {chosen.figures()}" if chosen and self.precision != "fp32" else "no int8 kind passed the probe"]
        why += [f"onnx-{p.precision} failed: {p.figures()}" for p in self.probes if p.precision != "fp32" and not p.passed]
        return "; ".join(why)

    def reason(self) -> str:
        """One line for the log: what was chosen, why, on which CPU."""
        return f"{self.runtime} chosen: {self.why()} on {self.cpu}"

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Verdict:
        probes = [Probe(**p) for p in data["probes"]]  # type: ignore[attr-defined]
        return cls(str(data["precision"]), str(data["cpu"]), probes)


def probe_vectors(folder: Path, precision: str, threads: int, prompts: tuple[str, str]) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The probe's query vectors (each alone, as a chat turn asks) and passage vectors (one batch,
    as indexing embeds), with the median query time and the batch's time."""
    from nodes.embedding.onnx_encoder import OnnxEncoder, ensure_quantised

    if precision != "fp32":
        ensure_quantised(folder, precision)
    encoder = OnnxEncoder(folder, precision, threads)
    queries = [prompts[0] + q for q, _ in probe.PAIRS]
    passages = [prompts[1] + p for _, p in probe.PAIRS]
    encoder.encode(queries[:1], 1)  # warm-up
    times, vectors = [], []
    for query in queries:
        started = time.perf_counter()
        vectors.append(encoder.encode([query], 1)[0])
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    passage_vectors = encoder.encode(passages, len(passages))
    batch_s = time.perf_counter() - started
    return np.stack(vectors), passage_vectors, statistics.median(times) * 1000, batch_s * 1000


def compare(precision: str, measured: tuple[np.ndarray, np.ndarray, float, float],
             reference: tuple[np.ndarray, np.ndarray, float, float], gate: Gate) -> Probe:
    queries, passages, query_ms, passages_ms = measured
    cosines = np.concatenate([(queries * reference[0]).sum(axis=1), (passages * reference[1]).sum(axis=1)])
    scores, reference_scores = queries @ passages.T, reference[0] @ reference[1].T
    same_top = int((scores.argmax(axis=1) == reference_scores.argmax(axis=1)).sum())
    ranks = [int((row > row[i]).sum()) + 1 for i, row in enumerate(scores)]
    passed = (float(cosines.min()) >= gate.min_cosine and float(cosines.mean()) >= gate.mean_cosine
              and same_top == len(ranks))
    return Probe(precision, round(float(cosines.min()), 4), round(float(cosines.mean()), 4), same_top, ranks,
                 round(query_ms, 1), round(passages_ms, 1), passed)


def judge(folder: Path, threads: int, prompts: tuple[str, str], gate: Gate = GATE,
          candidates: tuple[str, ...] = tuple(QUANTISATIONS), flags: list[str] | None = None) -> Verdict:
    """Probe the int8 kinds of the export at ``folder`` in order (each made when missing) and
    choose the first that passes ``gate``; the fp32 export when none does."""
    reference = probe_vectors(folder, "fp32", threads, prompts)
    probes = [compare("fp32", reference, reference, gate)]
    chosen = "fp32"
    for precision in candidates:
        try:
            measured = probe_vectors(folder, precision, threads, prompts)
        except OSError as exc:  # a read-only export without this kind's file
            log.warning("embeddings: onnx-%s not probed: %s", precision, exc)
            continue
        found = compare(precision, measured, reference, gate)
        probes.append(found)
        if found.passed:
            chosen = precision
            break
    return Verdict(chosen, cpu_kind(flags), probes)


def cache_key(folder: Path, prompts: tuple[str, str], flags: list[str]) -> str:
    """The export's fingerprint, the probe and prompts, the gate, ONNX Runtime's version and the CPU's flags."""
    import onnxruntime

    export = json.loads((folder / "export.json").read_text())["fingerprint"]
    gate = f"{GATE.min_cosine}/{GATE.mean_cosine}"
    kinds = ",".join(QUANTISATIONS)  # the order they are tried in decides the verdict too
    return (f"{export} probe {probe.digest(prompts)} gate {gate} kinds {kinds} ort {onnxruntime.__version__} "
            f"cpu {' '.join(flags) or '-'}")


def _read(folder: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads((folder / VERDICT_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_verdict(folder: Path, prompts: tuple[str, str], flags: list[str] | None = None) -> Verdict | None:
    """The verdict already made for this export on a CPU with these flags, if any (no probing)."""
    flags = cpu_flags() if flags is None else flags
    try:
        entry = _read(folder).get(cache_key(folder, prompts, flags))
        return Verdict.from_json(entry) if entry else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def verdict(folder: Path, threads: int, prompts: tuple[str, str], flags: list[str] | None = None) -> Verdict:
    """The cached verdict for this CPU, or a new one judged and cached (said once in the log)."""
    flags = cpu_flags() if flags is None else flags
    found = cached_verdict(folder, prompts, flags)
    if found is not None:
        return found
    from nodes.embedding.onnx_encoder import exclusive

    # one process probes, the others wait and read its verdict; a read-only export is judged, not kept
    with exclusive(folder / ".verdict.lock") if os.access(folder, os.W_OK) else nullcontext():
        return cached_verdict(folder, prompts, flags) or _judge_and_keep(folder, threads, prompts, flags)


def _judge_and_keep(folder: Path, threads: int, prompts: tuple[str, str], flags: list[str]) -> Verdict:
    started = time.perf_counter()
    log.info("embeddings: checking the int8 exports against fp32 on this CPU (once; up to a few minutes)")
    made = judge(folder, threads, prompts, flags=flags)
    log.info("embeddings: %s (probed in %.0f s)", made.reason(), time.perf_counter() - started)
    entries = _read(folder)
    entries[cache_key(folder, prompts, flags)] = asdict(made)
    try:
        with tempfile.NamedTemporaryFile("w", dir=folder, prefix=".verdict-", suffix=".json", delete=False) as handle:
            json.dump(entries, handle, indent=1)
        os.replace(handle.name, folder / VERDICT_FILE)
    except OSError as exc:  # a read-only export: judged again by the next process
        log.warning("embeddings: could not keep the int8 verdict in %s: %s", folder, exc)
    return made
