"""Chat ("Чат" mode, seed 001 §4.2–4.4): history → search → grounded answer → checked → log.

A retried question takes the unanswered one's place, a complex one runs as a plan (seed 004), any other
is drafted (nodes/answering/chat_drafts.py), checked, composed with its sources, stored and recorded once.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field

from flows import texts
from flows.rag_query import rag_db_query
from grove.core.observe import flow
from grove.core.settings import Settings, get_settings
from grove.core.shutdown import Stopped
from nodes.answering import answer_pipeline as pipeline
from nodes.answering.answer_prompt import TEMPLATE
from nodes.answering.chat_drafts import (checked_draft, local_draft, remote_draft, turn_fields, turn_record,
                                         turn_report)
from nodes.answering.context_signals import Signal
from nodes.answering.llm import LLMError, endpoint_of
from nodes.answering.plan import PlanError
from nodes.answering.plan_generator import generate_plan
from nodes.answering.query_analyzer import analyze_query, marker_kind
from nodes.answering.quote import folded
from nodes.answering.turn_policy import TurnPolicy, prepare_turn
from nodes.retrieval.retrieve import Fragment
from nodes.store.chat_history import (NO_ANSWER_MARK, ChatMessage, Unanswered, answer_unanswered,
                                      is_retry_request, load_history, store_pair, unanswered_turn)
from nodes.store.dialogue_metrics import record_turn, report_turn
from nodes.telegram.stream import Show

log = logging.getLogger(__name__)

class ChatAnswer(BaseModel):
    text: str = Field(description="what the user sees: the answer plus the source block")
    fragments: list[Fragment] = Field(default_factory=list)
    signals: list[str] = Field(default_factory=list)
    guards: list[str] = Field(default_factory=list)
    tool_called: bool = False
    tool_query: str | None = None
    gate_score: float | None = Field(default=None, description="the local search gate's score, when searched")
    gate_passed: bool | None = Field(default=None, description="None: no gate (remote model, or no documents)")
    gate_near: bool = Field(default=False, description="the gate's near band: the nearest passages were shown")
    judged: float | None = Field(default=None, description="the model's odds that the passages answer (None: not asked)")
    degenerate: list[str] = Field(default_factory=list, description="checks the model's draft failed")
    fallback: bool = Field(default=False, description="the draft was replaced (extractive answer or «не нашёл»)")
    trimmed: bool = Field(default=False, description="the draft's first sentences alone: the rest failed the checks")
    draft: str | None = Field(default=None, description="the model's words the checks replaced or cut (`fallback`, "
                                                       "`trimmed`), for the run's reader: the user never saw them")
    quoted: bool = Field(default=False, description="the passage backing the answer is quoted after it")
    reasked: bool = Field(default=False, description="asked again from the answering passages, it answered")
    unknown: list[str] = Field(default_factory=list, description="what the question names and the base never does")
    failed: bool = False
    failure: str | None = Field(default=None, description="why no answer could be given (the run fails)")


@flow(name="chat", flow_run_name="chat-user{user_id}")
def chat(question: str, user_id: int, session_id: str, show: Show | None = None,
         settings: Settings | None = None) -> ChatAnswer:
    settings = settings or get_settings()  # handed by the turn; a run Prefect starts reads the process's
    # «ещё раз» right after a turn left unanswered: that turn's question is this turn's question.
    retried = unanswered_turn(user_id, session_id) if is_retry_request(question) else None
    question = retried.question if retried is not None else question
    history = load_history(user_id, session_id, pairs=settings.history_pairs)
    policy = prepare_turn(question, history, settings)
    try:
        planned = planned_answer(question, user_id, session_id, history, policy, settings, retried)
    except (LLMError, PlanError) as exc:
        log.error("plan failed for user %s: %s", user_id, exc)
        policy.signals.append(Signal(name="plan_failed"))
        planned = None
    if planned is not None:
        return planned
    local = endpoint_of(settings).is_local
    try:
        draft = (local_draft if local else remote_draft)(question, user_id, history, policy, rag_db_query, settings, show)
    except Stopped:  # «Стоп» before anything was on screen
        keep_pair(user_id, session_id, question, texts.ANSWER_STOPPED, retried)
        report_turn("chat", user_id, [*policy.signal_names, "stopped_by_user"], policy.guards, ["the user stopped the answer"])
        return ChatAnswer(text=texts.ANSWER_STOPPED, signals=policy.signal_names, guards=policy.guards)
    except LLMError as exc:
        log.error("no answer for user %s: %s", user_id, exc)
        if retried is None:  # a failed retry leaves its question's pair as it was
            store_pair(user_id, session_id, question, NO_ANSWER_MARK)
        record_turn(user_id, "chat", TEMPLATE, policy.signal_names, policy.guards,
                    {"failed": True, "retried": retried is not None})
        return ChatAnswer(text=texts.APOLOGY, failed=True, failure=f"LLM gave up: {exc}",
                          signals=policy.signal_names, guards=policy.guards)
    policy = draft.policy or policy
    checked = checked_draft(draft, question, settings, local=local)
    text = folded(pipeline.compose(checked, draft.fragments))
    if draft.stopped:
        text = f"{texts.ANSWER_STOPPED}\n\n{text}".strip()
        policy.signals.append(Signal(name="stopped_by_user"))
    elif draft.cut:
        text = f"{texts.ANSWER_CUT}\n\n{text}"
        policy.signals.append(Signal(name="cut_by_deadline"))
    keep_pair(user_id, session_id, question, text, retried)
    recorded(user_id, policy, {"retried": retried is not None, **turn_record(draft, checked)},
             (["a retry: the unanswered question answered"] if retried else []) + turn_report(draft, checked))
    return ChatAnswer(text=text, fragments=draft.fragments, signals=policy.signal_names, guards=policy.guards,
                      **turn_fields(draft, checked))


def recorded(user_id: int, policy: TurnPolicy, details: dict[str, Any], lines: list[str]) -> None:
    """The turn's one record: its row in dialogue_metrics and its artifact in Prefect."""
    record_turn(user_id, "chat", TEMPLATE, policy.signal_names, policy.guards, details)
    report_turn("chat", user_id, policy.signal_names, policy.guards, lines)


