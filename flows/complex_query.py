"""Execution engine for complex questions (seed 004): a validated plan run as a Prefect DAG.

Each step is a task run named after it (`s1-search`, `final-synthesize`) inside this sub-flow, so ops see
the plan and its timings in the UI. Steps whose dependencies are done run together, layer by layer. After
each layer the plan may adapt — a search that found nothing gets one broader search, a summary or
comparison with no material is skipped — for at most `planner_max_iterations` rounds, every adapted plan
validated again. Every model call is budgeted (seed 004's TokenBudgetManager): the step's instructions are
counted in the model's tokens, its materials cut to its allocation, the reserve is the call's `max_tokens`.
"""

from __future__ import annotations

import time
from typing import Any

from grove.core.observe import TaskFuture, flow, task
from grove.core.runs import artifact, run_logger
from pydantic import BaseModel, Field

import prompts
from flows import texts
from grove.core.settings import Settings, get_settings
from nodes.answering import answer_pipeline as pipeline
from nodes.answering.answer_check import CheckedAnswer
from nodes.answering.chat_drafts import local_checked
from nodes.answering.answer_prompt import AnswerContext, parts, render
from nodes.store.chat_history import ChatMessage
from nodes.answering.context_window import newest_pairs_within
from nodes.embedding.embedder import get_embedder
from nodes.answering.llm import ChatModel, LLMDeadlineExceeded, TransientLLMError, complete, endpoint_of
from nodes.answering.plan import Plan, Step, layers, validate_plan
from nodes.retrieval.retrieve import Fragment, first_stage
from nodes.answering.step_context import StepResult, build_context
from nodes.answering.token_budget import TokenBudgetManager, count_message_tokens, truncate_to_tokens

TASKS = {
    "summarize": "кратко изложи, что говорят материалы{focus}.",
    "compare": "сравни материалы между собой{focus}: в чём они согласны и в чём расходятся.",
}


class PlanRun(BaseModel):
    text: str
    fragments: list[Fragment] = Field(default_factory=list, description="every fragment any search found")
    steps: list[StepResult] = Field(default_factory=list)
    adaptations: list[str] = Field(default_factory=list)
    max_prompt_tokens: int = 0
    cut: str | None = Field(default=None, description="why the plan stopped before its answer (the turn's deadline)")


def _budget(settings: Settings) -> TokenBudgetManager:
    return TokenBudgetManager(settings.planner_token_budget, settings.planner_response_tokens)


def _ask(messages: list[dict[str, Any]], response_tokens: int, settings: Settings) -> tuple[str, int, dict[str, int]]:
    prompt_tokens = count_message_tokens(messages)
    # Handed no draft (`on_text`): a plan's steps, its synthesis too, are not shown as they are written.
    reply = complete(messages, ChatModel(settings), max_tokens=response_tokens)
    return reply.content, prompt_tokens, reply.usage


@task(retries=2, retry_delay_seconds=[1, 4],
      retry_condition_fn=lambda e: isinstance(e, TransientLLMError))
def run_step(step: Step, question: str, user_id: int, finished: list[StepResult], number: int,
             total: int, history: list[ChatMessage], settings: Settings) -> StepResult:
    """One step: a search of the user's documents, or one budgeted model call over earlier results."""
    started = time.perf_counter()
    if step.action == "search":
        query = str(step.params["query"])
        vector = get_embedder().embed_query(query)
        fragments = first_stage(user_id, query, vector, settings.planner_search_top_k, settings)
        return StepResult(step_id=step.id, action=step.action, fragments=fragments,
                          seconds=time.perf_counter() - started)
    if step.action != "synthesize" and all(r.empty for r in finished if r.step_id in step.depends_on):
        return StepResult(step_id=step.id, action=step.action, skipped=True, text="",
                          seconds=time.perf_counter() - started)
    budget = _budget(settings)
    if step.action == "synthesize":
        messages = _synthesis_messages(question, step, finished, history, number, total, budget)
    else:
        focus = f" ({step.params['focus']})" if step.params.get("focus") else ""
        head = prompts.load("plan_step.md").format(question=question, task=TASKS[step.action].format(focus=focus),
                                                   materials="")
        allocation = budget.allocate_for_step(number, total, count_message_tokens([{"content": head}]))
        materials = build_context(step.depends_on, finished, "selective", allocation.rag + allocation.history)
        messages = [{"role": "user", "content": head + materials}]
    text, prompt_tokens, usage = _ask(messages, budget.reserved_for_response, settings)
    return StepResult(step_id=step.id, action=step.action, text=text, prompt_tokens=prompt_tokens, usage=usage,
                      seconds=time.perf_counter() - started)


def _synthesis_messages(question: str, step: Step, finished: list[StepResult], history: list[ChatMessage],
                        number: int, total: int, budget: TokenBudgetManager) -> list[dict[str, Any]]:
    """The final answer goes through the one answer template, with the plan's results as facts."""
    header = "\n## РЕЗУЛЬТАТЫ ШАГОВ ПЛАНА\n"
    context = AnswerContext(role=parts()["roles"]["chat"], mode="plan", facts=header)
    fixed = count_message_tokens([{"content": render(context)}, {"content": question}])
    allocation = budget.allocate_for_step(number, total, fixed)
    context.facts = header + build_context(step.depends_on, finished, "hierarchical", allocation.rag)
    messages: list[dict[str, Any]] = [{"role": "system", "content": render(context)}]
    messages += [{"role": m.role, "content": m.content} for m in newest_pairs_within(history, allocation.history)]
    return messages + [{"role": "user", "content": question}]


