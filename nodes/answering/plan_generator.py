"""Plan generator (seed 004): the model writes the plan as JSON; it is validated before it runs."""

from __future__ import annotations

from typing import Any

from grove.core.observe import task
from grove.core.runs import run_logger
from pydantic import BaseModel

import prompts
from grove.core.settings import Settings
from nodes.answering.llm import ChatModel, LLMError, complete
from nodes.answering.plan import ACTIONS, Plan, PlanError, parse_plan, validate_plan


class PlanOutcome(BaseModel):
    plan: Plan | None
    error: str | None = None


def plan_schema(max_steps: int) -> dict[str, Any]:
    """The JSON shape of a plan, for constrained decoding (structure only; `validate_plan` judges sense)."""
    step = {"type": "object", "required": ["id", "action", "params", "depends_on"], "properties": {
        "id": {"type": "string"},
        "action": {"type": "string", "enum": list(ACTIONS)},
        "params": {"type": "object", "properties": {"query": {"type": "string"}, "focus": {"type": "string"}}},
        "depends_on": {"type": "array", "items": {"type": "string"}}}}
    return {"type": "object", "required": ["steps"], "properties": {
        "steps": {"type": "array", "items": step, "minItems": 2, "maxItems": max_steps}}}


def generate(question: str, kind: str, settings: Settings) -> PlanOutcome:
    messages = [{"role": "system", "content": prompts.load("plan.md").format(
                    kind=kind, max_steps=settings.planner_max_steps)},
                {"role": "user", "content": question}]
    try:
        reply = complete(messages, ChatModel(settings), max_tokens=600, temperature=0.0,
                         json_schema=plan_schema(settings.planner_max_steps))
        plan = parse_plan(reply.content, kind)
        validate_plan(plan, settings.planner_max_steps)
    except (LLMError, PlanError) as exc:
        return PlanOutcome(plan=None, error=str(exc))
    return PlanOutcome(plan=plan)


@task(name="generate-plan")
def generate_plan(question: str, kind: str, settings: Settings) -> PlanOutcome:
    outcome = generate(question, kind, settings)
    logger = run_logger()
    if outcome.plan is None:
        logger.warning("plan rejected, falling back to the simple path: %s", outcome.error)
    else:
        logger.info("plan: %s", " · ".join(f"{s.id}:{s.action}<-{','.join(s.depends_on) or '∅'}"
                                           for s in outcome.plan.steps))
    return outcome
