"""The user's word for one the passages use, told from a thing they never name (nodes/retrieval/synonyms.py).

The store's real embedding model decides; the pairs are from the blind sets' near-band questions
(bench.missing_words measured «картинке» → «изображение» 0.92, Bluetooth's nearest 0.53).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nodes.retrieval.synonyms import user_synonyms

SCREEN = ("Снимок экрана сохраняется как изображение в папке «Изображения». Щелчок правой кнопкой мыши по "
          "миниатюре открывает меню.")


def test_a_users_word_for_a_shown_word_is_matched_and_an_absent_thing_is_not() -> None:
    assert user_synonyms(["Картинку", "Bluetooth", "мышка"], [SCREEN], 0.86) == ["Картинку", "мышка"]


def test_the_line_decides_and_above_one_embeds_nothing() -> None:
    calls: list[list[str]] = []

    def embed(texts: Sequence[str]) -> list[Any]:
        """Words as one-hot vectors, «рисунок» halfway to «изображение»."""
        calls.append(list(texts))
        axes = {"изображение": [1.0, 0.0], "рисунок": [0.8, 0.6]}
        return [np.array(axes.get(t, [0.0, 1.0])) for t in texts]

    assert user_synonyms(["Рисунок"], ["Изображение"], 0.8, embed) == ["Рисунок"]
    assert user_synonyms(["Рисунок"], ["Изображение"], 0.81, embed) == []
    assert calls == [["рисунок", "изображение"]] * 2  # a handed-in model is asked as it is (no memory)
    assert user_synonyms(["Рисунок"], ["Изображение"], 1.01, embed) == [] and len(calls) == 2
    assert user_synonyms([], ["Изображение"], 0.5, embed) == [] and user_synonyms(["Рисунок"], [], 0.5, embed) == []