def _number_fragments(results: list[StepResult], registry: list[Fragment], token_budget: int) -> None:
    """Give each search result's fragments global numbers [n] and render them as the step's text
    (a quarter of the plan's `token_budget` each)."""
    budget = token_budget // 4
    for result in results:
        if result.action != "search":
            continue
        lines = []
        for fragment in result.fragments:
            known = next((i for i, f in enumerate(registry, 1) if f.chunk_id == fragment.chunk_id), None)
            if known is None:
                registry.append(fragment)
                known = len(registry)
            result.numbers.append(known)
            lines.append(f"[{known}] ({fragment.source_label()}): {fragment.text}")
        result.text = truncate_to_tokens("\n".join(lines), budget) if lines else ""


def adapt(plan: Plan, results: dict[str, StepResult], question: str) -> tuple[Plan, list[str]]:
    """One round of adaptation: an empty search gets a broader sibling search its dependents also wait for."""
    added: list[str] = []
    steps = [s.model_copy(deep=True) for s in plan.steps]
    ids = {s.id for s in steps}
    for step in plan.steps:
        result = results.get(step.id)
        if (step.action != "search" or result is None or result.fragments or f"{step.id}-wide" in ids
                or str(step.params.get("query")) == question or step.id.endswith("-wide")):
            continue
        wide = Step(id=f"{step.id}-wide", action="search", params={"query": question}, depends_on=[])
        steps.append(wide)
        for other in steps:
            if step.id in other.depends_on and wide.id not in other.depends_on:
                other.depends_on.append(wide.id)
        added.append(f"{wide.id}: «{step.params.get('query')}» ничего не нашёл, добавлен поиск по вопросу")
    return Plan(kind=plan.kind, steps=steps), added


@flow(name="complex-query", flow_run_name="plan-user{user_id}")
def complex_query(question: str, user_id: int, plan: Plan, history: list[ChatMessage],
                  settings: Settings | None = None) -> PlanRun:
    """Run the plan layer by layer; independent steps of a layer run in parallel; `settings` the turn's
    (None: the process's, as a run Prefect starts has)."""
    settings = settings or get_settings()
    logger = run_logger()
    results: dict[str, StepResult] = {}
    finished: list[StepResult] = []
    registry: list[Fragment] = []
    adaptations: list[str] = []
    iterations = 0
    while True:
        pending = [[s for s in layer if s.id not in results]
                   for layer in validate_plan(plan, 2 * settings.planner_max_steps)]  # adapted plans may grow
        pending = [layer for layer in pending if layer]
        if not pending:
            break
        layer = pending[0]
        total = len(plan.steps)
        futures = [run_step.with_options(task_run_name=f"{s.id}-{s.action}").submit(
                       s, question, user_id, list(finished), len(results) + 1, total, history, settings)
                   for s in layer]
        done, cut = _results(futures)
        _number_fragments(done, registry, settings.planner_token_budget)
        for result in done:
            results[result.step_id] = result
            finished.append(result)
        if cut is not None:  # no time for more model calls: the turn answers from what was found
            logger.warning("plan cut by the turn's deadline: %s", cut)
            break
        if iterations < settings.planner_max_iterations:
            plan, added = adapt(plan, results, question)
            if added:
                iterations += 1
                adaptations += added
                layers(plan)  # cycle detection on the adapted plan
                logger.info("plan adapted: %s", "; ".join(added))
    final = next((r for r in finished if r.action == "synthesize"), None)
    run = PlanRun(text=final.text if final else "", fragments=registry, steps=finished, adaptations=adaptations,
                  max_prompt_tokens=max((r.prompt_tokens for r in finished), default=0),
                  cut=None if final else cut)
    _report(plan, run, settings.planner_token_budget)
    return run


def checked_plan(run: PlanRun, question: str, settings: Settings) -> CheckedAnswer:
    """The plan's answer as checked; a plan the deadline cut answers with the passages its searches found."""
    if run.cut:
        return pipeline.check("", question, run.fragments, lead=texts.PLAN_CUT, nearest_lead=texts.PLAN_CUT)
    if endpoint_of(settings).is_local:
        return local_checked(run.text, question, run.fragments, settings)
    return pipeline.check(run.text, question, run.fragments)


def _results(futures: list[TaskFuture[StepResult]]) -> tuple[list[StepResult], str | None]:
    """A layer's finished steps, and why the others did not finish when the turn's deadline cut them
    (any other failure fails the turn)."""
    done: list[StepResult] = []
    cut: str | None = None
    for future in futures:
        try:
            done.append(future.result())
        except LLMDeadlineExceeded as exc:
            cut = str(exc)
    return done, cut


def _report(plan: Plan, run: PlanRun, token_budget: int) -> None:
    lines = [f"**plan** ({plan.kind}), {len(run.steps)} steps, budget {token_budget} tokens",
             "", "| step | action | depends on | prompt tokens | usage | seconds | status |",
             "|---|---|---|---|---|---|---|"]
    for result in run.steps:
        step = plan.step(result.step_id)
        status = "skipped" if result.skipped else (f"{len(result.fragments)} fragments"
                                                   if result.action == "search" else "done")
        lines.append(f"| {result.step_id} | {result.action} | {', '.join(step.depends_on) or '—'} | "
                     f"{result.prompt_tokens or '—'} | {result.usage.get('prompt_tokens', '—')} | "
                     f"{result.seconds:.2f} | {status} |")
    lines += [f"- adapted: {a}" for a in run.adaptations]
    lines += [f"- cut by the turn's deadline, answered from the passages found: {run.cut}"] if run.cut else []
    artifact("\n".join(lines), description="complex question: the plan and its steps")
