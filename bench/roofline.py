"""The machine's ceiling for the embedding encoder: sustained matmul throughput per precision → tokens/s.

Run: .venv/bin/python -m bench.roofline [--threads 2] [--tokens 2048] [--seq 256]

Why: an embedding figure alone ("800 tokens/s") says nothing about how much is left. Nearly all of
an encoder's work is matrix products, so the machine's sustained matmul rate, measured on the very
shapes of the model's linear layers, bounds its tokens/s. Every runtime figure in
`bench/embedding_runtime.py` is reported as a fraction of the ceiling computed here.

What is measured, each the median of several runs after a warm-up, with ``--threads`` threads:

* fp32 — ``torch.matmul`` (oneDNN / MKL) and ONNX Runtime's ``MatMul``;
* bf16 — ``torch.matmul`` on bfloat16 tensors (AVX-512 BF16 where the CPU has it);
* int8 — ONNX Runtime's ``DynamicQuantizeMatMul`` (what ``quantize_dynamic`` puts in the graph:
  the activations quantised on the fly, u8 × s8 with VNNI where the CPU has it), the cost of the
  activation quantisation included.

The shapes are ``tokens × hidden`` activations against each linear layer of one transformer block of
the configured model (q, k, v, o, gate, up, down), weighted by their share of the block's work.

The ceiling: the encoder's floating-point work per token is counted from its config
(:func:`encoder_flops`): 2 × every linear weight, plus the attention products (QKᵀ and AV, 4 × the
attended length × heads × head size, the attended length capped by a sliding window where the layer
has one) at ``--seq`` tokens, a typical chunk. The ceiling in tokens/s is the measured rate divided
by that work; for the int8 runtime every linear layer counts at the int8 rate (the MLP's down
projections too, since the export smooths them: nodes/embedding/onnx_export.py) and the attention products,
which stay fp32, at the fp32 rate. Embedding lookup, norms, softmax and pooling are
not counted: they are what a runtime loses against the ceiling.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / ".grove" / "models" / "embeddinggemma-300m"


@dataclass(frozen=True)
class Linear:
    """One linear layer of a transformer block: its name and (in, out) features."""

    name: str
    n_in: int
    n_out: int


def block_linears(config: dict) -> list[Linear]:
    """The linear layers of one block of a Gemma / Llama-style encoder, from its config.json."""
    hidden = config["hidden_size"]
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    head_dim = config.get("head_dim") or hidden // heads
    inter = config["intermediate_size"]
    return [
        Linear("q", hidden, heads * head_dim),
        Linear("k", hidden, kv_heads * head_dim),
        Linear("v", hidden, kv_heads * head_dim),
        Linear("o", heads * head_dim, hidden),
        Linear("gate", hidden, inter),
        Linear("up", hidden, inter),
        Linear("down", inter, hidden),
    ]


def encoder_flops(config: dict, seq: int) -> dict[str, float]:
    """Floating-point operations per token: ``linear`` (all but down), ``down`` and ``attention``."""
    layers = config["num_hidden_layers"]
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    window = config.get("sliding_window") or seq
    kinds = config.get("layer_types") or ["full_attention"] * layers
    attended = sum(min(seq, window) if kind == "sliding_attention" else seq for kind in kinds)
    per_block = {lin.name: 2.0 * lin.n_in * lin.n_out for lin in block_linears(config)}
    return {
        "linear": layers * sum(v for k, v in per_block.items() if k != "down"),
        "down": layers * per_block["down"],
        "attention": 4.0 * attended * heads * head_dim,
    }


def _median_seconds(run: Callable[[], object], repeats: int) -> float:
    run()  # warm-up: first-call allocation and kernel selection
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _torch_rate(linears: list[Linear], tokens: int, dtype: str, threads: int, repeats: int) -> float:
    import torch

    torch.set_num_threads(threads)
    kind = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype]
    flops = seconds = 0.0
    for lin in linears:
        a = torch.randn(tokens, lin.n_in, dtype=kind)
        w = torch.randn(lin.n_out, lin.n_in, dtype=kind)
        with torch.no_grad():
            seconds += _median_seconds(lambda a=a, w=w: torch.nn.functional.linear(a, w), repeats)
        flops += 2.0 * tokens * lin.n_in * lin.n_out
    return flops / seconds


def _ort_session(lin: Linear, quantized: bool, threads: int):  # noqa: ANN202 - onnxruntime types
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", lin.n_in])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", lin.n_out])
    if quantized:
        weights = [
            numpy_helper.from_array(rng.integers(-127, 127, (lin.n_in, lin.n_out), dtype=np.int8), "w"),
            numpy_helper.from_array(np.full((lin.n_out,), 0.01, dtype=np.float32), "scale"),
            numpy_helper.from_array(np.zeros((lin.n_out,), dtype=np.int8), "zero"),
        ]
        node = helper.make_node("DynamicQuantizeMatMul", ["x", "w", "scale", "zero"], ["y"], domain="com.microsoft")
        opsets = [helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]
    else:
        weights = [numpy_helper.from_array(rng.standard_normal((lin.n_in, lin.n_out), dtype=np.float32), "w")]
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        opsets = [helper.make_opsetid("", 18)]
    graph = helper.make_graph([node], lin.name, [x], [y], initializer=weights)
    model = helper.make_model(graph, opset_imports=opsets, ir_version=10)  # what ONNX Runtime reads
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _ort_rate(linears: list[Linear], tokens: int, quantized: bool, threads: int, repeats: int) -> float:
    flops = seconds = 0.0
    for lin in linears:
        session = _ort_session(lin, quantized, threads)
        a = np.random.default_rng(1).standard_normal((tokens, lin.n_in), dtype=np.float32)
        seconds += _median_seconds(lambda session=session, a=a: session.run(None, {"x": a}), repeats)
        flops += 2.0 * tokens * lin.n_in * lin.n_out
    return flops / seconds


@dataclass(frozen=True)
class Roofline:
    """Measured matmul rates (FLOP/s) and the encoder's work per token at the reference length."""

    rates: dict[str, float]
    flops: dict[str, float]
    seq: int
    threads: int

    def ceiling(self, precision: str) -> float:
        """Tokens/s the encoder could reach if every product ran at the measured rate of ``precision``.

        ``int8`` is the mixed graph grove runs: every linear layer in int8 (the down projections
        smoothed), the attention products in fp32.
        """
        f = self.flops
        if precision == "int8":
            fp32 = max(self.rates["fp32 torch"], self.rates["fp32 onnxruntime"])
            return 1.0 / ((f["linear"] + f["down"]) / self.rates["int8 onnxruntime"] + f["attention"] / fp32)
        rate = {"fp32": max(self.rates["fp32 torch"], self.rates["fp32 onnxruntime"]),
                "bf16": self.rates["bf16 torch"]}[precision]
        return rate / sum(f.values())


