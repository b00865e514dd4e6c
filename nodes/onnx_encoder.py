"""The embedding model exported to ONNX and run by ONNX Runtime, in fp32 or with int8 linear layers.

Why: on this 2-core CPU the same EmbeddingGemma vectors come about twice as fast from ONNX Runtime
with dynamically quantised int8 linear layers as from PyTorch in bf16, with retrieval quality kept
(`bench/embedding_runtime.py`, `bench/README.md`). The export is made once per model, from the
sentence-transformers folder itself, so any model a user names works the same way:

* ``model.onnx`` — the transformer alone (``input_ids``, ``attention_mask`` → token embeddings),
  exported by ``torch.onnx.export`` (the dynamo exporter: transformers' mask functions do not trace
  with the old one);
* ``model_int8.onnx`` — the same with every linear weight in int8 (per channel), except the MLP's
  down projections, whose inputs carry outliers that per-tensor activation quantisation cannot
  hold: with them in int8 the vectors drift (cosine to fp32 0.979 on average), without them they
  stay as close as bf16's (0.997);
* ``head.npz`` and ``export.json`` — the pooling and the Dense layers after the transformer, done in
  numpy, and what the export was made from;
* ``tokenizer/`` — the model's tokenizer, so the runtime never loads the PyTorch model.

`make models` exports the bundled model; any other is exported on first use (about two minutes on
2 cores, logged). Token embeddings per window — late chunking, late interaction — still come from
PyTorch (`nodes.embedding_runtime`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["EXPORT_VERSION", "OnnxEncoder", "OnnxExportError", "ensure_export", "export_dir"]

EXPORT_VERSION = 1
"""Bumped when the export's layout changes; an older export is made again."""

FILES = {"fp32": "model.onnx", "int8": "model_int8.onnx"}


class OnnxExportError(RuntimeError):
    """The model could not be exported to ONNX (or its export is unusable)."""


def fingerprint(source: Path) -> str:
    """What the export depends on: the model folder's file names, sizes and config, plus the layout."""
    digest = hashlib.sha256(f"v{EXPORT_VERSION}".encode())
    for path in sorted(source.rglob("*")):
        top = path.relative_to(source).parts[0]
        if not path.is_file() or top == "onnx" or top.startswith("."):  # the export, its lock and work folder
            continue
        digest.update(f"{path.relative_to(source)}:{path.stat().st_size}".encode())
        if path.suffix == ".json":
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


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
def _exclusive(lock_path: Path) -> Iterator[None]:
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
    with _exclusive(target.parent / f".{target.name}.lock"):
        if _is_current(target, source):
            return target
        started = time.perf_counter()
        log.info("exporting the embedding model %s to ONNX (once; a few minutes)", source)
        work = Path(tempfile.mkdtemp(prefix=".onnx-", dir=target.parent))
        work.chmod(0o755)  # readable like the model folder it sits in
        try:
            _export(source, work)
            _quantize(work / FILES["fp32"], work / FILES["int8"])
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


