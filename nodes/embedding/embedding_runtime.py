"""Embedding runtimes: which engine turns prompted texts into sentence vectors, on which device.

A runtime is anything with the small :class:`EncoderRuntime` shape; :data:`RUNTIMES` maps the
setting ``embedding_runtime`` to a loader, so another engine is one function registered here.

Which runtime serves which path:

* sentence vectors (chunks in the default naive chunking, queries, saved Q&A pairs) — the
  configured runtime;
* token embeddings per window (late chunking; the late-interaction bench) — always the
  PyTorch model, loaded on first need (`nodes.embedding.embedder.Embedder.model`).

The default was chosen by `bench/embedding_runtime.py` (figures in bench/README.md).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from grove.core.settings import Settings

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

__all__ = ["RUNTIMES", "EncoderRuntime", "TorchEncoder", "load_runtime", "resolve_device"]


class EncoderRuntime(Protocol):
    """What the embedder needs of an engine: vectors for texts that already carry their prompt."""

    @property
    def name(self) -> str: ...  # read-only: an ONNX encoder derives it from its precision

    device: str
    dim: int
    tokenizer: Any

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Normalised float32 vectors ``[len(texts), dim]``, in the order given."""
        ...


class TorchEncoder:
    """The sentence-transformers model itself (PyTorch, the dtype of ``embedding_dtype``)."""

    name = "torch"

    def __init__(self, model: SentenceTransformer) -> None:
        self.model = model
        self.device = str(model.device)
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if dim is None:  # the TypeError int(None) gave, with the model named
            raise TypeError(f"{type(model).__name__} reports no embedding dimension")
        self.dim = int(dim)
        self.tokenizer = model.tokenizer

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        from chunking import naive_chunk_embeddings

        return naive_chunk_embeddings(self.model, list(texts), prompt="", batch_size=batch_size)


Loader = Callable[[Path, Settings, str, Callable[[], "SentenceTransformer"]], EncoderRuntime]


def _torch(source: Path, settings: Settings, device: str, torch_model: Callable[[], SentenceTransformer]) -> EncoderRuntime:
    return TorchEncoder(torch_model())


def _onnx(precision: str) -> Loader:
    def load(source: Path, settings: Settings, device: str, torch_model: Callable[[], SentenceTransformer]) -> EncoderRuntime:
        from nodes.embedding.onnx_encoder import OnnxEncoder, ensure_export

        folder = ensure_export(source, settings.data_dir / "cache" / "onnx")
        return OnnxEncoder(folder, precision, settings.cpu_threads, device, settings.embedding_max_tokens)

    return load


RUNTIMES: dict[str, Loader] = {
    "torch": _torch,
    "onnx": _onnx("fp32"),
    "onnx-int8": _onnx("int8"),
}


def _cuda_available(runtime: str) -> bool:
    if runtime == "torch":
        import torch

        return bool(torch.cuda.is_available())
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


def resolve_device(requested: str, runtime: str, cuda_available: Callable[[str], bool] = _cuda_available) -> str:
    """``cpu`` or ``cuda`` for the setting ``embedding_device`` (``auto`` picks CUDA when the runtime sees one)."""
    if requested == "cpu":
        return "cpu"
    available = cuda_available(runtime)
    if requested == "cuda" and not available:
        raise RuntimeError(
            f"embedding_device=cuda, but the {runtime} runtime sees no CUDA device "
            "(GROVE_EMBEDDING_DEVICE=cpu or auto runs on the CPU)"
        )
    return "cuda" if available else "cpu"


def load_runtime(source: Path, settings: Settings, torch_model: Callable[[], SentenceTransformer]) -> EncoderRuntime:
    """The configured runtime for the model at ``source``; announced in the log with its device."""
    name = settings.embedding_runtime
    if name not in RUNTIMES:
        raise ValueError(f"unknown embedding_runtime {name!r} (one of: {', '.join(RUNTIMES)})")
    device = resolve_device(settings.embedding_device, name)
    runtime = RUNTIMES[name](source, settings, device, torch_model)
    log.info("embeddings: %s on %s, %d threads, model %s", runtime.name, runtime.device, settings.cpu_threads, source)
    return runtime
