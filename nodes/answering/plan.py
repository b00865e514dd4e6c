"""A plan for a complex question (seed 004): steps with actions, parameters and dependencies.

The model writes the plan as JSON; nothing runs before `validate_plan` accepts
it: known actions only, unique ids, dependencies that exist, no cycles, a bounded
number of steps, and exactly one final `synthesize` step that depends on others.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

Action = Literal["search", "summarize", "compare", "synthesize"]
ACTIONS: tuple[str, ...] = ("search", "summarize", "compare", "synthesize")


class PlanError(ValueError):
    """The plan cannot run; the chat falls back to the simple path."""


class Step(BaseModel):
    id: str
    action: Action
    params: dict[str, Any] = Field(default_factory=dict)
    depends_on: list[str] = Field(default_factory=list)


class Plan(BaseModel):
    kind: str
    steps: list[Step]

    def step(self, step_id: str) -> Step:
        return next(s for s in self.steps if s.id == step_id)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_plan(text: str, kind: str) -> Plan:
    """The model's JSON (code fences allowed) as a Plan; unknown actions or shapes are PlanErrors."""
    raw = _FENCE.sub("", text.strip())
    start, end = raw.find("{"), raw.rfind("}")
    if start < 0 or end < start:
        raise PlanError("the plan is not a JSON object")
    try:
        payload = json.loads(raw[start:end + 1])
    except ValueError as exc:
        raise PlanError(f"the plan is not valid JSON: {exc}") from exc
    steps = payload.get("steps") if isinstance(payload, dict) else None
    if not isinstance(steps, list):
        raise PlanError("the plan has no list of steps")
    for step in steps:
        if isinstance(step, dict) and step.get("action") not in ACTIONS:
            raise PlanError(f"unknown action {step.get('action')!r}")
        if isinstance(step, dict):
            step["id"] = str(step.get("id", ""))
            step["depends_on"] = [str(d) for d in step.get("depends_on") or []]
    try:
        return Plan(kind=kind, steps=steps)
    except ValidationError as exc:
        raise PlanError(f"malformed step: {exc.errors()[0]['msg']}") from exc


def layers(plan: Plan) -> list[list[Step]]:
    """Steps grouped so each group depends only on earlier groups (Kahn); a cycle is a PlanError."""
    remaining = {s.id: set(s.depends_on) for s in plan.steps}
    done: set[str] = set()
    result: list[list[Step]] = []
    while remaining:
        ready = [sid for sid, deps in remaining.items() if deps <= done]
        if not ready:
            raise PlanError(f"the plan has a dependency cycle among {sorted(remaining)}")
        result.append([plan.step(sid) for sid in ready])
        done |= set(ready)
        for sid in ready:
            del remaining[sid]
    return result


def validate_plan(plan: Plan, max_steps: int) -> list[list[Step]]:
    """Check everything the execution engine relies on; returns the execution layers."""
    if not plan.steps:
        raise PlanError("the plan is empty")
    if len(plan.steps) > max_steps:
        raise PlanError(f"the plan has {len(plan.steps)} steps; at most {max_steps} are allowed")
    ids = [s.id for s in plan.steps]
    if len(set(ids)) != len(ids) or not all(ids):
        raise PlanError("step ids must be present and unique")
    for step in plan.steps:
        missing = set(step.depends_on) - set(ids)
        if missing:
            raise PlanError(f"step {step.id} depends on unknown steps {sorted(missing)}")
        query = str(step.params.get("query", ""))
        if step.action == "search" and (not re.search(r"\w{3}", query) or re.search(r"[<>…]", query)):
            raise PlanError(f"search step {step.id} has no real query ({query!r})")
        if step.action in ("summarize", "compare") and not step.depends_on:
            raise PlanError(f"{step.action} step {step.id} depends on nothing")
    finals = [s for s in plan.steps if s.action == "synthesize"]
    if len(finals) != 1:
        raise PlanError("the plan needs exactly one synthesize step")
    order = layers(plan)
    if order[-1] != finals or not finals[0].depends_on:
        raise PlanError("synthesize must be the last step and depend on the others")
    return order
