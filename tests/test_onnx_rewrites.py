"""Graph rewrites of the encoder export leave what they do not recognise as it was.

That they compute the same function on the pattern they do recognise is checked end to end on a
tiny real Gemma3 encoder (tests/test_embedding_runtime.py: the ONNX vectors against PyTorch's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nodes.embedding.onnx_rewrites import Shape, rewrite

SHAPE = Shape(heads=2, kv_heads=1, head_dim=4, max_positions=16)


def _save(tmp_path: Path, nodes: list[Any], inputs: list[Any], outputs: list[Any], initializers: list[Any]) -> Path:
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)
    onnx.checker.check_model(model)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def test_a_graph_without_the_patterns_passes_through_unchanged(tmp_path: Path) -> None:
    """Softmax attention over heads that are not repeated, a Neg that is no rotary, a norm of another shape."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("Mul", ["q", "scale"], ["qs"]),
        helper.make_node("Mul", ["kt", "scale"], ["ks"]),
        helper.make_node("MatMul", ["qs", "ks"], ["scores"]),
        helper.make_node("Where", ["allowed", "zero", "minus_inf"], ["mask"]),  # an infinite fill: the guard stays
        helper.make_node("Add", ["scores", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["p0"]),
        helper.make_node("MatMul", ["p0", "v"], ["attended"]),
        helper.make_node("Neg", ["attended"], ["out"]),
    ]
    inputs = [helper.make_tensor_value_info(name, f, [1, 2, 3, 4]) for name in ("q", "v")]
    inputs += [helper.make_tensor_value_info("kt", f, [1, 2, 4, 3]),
               helper.make_tensor_value_info("allowed", TensorProto.BOOL, [1, 1, 3, 3])]
    outputs = [helper.make_tensor_value_info("out", f, [1, 2, 3, 4])]
    constants = [numpy_helper.from_array(np.array(v, np.float32), n)
                 for n, v in (("scale", 0.5), ("zero", 0.0), ("minus_inf", -np.inf))]
    path = _save(tmp_path, nodes, inputs, outputs, constants)
    before = [(n.op_type, list(n.input), list(n.output)) for n in onnx.load(str(path)).graph.node]

    assert rewrite(path, SHAPE) == {"norms": 0, "rotary": 0, "attention": 0}

    after = onnx.load(str(path))
    assert [(n.op_type, list(n.input), list(n.output)) for n in after.graph.node] == before
    rng = np.random.default_rng(0)
    feed = {"q": rng.standard_normal((1, 2, 3, 4), np.float32), "v": rng.standard_normal((1, 2, 3, 4), np.float32),
            "kt": rng.standard_normal((1, 2, 4, 3), np.float32), "allowed": np.zeros((1, 1, 3, 3), bool)}
    out = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    assert np.array_equal(out, np.zeros_like(out))  # every key masked: the NaN guard still zeroes the rows
