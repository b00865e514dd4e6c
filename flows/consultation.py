"""Consultation (seeds 000 and 002): culture detection, clarifying questions, three-tier answers.

Each chat message of a deployment with a domain profile is one run. Seed 000's state machine lives in
`consultation_state`, one row per user, so a restarted bot or another worker continues a clarification. A
question off the profile's domain gets its refusal without a model; an unclear culture is searched in the
library's general part, and when that has nothing the clarifying question is asked without a model (the
small model's general answers looped); a general culture gets the variety question, a clear one a grounded
answer (`nodes.retrieval.unified_retrieve`). Every draft is checked (`answer_check`, `consultation_intent`)
and a bad one replaced by the library's own passage; only real answers are queued for moderation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from grove.core.observe import flow
from grove.core.runs import note, run_logger
from pydantic import BaseModel, Field

from flows import texts
from flows.consultation_turn import Asked, ask_consultation_llm, library_snippets, queue_refusal
from grove.core.messages import Button
from grove.core.settings import Settings, get_settings
from nodes.answering.answer_prompt import TEMPLATE
from nodes.answering.consultation_prompt import (
    is_clarification_question,
)
from nodes.answering.consultation_intent import IntentRegistry
from nodes.answering.context_signals import Signal
from nodes.store.consultation_state import (ConsultationContext, ConsultationState, State, clear_state,
                                           finish_turn, read_state, save_state)
from nodes.answering.detect_culture import detect_culture_name
from nodes.store.dialogue_metrics import record_turn
from grove.core.domain_profile import DomainProfile, active_profile
from nodes.answering.llm import endpoint_of
from nodes.store.topics import Topic, close_topic, last_question, log_turn, open_topic, set_topic_culture
from nodes.retrieval.unified_retrieve import Snippet
from nodes.telegram.stream import Show

Kind = Literal["answer", "clarification", "variety_question", "refusal", "failed"]


class ConsultationAnswer(BaseModel):
    text: str
    kind: Kind
    culture: str
    question: str = Field(description="the question as answered (root question + clarifications)")
    snippets: list[Snippet] = Field(default_factory=list, description="what went into the prompt")
    trace: list[str] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    guards: list[str] = Field(default_factory=list)
    moderation_id: int | None = None
    degenerate: list[str] = Field(default_factory=list, description="checks the model's draft failed")
    fallback: bool = Field(default=False, description="the draft was replaced; such answers are never queued")
    failure: str | None = Field(default=None, description="why no answer could be given (the run fails)")
    buttons: list[list[Button]] = Field(default_factory=list, description="inline buttons under the reply")

    @property
    def failed(self) -> bool:
        return self.kind == "failed"


def _final(profile: DomainProfile, context: ConsultationContext, question: str, culture: str,
           asked: Asked, settings: Settings, signals: list[str], guards: list[str] | None = None,
           root: str | None = None) -> ConsultationAnswer:
    """A final answer: logged in the topic's history, queued for moderation when it passes
    `queue_refusal` — a follow-up together with its `root` question, the answer without its block."""
    signals = list(dict.fromkeys(signals + asked.signals))
    guards = list(dict.fromkeys((guards or []) + asked.guards))
    if asked.failed:
        return ConsultationAnswer(text=texts.CONSULTATION_APOLOGY, kind="failed", culture=culture,
                                  question=question, trace=asked.trace, signals=signals, guards=guards,
                                  failure=asked.failure)
    refusal = queue_refusal(profile, question, culture, asked)
    if refusal:
        asked.trace.append(f"не в очередь модерации: {refusal}")
    moderation_id = finish_turn(context.user_id, context.session_id, context.topic_id, question, asked.text,
                                culture, profile.category, queue=refusal is None,
                                keep=2 * settings.history_pairs,
                                queued_question=f"{root}\n(уточнение: {question})" if root else None,
                                queued_answer=asked.body)
    return ConsultationAnswer(text=asked.text, kind="answer", culture=culture, question=question,
                              snippets=asked.snippets, trace=asked.trace, moderation_id=moderation_id,
                              signals=signals, guards=guards, degenerate=asked.degenerate,
                              fallback=asked.fallback)


def _ask_culture(profile: DomainProfile, context: ConsultationContext, signals: list[str],
                 trace: list[str]) -> ConsultationAnswer:
    """The profile's clarifying question, asked without the model; the answer is classified again."""
    question = profile.culture_question
    save_state(context.user_id, State.WAITING_CLARIFICATION, context, 1)
    log_turn(context.user_id, context.session_id, context.topic_id, context.root_question, question)
    return ConsultationAnswer(text=question, kind="clarification", culture=context.culture,
                              question=context.root_question, trace=trace,
                              signals=signals + ["clarify:no_snippets"])


