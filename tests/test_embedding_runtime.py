"""Embedding runtimes: selection, the ONNX export of a tiny real model, its vectors, and the quality gate.

The tiny model is a real Gemma3 encoder (two layers, random weights, EmbeddingGemma's tokenizer)
saved as a sentence-transformers folder: the export, the int8 quantisation and the runtime run on
it exactly as on EmbeddingGemma, in seconds.
"""

from __future__ import annotations

import json

import shutil
import typing
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from bench.embedding_runtime import Quality, mean_quality, passes_gate, ranking_quality
from nodes.embedding.int8_verdict import GATE
from grove.core.settings import Settings, reset_settings
from nodes.embedding import int8_verdict, onnx_encoder, onnx_export
from nodes.embedding.embedder import get_embedder, reset_embedder
from nodes.embedding.embedding_runtime import RUNTIMES, describe_runtime, resolve_device
from tests.support.prerequisites import require
from tests.support.tiny_encoder import build_tiny_encoder

pytestmark = pytest.mark.e2e  # exports and runs a (tiny) Gemma encoder through ONNX

GEMMA = Path(__file__).resolve().parent.parent / ".grove" / "models" / "embeddinggemma-300m"
TEXTS = ["Антоновка созревает в конце сентября.", "Казань стоит на Волге.",
         "Плоды хранятся до трёх месяцев в прохладном погребе.", "short"]


# ------------------------------------------------------------------------------- selection


def test_every_runtime_the_setting_allows_is_registered() -> None:
    allowed = typing.get_args(Settings.model_fields["embedding_runtime"].annotation)
    assert set(allowed) == set(RUNTIMES)


@pytest.mark.parametrize(
    ("requested", "available", "expected"),
    [("cpu", True, "cpu"), ("auto", True, "cuda"), ("auto", False, "cpu"), ("cuda", True, "cuda")],
)
def test_device_selection(requested: str, available: bool, expected: str) -> None:
    assert resolve_device(requested, "onnx", lambda runtime: available) == expected


def test_cuda_requested_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match=r"no CUDA device.*GROVE_EMBEDDING_DEVICE=cpu"):
        resolve_device("cuda", "torch", lambda runtime: False)


def test_this_machine_runs_embeddings_on_the_cpu() -> None:
    assert resolve_device("auto", "onnx-int8") == "cpu"  # no GPU here: auto must not pick one


# ------------------------------------------------------------------------------- quality gate


def test_ranking_quality_counts_ranks() -> None:
    passages = np.eye(4, dtype=np.float32)
    queries = np.array([[1, 0.5, 0, 0], [0.1, 0.9, 0.5, 0]], dtype=np.float32)
    quality = ranking_quality(queries, passages, [{0}, {2}])  # ranks 1 and 2
    assert quality.mrr10 == pytest.approx((1 + 1 / 2) / 2)
    assert quality.ndcg10 == pytest.approx((1 + 1 / np.log2(3)) / 2)


def test_the_gate_allows_a_hundredth() -> None:
    reference = Quality(0.60, 0.65)
    assert passes_gate(Quality(0.595, 0.641), reference)
    assert not passes_gate(Quality(0.585, 0.66), reference)
    assert not passes_gate(Quality(0.70, 0.63), reference)


def test_the_gate_reads_the_mean_over_batchings() -> None:
    """One batching of int8 vectors can land 0.013 below another; the gate judges their mean."""
    runs = [Quality(0.734, 0.703), Quality(0.730, 0.701), Quality(0.746, 0.712)]
    mean = mean_quality(runs)
    assert mean.mrr10 == pytest.approx(0.73667, abs=1e-5) and mean.ndcg10 == pytest.approx(0.70533, abs=1e-5)
    reference = Quality(0.745, 0.715)
    assert not passes_gate(runs[1], reference) and passes_gate(mean_quality(runs), reference)


