"""Chat ("Чат" mode, seed 001 §4.2–4.4): history → search → grounded answer → checked → log.

A remote model is an agent with one tool: it may call `rag-db-query` at most once per
turn. That is enforced here, not hoped for: after one search the model is asked again
without tools, and any further calls it makes are ignored; a query that is not a
plausible search (SQL, code, empty) is replaced by the user's question.

The small local model does not choose: when the user has documents, the question is
searched and its fragments are given to the model when the search gate passes
(`nodes/retrieval/search_gate.py`): they are close, and the question names nothing the base never
mentions (`nodes/retrieval/base_vocabulary.py`). In the gate's near band the nearest passages are
shown with their sources, said to be only the nearest (and the absent things named), with no model
answer; farther than that the model answers without fragments and without sources, and an answer
to a question says first that it is general knowledge, not the documents'. A draft that refuses
over fragments the gate passed is asked once more from the answering passages alone.

Every draft is then checked (`nodes/answering/answer_check.py`): a degenerate one is replaced by
an extractive answer quoting the fragments (or an honest «не нашёл»), and the
citations of an accepted one are checked against the fragments' text, which decides
the source block.
"""

from __future__ import annotations

import logging
from typing import Any

from flows import texts
from grove.core.observe import flow
from grove.core.shutdown import Stopped
from pydantic import BaseModel, Field

from flows.rag_query import rag_db_query
from grove.core.settings import get_settings
from nodes.answering.answer_check import NOT_FOUND, CheckedAnswer, is_refusal
from nodes.answering import answer_pipeline as pipeline
from nodes.answering.answer_prompt import TEMPLATE
from nodes.answering.chat_prompt import (TOOL_NAME, build_messages, fitted_history, local_messages,
                                         local_system_prompt, opening_facts, passage_facts, rag_tool,
                                         system_prompt, with_fragments)
from nodes.store.chat_history import (NO_ANSWER_MARK, ChatMessage, Unanswered, answer_unanswered,
                                      is_retry_request, load_history, store_pair, unanswered_turn)
from nodes.store.dialogue_metrics import record_turn, report_turn
from nodes.answering.llm import (Decoding, LLMDeadlineExceeded, LLMError, LLMReply, answer_decoding,
                                 current_endpoint, llm_task)
from nodes.answering.opening import opened
from nodes.retrieval.retrieve import Fragment
from nodes.retrieval.search_gate import GateDecision, decide, has_documents, model_query, search_query
from nodes.answering.context_signals import Signal, asks
from nodes.answering.plan import PlanError
from nodes.answering.quote import NEAREST_ONLY, Quote, folded, passages_text, select_quote, with_quote
from nodes.retrieval.base_vocabulary import unknown_things
from nodes.telegram.stream import beneath, current_sink, watched
from nodes.answering.plan_generator import generate_plan
from nodes.answering.query_analyzer import analyze_query, marker_kind
from nodes.answering.token_budget import count_tokens
from nodes.answering.turn_policy import TurnPolicy, prepare_turn

log = logging.getLogger(__name__)

# Above a model's general answer to a question the user's documents are far from: it is not from them.
GENERAL_LEAD = "В ваших документах этого нет. Отвечаю из общих знаний, без проверки по документам:"
ANSWER_CUT = "⏱ Модель не успела дописать ответ за отведённое время — вот что я успел найти и показать."
APOLOGY = ("Извините, сейчас я не могу ответить: сервис ответов недоступен. Ваш вопрос сохранён — "
           "повторите его чуть позже или напишите «ещё раз».")


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
    degenerate: list[str] = Field(default_factory=list, description="checks the model's draft failed")
    fallback: bool = Field(default=False, description="the draft was replaced (extractive answer or «не нашёл»)")
    quoted: bool = Field(default=False, description="the passage backing the answer is quoted after it")
    reasked: bool = Field(default=False, description="the model refused, and answered when asked again from "
                                                     "the answering passages alone")
    unknown: list[str] = Field(default_factory=list, description="things the question names that the base "
                                                                 "never mentions (they shut the gate)")
    failed: bool = False
    failure: str | None = Field(default=None, description="why no answer could be given (the run fails)")


