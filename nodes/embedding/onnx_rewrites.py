"""Rewrites of an exported encoder graph that compute the same function with fewer, larger nodes.

torch's dynamo exporter writes every operation as its own small node, and ONNX Runtime's load-time fusions
miss what it writes for EmbeddingGemma: on two cores a short query's time goes to running nodes more than
to arithmetic. Three rewrites: each RMSNorm's elementwise chain becomes one ``SimplifiedLayerNormalization``;
each rotary embedding one ``RotaryEmbedding``; grouped attention stacks the query heads of a key head into
one FusedMatMul against the unexpanded keys and values, with a finite mask instead of the NaN guard. Every
rewrite checks its whole pattern first, so another architecture's graph passes through unchanged.
Figures: bench/README.md, «Embedding runtimes» (bench.embedding_runtime).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Shape", "rewrite"]


@dataclass(frozen=True)
class Shape:
    """What the rewrites need to know about the attention: heads, key/value heads, head size, positions."""

    heads: int
    kv_heads: int
    head_dim: int
    max_positions: int


def rewrite(path: Path, shape: Shape) -> dict[str, int]:
    """Rewrite the graph at ``path`` in place (its weights stay in their external file); how many of each."""
    import onnx
    from onnxruntime.transformers.fusion_simplified_layernorm import FusionSimplifiedLayerNormalization
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = OnnxModel(onnx.load(str(path), load_external_data=False))
    before = sum(n.op_type == "SimplifiedLayerNormalization" for n in model.model.graph.node)
    FusionSimplifiedLayerNormalization(model).apply()
    norms = sum(n.op_type == "SimplifiedLayerNormalization" for n in model.model.graph.node) - before
    graph = _Graph(model.model, path.parent)
    counts = {"norms": norms, "rotary": _fuse_rotary(graph, shape), "attention": _fuse_grouped_attention(graph, shape)}
    graph.commit()
    model.prune_graph(allow_remove_graph_inputs=False)
    model.topological_sort()
    onnx.save(model.model, str(path))
    return counts


# ------------------------------------------------------------------------------------------ the graph


class _NoMatch(Exception):
    """The nodes around an anchor are not the pattern: leave them."""


@dataclass
class _Graph:
    """Producers and consumers of a graph's tensors, nodes to drop and nodes to add, applied at once."""

    model: Any  # onnx.ModelProto
    folder: Path  # where its external data lives
    removed: set[int] = field(default_factory=set)
    added: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        graph = self.model.graph
        self.producer = {out: node for node in graph.node for out in node.output}
        self.consumers: dict[str, list[Any]] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.initializers = {init.name: init for init in graph.initializer}
        self.outputs = {out.name for out in graph.output}

    def nodes(self, op_type: str) -> Iterator[Any]:
        return (node for node in list(self.model.graph.node) if node.op_type == op_type)

    def made_by(self, name: str, op_type: str) -> Any:
        node = self.producer.get(name)
        if node is None or node.op_type != op_type or id(node) in self.removed:
            raise _NoMatch(f"{name} is not made by {op_type}")
        return node

    def only_consumer(self, name: str, op_type: str) -> Any:
        users = [node for node in self.consumers.get(name, []) if node.op_type == op_type]
        if len(users) != 1 or id(users[0]) in self.removed:
            raise _NoMatch(f"{name} has no single {op_type} consumer")
        return users[0]

    def used_only_by(self, name: str, *nodes: Any) -> None:
        """Nothing outside the pattern reads ``name``: removing its producer loses nothing."""
        if {id(n) for n in self.consumers.get(name, [])} - {id(n) for n in nodes} or name in self.outputs:
            raise _NoMatch(f"{name} is read outside the pattern")

    def constant(self, name: str) -> np.ndarray:
        from onnx import numpy_helper

        if name not in self.initializers:
            raise _NoMatch(f"{name} is not a constant")
        return np.asarray(numpy_helper.to_array(self.initializers[name], base_dir=str(self.folder)))

    def add_constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        if name not in self.initializers:
            init = numpy_helper.from_array(value, name)
            self.model.graph.initializer.append(init)
            self.initializers[name] = init
        return name

    def replace(self, old: list[Any], new: list[Any]) -> None:
        self.removed |= {id(node) for node in old}
        self.added += new

    def commit(self) -> None:
        from onnx import helper

        kept = [node for node in self.model.graph.node if id(node) not in self.removed]
        del self.model.graph.node[:]
        self.model.graph.node.extend(kept + self.added)
        if self.added and not any(op.domain == "com.microsoft" for op in self.model.opset_import):
            self.model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _attribute(node: Any, name: str, default: Any) -> Any:
    from onnx import helper

    return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)


