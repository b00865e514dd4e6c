"""The embedding model exported to ONNX and run by ONNX Runtime, in fp32 or with int8 linear layers.

On a small CPU, ONNX Runtime with int8 linear layers gives the same model's vectors markedly sooner than
PyTorch, with retrieval quality kept. The export is made from the sentence-transformers folder itself, so
any model a user names works the same way (what it holds: `nodes/embedding/onnx_export.py`); here it is
cached (``<model>/onnx``, made again when the model or the layout changes) and run, one session run per
batch. `make models` exports the bundled model; any other is exported on first use. Token embeddings per
window still come from PyTorch (`nodes.embedding.embedding_runtime`).
Figures: bench/README.md, «Embedding runtimes» (bench.embedding_runtime).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import numpy as np

from nodes.embedding.onnx_export import (
    EXPORT_VERSION,
    FILES,
    SENTENCE_OUTPUT,
    OnnxExportError,
    build,
    fingerprint,
    model_file,
    quantise,
)

log = logging.getLogger(__name__)

__all__ = ["EXPORT_VERSION", "OnnxEncoder", "OnnxExportError", "ensure_export", "ensure_quantised", "exclusive", "export_dir"]


def export_dir(source: Path, cache_dir: Path) -> Path:
    """``<model folder>/onnx`` when it can be written there (the bundled model), else the cache."""
    inside = source / "onnx"
    if inside.exists() or os.access(source, os.W_OK):
        return inside
    return cache_dir / f"{source.name}-{hashlib.sha256(str(source).encode()).hexdigest()[:8]}"


def _is_current(target: Path, source: Path) -> bool:
    try:
        meta = json.loads((target / "export.json").read_text())
    except (OSError, ValueError):
        return False
    return meta.get("fingerprint") == fingerprint(source) and all((target / f).exists() for f in FILES.values())


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """One exporter per model across processes (a second waits, then finds the export made)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no fcntl: no cross-process lock
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_export(source: Path, cache_dir: Path) -> Path:
    """The folder of a current export of the sentence-transformers model at ``source``; made if missing."""
    target = export_dir(source, cache_dir)
    if _is_current(target, source):
        return target
    with exclusive(target.parent / f".{target.name}.lock"):
        if _is_current(target, source):
            return target
        started = time.perf_counter()
        log.info("exporting the embedding model %s to ONNX (once; a few minutes)", source)
        work = Path(tempfile.mkdtemp(prefix=".onnx-", dir=target.parent))
        work.chmod(0o755)  # readable like the model folder it sits in
        try:
            build(source, work)
            if target.exists():
                shutil.rmtree(target)
            work.rename(target)  # the export appears whole or not at all
        except Exception as exc:
            shutil.rmtree(work, ignore_errors=True)
            if isinstance(exc, OnnxExportError):
                raise
            raise OnnxExportError(f"could not export {source} to ONNX: {exc}") from exc
        log.info("ONNX export of %s ready in %.0f s: %s", source, time.perf_counter() - started, target)
    return target


def ensure_quantised(folder: Path, precision: str) -> Path:
    """The file of ``precision`` in the export ``folder``, quantised from its fp32 model if missing
    (under a lock, written beside and renamed into place: it appears whole or not at all)."""
    target = folder / model_file(precision)
    if target.exists():
        return target
    with exclusive(folder / ".quantise.lock"):
        if target.exists():
            return target
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=".quantise-", dir=folder))
        try:
            made = quantise(folder, precision, work)
            for part in sorted(work.iterdir(), key=lambda p: p == made):  # the graph last: its presence means done
                part.rename(folder / part.name)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log.info("ONNX export %s: %s made in %.0f s", folder, target.name, time.perf_counter() - started)
    return target


@functools.lru_cache(maxsize=4)
def _tokenizer(folder: str, written: int) -> Any:
    """An export's tokenizer, loaded once per process and export (``written``: when it was saved;
    EmbeddingGemma's takes 5–15 s to load, and the int8 verdict opens every kind of the export)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


@dataclass
class OnnxEncoder:
    """Sentence vectors from an export: ONNX Runtime for the transformer, numpy for pooling and head."""

    folder: Path
    precision: str  # "fp32" or a key of onnx_export.QUANTISATIONS
    threads: int
    device: str = "cpu"
    max_tokens: int = 2048

    def __post_init__(self) -> None:
        import onnxruntime as ort

        meta = json.loads((self.folder / "export.json").read_text())
        self.dim = int(meta["dim"])
        self.max_tokens = min(self.max_tokens, int(meta["max_seq_length"]))
        tokenizer = self.folder / "tokenizer"
        self.tokenizer = _tokenizer(str(tokenizer), (tokenizer / "tokenizer_config.json").stat().st_mtime_ns)
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, self.threads)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # ORT's own warnings go nowhere near the user
        providers = ["CPUExecutionProvider"]
        if self.device == "cuda":
            providers.insert(0, "CUDAExecutionProvider")
        self._session = ort.InferenceSession(str(self.folder / model_file(self.precision)), options, providers=providers)

    @property
    def name(self) -> str:
        return "onnx" if self.precision == "fp32" else f"onnx-{self.precision}"

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Vectors ``[len(texts), dim]`` float32, batch by batch in the order given."""
        out = [self._batch(list(texts[i:i + batch_size])) for i in range(0, len(texts), max(1, batch_size))]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="np")
        feed = {"input_ids": encoded["input_ids"].astype(np.int64),
                "attention_mask": encoded["attention_mask"].astype(np.int64)}
        vectors = self._session.run([SENTENCE_OUTPUT], feed)[0]  # pooling and head run in the graph
        return np.asarray(vectors, dtype=np.float32)