class _Draft(BaseModel):
    """What a turn's model calls produced, before the answer check."""

    reply: LLMReply
    fragments: list[Fragment] = Field(default_factory=list, description="the fragments the model was shown")
    query: str | None = None
    searched: bool = False
    gate: GateDecision | None = None
    policy: TurnPolicy | None = Field(default=None, description="the turn's policy as the draft left it "
                                      "(a regenerated repeat adds its signal and guard)")
    nearest: CheckedAnswer | None = Field(default=None, description="shown instead of a checked model answer: "
                                          "the gate's nearest passages, or what was on screen at the deadline")
    opened: bool = Field(default=False, description="asked in two parts: the first words from the best passage "
                                                    "(nodes/answering/opening.py)")
    reasked: bool = Field(default=False, description="a refusal asked again from the answering passages, "
                                                     "which answered (`reasked`)")
    cut: bool = Field(default=False, description="the turn's deadline passed while the passages or the model's "
                                                 "first words were on screen: the reply is what was shown")
    stopped: bool = Field(default=False, description="the user pressed «Стоп»: the reply is what was shown")


def local_draft(question: str, user_id: int, history: list[ChatMessage], policy: TurnPolicy) -> _Draft:
    """The local model: the question searched when the user has documents, the gate decides the fragments;
    while the answer is streamed, its first words are written from the best passage on screen (`opened_draft`)."""
    ask = llm_task()
    settings = get_settings()
    gate: GateDecision | None = None
    fragments: list[Fragment] = []
    if has_documents(user_id):
        query = search_query(question, history)
        found = rag_db_query(query, user_id)
        unknown = unknown_things(query, user_id) if found and settings.search_gate_unknown_things else []
        gate = decide(query, query, found, unknown=unknown)
        if gate.near:  # close to the question, not close enough to answer from: shown as the nearest
            shown = gate.fragments[:settings.local_answer_fragments]
            return _Draft(reply=LLMReply(), fragments=shown, query=gate.query, searched=True, gate=gate,
                          policy=policy, nearest=nearest_passages(question, shown, gate.unknown))
        if gate.passed:
            fragments = gate.fragments[:settings.local_answer_fragments]
            if settings.local_answer_context == "passages":
                fragments = passages(question, fragments)
    quotes = shown_passages(question, fragments)
    opening = bool(quotes) and settings.local_answer_opening > 0 and settings.local_answer_context == "fragments"
    extra = count_tokens(opening_facts(quotes[:1], fragments)[0]) if opening else 0
    messages, shown = local_messages(question, history, policy, fragments, extra)
    quotes = [q for q in quotes if q.fragment <= len(shown)]
    opening = opening and bool(quotes)
    try:
        with beneath(passages_text(quotes) if quotes else ""), watched() as screen:  # shown while the model works
            if opening:
                reply, policy = opened_draft(ask, messages, policy, shown, quotes)
            else:
                reply, policy = pipeline.draft(ask, messages, policy, lambda p: local_system_prompt(p, shown),
                                               decoding=local_decoding(bool(shown)))
            again = reasked(ask, question, messages, policy, shown, reply) if settings.local_answer_reask else None
    except (LLMDeadlineExceeded, Stopped) as exc:
        # The user has been reading the passages (and the first words) for a while: they stay the
        # answer, cut, with their sources — never replaced by an apology for an outage. A «Стоп»
        # keeps them too, even when nothing was on screen yet.
        stopped = isinstance(exc, Stopped)
        if not stopped and (not screen.watching or not (quotes or screen.words.strip())):
            raise
        return _Draft(reply=LLMReply(content=screen.words.strip()), fragments=shown,
                      query=gate.query if gate else None, searched=gate is not None, gate=gate, policy=policy,
                      opened=opening, cut=True, stopped=stopped, nearest=on_screen(screen.words, quotes, shown))
    return _Draft(reply=again or reply, fragments=shown, query=gate.query if gate else None,
                  searched=gate is not None, gate=gate, policy=policy, opened=opening, reasked=again is not None)