# ------------------------------------------------------------------------------------------- rotary


def _fuse_rotary(graph: _Graph, shape: Shape) -> int:
    """``x·cos + concat(−x₂, x₁)·sin`` (x₁, x₂ the halves of the head) → ``RotaryEmbedding``."""
    from onnx import helper

    count = 0
    for neg in graph.nodes("Neg"):
        try:
            second = graph.made_by(neg.input[0], "Slice")
            x = second.input[0]
            concat = graph.only_consumer(neg.output[0], "Concat")
            if list(concat.input) != [neg.output[0], concat.input[1]] or _attribute(concat, "axis", 0) not in (-1, 3):
                raise _NoMatch("not concat(−x₂, x₁) on the last axis")
            first = graph.made_by(concat.input[1], "Slice")
            half = shape.head_dim // 2
            if first.input[0] != x or not _is_half(graph, first, 0, half) or not _is_half(graph, second, half, None):
                raise _NoMatch("the slices are not the two halves of the head")
            times_sin = graph.only_consumer(concat.output[0], "Mul")
            add = graph.only_consumer(times_sin.output[0], "Add")
            times_cos = graph.made_by(next(i for i in add.input if i != times_sin.output[0]), "Mul")
            if x not in times_cos.input:
                raise _NoMatch("cos does not multiply the same x")
            for node, reader in ((second, neg), (neg, concat), (first, concat), (concat, times_sin),
                                 (times_sin, add), (times_cos, add)):
                graph.used_only_by(node.output[0], reader)
            cos, sin = (_table(graph, _other(node, known), kind, shape)
                        for node, known, kind in ((times_cos, x, "Cos"), (times_sin, concat.output[0], "Sin")))
        except _NoMatch:
            continue
        graph.add_constant("rotary_start", np.array([0], np.int64))  # positions 0…S−1: batches are padded on the right
        graph.replace([first, second, neg, concat, times_sin, add, times_cos],
                      [helper.make_node("RotaryEmbedding", [x, "rotary_start", cos, sin], [add.output[0]],
                                        domain="com.microsoft", interleaved=0, name=f"rotary_{count}")])
        count += 1
    return count


def _other(node: Any, known: str) -> str:
    return str(next(i for i in node.input if i != known))


def _is_half(graph: _Graph, node: Any, start: int, end: int | None) -> bool:
    """A Slice of the last axis from ``start`` to ``end`` (None: to the end)."""
    inputs = list(node.input) + [""] * (5 - len(node.input))
    begin, stop, axes = (graph.constant(name) for name in inputs[1:4])
    steps = graph.constant(inputs[4]) if inputs[4] else np.array([1])
    to_end = stop[0] >= 2 ** 62 if end is None else stop[0] == end
    return bool(begin[0] == start and to_end and axes[0] in (-1, 3) and steps[0] == 1)


def _table(graph: _Graph, name: str, kind: str, shape: Shape) -> str:
    """``Unsqueeze(Cos|Sin(Concat(f, f)))`` with ``f = positions · inv_freq`` → the cos or sin table's name."""
    trig = graph.made_by(graph.made_by(name, "Unsqueeze").input[0], kind)
    concat = graph.made_by(trig.input[0], "Concat")
    if len(concat.input) != 2 or concat.input[0] != concat.input[1]:
        raise _NoMatch("not cat(freqs, freqs)")
    freqs = graph.made_by(concat.input[0], "Mul")
    inverse = next((i for i in freqs.input if i in graph.initializers), None)
    if inverse is None:
        raise _NoMatch("no inverse frequencies")
    inv_freq = graph.constant(inverse).astype(np.float32).ravel()
    if inv_freq.size != shape.head_dim // 2:
        raise _NoMatch("the rotary does not span the head")
    # in float32 as the graph computed it: the int8 graph's per-tensor activation scales amplify any change
    angles = np.arange(shape.max_positions, dtype=np.float32)[:, None] * inv_freq[None, :]
    table = (np.cos if kind == "Cos" else np.sin)(angles).astype(np.float32)
    return graph.add_constant(f"rotary_{kind.lower()}_{inverse}", table)


# ------------------------------------------------------------------------------------------ attention


