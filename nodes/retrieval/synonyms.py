"""The question's words the base lacks that are the user's word for one the passages use.

A user asks in their own words: «скрин» where the manual writes «снимок экрана», «мышка» for «мышь»,
«картинка» for «изображение». Such a word is missing from the base, and so shuts the gate as a thing
the documents never name would (nodes/retrieval/base_vocabulary.py). Matched by meaning against the
words of the passages shown, a synonym lands close and an absent thing (Wayland, Bluetooth, UEFI) does
not: `bench.missing_words` measured the line (bench/README.md, «Offline answers end to end»).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# Words as the bench compared them: letters (a hyphen inside), three or more, lower-cased.
WORD = re.compile(r"[A-Za-zА-Яа-яЁё][A-Za-zА-Яа-яЁё\-]{2,}")

# Texts → their document embeddings; handed in so tests and benches can swap the model.
Embed = Callable[[Sequence[str]], Sequence[Any]]

WORD_CACHE = 4096  # a turn's passages hold a few hundred distinct words; the next turn often shares them
_vectors: dict[tuple[int, str], np.ndarray] = {}
_lock = threading.Lock()


def user_synonyms(missing: Sequence[str], passages: Sequence[str], line: float,
                  embed: Embed | None = None) -> list[str]:
    """The missing words (as given) whose nearest word of the passages, by the cosine of their
    embeddings (`embed`; by default the store's model, each word as a document, as the bench compared
    them), is at `line` or above. A line above 1 matches nothing (no embedding is made)."""
    words = sorted({w.lower() for text in passages for w in WORD.findall(text)})
    if not missing or not words or line > 1:
        return []
    if embed is None:
        from nodes.embedding.embedder import get_embedder

        embedder = get_embedder()
        key = id(embedder)

        def embed(texts: Sequence[str]) -> Sequence[Any]:
            return list(embedder.embed_documents(list(texts), urgent=True))
    else:
        key = id(embed)
    asked = list(dict.fromkeys(w.lower() for w in missing))
    vectors = _embedded([*asked, *words], embed, key)
    shown = np.stack([vectors[w] for w in words])
    near = {w for w in asked if float(np.max(shown @ vectors[w])) >= line}
    return [w for w in missing if w.lower() in near]


def _embedded(words: list[str], embed: Embed, key: int) -> dict[str, np.ndarray]:
    """Each word's unit vector, the ones seen before from the cache (per model: a setting may change it)."""
    with _lock:
        new = [w for w in dict.fromkeys(words) if (key, w) not in _vectors]
    found = dict(zip(new, (_unit(v) for v in embed(new)), strict=True)) if new else {}
    with _lock:
        _vectors.update({(key, w): v for w, v in found.items()})
        found.update({w: _vectors[key, w] for w in words if w not in found})
        while len(_vectors) > WORD_CACHE:
            del _vectors[next(iter(_vectors))]
    return found


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)
