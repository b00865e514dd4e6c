"""One answer pipeline for chat, consultation and a plan's synthesis: fit, draft, check, compose.

The three differ in what they retrieve and how their prompt reads; what happens to the pieces is the same
and lives here once: **fit** the ranked pieces and the history into the model's window
(`nodes.answering.context_window`); **draft** one completion, and one more when it repeats the last reply;
**check** it (`nodes.answering.answer_check`: a degenerate draft becomes a quote or an honest no-answer,
citations are checked); **compose** the text with the block naming the pieces that back it. Every piece
is `Citable` (`nodes.retrieval.sources`), so none of this cares which flow retrieved it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from nodes.answering.answer_check import (EXTRACT_LEAD, MIN_CLAIMED_TERMS, CheckedAnswer, Draft, check_answer,
                                          complete_sentences, degenerate)
from nodes.store.chat_history import ChatMessage
from nodes.answering.context_window import fit_items
from nodes.answering.llm import LLMReply
from nodes.answering.quote import NEAREST_LEAD
from nodes.retrieval.sources import Citable, source_block, strip_model_sources
from nodes.answering.token_budget import count_tokens, truncate_to_tokens
from nodes.answering.turn_policy import TurnPolicy, needs_regeneration, with_repetition_signal

C = TypeVar("C", bound=Citable)

NO_TEXT = "Не удалось сформулировать ответ."


class Ask(Protocol):
    """One model request (`nodes.answering.llm.llm_task(settings)`); keyword arguments are the request's options."""

    def __call__(self, messages: list[dict[str, Any]], **options: Any) -> LLMReply: ...


def fit(fixed: int, costs: Sequence[int], history: Sequence[ChatMessage], pieces: Sequence[C], room: int,
        cap: int | None = None) -> tuple[list[C], list[ChatMessage]]:
    """The pieces (in rank order) and the newest history pairs that fit beside `fixed` tokens in the
    prompt's `room` (`context_window.prompt_room`).

    `costs[i]` is what piece i costs in the prompt, its framing included; `cap` bounds the
    pieces' share. A first piece too large for the room is cut to it, framing kept.
    """
    window = fit_items(fixed, costs, history, room, cap=cap)
    shown = list(pieces[:window.whole])
    if window.cut_to is not None:
        first = pieces[0]
        framing = costs[0] - count_tokens(first.text)
        shown = [first.with_text(truncate_to_tokens(first.text, window.cut_to - framing))]
    return shown, window.history


def regenerated(ask: Ask, messages: list[dict[str, Any]], reply: LLMReply, policy: TurnPolicy,
                system: Callable[[TurnPolicy], str], **options: Any) -> tuple[LLMReply, TurnPolicy]:
    """The regeneration rule: a reply that repeats the last one is asked for once more, with the
    repetition signal in the system prompt; whatever comes back the second time is the draft."""
    if not needs_regeneration(reply.content, policy):
        return reply, policy
    policy = with_repetition_signal(policy)
    messages[0] = {"role": "system", "content": system(policy)}
    return ask(messages, **options), policy


def draft(ask: Ask, messages: list[dict[str, Any]], policy: TurnPolicy, system: Callable[[TurnPolicy], str],
          **options: Any) -> tuple[LLMReply, TurnPolicy]:
    """One completion, regenerated once when it repeats the last reply (`regenerated`)."""
    return regenerated(ask, messages, ask(messages, **options), policy, system, **options)


def check(reply: LLMReply | str, question: str, pieces: Sequence[Citable], *, searched: bool = True,
          max_chars: int | None = None, lead: str = EXTRACT_LEAD, nearest_lead: str = NEAREST_LEAD,
          no_answer: str | None = None, strict: bool = False,
          claimed_terms: int = MIN_CLAIMED_TERMS, answered: bool | None = None,
          vouched: bool | None = None, sure: bool = False) -> CheckedAnswer:
    """The model's draft judged against the pieces it was shown (their numbering is the citations');
    `answered`: the model's judgment that they answer (None: `covers` decides); `vouched`: that judgment
    for leading a failed draft's passages as the answer (None: `answered`); `sure`: that judgment at the
    near band's odds."""
    text = reply if isinstance(reply, str) else reply.content
    truncated = not isinstance(reply, str) and reply.finish_reason == "length"
    return check_answer(strip_model_sources(text), question, [p.text for p in pieces], searched=searched,
                        max_chars=max_chars, truncated=truncated, lead=lead, nearest_lead=nearest_lead,
                        no_answer=no_answer, strict=strict, claimed_terms=claimed_terms, answered=answered,
                        vouched=vouched, sure=sure)


def failures(reply: LLMReply, question: str, pieces: Sequence[Citable], *, max_chars: int | None = None,
             strict: bool = False, claimed_terms: int = MIN_CLAIMED_TERMS, sure: bool = False) -> list[str]:
    """The checks `check` would fail the draft on, without recording a check: asked before deciding
    whether a draft is worth a second request (empty: it would be shown)."""
    text = strip_model_sources(reply.content)
    text = complete_sentences(text) if reply.finish_reason == "length" else text
    return degenerate(Draft(text, question, [p.text for p in pieces], max_chars, strict, claimed_terms, sure=sure))


def compose(checked: CheckedAnswer, pieces: Sequence[Citable]) -> str:
    """What the user reads: the checked answer, then the sources of the pieces that back it
    (none backs it: no block — a list of everything retrieved put sources under answers that
    used none of them)."""
    answer = checked.text or NO_TEXT
    block = source_block(pieces, checked.used)
    return f"{answer}\n\n{block}" if block else answer
