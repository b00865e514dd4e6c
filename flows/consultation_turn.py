"""One model turn of a consultation (seed 000's `ask_consultation_llm`): the library's tiers for the
question, fragments and the topic's history fitted to the model's window, the one answer template,
one completion (a second when it repeats the last reply), the draft checked, the sources added —
and whether the answer may go to the moderation queue (`queue_refusal`). The state machine around
it is `flows.consultation`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from flows import texts
from grove.core.runs import run_logger
from grove.core.settings import Settings
from nodes.store.chat_history import ChatMessage, load_history
from nodes.answering.consultation_prompt import (
    KNOWLEDGE_HEADER,
    Mode,
    fragment_text,
    is_clarification_question,
    system_prompt,
)
from nodes.answering.answer_check import CheckedAnswer
from nodes.answering.consultation_intent import IntentRegistry
from nodes.answering.context_signals import Signal
from nodes.answering.dialogue_guards import is_repetition
from nodes.answering.context_window import prompt_room, request_tokens
from grove.core.domain_profile import DomainProfile
from nodes.answering import answer_pipeline as pipeline
from nodes.answering.answer_prompt import Style
from nodes.embedding.embedder import embed_query
from nodes.answering.llm import LLMDeadlineExceeded, LLMError, answer_decoding, endpoint_of, llm_task
from nodes.answering.token_budget import count_tokens
from nodes.answering.turn_policy import TurnPolicy, prepare_turn
from nodes.retrieval.unified_retrieve import Snippet, retrieve_unified_snippets
from nodes.telegram.stream import Show


class Asked(BaseModel):
    """What one model turn produced: the answer with and without its sources, and how it went."""

    text: str = ""
    body: str = Field(default="", description="the answer without its source block (what moderation sees)")
    snippets: list[Snippet] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    guards: list[str] = Field(default_factory=list)
    degenerate: list[str] = Field(default_factory=list)
    fallback: bool = False
    failed: bool = False
    failure: str | None = None


def _style(settings: Settings) -> Style:
    """The answer template's style for the model in use (the short one for the local model)."""
    return settings.local_prompt_style if endpoint_of(settings).is_local else "full"


def library_snippets(profile: DomainProfile, culture: str, mode: Mode, text: str,
                     settings: Settings) -> tuple[list[Snippet], list[str]]:
    """Tier 1 and tier 2 for the question: the culture's own (grounded) or the library's general part."""
    subcategory = culture if mode == "grounded" else profile.fallback_subcategory
    retrieval = retrieve_unified_snippets(profile.category, subcategory, profile.general_subcategory(subcategory),
                                          embed_query(text), settings, profile.family(subcategory))
    return retrieval.snippets, retrieval.trace


def _fitted(profile: DomainProfile, text: str, culture: str, mode: Mode, snippets: list[Snippet],
            history: list[ChatMessage], policy: TurnPolicy, settings: Settings) -> tuple[list[Snippet], list[ChatMessage]]:
    """Fragments in retrieval order (distance first, see nodes.retrieval.unified_retrieve) and the newest
    history pairs that fit the model's window.

    Fragments stop at `consultation_fragment_tokens`; history keeps at least a share of the room
    (`nodes.answering.context_window`).
    """
    rules = system_prompt(profile, culture, profile.category, mode, [], policy.signals, policy.recent_bot, _style(settings))
    fixed = request_tokens([{"role": "system", "content": rules}, {"role": "user", "content": text}])
    fixed += count_tokens(KNOWLEDGE_HEADER) + 1 if snippets else 0
    costs = [count_tokens(fragment_text(n, s)) + 1 for n, s in enumerate(snippets, 1)]
    return pipeline.fit(fixed, costs, history, snippets, prompt_room(settings), cap=settings.consultation_fragment_tokens)