def on_screen(words: str, quotes: list[Quote], shown: list[Fragment]) -> CheckedAnswer:
    """What the user was reading when the deadline passed: the model's first words (marked as cut)
    and the passages shown under them, with the fragments they come from as sources."""
    parts = [f"{words.strip()} …"] if words.strip() else []
    if quotes:
        parts.append(passages_text(quotes))
    used = sorted({q.fragment for q in quotes}) if quotes else list(range(1, len(shown) + 1)) if parts else []
    return CheckedAnswer(text="\n\n".join(parts), used=used, quoted=bool(quotes))


def local_decoding(documents: bool) -> Decoding | None:
    """The local answer's decoding; an answer from general knowledge is kept short."""
    decoding = answer_decoding()
    if decoding is None or documents:
        return decoding
    return decoding.model_copy(update={"max_tokens": get_settings().local_general_max_tokens})


def reasked(ask: pipeline.Ask, question: str, messages: list[dict[str, Any]], policy: TurnPolicy,
            shown: list[Fragment], reply: LLMReply) -> LLMReply | None:
    """A draft over fragments the gate passed that refuses or fails the answer checks, asked again from
    the passages that answer the question alone; the new draft when it answers and passes the checks
    (None: the first draft was fine, the second failed too, or there is nothing to ask from).

    The gate passed the fragments: the question names nothing the base lacks and its fragments are
    close. A small model reading four long fragments still said «об этом не сказано» over the very
    passage that answers (issue 37: 13 of 60 answers), or drifted into its own commands and loops; given
    only that passage it answers from it. A second draft that fails again is not shown: the first one's
    fallback (the passages themselves) is.
    """
    if not shown:
        return None
    settings = get_settings()
    refused = is_refusal(reply.content)
    if not refused and not pipeline.failures(reply, question, shown, max_chars=settings.local_answer_max_chars,
                                             strict=settings.local_answer_strict):
        return None
    quotes = select_quote(question, [f.text for f in shown])
    if not quotes:
        return None
    system = {"role": "system", "content": local_system_prompt(policy, shown, facts=passage_facts(quotes, shown))}
    try:
        again: LLMReply = ask([system, *messages[1:]], decoding=answer_decoding())
    except LLMError as exc:  # no time left, or the endpoint failed: the first draft's fallback stands
        log.info("no second draft for %r: %s", question[:60], exc)
        return None
    if is_refusal(again.content) or pipeline.failures(again, question, shown,
                                                      max_chars=settings.local_answer_max_chars,
                                                      strict=settings.local_answer_strict):
        return None
    return again


def absent_lead(unknown: list[str]) -> str:
    """What the user reads when the question names things the base never mentions."""
    named = ", ".join(f"«{w}»" for w in unknown)
    verb = "не встречается" if len(unknown) == 1 else "не встречаются"
    return f"В ваших документах этого нет: {named} в них {verb}."


def nearest_passages(question: str, fragments: list[Fragment], unknown: list[str] | None = None) -> CheckedAnswer:
    """The passages of the fragments nearest the question, said to be the nearest, with their sources;
    when the question names things the base never mentions, that is said first."""
    lead = f"{absent_lead(unknown)}\n{NEAREST_ONLY}" if unknown else None
    found = (with_quote("", question, [f.text for f in fragments], refusal=True, nearest_lead=lead) if lead
             else with_quote("", question, [f.text for f in fragments], refusal=True))
    if not found.quoted:
        return CheckedAnswer(text=absent_lead(unknown) if unknown else NOT_FOUND, fallback=True)
    return CheckedAnswer(text=found.text, used=found.used, quoted=True)