# ------------------------------------------------------------------------------- tiny real model


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer Gemma3 encoder → mean pooling → Dense → Normalize, saved like EmbeddingGemma."""
    if not (GEMMA / "tokenizer.json").exists():
        require(f"EmbeddingGemma's tokenizer is not assembled at {GEMMA}: run `make models`")
    return build_tiny_encoder(tmp_path_factory.mktemp("tiny"), GEMMA)


@pytest.fixture
def tiny_settings(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("GROVE_EMBEDDING_MODEL", str(tiny_model))
    monkeypatch.setenv("GROVE_EMBEDDING_DTYPE", "float32")
    reset_settings()
    reset_embedder()
    yield tiny_model
    monkeypatch.undo()
    reset_settings()
    reset_embedder()


@pytest.fixture(scope="module")
def exported(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return onnx_encoder.ensure_export(tiny_model, tmp_path_factory.mktemp("cache"))


def test_the_export_is_whole_and_every_transformer_linear_layer_is_int8(tiny_model: Path, exported: Path) -> None:
    import onnx

    assert exported == tiny_model / "onnx"
    for name in ("model.onnx", "model_int8.onnx", "export.json", "tokenizer/tokenizer.json"):
        assert (exported / name).exists(), name
    assert not [p for p in tiny_model.iterdir() if p.name.startswith(".onnx-")]  # no work folder left
    graph = onnx.load(str(exported / "model_int8.onnx"), load_external_data=False).graph
    weights = {init.name: tuple(init.dims) for init in graph.initializer}
    quantized = [n for n in graph.node if n.op_type in {"DynamicQuantizeMatMul", "MatMulInteger"}]
    float_down = [n for n in graph.node if n.op_type == "MatMul" and weights.get(n.input[1], (0,))[0] == 48]
    assert float_down == []  # the gated MLPs were smoothed, so their down projections are int8 too
    assert json.loads((exported / "export.json").read_text())["smoothed_layers"] == 2
    assert len(quantized) >= 2 * 7  # q, k, v, o, gate, up, down of both layers in int8
    # pooling and head are nodes of the graph, in fp32: one session run gives the sentence vector
    assert [o.name for o in graph.output] == ["token_embeddings", onnx_encoder.SENTENCE_OUTPUT]
    head = [n for n in graph.node if n.op_type == "MatMul" and n.input[1].startswith("head_w")]
    assert len(head) == 1 and weights[head[0].input[1]] == (32, 16)
    for name in ("model.onnx", "model_int8.onnx"):
        nodes = onnx.load(str(exported / name), load_external_data=False).graph.node
        kinds = [n.op_type for n in nodes]
        # every RMSNorm is one node: 2 layers × 6 norms + the last
        assert kinds.count("SimplifiedLayerNormalization") == 2 * 6 + 1, name
        # one rotary node for the queries and one for the keys of each layer
        assert kinds.count("RotaryEmbedding") == 2 * 2, name
        # each layer's attention: one scaled product against the one key head, none against expanded copies
        assert kinds.count("FusedMatMul") == 2 and kinds.count("Softmax") == 2, name
        assert not {"Pow", "Sqrt", "Reciprocal", "Neg", "IsNaN"} & set(kinds), name
        assert not _products_of_expanded_heads(nodes), name


def test_smoothing_keeps_the_function_and_flattens_the_down_projections_inputs(tiny_model: Path) -> None:
    """SmoothQuant's scaling moves the outlier channels into the weights without changing the output."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(tiny_model), device="cpu")
    encoder = model[0].auto_model.eval()
    down = encoder.layers[0].mlp.down_proj
    with torch.no_grad():  # one channel of the down projection's input made an outlier, as in real models
        encoder.layers[0].mlp.up_proj.weight[5].mul_(40.0)
    seen: list[torch.Tensor] = []
    hook = down.register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0].abs().amax(dim=(0, 1))))
    batch = model.tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        before = encoder(**batch).last_hidden_state
        assert onnx_export._smooth_down_projections(model) == 2
        after = encoder(**batch).last_hidden_state
    hook.remove()
    assert torch.allclose(before, after, atol=1e-4)
    spread = [float(peaks.max() / peaks.median()) for peaks in (seen[0], seen[-1])]
    assert spread[1] < spread[0] / 3, spread


