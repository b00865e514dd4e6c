"""A chat turn's drafts: what the model writes, local or remote, and how a local draft is checked.

The small local model does not choose: a user's question is searched and its fragments reach the model
only when the search gate passes (nodes/retrieval/search_gate.py); in the gate's near band the nearest
passages are shown with no model answer. Past the gate the model first judges whether the passages to be
quoted answer the question (nodes/answering/answer_judge.py): below the threshold they are shown as the
nearest, with no draft; in the near band, at or above a higher one, they are drafted from. A draft that refuses or fails the checks over fragments the gate passed is asked once
more from the answering passages alone (`reasked`). A remote model is an agent with
one tool, `rag-db-query`, called at most once per turn; a query that is no plausible search is replaced by
the question. The search is handed in (`Search`): it is a flow of its own, run by the turn. So is `show`,
the turn's draft (nodes/telegram/stream.py): the calls that write the answer are handed it, none else.
A question the gate shuts (far from every passage in distance) is judged the same way: in the user's own
words a question can sit far from the passage that answers it, and the model said «В ваших документах этого
нет» and answered from its own knowledge (sets AQ and AR: 8 of 40 answerable questions).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from pydantic import BaseModel, Field

from grove.core.settings import Settings
from grove.core.shutdown import Stopped
from nodes.answering import answer_pipeline as pipeline
from nodes.answering.answer_check import NOT_FOUND, OWN_WORDING_COVERAGE, CheckedAnswer, answering, covers, is_refusal
from nodes.answering.answer_judge import answer_odds
from nodes.answering.context_signals import asks
from nodes.answering.chat_prompt import (TOOL_NAME, build_messages, fitted_history, local_messages,
                                         local_system_prompt, opening_facts, passage_facts, rag_tool,
                                         system_prompt, with_fragments)
from nodes.answering.llm import (Decoding, LLMDeadlineExceeded, LLMError, LLMReply, answer_decoding, llm_task,
                                 llm_text_task)
from nodes.answering.opening import opened
from nodes.answering.quote import NEAREST_ONLY, Quote, passages_text, select_quote, with_quote
from nodes.answering.token_budget import count_tokens
from nodes.answering.turn_policy import TurnPolicy
from nodes.retrieval.base_vocabulary import unknown_things
from nodes.retrieval.retrieve import Fragment
from nodes.retrieval.search_gate import GateDecision, decide, has_documents, model_query, search_query
from nodes.retrieval.synonyms import user_synonyms
from nodes.store.chat_history import ChatMessage
from nodes.telegram.stream import Show, beneath, watched

log = logging.getLogger(__name__)

# Above a model's general answer to a question the user's documents are far from: it is not from them.
GENERAL_LEAD = "В ваших документах этого нет. Отвечаю из общих знаний, без проверки по документам:"


class Search(Protocol):
    """The user's best fragments for a query (flows/rag_query.py `rag_db_query`), by the turn's settings."""

    def __call__(self, query: str, owner_id: int, settings: Settings) -> list[Fragment]: ...


class TurnDraft(BaseModel):
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
    judged: float | None = Field(default=None, description="the model's odds that the passages answer the "
                                 "question (nodes/answering/answer_judge.py); None: not asked")


def local_draft(question: str, user_id: int, history: list[ChatMessage], policy: TurnPolicy,
                search: Search, settings: Settings, show: Show | None = None) -> TurnDraft:
    """The local model: the question searched when the user has documents, the gate decides the fragments;
    while the answer is streamed (`show`: the turn's draft, if any), the passages that answer are shown under
    it, and its first words may be written from the best passage on screen (`opened_draft`)."""
    ask = llm_task(settings)
    gate: GateDecision | None = None
    fragments: list[Fragment] = []
    judged: float | None = None
    if has_documents(user_id):
        query = search_query(question, history, settings.search_followup_words)
        found = search(query, user_id, settings)
        unknown = unknown_things(query, user_id) if found and settings.search_gate_unknown_things else []
        gate = decide(query, query, found, settings=settings, unknown=unknown)
        if gate.unknown and own_wording(question, gate.fragments[:settings.local_answer_fragments]):
            # the words the base lacks are the user's, not absent things
            gate = decide(query, query, found, settings=settings)
        elif gate.near and gate.unknown:  # some may be the user's word for one the passages use
            gate = without_synonyms(query, found, gate, settings)
        # Not close enough to answer from: in the near band the nearest passages are shown; past it (asked
        # something) too when the judgment says they answer as past the gate (a question in the user's own
        # words sits far from its passage; a general question's passages are judged lower: bench.answer_judge
        # --shut --general), else the model answers from its own knowledge; either way unless it is sure.
        far = not gate.passed and not gate.near and bool(gate.fragments) and asks(question)
        if gate.near or far:
            shown = gate.fragments[:settings.local_answer_fragments]
            judged = judged_passages(question, shown, settings.local_answer_judge_near, settings)
            sure = is_sure(judged, settings, far=not gate.near)
            near = gate.near or bool(answered(judged, settings))
            if near and not sure:
                return TurnDraft(reply=LLMReply(), fragments=shown, query=gate.query, searched=True, gate=gate,
                                 policy=policy, nearest=nearest_passages(question, shown, gate.unknown), judged=judged)
            fragments = shown if sure else []
        elif gate.passed:
            fragments = gate.fragments[:settings.local_answer_fragments]
            judged = judged_passages(question, fragments, settings.local_answer_judge, settings)
            if judged is not None and judged < settings.local_answer_judge:  # close, and yet no answer
                return TurnDraft(reply=LLMReply(), fragments=fragments, query=gate.query, searched=True, gate=gate,
                                 policy=policy, nearest=nearest_passages(question, fragments), judged=judged)
        if fragments and settings.local_answer_context == "passages":
            fragments = passages(question, fragments)
    quotes = shown_passages(question, fragments, show, settings)
    opening = bool(quotes) and settings.local_answer_opening > 0 and settings.local_answer_context == "fragments"
    extra = count_tokens(opening_facts(quotes[:1], fragments)[0]) if opening else 0
    messages, shown = local_messages(question, history, policy, fragments, settings, extra)
    quotes = [q for q in quotes if q.fragment <= len(shown)]
    opening = opening and bool(quotes)
    # The passages are shown at once, the model's words above them once they come.
    show, screen = watched(beneath(show, passages_text(quotes) if quotes else ""))
    try:
        if opening:
            reply, policy = opened_draft(ask, messages, policy, shown, quotes, settings, show)
        else:
            style = settings.local_prompt_style
            reply, policy = pipeline.draft(ask, messages, policy, lambda p: local_system_prompt(p, shown, style),
                                           decoding=local_decoding(bool(shown), settings), on_text=show)
        again = (reasked(ask, question, messages, policy, shown, reply, settings, show,
                         answers=answered(judged, settings))
                 if settings.local_answer_reask else None)
    except (LLMDeadlineExceeded, Stopped) as exc:
        # The user has been reading the passages (and the first words) for a while: they stay the
        # answer, cut, with their sources — never replaced by an apology for an outage. A «Стоп»
        # keeps them too, even when nothing was on screen yet.
        stopped = isinstance(exc, Stopped)
        if not stopped and (not screen.watching or not (quotes or screen.words.strip())):
            raise
        return TurnDraft(reply=LLMReply(content=screen.words.strip()), fragments=shown,
                      query=gate.query if gate else None, searched=gate is not None, gate=gate, policy=policy,
                      opened=opening, cut=True, stopped=stopped, nearest=on_screen(screen.words, quotes, shown))
    return TurnDraft(reply=again or reply, fragments=shown, query=gate.query if gate else None,
                  searched=gate is not None, gate=gate, policy=policy, opened=opening, reasked=again is not None,
                  judged=judged)


def on_screen(words: str, quotes: list[Quote], shown: list[Fragment]) -> CheckedAnswer:
    """What the user was reading when the deadline passed: the model's first words (marked as cut)
    and the passages shown under them, with the fragments they come from as sources."""
    parts = [f"{words.strip()} …"] if words.strip() else []
    if quotes:
        parts.append(passages_text(quotes))
    used = sorted({q.fragment for q in quotes}) if quotes else list(range(1, len(shown) + 1)) if parts else []
    return CheckedAnswer(text="\n\n".join(parts), used=used, quoted=bool(quotes))


def local_decoding(documents: bool, settings: Settings) -> Decoding | None:
    """The local answer's decoding; an answer from general knowledge is kept short."""
    decoding = answer_decoding(settings)
    if decoding is None or documents:
        return decoding
    return decoding.model_copy(update={"max_tokens": settings.local_general_max_tokens})


def reasked(ask: pipeline.Ask, question: str, messages: list[dict[str, Any]], policy: TurnPolicy,
            shown: list[Fragment], reply: LLMReply, settings: Settings, show: Show | None = None,
            answers: bool | None = None) -> LLMReply | None:
    """A draft over fragments the gate passed that refuses or fails the answer checks, asked again from
    the passages that answer the question alone; the new draft when it answers and passes the checks
    (None: the first draft was fine, the second failed too, or there is nothing to ask from).

    The gate passed the fragments: the question names nothing the base lacks and its fragments are
    close. A small model reading four long fragments still said «об этом не сказано» over the very
    passage that answers (issue 37: 13 of 60 answers), or drifted into its own commands and loops; given
    only that passage it answers from it. A second draft that fails again is not shown: the first one's
    fallback (the passages themselves) is.

    A refusal over fragments a sentence of which `covers` the question is overruled anyway (the
    passages are then shown as the answer): the second draft is asked without the way out of a
    refusal (mode `passage`), so the fact is said in the answer's own words above its quote —
    asked with it, the model refused again every time (sets Q and R: 5 of 5). A refusal over
    fragments that do not cover the question stands: it is most often right, and asked again
    from the nearest passages the model answered from them whatever the question (sets Q and R:
    QU06, RU05, RU10 invented, one answer of 40 gained). Whether they cover it is the model's judgment
    `answers` when it was asked (nodes/answering/answer_judge.py), else `covers`. The second draft is
    checked in full however sure the judgment: asked with no way out, the model stated a feature the
    passages never name in the question's own terms (set AZ, AZU07), which `unfounded` catches.
    """
    if not shown:
        return None
    refused = is_refusal(reply.content)
    failed = [] if refused else pipeline.failures(reply, question, shown, max_chars=settings.local_answer_max_chars,
                                                  strict=settings.local_answer_strict,
                                                  claimed_terms=settings.local_unfounded_terms)
    if not refused and (not failed or "unfounded" in failed):
        return None  # asked again from passages that do not cover the question, the model bends them again
    answered = refused and answering(question, [f.text for f in shown], answered=answers)  # what `_refused` overrules
    if refused and not answered:
        return None
    quotes = select_quote(question, [f.text for f in shown])
    if not quotes:
        return None
    system = {"role": "system", "content": local_system_prompt(policy, shown, settings.local_prompt_style,
                                                               facts=passage_facts(quotes, shown),
                                                               mode="passage" if answered else None)}
    try:
        again: LLMReply = ask([system, *messages[1:]], decoding=answer_decoding(settings), on_text=show)
    except LLMError as exc:  # no time left, or the endpoint failed: the first draft's fallback stands
        log.info("no second draft for %r: %s", question[:60], exc)
        return None
    failed = ["refusal"] if is_refusal(again.content) else pipeline.failures(
        again, question, shown, max_chars=settings.local_answer_max_chars, strict=settings.local_answer_strict,
        claimed_terms=settings.local_unfounded_terms)
    if failed:
        log.info("second draft for %r not kept (%s): %r", question[:60], ", ".join(failed), again.content[:300])
        return None
    return again


def judged_passages(question: str, fragments: list[Fragment], threshold: float, settings: Settings) -> float | None:
    """The model's odds that the passages that would be quoted answer the question (None: not asked —
    the judgment is off, `threshold` 0, or there is nothing to quote)."""
    if threshold <= 0:
        return None
    return answer_odds(question, [q.text for q in select_quote(question, [f.text for f in fragments])], settings)


def answered(judged: float | None, settings: Settings) -> bool | None:
    """The model's odds against the threshold (None: not judged)."""
    return None if judged is None else judged >= settings.local_answer_judge


def is_sure(judged: float | None, settings: Settings, *, far: bool = False) -> bool:
    """The model's odds at the near band's threshold, or beyond the band (`far`: the gate shut) at its own:
    sure enough to draft where the gate doubts."""
    threshold = settings.local_answer_judge_far if far else settings.local_answer_judge_near
    return judged is not None and judged >= threshold


def own_wording(question: str, fragments: list[Fragment]) -> bool:
    """The question's words the base lacks are the user's own wording of what a passage says: the passage
    covers the question by half its weighted terms, or by meaning (`covers`, `OWN_WORDING_COVERAGE`).

    «Что означает значок доллара или решётки…» over «Приглашение … заканчивается символами $, %, #»:
    the base never says «доллар», yet the passage answers, and «В ваших документах этого нет» above it
    was false (set S: 5 of 20 answerable questions)."""
    return bool(fragments) and covers(question, [f.text for f in fragments], words=OWN_WORDING_COVERAGE)


def without_synonyms(query: str, found: list[Fragment], gate: GateDecision, settings: Settings) -> GateDecision:
    """The gate decided again without the missing words that are the user's word for one of the shown
    passages' (nodes/retrieval/synonyms.py); the same decision when none is."""
    shown = [f.text for f in gate.fragments[:settings.local_answer_fragments]]
    synonyms = user_synonyms(gate.unknown, shown, settings.search_gate_synonym_line)
    if not synonyms:
        return gate
    again = decide(query, query, found, settings=settings, unknown=[w for w in gate.unknown if w not in synonyms])
    return again.model_copy(update={"synonyms": synonyms})


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


def opened_draft(ask: pipeline.Ask, messages: list[dict[str, Any]], policy: TurnPolicy, shown: list[Fragment],
                 quotes: list[Quote], settings: Settings, show: Show | None = None) -> tuple[LLMReply, TurnPolicy]:
    """The local answer asked in two parts (nodes/answering/opening.py): its first words from the best
    passage on screen, the rest from the whole fragments; a repeated answer is asked again in one request."""
    first, whole = opening_facts(quotes[:1], shown)  # the best passage: its first words come sooner

    def system(p: TurnPolicy, facts: str = whole) -> dict[str, Any]:
        return {"role": "system", "content": local_system_prompt(p, shown, settings.local_prompt_style, facts=facts)}

    decoding = answer_decoding(settings)
    reply = opened([system(policy, first), *messages[1:]], [system(policy), *messages[1:]], decoding,
                   words=settings.local_answer_opening, ask=llm_text_task(settings), show=show)
    return pipeline.regenerated(ask, [system(policy), *messages[1:]], reply, policy,
                                lambda p: str(system(p)["content"]), decoding=decoding, on_text=show)


def shown_passages(question: str, fragments: list[Fragment], show: Show | None, settings: Settings) -> list[Quote]:
    """The passages that answer the question, as the streamed draft shows them before the model's
    words (none when no draft is streamed: `show` None)."""
    if show is None or not fragments:
        return []
    if settings.local_answer_context == "passages":  # the model reads the passages themselves
        return [Quote(n, f.text) for n, f in enumerate(fragments, 1)]
    return select_quote(question, [f.text for f in fragments])


def passages(question: str, fragments: list[Fragment]) -> list[Fragment]:
    """The passages of the fragments that answer the question (nodes/answering/quote.py), each in its
    fragment's place: a small model reads a few sentences better than four pages, and faster."""
    quotes = select_quote(question, [f.text for f in fragments])
    return [fragments[q.fragment - 1].model_copy(update={"text": q.text}) for q in quotes] or fragments[:1]


def remote_draft(question: str, user_id: int, history: list[ChatMessage], policy: TurnPolicy,
                 search: Search, settings: Settings, show: Show | None = None) -> TurnDraft:
    """A remote model decides whether to search (at most once); its query must be a plausible search.
    Its words stream into `show` (the turn's draft, if any), the first call's too."""
    ask = llm_task(settings)
    tools = [rag_tool()]
    fragments: list[Fragment] = []
    query: str | None = None
    history = fitted_history(question, history, policy, tools, settings)
    messages = build_messages(question, history, policy)
    first = ask(messages, tools=tools, tool_choice="auto", on_text=show)
    show, screen = watched(show)  # the answer without tools streams into the draft, if one is up
    try:
        if first.tool_calls:
            call = first.tool_calls[0]
            if len(first.tool_calls) > 1:
                log.warning("model asked for %d tool calls; only the first runs", len(first.tool_calls))
            written = (call.arguments or {}).get("query") if call.name == TOOL_NAME else None
            query = model_query(written, question)  # malformed, SQL, code, empty: the question is searched
            if query != written:
                log.info("model's query %r is not a plausible search; searching the question", written)
            messages, fragments = with_fragments(question, history, policy, call.id, query,
                                                 search(query, user_id, settings), settings)
            final = ask(messages, on_text=show)  # no tools offered: a second search is impossible
        elif first.content:
            final = first
        else:
            final = ask(messages, on_text=show)  # an endpoint may return an empty text when it chose no tool
        final, policy = pipeline.regenerated(ask, messages, final, policy, system_prompt, on_text=show)  # no tools
    except (LLMDeadlineExceeded, Stopped) as exc:  # the words on screen stay the answer, as a local one's
        if not screen.words.strip():
            raise
        stopped = isinstance(exc, Stopped)
        return TurnDraft(reply=LLMReply(content=screen.words.strip()), fragments=fragments, query=query,
                      searched=query is not None, policy=policy, cut=not stopped, stopped=stopped,
                      nearest=on_screen(screen.words, [], fragments))
    return TurnDraft(reply=final, fragments=fragments, query=query, searched=query is not None, policy=policy)


def local_checked(reply: LLMReply | str, question: str, fragments: list[Fragment], settings: Settings, *,
                  searched: bool = True, whole: bool = False, judged: float | None = None) -> CheckedAnswer:
    """A local model's draft checked (its length too), then the passage that backs it quoted — for a
    plan's synthesis as for one answer: a small model's long or vague draft is not shown alone.

    `judged`: the model's odds that the passages answer (None: not asked). Past a draft that said what they
    do not (`INVENTING_CHECKS`), the passages lead as the answer only at `local_fallback_judge`: a silent
    question whose passages the judgment let through gets a draft from the model's own knowledge, which the
    checks catch."""
    checked = pipeline.check(reply, question, fragments, searched=searched, max_chars=settings.local_answer_max_chars,
                             strict=settings.local_answer_strict, claimed_terms=settings.local_unfounded_terms,
                             answered=answered(judged, settings),
                             vouched=None if judged is None else judged >= settings.local_fallback_judge,
                             sure=is_sure(judged, settings))
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



def checked_draft(draft: TurnDraft, question: str, settings: Settings, *, local: bool) -> CheckedAnswer:
    """What the user reads of a draft: the gate's nearest passages or the words on screen as they are,
    a local draft checked and quoted (a general answer to a question said to be general), a remote one checked."""
    if draft.nearest is not None:
        return draft.nearest
    if not local:
        return pipeline.check(draft.reply, question, draft.fragments, searched=draft.searched)
    checked = local_checked(draft.reply, question, draft.fragments, settings, searched=draft.searched,
                            whole=settings.local_answer_context == "passages", judged=draft.judged)
    if draft.gate is not None and not draft.gate.passed and not draft.fragments and asks(question) and checked.accepted:
        checked = checked.model_copy(update={"text": f"{GENERAL_LEAD}\n\n{checked.text}"})
    return checked


def turn_record(draft: TurnDraft, checked: CheckedAnswer) -> dict[str, Any]:
    """The turn's row in dialogue_metrics: what was searched, what the gate and the checks decided."""
    fields = turn_fields(draft, checked)
    shared = ("tool_called", "gate_score", "gate_passed", "gate_near", "judged", "reasked", "unknown", "degenerate",
              "trimmed", "quoted")  # not the query, nor the draft's words: the row keeps no user text
    return {"cut_by_deadline": draft.cut, "fragments": len(draft.fragments), "opened": draft.opened,
            **{key: fields[key] for key in shared},
            "citations_moved": checked.citations_moved, "citations_dropped": checked.citations_dropped}


def turn_fields(draft: TurnDraft, checked: CheckedAnswer) -> dict[str, Any]:
    """What the chat flow's result says of the turn's search, gate and draft (flows/chat.py `ChatAnswer`);
    `draft` is the model's words the user never saw whole (replaced, or cut to their first sentences)."""
    gate = draft.gate
    return {"tool_called": draft.query is not None, "tool_query": draft.query,
            "gate_score": gate.score if gate else None, "gate_passed": gate.passed if gate else None,
            "gate_near": bool(gate and gate.near), "judged": draft.judged, "unknown": gate.unknown if gate else [],
            "degenerate": checked.degenerate, "fallback": checked.fallback, "quoted": checked.quoted,
            "trimmed": checked.trimmed, "reasked": draft.reasked,
            "draft": (draft.reply.content or None) if checked.fallback or checked.trimmed else None}


def turn_report(draft: TurnDraft, checked: CheckedAnswer) -> list[str]:
    """The turn's artifact lines in Prefect: the search, the gate, the fragments and what became of the draft."""
    gate = draft.gate
    return ((["the deadline passed with the passages on screen: they are the answer, cut"] if draft.cut else []) +
            [f"search: {draft.query!r}" if draft.query else "no search",
             f"gate: {gate.score:.3f} → {gate_outcome(gate)}" if gate and gate.score is not None else "gate: —",
             *([f"the user's words for the passages' own: {', '.join(gate.synonyms)}"] if gate and gate.synonyms else []),
             *([f"passages judged: {draft.judged:.2f} that they answer"
                + (" → the nearest passages, no draft" if draft.nearest is not None and not draft.cut else "")]
               if draft.judged is not None else []),
             f"fragments shown: {len(draft.fragments)}"
             + (", the answer's first words written from the best passage" if draft.opened else ""),
             f"draft failed: {', '.join(checked.degenerate)} → fallback" if checked.fallback
             else "no draft: the nearest passages" if draft.nearest
             else f"draft failed: {', '.join(checked.degenerate)} → its first sentences kept" if checked.trimmed
             else "draft accepted" + (", backing passage quoted" if checked.quoted else ""),
             f"citations moved {checked.citations_moved}, dropped {checked.citations_dropped}"])
