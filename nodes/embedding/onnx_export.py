"""How an embedding model becomes an ONNX export: the files, the int8 weights, the head as nodes.

An export folder holds ``model.onnx`` (the transformer by torch's dynamo exporter, then pooling, Dense
layers and normalisation as nodes), the int8 kinds of :data:`QUANTISATIONS` made from it, ``export.json``
and ``tokenizer/``, so the runtime never loads PyTorch. A gated MLP's down projections take outliers that
per-tensor quantisation cannot hold, so it is first smoothed into the same fp32 function (SmoothQuant,
peaks from `nodes/embedding/calibration.py`); nodes are fused by `nodes/embedding/onnx_rewrites.py`. The
head is in the graph because a numpy matmul after a session run fights ONNX Runtime's spinning threads.
Figures: bench/README.md, «Embedding runtimes» (bench.embedding_runtime).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from nodes.embedding.onnx_rewrites import Shape, rewrite

log = logging.getLogger(__name__)

__all__ = ["EXPORT_VERSION", "FILES", "QUANTISATIONS", "SENTENCE_OUTPUT", "OnnxExportError", "Quantisation", "build",
           "fingerprint", "model_file", "quantise"]

EXPORT_VERSION = 6
"""Bumped when the export's layout changes; an older export is made again."""

FILES = {"fp32": "model.onnx", "int8": "model_int8.onnx"}
"""The files every export has; the other quantisations are made on demand (:func:`quantise`)."""
SENTENCE_OUTPUT = "sentence_embedding"


@dataclass(frozen=True)
class Quantisation:
    """One way of putting the transformer's linear layers in 8 bits (ONNX Runtime's dynamic quantisation)."""

    file: str
    weight_type: str  # onnxruntime.quantization.QuantType's name
    reduce_range: bool  # 7-bit weights: a pair of u8·s7 products cannot overflow int16
    about: str


# precision → how, in the order an automatic choice tries them. 7-bit weights first: as fast as int8 on
# both kinds of CPU measured, unsaturated without VNNI, and on a VNNI CPU they kept retrieval within the
# gate where int8 weights fell 0.013 nDCG@10 short (bench/README.md, «Embedding runtimes»).
QUANTISATIONS = {
    "int8-reduced": Quantisation("model_int8_reduced.onnx", "QInt8", True, "7-bit weights (reduce_range)"),
    "int8": Quantisation(FILES["int8"], "QInt8", False, "int8 weights, uint8 activations"),
    "u8u8": Quantisation("model_u8u8.onnx", "QUInt8", False, "uint8 weights and activations"),
}


def model_file(precision: str) -> str:
    """The file of an export that holds ``precision`` (``fp32`` or a key of :data:`QUANTISATIONS`)."""
    return FILES["fp32"] if precision == "fp32" else QUANTISATIONS[precision].file


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


def build(source: Path, work: Path) -> None:
    """Every file of an export of the sentence-transformers model at ``source``, written into ``work``."""
    head = _export(source, work)
    meta = json.loads((work / "export.json").read_text())
    shape = Shape(heads=meta["heads"], kv_heads=meta["kv_heads"], head_dim=meta["head_dim"],
                  max_positions=meta["max_seq_length"])
    counts = rewrite(work / FILES["fp32"], shape)
    log.info("ONNX export: fused %s", ", ".join(f"{n} {kind}" for kind, n in counts.items()))
    _append_head(work / FILES["fp32"], head)
    quantise(work, "int8", work)


@dataclass(frozen=True)
class Head:
    """What sentence-transformers does after the transformer: mean pooling, Dense layers, normalising."""

    dense: list[tuple[np.ndarray, np.ndarray | None]]  # (weight [out, in], bias [out] or None) in order
    normalize: bool


