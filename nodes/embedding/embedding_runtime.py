"""Embedding runtimes: which engine turns prompted texts into sentence vectors, on which device.

A runtime is anything with the small :class:`EncoderRuntime` shape; :data:`RUNTIMES` maps the setting
``embedding_runtime`` to a loader, so another engine is one function registered here. Sentence vectors
(chunks, queries, saved Q&A pairs) come from the configured runtime; token embeddings per window (late
chunking) always from the PyTorch model. The default, ``onnx-auto``, runs the int8 export that keeps the
fp32 export's vectors on this CPU (`nodes/embedding/int8_verdict.py`), or the fp32 export when none does.
Figures: bench/README.md, «Embedding runtimes» and «int8 on CPUs without VNNI».
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

__all__ = ["RUNTIMES", "EncoderRuntime", "TorchEncoder", "describe_runtime", "load_runtime", "resolve_device"]


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
        from nodes.embedding.onnx_encoder import OnnxEncoder, ensure_export, ensure_quantised

        folder = ensure_export(source, settings.data_dir / "cache" / "onnx")
        if precision != "fp32":
            ensure_quantised(folder, precision)
        return OnnxEncoder(folder, precision, settings.cpu_threads, device, settings.embedding_max_tokens)

    return load


def _prompts(settings: Settings) -> tuple[str, str]:
    return settings.embedding_query_prompt, settings.embedding_document_prompt


def _onnx_auto(source: Path, settings: Settings, device: str, torch_model: Callable[[], SentenceTransformer]) -> EncoderRuntime:
    """The int8 export this CPU keeps close to fp32, else fp32 (verdict made once per CPU, cached)."""
    from nodes.embedding.int8_verdict import verdict
    from nodes.embedding.onnx_encoder import OnnxEncoder, ensure_export

    folder = ensure_export(source, settings.data_dir / "cache" / "onnx")
    chosen = verdict(folder, settings.cpu_threads, _prompts(settings))
    log.info("embeddings: %s", chosen.reason())
    return OnnxEncoder(folder, chosen.precision, settings.cpu_threads, device, settings.embedding_max_tokens)


RUNTIMES: dict[str, Loader] = {
    "torch": _torch,
    "onnx": _onnx("fp32"),
    "onnx-auto": _onnx_auto,
    "onnx-int8": _onnx("int8"),  # forced: saturates on CPUs without VNNI (int8_verdict)
    "onnx-int8-reduced": _onnx("int8-reduced"),
    "onnx-u8u8": _onnx("u8u8"),
}


def describe_runtime(settings: Settings) -> str:
    """The runtime as `grove up` names it: for ``onnx-auto`` the one this CPU's cached verdict chose,
    with why; nothing is exported or probed here."""
    if settings.embedding_runtime != "onnx-auto":
        return settings.embedding_runtime
    from nodes.embedding.int8_verdict import cached_verdict
    from nodes.embedding.onnx_encoder import export_dir

    source = Path(settings.model_path(settings.embedding_model))
    folder = export_dir(source, settings.data_dir / "cache" / "onnx")
    found = cached_verdict(folder, _prompts(settings)) if (folder / "export.json").exists() else None
    if found is None:
        return "onnx-auto (int8 checked against fp32 on this CPU at first use)"
    return f"{found.runtime} (onnx-auto's choice for {found.cpu}: {found.why()})"


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


def _main(argv: Sequence[str] | None = None) -> int:
    """`python -m nodes.embedding.embedding_runtime [folder]`: export the configured (or given) model to
    ONNX now (`onnx_encoder.py`), and check its int8 kinds on this CPU (`int8_verdict.py`)."""
    import argparse

    from grove.core.settings import get_settings

    parser = argparse.ArgumentParser(description="Export the embedding model to ONNX (fp32 and int8).")
    parser.add_argument("folder", nargs="?", type=Path, help="a sentence-transformers folder (default: the setting)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    settings = get_settings()
    source = args.folder or Path(settings.model_path(settings.embedding_model))
    if not (source / "modules.json").exists():
        print(f"error: {source} is not a sentence-transformers folder (run `make models` first)")
        return 1
    from nodes.embedding.int8_verdict import verdict
    from nodes.embedding.onnx_encoder import OnnxExportError, ensure_export

    try:
        target = ensure_export(source, settings.data_dir / "cache" / "onnx")
    except OnnxExportError as exc:
        print(f"error: {exc}")
        return 1
    print(f"ONNX export: {target}")
    chosen = verdict(target, settings.cpu_threads, (settings.embedding_query_prompt, settings.embedding_document_prompt))
    print(f"embeddings on this CPU (onnx-auto): {chosen.reason()}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
