"""An embedder remembers the vectors a turn asks for again (`Embedder.recall_documents`, `recall_query`):
the quote is chosen twice from the same sentences, and the passages' words are matched turn after turn."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nodes.embedding.embedder import Embedder, Recent


class CountingRuntime:
    """Vectors from each text's length and first letter; every text it encodes is counted."""

    name = "counting"
    device = "cpu"
    dim = 2
    tokenizer = None

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        self.encoded += texts
        vectors = np.array([[len(t), ord(t[-1])] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_text_embedded_once_is_recalled_not_encoded_again() -> None:
    runtime = CountingRuntime()
    embedder = Embedder(runtime=runtime, load_model=lambda: None)  # type: ignore[arg-type, return-value]
    first = embedder.recall_documents(["малина", "ежевика"])
    again = embedder.recall_documents(["ежевика", "голубика", "малина"])
    assert np.array_equal(first[0], again[2]) and np.array_equal(first[1], again[0])
    assert len(runtime.encoded) == 3 and runtime.encoded[-1].endswith("голубика")  # the others from memory
    assert np.array_equal(embedder.recall_query("когда сажать?"), embedder.recall_query("когда сажать?"))
    assert len(runtime.encoded) == 4
    assert np.array_equal(again[1], embedder.embed_documents(["голубика"])[0])  # the same vector, prompt and all


def test_the_memory_is_bounded_and_forgets_the_oldest_first() -> None:
    recent = Recent(2)
    recent.put([("a", np.zeros(2)), ("b", np.ones(2))])
    recent.put([("c", np.ones(2))])
    assert set(recent.get(["a", "b", "c"])) == {"b", "c"}


def test_each_loaded_model_has_a_memory_of_its_own() -> None:
    """A changed model setting loads a new embedder: vectors of the old model are not recalled by it."""
    one, other = CountingRuntime(), CountingRuntime()
    Embedder(runtime=one).recall_documents(["малина"])  # type: ignore[arg-type]
    Embedder(runtime=other).recall_documents(["малина"])  # type: ignore[arg-type]
    assert len(one.encoded) == len(other.encoded) == 1