def _cannot_tell(profile: DomainProfile, context: ConsultationContext, question: str, culture: str,
                 signals: list[str], trace: list[str]) -> ConsultationAnswer:
    """The stall guard's honest way out: the crop cannot be told, here are the crops as buttons.

    Asking the same question a fourth time, or queuing it as a final answer, is what the
    small model's "best general answer" did. A button press comes back as the crop's name,
    which the waiting clarification classifies like a typed answer.
    """
    save_state(context.user_id, State.WAITING_CLARIFICATION,
               context.model_copy(update={"root_question": question}), 0)
    log_turn(context.user_id, context.session_id, context.topic_id, question, texts.CONSULTATION_CANNOT_TELL)
    buttons = [[Button(label=name, data=f"culture:{name}") for name in row]
               for row in _rows(list(profile.crops), 3)]
    return ConsultationAnswer(text=texts.CONSULTATION_CANNOT_TELL, kind="clarification", culture=culture,
                              question=question, trace=trace, signals=signals, guards=["stall"],
                              buttons=buttons)


def _rows(items: list[str], width: int) -> list[list[str]]:
    return [items[i:i + width] for i in range(0, len(items), width)]


def _variety_question(profile: DomainProfile, context: ConsultationContext, turns: int,
                      signals: list[str]) -> ConsultationAnswer:
    """CASE 2: ask the type; a system question, so neither logged nor queued (seed 000)."""
    save_state(context.user_id, State.WAITING_VARIETY, context, turns)
    return ConsultationAnswer(text=profile.variety_question(context.culture), kind="variety_question",
                              culture=context.culture, question=context.root_question, signals=signals)


def _current_topic(profile: DomainProfile, question: str, user_id: int, session_id: str,
                   idle_minutes: int) -> tuple[Topic, bool]:
    """The open topic and whether the question is a follow-up in it (seed 000 "Управление контекстом").

    Follow-up: the topic is open, its culture known (and not «не определено»), it already has
    messages (no state is active here by construction), and the question names the topic's crop,
    or names none and is elliptical («А в какое время лучше?»). Any other question — another crop,
    or a question of its own naming none («Чем опрыскивать кусты весной?») — closes the topic and
    opens a new one: a crop is never inherited by a question that does not lean on the topic.
    """
    topic = open_topic(user_id, session_id, profile.category, idle_minutes)
    if topic.culture is None or topic.message_count == 0 or profile.case_of(topic.culture) == "unclear":
        return topic, False  # an unclear culture is worth classifying again, unlike the seed
    named = profile.crops_named(question)
    if named == [profile.crop_of(topic.culture)] or (not named and IntentRegistry.of(profile).elliptical(question)):
        return topic, True
    close_topic(topic.id)
    return open_topic(user_id, session_id, profile.category, idle_minutes), False


def _off_domain(profile: DomainProfile, question: str, user_id: int, session_id: str) -> ConsultationAnswer:
    """The profile's polite refusal, without retrieval or a model: no passage is offered as an answer.
    Kept in the chat history outside any topic, so no topic's follow-up reads it; never queued."""
    log_turn(user_id, session_id, None, question, profile.off_domain_reply)
    return ConsultationAnswer(text=profile.off_domain_reply, kind="refusal", culture=profile.unclear[0],
                              question=question, signals=["off_domain"])


