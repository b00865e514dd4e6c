"""nodes.embedding.embedder with the real EmbeddingGemma: one model per process, prompts, tasks, errors."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from chunking import Chunk, chunk_text
from grove.core.settings import get_settings, reset_settings
from nodes.embedding import embedder as embedder_module
from nodes.embedding.embedding_model import EmbeddingModelMissing
from nodes.embedding.int8_verdict import GATE
from nodes.embedding.embedder import (
    Embedder,
    embed_chunks,
    embed_documents,
    embed_query,
    get_embedder,
    reset_embedder,
)
from tests.support.prerequisites import require

pytestmark = pytest.mark.models

MODEL_DIR = Path(__file__).resolve().parent.parent / ".grove" / "models" / "embeddinggemma-300m"

TEXT = """\
Антоновка — старинный русский сорт яблони. Её плоды крупные и ароматные.

Этот сорт созревает в конце сентября. Плоды хранятся до трёх месяцев.

Она переносит морозы до минус сорока градусов."""


def _set_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@pytest.fixture(scope="module", autouse=True)
def bundled_model() -> Iterator[None]:
    """Point the setting at the assembled model (the test data dir is a fresh temp dir)."""
    if not (MODEL_DIR / "config.json").exists():
        require(f"EmbeddingGemma is not assembled at {MODEL_DIR}: run `make models`")
    saved = {k: os.environ.get(k) for k in ("GROVE_EMBEDDING_MODEL", "GROVE_CHUNKING")}
    os.environ["GROVE_EMBEDDING_MODEL"] = str(MODEL_DIR)
    os.environ.pop("GROVE_CHUNKING", None)
    reset_settings()
    reset_embedder()
    yield
    for name, value in saved.items():
        _set_env(name, value)
    reset_settings()
    reset_embedder()  # free the model for the rest of the session


@pytest.fixture
def patched_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Environment overrides that are undone (and re-read) after the test."""
    yield monkeypatch
    monkeypatch.undo()
    reset_settings()


def test_loads_once_and_is_shared_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    reset_embedder()
    loads: list[int] = []
    real_load = embedder_module._load_embedder

    def counting_load(*args, **kwargs):
        loads.append(threading.get_ident())
        return real_load(*args, **kwargs)

    monkeypatch.setattr(embedder_module, "_load_embedder", counting_load)
    with ThreadPoolExecutor(max_workers=4) as pool:
        embedders = list(pool.map(lambda _: get_embedder(), range(8)))
    assert len(loads) == 1
    assert all(e is embedders[0] for e in embedders)
    assert get_embedder() is embedders[0]
    assert isinstance(embedders[0], Embedder)
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # a local folder never touches the hub


def test_dimensions_and_normalisation() -> None:
    embedder = get_embedder()
    assert embedder.dim == 768 == get_settings().embedding_dim
    query = embedder.embed_query("Когда созревает антоновка?")
    docs = embedder.embed_documents(["Антоновка созревает в сентябре.", "Казань стоит на Волге."])
    assert query.shape == (768,) and docs.shape == (2, 768)
    assert query.dtype == docs.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1) < 5e-3
    assert embedder.embed_queries(["a", "b", "c"]).shape == (3, 768)
    assert float(query @ docs[0]) > float(query @ docs[1])


def test_query_and_document_prompts_differ() -> None:
    embedder = get_embedder()
    settings = get_settings()
    text = "Антоновка созревает в конце сентября."
    as_query = embedder.embed_query(text)
    as_document = embedder.embed_documents([text])[0]
    assert float(as_query @ as_document) < 0.99
    model = embedder.model  # the PyTorch model, whatever the runtime: its vectors are the reference
    expected_query = model.encode([text], prompt=settings.embedding_query_prompt)[0]
    expected_document = model.encode([text], prompt=settings.embedding_document_prompt)[0]
    # the default runtime is the one this CPU's int8 probe chose (nodes/embedding/int8_verdict.py): an
    # int8 kind is held to the probe's gate, fp32 ONNX to the bf16 reference's own drift (≈ 0.996).
    # Measured (query, document): 7-bit weights 0.994, 0.992 on an AVX2-only CPU and 0.991, 0.995 on an
    # AVX-512/VNNI one; int8 weights with VNNI 0.993, 0.996; fp32 ONNX with VNNI 0.997, 0.999.
    chosen = embedder.runtime.name
    closeness = 0.99 if chosen in {"onnx", "torch"} else GATE.min_cosine
    assert float(as_query @ expected_query) > closeness, chosen
    assert float(as_document @ expected_document) > closeness, chosen