def keep_pair(user_id: int, session_id: str, question: str, answer: str, retried: Unanswered | None) -> None:
    """The turn's pair in the history: a retried question's answer replaces its marker, so the pair
    reads as the question and its answer; any other turn appends its own."""
    if retried is None or not answer_unanswered(user_id, retried, answer):
        store_pair(user_id, session_id, question, answer)


def planned_answer(question: str, user_id: int, session_id: str, history: list[ChatMessage],
                   policy: TurnPolicy, settings: Settings, retried: Unanswered | None = None) -> ChatAnswer | None:
    """Seed 004: a non-simple question runs as a validated plan; None means "take the simple path"."""
    from flows.complex_query import checked_plan, complex_query

    if settings.planner == "off" or marker_kind(question) == "simple":
        return None  # most turns: no marker, so no analyzer task run and no extra model call
    analysis = analyze_query(question, settings)
    if analysis.kind == "simple":
        return None
    outcome = generate_plan(question, analysis.kind, settings)
    if outcome.plan is None:
        policy.signals.append(Signal(name="plan_rejected", detail=outcome.error or ""))
        return None
    run = complex_query(question, user_id, outcome.plan, history, settings)
    policy.signals.append(Signal(name=f"plan:{analysis.kind}"))
    policy.signals += [Signal(name="plan_cut", detail=run.cut)] if run.cut else []
    checked = checked_plan(run, question, settings)
    text = folded(pipeline.compose(checked, run.fragments))
    keep_pair(user_id, session_id, question, text, retried)
    recorded(user_id, policy, {"plan_steps": len(run.steps), "adaptations": len(run.adaptations),
                               "max_prompt_tokens": run.max_prompt_tokens, "fragments": len(run.fragments),
                               "degenerate": checked.degenerate, "quoted": checked.quoted},
             [f"plan: {len(run.steps)} steps, {len(run.adaptations)} adaptations",
              f"largest step prompt: {run.max_prompt_tokens} tokens", f"fragments: {len(run.fragments)}"])
    return ChatAnswer(text=text, fragments=run.fragments, tool_called=True, tool_query=None,
                      signals=policy.signal_names, guards=policy.guards, degenerate=checked.degenerate,
                      fallback=checked.fallback, quoted=checked.quoted)