def new_question(profile: DomainProfile, question: str, user_id: int, session_id: str, show: Show | None,
                 settings: Settings) -> ConsultationAnswer:
    intents = IntentRegistry.of(profile)
    if intents.off_domain(profile, question):
        return _off_domain(profile, question, user_id, session_id)
    topic, followup = _current_topic(profile, question, user_id, session_id, settings.topic_idle_minutes)
    signals = ["followup"] if followup else []
    search_text = previous = None
    if followup:
        culture = topic.culture or profile.unclear[0]
        previous = last_question(topic.id)
        search_text = f"{previous} {question}" if previous else None
    else:
        culture = detect_culture_name(question, profile, settings).culture
        set_topic_culture(topic.id, culture)
    context = ConsultationContext(category=profile.category, root_question=question, culture=culture,
                                  topic_id=topic.id, session_id=session_id, user_id=user_id)
    case = profile.case_of(culture)
    signals.append(f"culture:{case}")
    if case == "general":
        return _variety_question(profile, context, 1, signals)
    if case == "specific":
        return _final(profile, context, question, culture,
                      ask_consultation_llm(profile, question, culture, "grounded", user_id, session_id, settings,
                                           search_text, [Signal(name="followup")] if followup else None,
                                           topic_id=topic.id, show=show), settings,
                      signals=signals, root=previous if followup else None)
    # An unclear question is first searched in the library's general part («общая информация»):
    # a documented answer beats a question back. With nothing there, the small local model asks
    # the profile's question without a call (answering from general knowledge, it looped and
    # drifted); a remote model may ask its own clarifying question or answer (seed 000, CASE 1).
    snippets, trace = library_snippets(profile, culture, "best_general", search_text or question, settings)
    wanted = intents.asked(question, previous)
    if snippets and wanted and not any(intents.hits(s.content).keys() & set(wanted) for s in snippets):
        # The general part speaks of something else (watering for «Как подкармливать?»): ask the crop.
        trace.append(f"общая часть базы не говорит о теме вопроса ({', '.join(wanted)}): спрашиваю культуру")
        snippets = []
    if snippets:
        return _final(profile, context, question, culture,
                      ask_consultation_llm(profile, question, culture, "grounded", user_id, session_id, settings,
                                           retrieved=(snippets, trace), topic_id=topic.id, show=show), settings,
                      signals=signals)
    if endpoint_of(settings).is_local:
        return _ask_culture(profile, context, signals, trace)
    asked = ask_consultation_llm(profile, question, culture, "clarify", user_id, session_id, settings, topic_id=topic.id,
                                 show=show)
    if not asked.failed and is_clarification_question(asked.text):
        save_state(user_id, State.WAITING_CLARIFICATION, context, 1)
        log_turn(user_id, session_id, topic.id, question, asked.text)
        return ConsultationAnswer(text=asked.text, kind="clarification", culture=culture, question=question,
                                  signals=list(dict.fromkeys(signals + asked.signals)), guards=asked.guards)
    return _final(profile, context, question, culture, asked, settings, signals=signals)


def variety_answer(profile: DomainProfile, state: ConsultationState, answer: str, show: Show | None,
                   settings: Settings) -> ConsultationAnswer:
    """Handler 1 of seed 000: map «летняя» / «НСД» / …, else classify root + answer again."""
    context = state.context
    assert context is not None
    culture = profile.map_variety(context.culture, answer)
    signals = ["variety:mapped" if culture else "variety:reclassified"]
    if culture is None:
        guess = detect_culture_name(f"{context.root_question} {answer}", profile, settings).culture
        culture = guess if profile.case_of(guess) == "specific" else context.culture
    if context.topic_id is not None:
        set_topic_culture(context.topic_id, culture)
    question = f"{context.root_question} ({answer})"
    asked = ask_consultation_llm(profile, question, culture, "grounded", context.user_id, context.session_id, settings,
                                 topic_id=context.topic_id, show=show)
    return _final(profile, context, question, culture, asked, settings, signals=signals)