def test_a_current_export_is_reused_and_a_changed_model_exported_again(
    tiny_model: Path, exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "model"
    shutil.copytree(tiny_model, copy)
    calls: list[Path] = []
    monkeypatch.setattr(onnx_encoder, "build", lambda source, work: calls.append(source))
    assert onnx_encoder.ensure_export(copy, tmp_path / "cache") == copy / "onnx"
    assert calls == []  # the copied export is current: same files, same sizes, same config
    config = copy / "config_sentence_transformers.json"
    config.write_text(config.read_text() + "\n")
    onnx_encoder.ensure_export(copy, tmp_path / "cache")
    assert calls == [copy]


def test_a_failed_export_leaves_nothing_half_written(tmp_path: Path) -> None:
    source = tmp_path / "broken"
    source.mkdir()
    (source / "modules.json").write_text("[]")
    with pytest.raises(onnx_encoder.OnnxExportError):
        onnx_encoder.ensure_export(source, tmp_path / "cache")
    assert sorted(p.name for p in source.iterdir() if not p.name.endswith(".lock")) == ["modules.json"]


PROMPTS = ("task: search result | query: ", "title: none | text: ")


def _closeness(precision: str) -> float:
    """What a runtime's vectors must keep of PyTorch's: fp32 ONNX computes the same function; an
    int8 kind the probe passed keeps the gate's minimum, less 0.02 for texts outside the probe
    (the tiny random-weight encoder's int8 vectors: 0.97–0.999 to PyTorch, bench/README.md)."""
    return 0.9999 if precision == "fp32" else GATE.min_cosine - 0.02


def _vectors_against_pytorch(model: Path, runtime: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, np.ndarray]:
    """The runtime the embedder loaded for the setting, and its vectors' cosines to PyTorch's."""
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("GROVE_EMBEDDING_RUNTIME", runtime)
    reset_settings()
    reset_embedder()
    embedder = get_embedder()
    assert embedder.runtime.device == "cpu"
    vectors = embedder.embed_documents(TEXTS)
    reference = SentenceTransformer(str(model), device="cpu").encode(
        TEXTS, prompt=embedder.settings.embedding_document_prompt, normalize_embeddings=True)
    assert vectors.shape == (4, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert embedder.embed_documents([]).shape == (0, 16)
    # the same vectors rank the same: the ranking gate passes them against PyTorch
    relevant = [{i} for i in range(len(TEXTS))]
    assert passes_gate(ranking_quality(vectors, vectors, relevant), ranking_quality(reference, reference, relevant))
    return embedder.runtime.name, (vectors * reference).sum(axis=1)


def test_fp32_onnx_vectors_match_pytorch(tiny_settings: Path, exported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name, cosines = _vectors_against_pytorch(tiny_settings, "onnx", monkeypatch)
    assert name == "onnx" and cosines.min() > _closeness("fp32"), cosines


def test_onnx_auto_runs_what_the_probe_chose_and_it_matches_pytorch(
    tiny_settings: Path, exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On any CPU: the chosen runtime is the verdict's, and its vectors are close to PyTorch's."""
    name, cosines = _vectors_against_pytorch(tiny_settings, "onnx-auto", monkeypatch)
    chosen = int8_verdict.cached_verdict(exported, PROMPTS)
    assert chosen is not None and name == chosen.runtime  # judged once, on first use, and kept
    assert cosines.min() > _closeness(chosen.precision), (chosen.reason(), cosines)


@pytest.mark.parametrize("precision", list(onnx_export.QUANTISATIONS))
def test_a_forced_int8_kind_matches_pytorch_where_the_probe_passes_it(
    tiny_settings: Path, exported: Path, monkeypatch: pytest.MonkeyPatch, precision: str
) -> None:
    """A forced kind always runs; it is held to PyTorch only where this CPU's probe passes it (the
    saturating int8 does not on an AVX2-only CPU), and the probe's choice is then never it."""
    probed = int8_verdict.judge(exported, 2, PROMPTS, candidates=(precision,))
    name, cosines = _vectors_against_pytorch(tiny_settings, f"onnx-{precision}", monkeypatch)
    assert name == f"onnx-{precision}"
    result = probed.probe(precision)
    assert result is not None
    if result.passed:
        assert probed.precision == precision
        assert cosines.min() > _closeness(precision), (probed.reason(), cosines)
    else:
        assert probed.precision == "fp32" and probed.runtime == "onnx"


# ------------------------------------------------------------------------------- the int8 verdict


def test_a_gate_no_int8_kind_passes_leaves_fp32_and_says_why(exported: Path) -> None:
    made = int8_verdict.judge(exported, 2, PROMPTS, gate=int8_verdict.Gate(min_cosine=1.01, mean_cosine=1.01))
    assert made.precision == "fp32" and made.runtime == "onnx"
    assert [p.precision for p in made.probes] == ["fp32", *onnx_export.QUANTISATIONS]  # every kind tried
    assert not any(p.passed for p in made.probes[1:])
    assert made.probes[0].min_cosine == pytest.approx(1, abs=1e-4) and made.probes[0].ranks  # fp32 against itself
    first = next(iter(onnx_export.QUANTISATIONS))
    assert made.reason().startswith(f"onnx chosen: no int8 kind passed the probe; onnx-{first} failed: cosine min")
    for precision in onnx_export.QUANTISATIONS:  # each kind's file was made to be probed
        assert (exported / onnx_export.model_file(precision)).exists()


def test_the_first_int8_kind_that_passes_is_chosen(exported: Path) -> None:
    """A gate every kind meets (its cosine, and fp32's top passages: the probe's own figures decide
    which kinds keep them) chooses the first that does, and probes nothing after it."""
    lax = int8_verdict.Gate(min_cosine=-1.0, mean_cosine=-1.0)
    made = int8_verdict.judge(exported, 2, PROMPTS, gate=lax)
    tried = made.probes[1:]
    assert [p.passed for p in tried] == [False] * (len(tried) - 1) + [tried[-1].passed]
    if made.precision == "fp32":  # only if no kind kept every top passage
        assert len(tried) == len(onnx_export.QUANTISATIONS) and not tried[-1].passed
    else:
        assert tried[-1].precision == made.precision and tried[-1].passed
        assert made.runtime == f"onnx-{made.precision}" and "probe cosine min" in made.reason()
    strict_then_lax = int8_verdict.judge(exported, 2, PROMPTS, gate=lax, candidates=("u8u8", "int8"))
    assert strict_then_lax.probes[1].precision == "u8u8"


def test_the_verdict_is_kept_per_cpu_and_judged_again_on_another(
    exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "onnx"
    shutil.copytree(exported, folder, ignore=shutil.ignore_patterns(int8_verdict.VERDICT_FILE))
    avx2, vnni = ["avx2", "fma"], ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni"]
    first = int8_verdict.verdict(folder, 2, PROMPTS, flags=avx2)
    assert "no vnni" in first.cpu

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("judged again")

    monkeypatch.setattr(int8_verdict, "judge", never)
    assert int8_verdict.verdict(folder, 2, PROMPTS, flags=avx2) == first  # kept: not judged again
    with pytest.raises(AssertionError, match="judged again"):  # another CPU's flags: a new verdict
        int8_verdict.verdict(folder, 2, PROMPTS, flags=vnni)
    monkeypatch.undo()
    other = int8_verdict.verdict(folder, 2, PROMPTS, flags=vnni)
    assert "no vnni" not in other.cpu and "avx512_vnni" in other.cpu
    kept = json.loads((folder / int8_verdict.VERDICT_FILE).read_text())
    assert len(kept) == 2 and all(key.endswith(("cpu avx2 fma", "cpu " + " ".join(vnni))) for key in kept)
    # other prompts are another probe: judged again
    assert int8_verdict.cached_verdict(folder, ("query: ", "passage: "), avx2) is None
    # the kinds tried in another order may choose another kind: judged again
    reordered = dict(reversed(onnx_export.QUANTISATIONS.items()))
    monkeypatch.setattr(int8_verdict, "QUANTISATIONS", reordered)
    assert int8_verdict.cached_verdict(folder, PROMPTS, avx2) is None


def test_up_names_the_runtime_onnx_auto_chose(tiny_settings: Path, exported: Path) -> None:
    from grove.core.settings import get_settings

    settings = get_settings().model_copy(update={"embedding_runtime": "onnx-auto"})
    made = int8_verdict.verdict(exported, 2, PROMPTS)
    said = describe_runtime(settings)
    assert said.startswith(f"{made.runtime} (onnx-auto's choice for ") and made.cpu in said, said
    assert describe_runtime(settings.model_copy(update={"embedding_runtime": "onnx-u8u8"})) == "onnx-u8u8"


def test_token_embeddings_still_come_from_pytorch(tiny_settings: Path, exported: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Late chunking needs token vectors per window: the ONNX embedder loads the PyTorch model for it."""
    from chunking import chunk_text

    monkeypatch.setenv("GROVE_EMBEDDING_RUNTIME", "onnx-auto")
    reset_settings()
    embedder = get_embedder()
    assert embedder._model is None  # not loaded for sentence vectors
    text = "\n\n".join(TEXTS)
    chunks = chunk_text(text, target_chars=40, overlap_chars=0)
    late = embedder.embed_chunks(text, chunks, mode="late")
    assert late.shape == (len(chunks), 16) and embedder._model is not None


def test_random_vectors_fail_the_gate(tiny_settings: Path, exported: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROVE_EMBEDDING_RUNTIME", "onnx")
    reset_settings()
    embedder = get_embedder()
    queries, passages = embedder.embed_queries(TEXTS), embedder.embed_documents(TEXTS)
    relevant = [{i} for i in range(len(TEXTS))]
    good = ranking_quality(queries, passages, relevant)
    noise = np.random.default_rng(0).standard_normal(passages.shape).astype(np.float32)
    assert not passes_gate(ranking_quality(queries, noise, relevant), Quality(1.0, 1.0))
    assert good.mrr10 > 0  # the plumbing ranks at all




def _products_of_expanded_heads(nodes: typing.Sequence[typing.Any]) -> list[str]:
    """Matrix products that read a tensor made by Reshape(Expand(…)): key or value heads repeated."""
    producer = {out: n for n in nodes for out in n.output}

    def made_by(name: str, op_type: str) -> typing.Any:
        node = producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    return [n.name for n in nodes if n.op_type in {"MatMul", "FusedMatMul"}
            for name in n.input if (r := made_by(name, "Reshape")) is not None and made_by(r.input[0], "Expand")]
