"""Fitting requests into the model's window, counted with the local model's real vocabulary."""

from __future__ import annotations

from grove.core.settings import get_settings
import json

from nodes.store.chat_history import ChatMessage
from nodes.answering.context_window import (
    SAFETY_TOKENS,
    TOOL_TEMPLATE_TOKENS,
    count_within,
    newest_pairs_within,
    prompt_room,
    request_tokens,
    share_room,
)
from nodes.answering.token_budget import MESSAGE_OVERHEAD, count_tokens


def history(pairs: int, answer_words: int = 40) -> list[ChatMessage]:
    messages = []
    for n in range(pairs):
        messages.append(ChatMessage(role="user", content=f"Вопрос номер {n} про полив малины?"))
        messages.append(ChatMessage(role="assistant", content=" ".join([f"ответ{n}"] * answer_words)))
    return messages


def test_newest_whole_pairs_are_kept_within_the_budget() -> None:
    full = history(15)
    pair_cost = request_tokens(full[-2:]) - 2
    kept = newest_pairs_within(full, pair_cost * 4 + pair_cost // 2)
    assert len(kept) == 8  # four whole pairs, not four and a half
    assert kept == full[-8:] and kept[0].role == "user"
    assert request_tokens(kept) - 2 <= pair_cost * 4 + pair_cost // 2
    assert newest_pairs_within(full, 10**6) == full
    assert newest_pairs_within(full, 0) == []
    assert newest_pairs_within(full, pair_cost - 1) == []


def test_a_lone_trailing_message_counts_alone() -> None:
    broken = history(3)[1:]  # starts with an answer whose question was trimmed away
    assert newest_pairs_within(broken, 10**6) == broken


def test_tokens_are_counted_per_message_with_the_templates_overhead() -> None:
    message = {"role": "user", "content": "Как поливать голубику?"}
    assert request_tokens([message]) == count_tokens(message["content"]) + MESSAGE_OVERHEAD + 2
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "rag-db-query"}}]}
    assert request_tokens([call]) > MESSAGE_OVERHEAD + 2  # the call itself costs tokens


def test_room_keeps_the_answer_and_the_tool_description(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_LLM_API_KEY="k", GROVE_LLM_CONTEXT_TOKENS="3000", GROVE_LLM_MAX_TOKENS="500")
    assert prompt_room(get_settings()) == 3000 - 500 - SAFETY_TOKENS
    tools = [{"type": "function", "function": {"name": "rag-db-query", "parameters": {"type": "object"}}}]
    assert prompt_room(get_settings(), tools) == prompt_room(get_settings()) - count_tokens(json.dumps(tools)) - TOOL_TEMPLATE_TOKENS
    env(GROVE_LLM_API_KEY="", GROVE_LOCAL_LLM_CONTEXT="4096")
    assert prompt_room(get_settings(), max_tokens=100) == 4096 - 100 - SAFETY_TOKENS  # no key: the local model's window
    assert request_tokens([{"role": "user", "content": "слово " * 5000}]) > prompt_room(get_settings())


def test_fragments_come_first_but_history_keeps_a_share() -> None:
    assert share_room(1000, 300, 200) == (300, 200)  # everything fits
    assert share_room(1000, 900, 400) == (750, 250)  # history keeps a quarter
    assert share_room(1000, 500, 800) == (500, 500)  # fragments take what they need, history the rest
    assert share_room(1000, 900, 100) == (900, 100)
    assert share_room(-5, 10, 10) == (0, 0)


def test_items_are_taken_in_order_while_they_fit() -> None:
    assert count_within([100, 200, 50], 300) == 2
    assert count_within([100, 200, 50], 350) == 3
    assert count_within([400], 300) == 0
    assert count_within([], 10) == 0


def test_fit_items_cuts_a_lone_oversized_item_and_leaves_history_its_share(env) -> None:  # type: ignore[no-untyped-def]
    from nodes.answering.context_window import MIN_FRAGMENT_TOKENS, fit_items

    env(GROVE_LLM_API_KEY="k", GROVE_LLM_CONTEXT_TOKENS="3000", GROVE_LLM_MAX_TOKENS="500")
    free = prompt_room(get_settings()) - 400
    full = history(15)
    fit = fit_items(400, [5000, 100], full, prompt_room(get_settings()))
    assert fit.whole == 0 and fit.cut_to is not None and fit.cut_to > MIN_FRAGMENT_TOKENS
    assert 0 < request_tokens(fit.history) - 2 <= free - fit.cut_to  # history keeps its share
    assert fit.history == full[-len(fit.history):]
    capped = fit_items(400, [300, 300, 300], full, prompt_room(get_settings()), cap=650)
    assert capped.whole == 2 and capped.cut_to is None  # the cap stops the third
    assert fit_items(400, [], [], prompt_room(get_settings())) == (0, None, [])