def _export(source: Path, work: Path) -> Head:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

    _quiet_exporter()
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True,
                                model_kwargs={"dtype": torch.float32})
    model.eval()
    modules = list(model)
    smoothed = _smooth_down_projections(model)
    if len(modules) < 2 or not isinstance(modules[1], Pooling) or modules[1].pooling_mode != "mean":
        raise OnnxExportError(
            f"the ONNX runtimes take Transformer → mean Pooling → Dense… models; {source} is "
            f"{[type(m).__name__ for m in modules]}. Use embedding_runtime=torch for it."
        )
    dense: list[tuple[np.ndarray, np.ndarray | None]] = []
    normalize = False
    for index, module in enumerate(modules[2:]):
        if isinstance(module, Dense):
            if type(module.activation_function).__name__ != "Identity":
                raise OnnxExportError(f"Dense layer {index} of {source} has an activation; use embedding_runtime=torch")
            bias = module.linear.bias
            dense.append((module.linear.weight.detach().float().numpy(),
                          None if bias is None else bias.detach().float().numpy()))
        elif isinstance(module, Normalize):
            normalize = True
        else:
            raise OnnxExportError(f"unsupported module {type(module).__name__} after pooling in {source}")
    model.tokenizer.save_pretrained(str(work / "tokenizer"))

    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state)

    auto_model = cast(torch.nn.Module, modules[0].auto_model)  # the transformers model inside the Transformer module
    sample = model.tokenizer(["a sample", "a longer sample text"], padding=True, return_tensors="pt")
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation and axis-naming notes are not the user's
        program = torch.onnx.export(
            TokenEmbeddings(auto_model).eval(),
            (sample["input_ids"], sample["attention_mask"]),
            input_names=["input_ids", "attention_mask"],
            output_names=["token_embeddings"],
            dynamic_shapes={"input_ids": {0: batch, 1: length}, "attention_mask": {0: batch, 1: length}},
            dynamo=True,
            verbose=False,
        )
    assert program is not None  # the dynamo exporter returns its program
    program.save(str(work / FILES["fp32"]), external_data=True)
    config: Any = auto_model.config
    heads = int(config.num_attention_heads)
    dim = (getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension)()
    if dim is None:  # the TypeError int(None) gave, with the model named
        raise TypeError(f"{source} reports no embedding dimension")
    meta = {
        "fingerprint": fingerprint(source),
        "source": str(source),
        "max_seq_length": int(model.max_seq_length or 512),
        "dim": int(dim),
        "normalize": normalize,
        "dense_layers": len(dense),
        "intermediate_size": getattr(config, "intermediate_size", None),
        "heads": heads,
        "kv_heads": int(getattr(config, "num_key_value_heads", None) or heads),
        "head_dim": int(getattr(config, "head_dim", None) or config.hidden_size // heads),
        "smoothed_layers": smoothed,
        "made": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    (work / "export.json").write_text(json.dumps(meta, indent=1))
    return Head(dense, normalize)


SMOOTHING = 0.65
"""SmoothQuant's α: how much of an activation channel's range moves into the weights (0.5, 0.65 and
0.8 measured on the Debian set: 0.65 kept MRR@10 and the vectors closest to fp32, bench/README.md)."""


def _smooth_down_projections(model: Any) -> int:
    """Scale each gated MLP of a sentence-transformers model's encoder so its down projection's
    input has no outlier channels; how many layers were smoothed.

    ``down(act(gate(x)) · up(x))``: dividing ``up``'s output channel j by ``s_j`` and multiplying
    ``down``'s input column j by ``s_j`` leaves the function unchanged and moves the outliers
    into the weights, which are quantised per channel."""
    import torch

    from nodes.embedding.calibration import CALIBRATION_TEXTS, QUERIES

    encoder, tokenizer = model[0].auto_model, model.tokenizer
    mlps = [m for m in encoder.modules() if all(hasattr(m, a) for a in ("gate_proj", "up_proj", "down_proj"))]
    if not mlps:
        return 0
    peaks: dict[int, torch.Tensor] = {}

    def record(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        seen = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(dim=0)
        peaks[id(module)] = torch.maximum(peaks[id(module)], seen) if id(module) in peaks else seen

    hooks = [m.down_proj.register_forward_pre_hook(record) for m in mlps]
    prompts = getattr(model, "prompts", {}) or {}
    texts = [prompts.get("document", "") + t for t in CALIBRATION_TEXTS]
    texts += [prompts.get("query", "") + q for q in QUERIES]
    try:
        with torch.no_grad():
            for text in texts:  # one at a time: no padding tokens among the peaks
                encoder(**tokenizer([text], return_tensors="pt"))
    finally:
        for hook in hooks:
            hook.remove()
    with torch.no_grad():
        for mlp in mlps:
            down, up = mlp.down_proj, mlp.up_proj
            weight_peak = down.weight.abs().amax(dim=0).clamp(min=1e-5)
            scale = (peaks[id(down)].clamp(min=1e-5) ** SMOOTHING / weight_peak ** (1 - SMOOTHING)).clamp(min=1e-5)
            down.weight.mul_(scale[None, :])
            up.weight.div_(scale[:, None])
            if up.bias is not None:
                up.bias.div_(scale)
    return len(mlps)


def _append_head(path: Path, head: Head) -> None:
    """The pooling and head as nodes after ``token_embeddings``, output ``sentence_embedding``.

    Added after quantising, so the head stays fp32; the transformer's weights stay in their
    external data file, the head's few MB go inline."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    graph = model.graph
    constants: dict[str, np.ndarray] = {"head_axis_tokens": np.array([1], np.int64), "head_axis_last": np.array([-1], np.int64),
                 "head_one": np.array(1.0, np.float32)}
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["head_mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["head_mask", "head_axis_last"], ["head_mask_3d"]),
        helper.make_node("Mul", ["token_embeddings", "head_mask_3d"], ["head_masked"]),
        helper.make_node("ReduceSum", ["head_masked", "head_axis_tokens"], ["head_sum"], keepdims=0),
        helper.make_node("ReduceSum", ["head_mask_3d", "head_axis_tokens"], ["head_count"], keepdims=0),
        helper.make_node("Max", ["head_count", "head_one"], ["head_count_1"]),
        helper.make_node("Div", ["head_sum", "head_count_1"], ["head_dense_in_0"]),
    ]
    current = "head_dense_in_0"
    for index, (weight, bias) in enumerate(head.dense):
        constants[f"head_w{index}"] = np.ascontiguousarray(weight.T)
        out = f"head_dense_out_{index}"
        nodes.append(helper.make_node("MatMul", [current, f"head_w{index}"], [out if bias is None else f"{out}_nb"],
                                      name=f"head_dense_{index}"))
        if bias is not None:
            constants[f"head_b{index}"] = bias
            nodes.append(helper.make_node("Add", [f"{out}_nb", f"head_b{index}"], [out]))
        current = out
    if head.normalize:  # as torch's F.normalize: divided by max(‖v‖, 1e-12)
        constants["head_eps"] = np.array(1e-12, np.float32)
        nodes += [helper.make_node("ReduceL2", [current, "head_axis_last"], ["head_norm"], keepdims=1),
                  helper.make_node("Max", ["head_norm", "head_eps"], ["head_norm_eps"]),
                  helper.make_node("Div", [current, "head_norm_eps"], [SENTENCE_OUTPUT])]
    else:
        nodes.append(helper.make_node("Identity", [current], [SENTENCE_OUTPUT]))
    graph.initializer.extend(numpy_helper.from_array(value, name) for name, value in constants.items())
    graph.node.extend(nodes)
    dim = head.dense[-1][0].shape[0] if head.dense else None
    graph.output.append(helper.make_tensor_value_info(SENTENCE_OUTPUT, TensorProto.FLOAT, ["batch", dim]))
    onnx.save(model, str(path))


def quantise(folder: Path, precision: str, out: Path) -> Path:
    """``folder``'s ``model.onnx`` with the transformer's linear layers quantised as ``precision``
    says, written into ``out`` (its weights in ``<file>.data`` beside it); the head, and an
    unsmoothed model's down projections, stay fp32 (module doc)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    how = QUANTISATIONS[precision]
    meta = json.loads((folder / "export.json").read_text())
    graph = onnx.load(str(folder / FILES["fp32"]), load_external_data=False).graph
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    inner = meta.get("intermediate_size")
    matmuls = [node for node in graph.node if node.op_type == "MatMul"]
    keep = [node.name for node in matmuls if node.input[1].startswith("head_w")]
    if not meta.get("smoothed_layers"):
        keep += [node.name for node in matmuls if inner and shapes.get(node.input[1], (0,))[0] == inner]
    target = out / how.file
    logging.disable(logging.WARNING)  # the quantiser logs every tensor it skips, and advice, on the root logger
    try:
        quantize_dynamic(
            str(folder / FILES["fp32"]), str(target), weight_type=getattr(QuantType, how.weight_type),
            per_channel=True, reduce_range=how.reduce_range, op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep, extra_options={"MatMulConstBOnly": True}, use_external_data_format=True,
        )
    finally:
        logging.disable(logging.NOTSET)
    return target


def _quiet_exporter() -> None:
    """The exporter's progress lines and torch's registration warnings belong in the log."""
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
