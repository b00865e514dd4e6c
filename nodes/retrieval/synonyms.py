"""The question's words the base lacks that are the user's word for one the passages use.

A user asks in their own words: «скрин» where the manual writes «снимок экрана», «мышка» for «мышь»,
«картинка» for «изображение». Such a word is missing from the base, and so shuts the gate as a thing
the documents never name would (nodes/retrieval/base_vocabulary.py). Matched by meaning against the
words of the passages shown, a synonym lands close and an absent thing (Wayland, Bluetooth, UEFI) does
not: `bench.missing_words` measured the line (bench/README.md, «Offline answers end to end»).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# Words as the bench compared them: letters (a hyphen inside), three or more, lower-cased.
WORD = re.compile(r"[A-Za-zА-Яа-яЁё][A-Za-zА-Яа-яЁё\-]{2,}")

# Texts → their document embeddings; handed in so tests and benches can swap the model.
Embed = Callable[[Sequence[str]], Sequence[Any]]


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

        embed = get_embedder().recall_documents  # the words of a turn's passages are embedded once
    asked = list(dict.fromkeys(w.lower() for w in missing))
    listed = list(dict.fromkeys([*asked, *words]))
    vectors = {w: _unit(v) for w, v in zip(listed, embed(listed), strict=True)}
    shown = np.stack([vectors[w] for w in words])
    near = {w for w in asked if float(np.max(shown @ vectors[w])) >= line}
    return [w for w in missing if w.lower() in near]


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    return array / np.linalg.norm(array)