def opened_draft(ask: pipeline.Ask, messages: list[dict[str, Any]], policy: TurnPolicy,
                 shown: list[Fragment], quotes: list[Quote]) -> tuple[LLMReply, TurnPolicy]:
    """The local answer asked in two parts (nodes/answering/opening.py): its first words from the best
    passage on screen, the rest from the whole fragments; a repeated answer is asked again in one request."""
    first, whole = opening_facts(quotes[:1], shown)  # the best passage: its first words come sooner

    def system(p: TurnPolicy, facts: str = whole) -> dict[str, Any]:
        return {"role": "system", "content": local_system_prompt(p, shown, facts=facts)}

    decoding = answer_decoding()
    reply = opened([system(policy, first), *messages[1:]], [system(policy), *messages[1:]], decoding,
                   words=get_settings().local_answer_opening)
    return pipeline.regenerated(ask, [system(policy), *messages[1:]], reply, policy,
                                lambda p: str(system(p)["content"]), decoding=decoding)


def shown_passages(question: str, fragments: list[Fragment]) -> list[Quote]:
    """The passages that answer the question, as the streamed draft shows them before the model's
    words (none when no draft is streamed)."""
    if current_sink() is None or not fragments:
        return []
    if get_settings().local_answer_context == "passages":  # the model reads the passages themselves
        return [Quote(n, f.text) for n, f in enumerate(fragments, 1)]
    return select_quote(question, [f.text for f in fragments])


def passages(question: str, fragments: list[Fragment]) -> list[Fragment]:
    """The passages of the fragments that answer the question (nodes/answering/quote.py), each in its
    fragment's place: a small model reads a few sentences better than four pages, and faster."""
    quotes = select_quote(question, [f.text for f in fragments])
    return [fragments[q.fragment - 1].model_copy(update={"text": q.text}) for q in quotes] or fragments[:1]


def remote_draft(question: str, user_id: int, history: list[ChatMessage], policy: TurnPolicy) -> _Draft:
    """A remote model decides whether to search (at most once); its query must be a plausible search."""
    ask = llm_task()
    tools = [rag_tool()]
    fragments: list[Fragment] = []
    query: str | None = None
    history = fitted_history(question, history, policy, tools)
    messages = build_messages(question, history, policy)
    first = ask(messages, tools=tools, tool_choice="auto")
    try:
        with watched() as screen:  # the answer without tools streams into the draft, if one is up
            if first.tool_calls:
                call = first.tool_calls[0]
                if len(first.tool_calls) > 1:
                    log.warning("model asked for %d tool calls; only the first runs", len(first.tool_calls))
                written = (call.arguments or {}).get("query") if call.name == TOOL_NAME else None
                query = model_query(written, question)  # malformed, SQL, code, empty: the question is searched
                if query != written:
                    log.info("model's query %r is not a plausible search; searching the question", written)
                messages, fragments = with_fragments(question, history, policy, call.id, query,
                                                     rag_db_query(query, user_id))
                final = ask(messages)  # no tools offered: a second search is impossible
            elif first.content:
                final = first
            else:
                final = ask(messages)  # an endpoint may return an empty text when it chose no tool
            final, policy = pipeline.regenerated(ask, messages, final, policy, system_prompt)  # without tools
    except (LLMDeadlineExceeded, Stopped) as exc:  # the words on screen stay the answer, as a local one's
        if not screen.words.strip():
            raise
        stopped = isinstance(exc, Stopped)
        return _Draft(reply=LLMReply(content=screen.words.strip()), fragments=fragments, query=query,
                      searched=query is not None, policy=policy, cut=not stopped, stopped=stopped,
                      nearest=on_screen(screen.words, [], fragments))
    return _Draft(reply=final, fragments=fragments, query=query, searched=query is not None, policy=policy)


def keep_pair(user_id: int, session_id: str, question: str, answer: str, retried: Unanswered | None) -> None:
    """The turn's pair in the history: a retried question's answer replaces its marker, so the pair
    reads as the question and its answer; any other turn appends its own."""
    if retried is None or not answer_unanswered(user_id, retried, answer):
        store_pair(user_id, session_id, question, answer)