def clarification_answer(profile: DomainProfile, state: ConsultationState, answer: str, show: Show | None,
                         settings: Settings) -> ConsultationAnswer:
    """Handler 2 of seed 000: classify root + answer; still unclear / general / specific."""
    context = state.context
    assert context is not None
    combined = f"{context.root_question} {answer}"
    culture = detect_culture_name(combined, profile, settings).culture
    if context.topic_id is not None:
        set_topic_culture(context.topic_id, culture)
    case = profile.case_of(culture)
    signals = [f"culture:{case}"]
    if case == "general":
        moved = context.model_copy(update={"culture": culture, "root_question": combined})
        return _variety_question(profile, moved, state.turns + 1, signals)
    if case == "specific":
        asked = ask_consultation_llm(profile, combined, culture, "grounded", context.user_id, context.session_id, settings,
                                     topic_id=context.topic_id, show=show)
        return _final(profile, context, combined, culture, asked, settings, signals=signals)
    if state.turns >= settings.consultation_max_clarifications:
        # Stall guard: the user has been asked enough; answer as well as possible and leave the loop.
        asked = ask_consultation_llm(profile, combined, culture, "best_general", context.user_id,
                                     context.session_id, settings, topic_id=context.topic_id, show=show)
        if asked.failed or asked.fallback or is_clarification_question(asked.body):
            return _cannot_tell(profile, context, combined, culture, signals, asked.trace)
        return _final(profile, context, combined, culture, asked, settings, signals=signals, guards=["stall"])
    # Unlike the seed (state unchanged), the answers accumulate: each one may carry a hint.
    save_state(context.user_id, State.WAITING_CLARIFICATION,
               context.model_copy(update={"root_question": combined}), state.turns + 1)
    log_turn(context.user_id, context.session_id, context.topic_id, answer, profile.ask_culture_again)
    return ConsultationAnswer(text=profile.ask_culture_again, kind="clarification", culture=culture,
                              question=combined, signals=signals)


def _report(user_id: int, state: str | None, result: ConsultationAnswer) -> None:
    """The consultation's trace as lines of the turn's one artifact."""
    lines = [f"consultation {result.kind} of user {user_id} · culture `{result.culture}` · "
             f"state before `{state or '—'}`",
             f"question: {result.question}", f"template `{TEMPLATE}` · signals: {', '.join(result.signals) or '—'}"]
    lines += list(result.trace)
    lines += [f"fragment {n}: tier {s.priority_level} {s.source_type} d={s.distance:.3f}"
              for n, s in enumerate(result.snippets, 1)]
    if result.guards:
        lines.append(f"guards fired: {', '.join(result.guards)}")
    for line in lines:
        note(line)


# What answers a message while the user's consultation waits for something (states as data, as
# python-telegram-bot's ConversationHandler declares them); a user in no state asks a new question.
# Each is handed the turn's draft (`show`), which the model's answer is written into, and its settings.
WAITING: dict[State, Callable[[DomainProfile, ConsultationState, str, Show | None, Settings], ConsultationAnswer]] = {
    State.WAITING_VARIETY: variety_answer,
    State.WAITING_CLARIFICATION: clarification_answer,
}


@flow(name="consultation", flow_run_name="consultation-user{user_id}")
def consultation(question: str, user_id: int, session_id: str, show: Show | None = None,
                 settings: Settings | None = None) -> ConsultationAnswer:
    """Seeds 000 and 002: a consultation turn; `settings` as the chat flow's (flows/chat.py)."""
    settings = settings or get_settings()
    profile = active_profile()
    if profile is None:
        raise RuntimeError("the consultation flow needs a domain profile (GROVE_DOMAIN_PROFILE)")
    state = read_state(user_id)
    if state.state is not None and state.context is not None and state.context.session_id != session_id:
        clear_state(user_id)  # a clarification from a cleaned session does not leak into the new one
        state = ConsultationState(user_id=user_id, state=None, context=None)
    waiting = WAITING.get(state.state) if state.state is not None else None
    result = (waiting(profile, state, question, show, settings) if waiting is not None
              else new_question(profile, question, user_id, session_id, show, settings))
    record_turn(user_id, "consultation", TEMPLATE, result.signals, result.guards,
                {"kind": result.kind, "culture": result.culture, "state_before": state.state,
                 "fragments": len(result.snippets)})
    _report(user_id, state.state, result)
    if result.kind == "failed":
        run_logger().warning("answer service unavailable; the user was told to retry")
    return result