def ask_consultation_llm(profile: DomainProfile, text: str, culture: str, mode: Mode,
                         user_id: int, session_id: str, settings: Settings, search_text: str | None = None,
                         signals: list[Signal] | None = None,
                         retrieved: tuple[list[Snippet], list[str]] | None = None,
                         topic_id: int | None = None, show: Show | None = None) -> Asked:
    """`ask_consultation_llm` of seed 000: retrieval unless clarifying, the one template, one completion.

    `search_text` is what is embedded for retrieval when it differs from the user's words
    (a follow-up is searched together with the question it follows); `retrieved` is a
    retrieval already made (snippets, trace). The history is the topic's own (`topic_id`),
    and none at all when an approved pair matched: the model then follows the pair, not an
    earlier reply it would otherwise repeat. The draft is checked before it is returned; while it
    is written, it is shown in `show` (the turn's draft, if any); `settings` the turn's.
    """
    snippets: list[Snippet] = []
    trace: list[str] = []
    if retrieved is not None:
        snippets, trace = retrieved
    elif mode != "clarify":
        snippets, trace = library_snippets(profile, culture, mode, search_text or text, settings)
    history = load_history(user_id, session_id, pairs=settings.history_pairs, topic_id=topic_id)
    approved = any(s.source_type == "qa" for s in snippets)
    if approved:
        history = []
        trace.append("есть одобренный ответ: история темы в запрос не передаётся")
    policy = prepare_turn(text, history, settings, signals)
    found = list(snippets)
    snippets, history = _fitted(profile, text, culture, mode, snippets, history, policy, settings)
    style = _style(settings)

    def prompt(policy: TurnPolicy) -> str:
        return system_prompt(profile, culture, profile.category, mode, snippets, policy.signals,
                             policy.recent_bot, style)

    messages = [{"role": "system", "content": prompt(policy)}]
    messages += [{"role": m.role, "content": m.content} for m in history]
    messages.append({"role": "user", "content": text})
    ask = llm_task(settings)
    decoding = answer_decoding(settings)
    try:
        reply = ask(messages, decoding=decoding, on_text=show)
        if not approved:  # an approved pair is followed, even when the last reply followed it too
            reply, policy = pipeline.regenerated(ask, messages, reply, policy, prompt, decoding=decoding,
                                                 on_text=show)
    except LLMDeadlineExceeded as exc:
        if not snippets:
            return _failed(user_id, exc, trace, policy)
        # Out of time with passages found: they are the answer, quoted — not the outage apology.
        run_logger().warning("consultation answer for user %s cut by the deadline: %s", user_id, exc)
        checked = pipeline.check("", text, snippets, lead=texts.CONSULTATION_CUT, nearest_lead=texts.CONSULTATION_CUT)
        trace.append("the deadline passed before the model answered: the passages found are the answer")
        return Asked(text=pipeline.compose(checked, snippets), body=checked.text, snippets=snippets, trace=trace,
                     signals=policy.signal_names, guards=policy.guards, degenerate=["cut"], fallback=True)
    except LLMError as exc:
        return _failed(user_id, exc, trace, policy)
    local = endpoint_of(settings).is_local
    checked = pipeline.check(reply, text, snippets, max_chars=settings.local_answer_max_chars if local else None,
                             lead=texts.CONSULTATION_EXTRACT_LEAD, nearest_lead=texts.CONSULTATION_NEAREST_LEAD,
                             no_answer=texts.CONSULTATION_NO_ANSWER)
    if not checked.text:  # nothing to show is no answer to queue either
        checked = checked.model_copy(update={"text": pipeline.NO_TEXT, "fallback": True})
    pieces: list[Snippet] = snippets
    if checked.text != pipeline.NO_TEXT:
        repeated = is_repetition(reply.content, policy.recent_bot, policy.repeat_similarity)
        on_point = _on_the_question(profile, checked, text, search_text, culture, found, policy.recent_bot, repeated)
        if on_point is not checked:
            checked, pieces = on_point, found
    answer = pipeline.compose(checked, pieces)
    if checked.fallback:
        trace.append(f"draft failed {', '.join(checked.degenerate)}: fallback shown, not queued")
    return Asked(text=answer, body=checked.text, snippets=snippets, trace=trace, signals=policy.signal_names,
                  guards=policy.guards, degenerate=checked.degenerate, fallback=checked.fallback)


def _failed(user_id: int, exc: LLMError, trace: list[str], policy: TurnPolicy) -> Asked:
    run_logger().error("no consultation answer for user %s: %s", user_id, exc)
    return Asked(failed=True, failure=f"LLM gave up: {exc}", trace=trace, signals=policy.signal_names,
                 guards=policy.guards)


def _on_the_question(profile: DomainProfile, checked: CheckedAnswer, text: str, search_text: str | None,
                     culture: str, found: list[Snippet], said: list[str], repeated: bool) -> CheckedAnswer:
    """The checked answer, or what replaces it when it repeats the bot's last reply (`repeated`, even
    after the regeneration) or talks about another intent than the question's (watering for feeding).

    The replacement is the crop's retrieved passage on the question's intent that the bot has not said
    yet (`found`: everything retrieved, numbered as given), else an honest «nothing (more) on this».
    """
    intents = IntentRegistry.of(profile)
    asked = intents.asked(text, search_text)
    missed = intents.misses(checked.text, asked)
    if not (repeated or missed):
        return checked
    reason = "repeats_last_reply" if repeated else "misses_intent"
    unclear = profile.case_of(culture) == "unclear"
    lead = texts.CONSULTATION_EXTRACT_LEAD if unclear else texts.CONSULTATION_CROP_LEAD.format(culture=culture)
    passage = intents.passage(search_text or text, asked, [s.text for s in found], lead, said=said)
    if passage is not None:
        quoted, used = passage
        return CheckedAnswer(text=quoted, used=used, degenerate=[*checked.degenerate, reason], fallback=True)
    honest = texts.CONSULTATION_NOTHING_MORE if repeated else texts.CONSULTATION_NO_PASSAGE
    return CheckedAnswer(text=honest.format(culture=culture), degenerate=[*checked.degenerate, reason], fallback=True)


def queue_refusal(profile: DomainProfile, question: str, culture: str, asked: Asked) -> str | None:
    """Why an answer must not reach the moderation queue, or None when it may.

    An admin approving what is queued turns it into tier 1 for everyone, so only real
    answers go: not a replaced draft (a quote or «нет ответа»), not a question back to
    the user, not a question outside the profile's domain.
    """
    if asked.fallback:
        return "ответ заменён (черновик не прошёл проверки)"
    if is_clarification_question(asked.body):
        return "это вопрос пользователю, а не ответ"
    if not (asked.snippets or profile.in_domain(question, culture)):
        return "вопрос вне темы профиля"
    return None