def test_embed_chunks_late_and_naive(patched_env: pytest.MonkeyPatch) -> None:
    embedder = get_embedder()
    chunks = chunk_text(TEXT, target_chars=80, overlap_chars=0)
    assert len(chunks) == 3
    late = embedder.embed_chunks(TEXT, chunks, mode="late")
    naive = embedder.embed_chunks(TEXT, chunks, mode="naive")
    assert late.shape == naive.shape == (3, 768)
    assert np.allclose(naive, embedder.embed_documents([c.text for c in chunks]), atol=1e-3)
    assert not np.allclose(late, naive, atol=1e-2)
    for mode, vectors in (("naive", naive), ("late", late)):  # the setting picks the mode
        patched_env.setenv("GROVE_CHUNKING", mode)
        reset_settings()
        assert np.allclose(embedder.embed_chunks(TEXT, chunks), vectors, atol=1e-3)
    with pytest.raises(ValueError, match="does not match"):
        embedder.embed_chunks(TEXT + " ", [Chunk(1, 5, "xxxx", 0, 1)])
    assert embedder.count_tokens("") == 0
    assert 5 < embedder.count_tokens(TEXT) < len(TEXT)


def test_prefect_tasks_return_plain_lists() -> None:
    chunks = chunk_text(TEXT, target_chars=80, overlap_chars=0)
    vectors = embed_chunks.fn(TEXT, chunks, "late")
    query = embed_query.fn("Когда созревает антоновка?")
    docs = embed_documents.fn(["Антоновка созревает в сентябре."])
    assert len(vectors) == 3 and all(len(v) == 768 for v in vectors)
    assert len(query) == 768 and len(docs) == 1
    json.dumps({"chunks": vectors, "query": query, "docs": docs})  # serialisable results
    scores = np.asarray(vectors) @ np.asarray(query)
    assert int(np.argmax(scores)) == 1  # "Этот сорт созревает ..." answers the query (late: "этот сорт" is known)


@pytest.mark.parametrize(
    "setting", ["/nonexistent/grove-models/embeddinggemma", "no-such-model", "no-such-org/no-such-model"]
)
def test_missing_model_gives_a_clear_error(patched_env: pytest.MonkeyPatch, setting: str) -> None:
    loaded = get_embedder()
    patched_env.setenv("GROVE_EMBEDDING_MODEL", setting)
    patched_env.setenv("HF_HUB_OFFLINE", "1")  # a hub id must fail fast here, never reach the network
    reset_settings()
    with pytest.raises(EmbeddingModelMissing) as excinfo:
        get_embedder()
    message = str(excinfo.value)
    assert "make models" in message
    assert "embedding_model" in message and "GROVE_EMBEDDING_MODEL" in message
    assert setting in message
    patched_env.undo()
    reset_settings()
    assert get_embedder() is loaded  # the loaded model survived the failed switch


@pytest.mark.parametrize("mode", ["late", "naive"])
def test_a_query_goes_between_the_windows_of_a_document(patched_env: pytest.MonkeyPatch, mode: str) -> None:
    """Indexing holds the model one window (or batch) at a time: a user's query waits for
    that one, not for the whole document."""
    patched_env.setenv("GROVE_LATE_WINDOW_TOKENS", "128")
    patched_env.setenv("GROVE_LATE_WINDOW_OVERLAP_TOKENS", "16")
    patched_env.setenv("GROVE_EMBEDDING_BATCH_SIZE", "2")
    reset_settings()
    embedder = get_embedder()
    text = "\n\n".join(f"Абзац {n}. " + TEXT for n in range(40))
    chunks = chunk_text(text, target_chars=300, overlap_chars=0)
    events: list[str] = []
    started = threading.Event()

    def step(stage: str, done: float, total: float) -> None:  # called between windows / batches
        events.append(f"window {done}/{total}")
        started.set()

    indexing = threading.Thread(target=lambda: (embedder.embed_chunks(text, chunks, mode=mode, progress=step),
                                                events.append("document done")))
    indexing.start()
    assert started.wait(120)
    embedder.embed_query("когда созревает антоновка")
    events.append("query done")
    indexing.join(300)
    assert events.index("query done") < events.index("document done")
    assert any(e.startswith("window") for e in events[events.index("query done"):])
