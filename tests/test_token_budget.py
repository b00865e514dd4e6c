"""Token counting and cutting with the local model's vocabulary, and a plan step's budget (nodes/answering/token_budget.py).

The vocabulary is read from the GGUF file `make models` put under .grove/models (vocabulary
only, no weights loaded, no server), as tests/test_context_window.py does.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from nodes.answering.token_budget import (
    MESSAGE_OVERHEAD,
    TokenBudgetManager,
    count_message_tokens,
    count_tokens,
    truncate_to_tokens,
)

SENTENCES = " ".join(f"Предложение номер {i} о поливе малины и голубики." for i in range(60))
LINES = "".join(f"Строка {i}: голубику поливают кислой водой раз в неделю\n" for i in range(60))


def test_longer_text_never_counts_fewer_tokens() -> None:
    text = "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр."
    words = text.split()
    counts = [count_tokens(" ".join(words[:n])) for n in range(len(words) + 1)]
    assert counts == sorted(counts) and counts[0] == 0
    assert counts[-1] > counts[len(words) // 2] > 0
    assert count_tokens(text + " " + text) > count_tokens(text)


MULTILINE = [
    LINES,
    "Правила:\n- Отвечай по-русски.\n\n  Отступ\n\t\nТаб\r\nCRLF\n.\n,\n«цитата»\n```\ncode()\n```",
    "\n\nначало с пустых строк\n   \nпробелы\n\n\n\nконец\n",
    "[1] (pdf: руководство.pdf, стр. 12) «Файл main3.lua»\n[2] (docx: faq.docx) «Настройки > Язык»\n",
]


@pytest.mark.parametrize("text", MULTILINE)
def test_a_text_counted_line_by_line_counts_as_the_model_reads_it_whole(text: str) -> None:
    from nodes.answering import token_budget

    path = token_budget.tokenizer_path()
    assert token_budget._lines_add_up(path)  # the shipped vocabulary allows it, or this is moot
    whole = len(token_budget._vocabulary(path).tokenize(text.encode("utf-8"), add_bos=False, special=False))
    assert count_tokens(text) == whole
    assert len(token_budget._LINE_START.split(text)) > 1


def test_a_vocabulary_whose_merges_cross_lines_is_counted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from nodes.answering import token_budget

    real = token_budget._count.__wrapped__
    counted: list[str] = []

    def merging(path: str, text: str) -> int:  # as if a newline and the letter after it were one token
        counted.append(text)
        return real(path, text) - len(re.findall(r"\n(?=\S)", text))

    monkeypatch.setattr(token_budget, "_count", merging)
    token_budget._lines_add_up.cache_clear()
    try:
        assert not token_budget._lines_add_up(token_budget.tokenizer_path())
        counted.clear()
        assert count_tokens(LINES) == merging(token_budget.tokenizer_path(), LINES)
        assert counted == [LINES, LINES]  # counted whole, never line by line
    finally:
        token_budget._lines_add_up.cache_clear()


def test_a_request_counts_every_message_and_its_overhead() -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Ты — агроном."}, {"role": "assistant", "content": None},
                {"role": "user", "content": "Когда обрезать малину?"}]
    expected = count_tokens("Ты — агроном.") + count_tokens("Когда обрезать малину?") + 3 * MESSAGE_OVERHEAD + 2
    assert count_message_tokens(messages) == expected
    assert count_message_tokens([]) == 2


def test_a_text_within_the_limit_is_returned_as_is() -> None:
    text = "Голубику поливают кислой водой."
    assert truncate_to_tokens(text, count_tokens(text)) == text


@pytest.mark.parametrize("limit", [30, 75, 200])
def test_a_cut_is_a_prefix_within_the_limit(limit: int) -> None:
    cut = truncate_to_tokens(SENTENCES, limit)
    assert cut.endswith(" …")
    kept = cut.removesuffix(" …")
    assert SENTENCES.startswith(kept) and count_tokens(kept) <= limit
    # nothing more than one sentence would still fit: the cut is the longest whole-sentence prefix
    assert count_tokens(SENTENCES[:SENTENCES.index(". ", len(kept) + 1) + 1]) > limit


def test_a_cut_ends_at_a_sentence_end() -> None:
    kept = truncate_to_tokens(SENTENCES, 75).removesuffix(" …")
    assert kept.endswith("голубики.")


def test_a_cut_ends_at_a_line_end() -> None:
    kept = truncate_to_tokens(LINES, 75).removesuffix(" …")
    assert kept.endswith("раз в неделю") and (kept + "\n") in LINES and LINES.startswith(kept + "\n")


def test_a_text_without_line_or_sentence_ends_is_cut_mid_text() -> None:
    words = "полив " * 300
    kept = truncate_to_tokens(words, 20).removesuffix(" …")
    assert words.startswith(kept) and 10 < count_tokens(kept) <= 20


@pytest.mark.parametrize("text", ["полив " * 300, LINES])
def test_the_cut_text_with_its_marker_is_within_the_limit(text: str) -> None:
    assert count_tokens(truncate_to_tokens(text, 20)) <= 20


def test_budget_shares_add_up_within_what_is_left() -> None:
    budget = TokenBudgetManager(total_budget=3000, reserved_for_response=400)
    steps = [budget.allocate_for_step(n, 6, context_size=333) for n in range(1, 7)]
    available = 3000 - 400 - 333
    for step in steps:
        assert available - 1 <= step.history + step.rag <= available
        assert step.response == 400
    assert [s.rag for s in steps] == sorted((s.rag for s in steps), reverse=True)  # context shrinks
    assert [s.history for s in steps] == sorted(s.history for s in steps)  # history grows
    assert steps[-1].rag == steps[-1].history  # the last step: half and half


def test_a_plan_without_steps_counts_as_one_step() -> None:
    budget = TokenBudgetManager(total_budget=1000, reserved_for_response=200)
    assert budget.allocate_for_step(1, 0, context_size=100) == budget.allocate_for_step(1, 1, context_size=100)
    assert budget.allocate_for_step(0, 4, context_size=100).history == 0  # before any step: all context


def test_a_reserve_larger_than_the_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="smaller than the total budget"):
        TokenBudgetManager(total_budget=500, reserved_for_response=800)