def _fuse_grouped_attention(graph: _Graph, shape: Shape) -> int:
    """Attention over expanded keys and values → products over the key/value heads themselves (module doc)."""
    from onnx import helper

    if shape.kv_heads >= shape.heads or shape.heads % shape.kv_heads:
        return 0
    layouts = {"grouped_q": [0, shape.kv_heads, -1, shape.head_dim], "grouped_heads": [0, shape.heads, -1, 0],
               "grouped_flat": [0, shape.kv_heads, -1, 0], "grouped_out": [0, shape.heads, -1, shape.head_dim]}
    count = 0
    for softmax in graph.nodes("Softmax"):
        try:
            if _attribute(softmax, "axis", -1) not in (-1, 3):
                raise _NoMatch("softmax not over keys")
            add = graph.made_by(softmax.input[0], "Add")
            made_by_matmul = [i for i in add.input if getattr(graph.producer.get(i), "op_type", "") == "MatMul"]
            if len(made_by_matmul) != 1:
                raise _NoMatch("not scores + mask")
            scores = graph.made_by(made_by_matmul[0], "MatMul")
            bias = _other(add, scores.output[0])
            _finite_mask(graph, bias)
            q_scaled, k_scaled = graph.made_by(scores.input[0], "Mul"), graph.made_by(scores.input[1], "Mul")
            query = q_scaled.input[0]
            scale = float(graph.constant(q_scaled.input[1])) * float(graph.constant(k_scaled.input[1]))
            k_back = graph.made_by(k_scaled.input[0], "Reshape")
            k_transposed = graph.made_by(k_back.input[0], "Transpose")
            k_flat = graph.made_by(k_transposed.input[0], "Reshape")
            key = _unexpanded(graph, k_flat.input[0])
            is_nan = graph.only_consumer(softmax.output[0], "IsNaN")
            guard = graph.only_consumer(is_nan.output[0], "Where")
            if list(guard.input) != [is_nan.output[0], guard.input[1], softmax.output[0]] \
                    or float(graph.constant(guard.input[1])) != 0.0:
                raise _NoMatch("not where(isnan(p), 0, p)")
            product = graph.only_consumer(guard.output[0], "MatMul")
            value = _unexpanded(graph, product.input[1])
            for node, readers in ((q_scaled, [scores]), (k_scaled, [scores]), (k_back, [k_scaled]),
                                  (k_transposed, [k_back]), (k_flat, [k_transposed]), (scores, [add]),
                                  (add, [softmax]), (softmax, [is_nan, guard]), (is_nan, [guard]),
                                  (guard, [product])):
                graph.used_only_by(node.output[0], *readers)
        except (_NoMatch, TypeError, ValueError):
            continue
        for name, layout in layouts.items():
            graph.add_constant(name, np.array(layout, np.int64))
        p = f"grouped_{count}_"
        graph.replace(
            [q_scaled, k_scaled, k_back, k_transposed, k_flat, scores, add, softmax, is_nan, guard, product],
            [helper.make_node("Reshape", [query, "grouped_q"], [p + "q"]),
             helper.make_node("FusedMatMul", [p + "q", key], [p + "scores"], domain="com.microsoft",
                              transB=1, alpha=scale),
             helper.make_node("Reshape", [p + "scores", "grouped_heads"], [p + "scores_by_head"]),
             helper.make_node("Add", [p + "scores_by_head", bias], [p + "masked"]),
             helper.make_node("Softmax", [p + "masked"], [p + "weights"], axis=-1),
             helper.make_node("Reshape", [p + "weights", "grouped_flat"], [p + "weights_grouped"]),
             helper.make_node("MatMul", [p + "weights_grouped", value], [p + "out"]),
             helper.make_node("Reshape", [p + "out", "grouped_out"], [product.output[0]])],
        )
        count += 1
    return count


def _unexpanded(graph: _Graph, name: str) -> str:
    """``Reshape(Expand(Unsqueeze(t)))`` repeating key/value heads → ``t`` itself."""
    expand = graph.made_by(graph.made_by(name, "Reshape").input[0], "Expand")
    return str(graph.made_by(expand.input[0], "Unsqueeze").input[0])


def _finite_mask(graph: _Graph, name: str) -> None:
    """The additive mask is ``Where(allowed, 0, fill)`` with a finite fill: no all-−∞ softmax row."""
    where = graph.made_by(name, "Where")
    values = [graph.constant(i) for i in where.input[1:]]
    if not all(v.size == 1 and np.isfinite(v).all() for v in values) or not any(float(v) == 0.0 for v in values):
        raise _NoMatch("the mask is not finite")