def measure(model_dir: Path = DEFAULT_MODEL, *, threads: int = 2, tokens: int = 2048, seq: int = 256,
            repeats: int = 5) -> Roofline:
    """Measure the three precisions on the linear shapes of the model at ``model_dir``."""
    config = json.loads((model_dir / "config.json").read_text())
    linears = block_linears(config)
    rates = {
        "fp32 torch": _torch_rate(linears, tokens, "fp32", threads, repeats),
        "fp32 onnxruntime": _ort_rate(linears, tokens, False, threads, repeats),
        "bf16 torch": _torch_rate(linears, tokens, "bf16", threads, repeats),
        "int8 onnxruntime": _ort_rate(linears, tokens, True, threads, repeats),
    }
    return Roofline(rates=rates, flops=encoder_flops(config, seq), seq=seq, threads=threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="folder with the encoder's config.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=2048, help="rows of the activation matrix (batch × length)")
    parser.add_argument("--seq", type=int, default=256, help="reference length for the attention term")
    args = parser.parse_args()
    roof = measure(args.model, threads=args.threads, tokens=args.tokens, seq=args.seq)
    print(f"matmul on {args.model.name}'s linear shapes, {args.tokens} rows, {args.threads} threads:")
    for name, rate in roof.rates.items():
        print(f"  {name:18s} {rate / 1e9:8.1f} GFLOP/s")
    total = sum(roof.flops.values())
    print(f"encoder work per token at {args.seq} tokens: {total / 1e6:.0f} MFLOP "
          f"(linear {roof.flops['linear'] / 1e6:.0f}, down {roof.flops['down'] / 1e6:.0f}, "
          f"attention {roof.flops['attention'] / 1e6:.0f})")
    for precision in ("fp32", "bf16", "int8"):
        print(f"  ceiling {precision}: {roof.ceiling(precision):8.0f} tokens/s")


if __name__ == "__main__":
    main()