def planned_answer(question: str, user_id: int, session_id: str, history: list[ChatMessage],
                   policy: TurnPolicy, retried: Unanswered | None = None) -> ChatAnswer | None:
    """Seed 004: a non-simple question runs as a validated plan; None means "take the simple path"."""
    from flows.complex_query import complex_query

    if get_settings().planner == "off" or marker_kind(question) == "simple":
        return None  # most turns: no marker, so no analyzer task run and no extra model call
    analysis = analyze_query(question)
    if analysis.kind == "simple":
        return None
    outcome = generate_plan(question, analysis.kind)
    if outcome.plan is None:
        policy.signals.append(Signal(name="plan_rejected", detail=outcome.error or ""))
        return None
    run = complex_query(question, user_id, outcome.plan, history)
    policy.signals.append(Signal(name=f"plan:{analysis.kind}"))
    checked = (local_checked(run.text, question, run.fragments) if current_endpoint().is_local
               else pipeline.check(run.text, question, run.fragments))
    text = folded(pipeline.compose(checked, run.fragments))
    keep_pair(user_id, session_id, question, text, retried)
    record_turn(user_id, "chat", TEMPLATE, policy.signal_names, policy.guards,
                {"plan_steps": len(run.steps), "adaptations": len(run.adaptations),
                 "max_prompt_tokens": run.max_prompt_tokens, "fragments": len(run.fragments),
                 "degenerate": checked.degenerate, "quoted": checked.quoted})
    report_turn("chat", user_id, policy.signal_names, policy.guards,
                [f"plan: {len(run.steps)} steps, {len(run.adaptations)} adaptations",
                 f"largest step prompt: {run.max_prompt_tokens} tokens", f"fragments: {len(run.fragments)}"])
    return ChatAnswer(text=text, fragments=run.fragments, tool_called=True, tool_query=None,
                      signals=policy.signal_names, guards=policy.guards, degenerate=checked.degenerate,
                      fallback=checked.fallback, quoted=checked.quoted)