def _export(source: Path, work: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    _quiet_exporter()
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True,
                                model_kwargs={"dtype": torch.float32})
    model.eval()
    modules = list(model)
    if len(modules) < 2 or not isinstance(modules[1], Pooling) or modules[1].pooling_mode != "mean":
        raise OnnxExportError(
            f"the ONNX runtimes take Transformer → mean Pooling → Dense… models; {source} is "
            f"{[type(m).__name__ for m in modules]}. Use embedding_runtime=torch for it."
        )
    head: dict[str, np.ndarray] = {}
    normalize = False
    for index, module in enumerate(modules[2:]):
        if isinstance(module, Dense):
            if type(module.activation_function).__name__ != "Identity":
                raise OnnxExportError(f"Dense layer {index} of {source} has an activation; use embedding_runtime=torch")
            head[f"w{index}"] = module.linear.weight.detach().float().numpy()
            if module.linear.bias is not None:
                head[f"b{index}"] = module.linear.bias.detach().float().numpy()
        elif isinstance(module, Normalize):
            normalize = True
        else:
            raise OnnxExportError(f"unsupported module {type(module).__name__} after pooling in {source}")
    np.savez(work / "head.npz", **head)
    model.tokenizer.save_pretrained(str(work / "tokenizer"))

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    sample = model.tokenizer(["a sample", "a longer sample text"], padding=True, return_tensors="pt")
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation and axis-naming notes are not the user's
        program = torch.onnx.export(
            TokenEmbeddings(modules[0].auto_model).eval(),
            (sample["input_ids"], sample["attention_mask"]),
            input_names=["input_ids", "attention_mask"],
            output_names=["token_embeddings"],
            dynamic_shapes={"input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}},
            dynamo=True,
            verbose=False,
        )
    program.save(str(work / FILES["fp32"]), external_data=True)
    config = modules[0].auto_model.config
    meta = {
        "fingerprint": fingerprint(source),
        "source": str(source),
        "max_seq_length": int(model.max_seq_length or 512),
        "dim": int((getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()),
        "normalize": normalize,
        "dense_layers": sum(1 for m in modules[2:] if isinstance(m, Dense)),
        "intermediate_size": getattr(config, "intermediate_size", None),
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    (work / "export.json").write_text(json.dumps(meta, indent=1))


def _quantize(fp32: Path, int8: Path) -> None:
    """int8 weights for every linear layer but the MLP's down projections (see the module doc)."""
    import onnx

    meta = json.loads((fp32.parent / "export.json").read_text())
    graph = onnx.load(str(fp32), load_external_data=False).graph
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    inner = meta.get("intermediate_size")
    down = [node.name for node in graph.node
            if node.op_type == "MatMul" and inner and shapes.get(node.input[1], (0,))[0] == inner]
    logging.disable(logging.INFO)  # the quantiser logs every tensor it skips on the root logger
    try:
        _quantize_dynamic(fp32, int8, down)
    finally:
        logging.disable(logging.NOTSET)


def _quantize_dynamic(fp32: Path, int8: Path, down: list[str]) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
        op_types_to_quantize=["MatMul"], nodes_to_exclude=down,
        extra_options={"MatMulConstBOnly": True}, use_external_data_format=True,
    )


@dataclass
class OnnxEncoder:
    """Sentence vectors from an export: ONNX Runtime for the transformer, numpy for pooling and head."""

    folder: Path
    precision: str  # "fp32" | "int8"
    threads: int
    device: str = "cpu"
    max_tokens: int = 2048

    def __post_init__(self) -> None:
        import onnxruntime as ort
        from transformers import AutoTokenizer

        meta = json.loads((self.folder / "export.json").read_text())
        self.dim = int(meta["dim"])
        self._normalize = bool(meta["normalize"])
        self.max_tokens = min(self.max_tokens, int(meta["max_seq_length"]))
        with np.load(self.folder / "head.npz") as head:
            self._head = [(head[f"w{i}"], head.get(f"b{i}"))
                          for i in range(int(meta["dense_layers"]))]
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder / "tokenizer"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(1, self.threads)
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # ORT's own warnings go nowhere near the user
        providers = ["CPUExecutionProvider"]
        if self.device == "cuda":
            providers.insert(0, "CUDAExecutionProvider")
        self._session = ort.InferenceSession(str(self.folder / FILES[self.precision]), options, providers=providers)

    @property
    def name(self) -> str:
        return "onnx" if self.precision == "fp32" else f"onnx-{self.precision}"

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Vectors ``[len(texts), dim]`` float32, batch by batch in the order given."""
        out = [self._batch(list(texts[i:i + batch_size])) for i in range(0, len(texts), max(1, batch_size))]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="np")
        mask = encoded["attention_mask"].astype(np.int64)
        tokens = self._session.run(None, {"input_ids": encoded["input_ids"].astype(np.int64), "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        vectors = (tokens * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        for weight, bias in self._head:
            vectors = vectors @ weight.T
            if bias is not None:
                vectors = vectors + bias
        if self._normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.astype(np.float32)


def _main(argv: Sequence[str] | None = None) -> int:
    """`python -m nodes.onnx_encoder [folder]`: export the configured (or given) model now."""
    import argparse

    from grove.settings import get_settings

    parser = argparse.ArgumentParser(description="Export the embedding model to ONNX (fp32 and int8).")
    parser.add_argument("folder", nargs="?", type=Path, help="a sentence-transformers folder (default: the setting)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    settings = get_settings()
    source = args.folder or Path(settings.model_path(settings.embedding_model))
    if not (source / "modules.json").exists():
        print(f"error: {source} is not a sentence-transformers folder (run `make models` first)")
        return 1
    try:
        target = ensure_export(source, settings.data_dir / "cache" / "onnx")
    except OnnxExportError as exc:
        print(f"error: {exc}")
        return 1
    print(f"ONNX export: {target}")
    return 0


def _quiet_exporter() -> None:
    """The exporter's progress lines and torch's registration warnings belong in the log."""
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
