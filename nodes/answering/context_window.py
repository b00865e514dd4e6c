"""Fitting a chat request into the model's context window.

The offline model's window is small, and llama.cpp refuses a prompt that does not fit: without fitting, a
user with a long history could no longer get any answer. So every request is fitted before it is sent: the
rules and the question always stay (a question longer than `QUESTION_SHARE` of the room is cut to it,
`fit_question`, and the user told); fragments come next in rank order, leaving history `HISTORY_SHARE` when
it needs it; history fills the rest, newest whole pairs first; room is kept for the answer
(`llm_max_tokens`). Tokens are counted with the model's vocabulary (`nodes.answering.token_budget`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from grove.core.settings import Settings
from nodes.store.chat_history import ChatMessage
from nodes.answering.token_budget import MESSAGE_OVERHEAD, count_tokens, truncate_to_tokens

HISTORY_SHARE = 0.25
# A question may take half the room: the rules, fragments and history need the rest. (A
# 20,000-character message was refused by llama.cpp, 8,069 tokens > 4,096, and the user read
# the outage apology; stored whole, it broke every later turn of that history too.)
QUESTION_SHARE = 0.5
# llama.cpp's chatml-function-calling template adds ~130 tokens of instructions to the system
# message when tools are offered (measured with the Qwen vocabulary), on top of the tool schemas.
TOOL_TEMPLATE_TOKENS = 160
MIN_FRAGMENT_TOKENS = 64  # below this, a cut fragment says too little to ground an answer
SAFETY_TOKENS = 64  # a regenerated draft's extra signal line; the local model's wording around tool results


def window_tokens(settings: Settings) -> int:
    """The context window of the model in use."""
    return settings.local_llm_context if settings.uses_local_llm else settings.llm_context_tokens


def prompt_room(settings: Settings, tools: Sequence[dict[str, Any]] | None = None,
                max_tokens: int | None = None) -> int:
    """Tokens the prompt may take: the window less the answer's room and the tool description."""
    answer = max_tokens if max_tokens is not None else settings.llm_max_tokens
    room = window_tokens(settings) - answer - SAFETY_TOKENS
    if tools:
        room -= count_tokens(json.dumps(list(tools), ensure_ascii=False)) + TOOL_TEMPLATE_TOKENS
    return room


class FittedQuestion(NamedTuple):
    text: str
    cut: bool
    kept_chars: int
    original_chars: int


def fit_question(question: str, settings: Settings) -> FittedQuestion:
    """The question, cut to `QUESTION_SHARE` of the prompt room when it is longer."""
    limit = int(prompt_room(settings) * QUESTION_SHARE)
    if count_tokens(question) <= limit:
        return FittedQuestion(question, False, len(question), len(question))
    kept = truncate_to_tokens(question, limit)
    return FittedQuestion(kept, True, len(kept), len(question))


def message_tokens(message: dict[str, Any] | ChatMessage) -> int:
    """One message's tokens: its content, any tool calls it carries, and the template's overhead."""
    if isinstance(message, ChatMessage):
        return count_tokens(message.content) + MESSAGE_OVERHEAD
    calls = message.get("tool_calls")
    tokens = count_tokens(str(message.get("content") or "")) + MESSAGE_OVERHEAD
    return tokens + (count_tokens(json.dumps(calls, ensure_ascii=False)) if calls else 0)


def request_tokens(messages: Sequence[dict[str, Any] | ChatMessage]) -> int:
    """Prompt tokens of a whole request (plus the assistant turn's opening)."""
    return sum(message_tokens(m) for m in messages) + 2


def newest_pairs_within(history: Sequence[ChatMessage], budget: int) -> list[ChatMessage]:
    """The newest whole Q/A pairs of `history` (oldest first) whose tokens fit `budget`."""
    kept: list[ChatMessage] = []
    used = 0
    end = len(history)
    while end > 0:
        start = end - 2 if end >= 2 and history[end - 2].role == "user" else end - 1
        cost = sum(message_tokens(m) for m in history[start:end])
        if used + cost > budget:
            break
        kept[:0] = history[start:end]
        used += cost
        end = start
    return kept


def share_room(free: int, fragments_need: int, history_need: int) -> tuple[int, int]:
    """(fragment room, history room): fragments first, but history keeps `HISTORY_SHARE` of `free`."""
    free = max(free, 0)
    if fragments_need + history_need <= free:
        return fragments_need, history_need
    history_room = min(history_need, max(free - fragments_need, int(free * HISTORY_SHARE)))
    return free - history_room, history_room


def count_within(costs: Sequence[int], budget: int) -> int:
    """How many items, taken in order, fit `budget` together."""
    used = 0
    for n, cost in enumerate(costs):
        if used + cost > budget:
            return n
        used += cost
    return len(costs)


class Fit(NamedTuple):
    """What goes into a request beside its fixed parts."""

    whole: int  # the first `whole` items go in as they are
    cut_to: int | None  # none fits whole: the first one is cut to this many tokens
    history: list[ChatMessage]  # the newest whole pairs that fit what is left


def fit_items(fixed: int, costs: Sequence[int], history: Sequence[ChatMessage], room: int,
              cap: int | None = None) -> Fit:
    """Ranked items (fragments) and history into what the fixed parts leave of the prompt's `room`
    (`prompt_room`).

    Items come first in rank order, up to `cap` tokens, but history keeps `HISTORY_SHARE`
    of the room when it needs it; history then takes what the items left.
    """
    free = room - fixed
    items, _ = share_room(free, sum(costs), request_tokens(history))
    if cap is not None:
        items = min(items, cap)
    whole = count_within(costs, items)
    cut_to = items if costs and not whole and items > MIN_FRAGMENT_TOKENS else None
    used = items if cut_to is not None else sum(costs[:whole])
    return Fit(whole, cut_to, newest_pairs_within(history, free - used))