@flow(name="chat", flow_run_name="chat-user{user_id}")
def chat(question: str, user_id: int, session_id: str) -> ChatAnswer:
    # «ещё раз» right after a turn left unanswered: that turn's question is this turn's question —
    # searched, answered and stored in its place; otherwise it is a message like any other.
    retried = unanswered_turn(user_id, session_id) if is_retry_request(question) else None
    if retried is not None:
        question = retried.question
    history = load_history(user_id, session_id, pairs=get_settings().history_pairs)
    policy = prepare_turn(question, history)
    try:
        planned = planned_answer(question, user_id, session_id, history, policy, retried)
    except (LLMError, PlanError) as exc:
        log.error("plan failed for user %s: %s", user_id, exc)
        policy.signals.append(Signal(name="plan_failed"))
        planned = None
    if planned is not None:
        return planned
    local = current_endpoint().is_local
    try:
        draft = (local_draft if local else remote_draft)(question, user_id, history, policy)
    except Stopped:  # «Стоп» before anything was on screen
        keep_pair(user_id, session_id, question, texts.ANSWER_STOPPED, retried)
        report_turn("chat", user_id, [*policy.signal_names, "stopped_by_user"], policy.guards,
                    ["the user stopped the answer"])
        return ChatAnswer(text=texts.ANSWER_STOPPED, signals=policy.signal_names, guards=policy.guards)
    except LLMError as exc:
        log.error("no answer for user %s: %s", user_id, exc)
        if retried is None:  # a failed retry leaves its question's pair as it was
            store_pair(user_id, session_id, question, NO_ANSWER_MARK)
        record_turn(user_id, "chat", TEMPLATE, policy.signal_names, policy.guards,
                    {"failed": True, "retried": retried is not None})
        return ChatAnswer(text=APOLOGY, failed=True, failure=f"LLM gave up: {exc}", signals=policy.signal_names,
                          guards=policy.guards)
    policy = draft.policy or policy
    settings = get_settings()
    if draft.nearest is not None:
        checked = draft.nearest
    elif local:
        checked = local_checked(draft.reply, question, draft.fragments, searched=draft.searched,
                                whole=settings.local_answer_context == "passages")
        if draft.gate is not None and not draft.gate.passed and asks(question) and checked.accepted:
            checked = checked.model_copy(update={"text": f"{GENERAL_LEAD}\n\n{checked.text}"})
    else:
        checked = pipeline.check(draft.reply, question, draft.fragments, searched=draft.searched)
    text = folded(pipeline.compose(checked, draft.fragments))
    if draft.stopped:
        text = f"{texts.ANSWER_STOPPED}\n\n{text}".strip()
        policy.signals.append(Signal(name="stopped_by_user"))
    elif draft.cut:
        text = f"{ANSWER_CUT}\n\n{text}"
        policy.signals.append(Signal(name="cut_by_deadline"))
    gate = draft.gate
    keep_pair(user_id, session_id, question, text, retried)
    record_turn(user_id, "chat", TEMPLATE, policy.signal_names, policy.guards,
                {"retried": retried is not None, "cut_by_deadline": draft.cut,
                 "tool_called": draft.query is not None, "fragments": len(draft.fragments),
                 "gate_score": gate.score if gate else None, "gate_passed": gate.passed if gate else None,
                 "gate_near": bool(gate and gate.near), "opened": draft.opened, "reasked": draft.reasked,
                 "unknown": gate.unknown if gate else [],
                 "degenerate": checked.degenerate, "quoted": checked.quoted,
                 "citations_moved": checked.citations_moved,
                 "citations_dropped": checked.citations_dropped})
    report_turn("chat", user_id, policy.signal_names, policy.guards,
                (["a retry: the unanswered question answered"] if retried else []) +
                (["the deadline passed with the passages on screen: they are the answer, cut"] if draft.cut else []) +
                [f"search: {draft.query!r}" if draft.query else "no search",
                 f"gate: {gate.score:.3f} → {gate_outcome(gate)}" if gate and gate.score is not None
                 else "gate: —",
                 f"fragments shown: {len(draft.fragments)}"
                 + (", the answer's first words written from the best passage" if draft.opened else ""),
                 f"draft failed: {', '.join(checked.degenerate)} → fallback" if checked.fallback
                 else "no draft: the nearest passages" if draft.nearest
                 else "draft accepted" + (", backing passage quoted" if checked.quoted else ""),
                 f"citations moved {checked.citations_moved}, dropped {checked.citations_dropped}"])
    return ChatAnswer(text=text, fragments=draft.fragments, tool_called=draft.query is not None,
                      tool_query=draft.query, gate_score=gate.score if gate else None,
                      gate_passed=gate.passed if gate else None, gate_near=bool(gate and gate.near),
                      degenerate=checked.degenerate,
                      fallback=checked.fallback, quoted=checked.quoted, signals=policy.signal_names,
                      guards=policy.guards, reasked=draft.reasked, unknown=gate.unknown if gate else [])


def local_checked(reply: LLMReply | str, question: str, fragments: list[Fragment], *, searched: bool = True,
                  whole: bool = False) -> CheckedAnswer:
    """A local model's draft checked (its length too), then the passage that backs it quoted — for a
    plan's synthesis as for one answer: a small model's long or vague draft is not shown alone."""
    settings = get_settings()
    checked = pipeline.check(reply, question, fragments, searched=searched, max_chars=settings.local_answer_max_chars,
                             strict=settings.local_answer_strict)
    if settings.local_answer_quote and checked.accepted and fragments:
        checked = quoted(checked, question, [f.text for f in fragments], whole=whole)
    return checked


def gate_outcome(gate: GateDecision) -> str:
    return "passed" if gate.passed else "near: the nearest passages, no model answer" if gate.near else "closed"


def quoted(checked: CheckedAnswer, question: str, fragments: list[str], *, whole: bool = False) -> CheckedAnswer:
    """A local model's accepted answer with the passage that backs it quoted; its fragment joins the sources.

    `whole`: the fragments are the passages the model read, quoted as they are."""
    refusal = is_refusal(checked.text)
    chosen = [Quote(n, text) for n, text in enumerate(fragments, 1)] if whole else []
    found = with_quote(checked.text, question, fragments, refusal=refusal, chosen=chosen)
    kept = [] if refusal else checked.used
    used = kept + [n for n in found.used if n not in kept]
    return checked.model_copy(update={"text": found.text, "used": used, "quoted": found.quoted})

