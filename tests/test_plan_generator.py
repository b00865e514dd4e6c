"""nodes/answering/plan_generator.py with a scripted model: the plan it writes is validated before anything
runs; a malformed or senseless one comes back as no plan and the reason.

(tests/test_plan.py holds each of validate_plan's rules; tests/test_complex_query.py a whole planned turn.)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from grove.core.settings import get_settings
from nodes.answering.plan import ACTIONS
from nodes.answering.plan_generator import PlanOutcome, generate, generate_plan, plan_schema
from tests.support.scripted_llm import ScriptedLLM, Step, error, text

QUESTION = "Сравни полив голубики и малины"
GOOD = {"steps": [
    {"id": "s1", "action": "search", "params": {"query": "полив голубики"}, "depends_on": []},
    {"id": "s2", "action": "search", "params": {"query": "полив малины"}, "depends_on": []},
    {"id": "c1", "action": "compare", "params": {"focus": "частота полива"}, "depends_on": ["s1", "s2"]},
    {"id": "final", "action": "synthesize", "params": {}, "depends_on": ["c1"]},
]}


@pytest.fixture
def model(env) -> Iterator[Callable[..., ScriptedLLM]]:  # type: ignore[no-untyped-def]
    """Start a scripted model with these answers and point the settings at it."""
    servers: list[ScriptedLLM] = []

    def start(*steps: Step, **settings: str) -> ScriptedLLM:
        server = ScriptedLLM(list(steps)).__enter__()
        servers.append(server)
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted",
            GROVE_LLM_RETRIES="0", GROVE_LLM_RETRY_DELAYS="[0]", **settings)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


def test_the_schema_allows_the_known_actions_and_two_to_max_steps_steps() -> None:
    schema = plan_schema(5)
    steps = schema["properties"]["steps"]
    assert schema["required"] == ["steps"] and (steps["minItems"], steps["maxItems"]) == (2, 5)
    assert steps["items"]["properties"]["action"]["enum"] == list(ACTIONS)
    assert steps["items"]["required"] == ["id", "action", "params", "depends_on"]


def test_a_valid_plan_comes_back_with_its_kind(model: Callable[..., ScriptedLLM]) -> None:
    llm = model(text(json.dumps(GOOD, ensure_ascii=False)))
    outcome = generate(QUESTION, "analytical", get_settings())
    assert outcome.error is None and outcome.plan is not None
    assert outcome.plan.kind == "analytical"
    assert [(s.id, s.action, s.depends_on) for s in outcome.plan.steps] == [
        ("s1", "search", []), ("s2", "search", []), ("c1", "compare", ["s1", "s2"]), ("final", "synthesize", ["c1"])]
    assert outcome.plan.step("s2").params == {"query": "полив малины"}

    [request] = llm.requests
    system, user = request["messages"]
    assert system["content"].startswith("Составь план") and "Тип вопроса: analytical." in system["content"]
    assert "Не больше 8 шагов." in system["content"]  # the default GROVE_PLANNER_MAX_STEPS
    assert user == {"role": "user", "content": QUESTION}
    assert request["response_format"] == {"type": "json_schema",
                                          "json_schema": {"name": "plan", "schema": plan_schema(8)}}
    assert request["temperature"] == 0.0


def test_a_plan_in_a_code_fence_with_numeric_ids_is_accepted(model: Callable[..., ScriptedLLM]) -> None:
    fenced = """```json
{"steps": [{"id": 1, "action": "search", "params": {"query": "обрезка смородины"}},
           {"id": 2, "action": "synthesize", "depends_on": [1]}]}
```"""
    model(text(fenced))
    outcome = generate("Как обрезать смородину и когда?", "procedural", get_settings())
    assert outcome.plan is not None
    assert [(s.id, s.depends_on) for s in outcome.plan.steps] == [("1", []), ("2", ["1"])]



@pytest.mark.parametrize(("answer", "reason"), [
    ("Сначала я поищу про голубику, потом про малину.", "the plan is not a JSON object"),
    ('{"steps": [{"id": "s1", "action": "search",]}', "the plan is not valid JSON"),
    ({"steps": [{"id": "s1", "action": "browse_web"}]}, "unknown action 'browse_web'"),
    ({"steps": [{"id": "s1", "action": "search", "params": {"query": "полив"}},
                {"id": "f", "action": "synthesize", "depends_on": ["s9"]}]},
     "step f depends on unknown steps ['s9']"),
    ({"steps": [{"id": "s1", "action": "search", "params": {"query": "<запрос 1>"}},
                {"id": "f", "action": "synthesize", "depends_on": ["s1"]}]},
     "search step s1 has no real query ('<запрос 1>')"),
    ({"steps": [{"id": "a", "action": "search", "params": {"query": "полив"}, "depends_on": ["b"]},
                {"id": "b", "action": "search", "params": {"query": "полив"}, "depends_on": ["a"]},
                {"id": "f", "action": "synthesize", "depends_on": ["b"]}]}, "dependency cycle"),
])
def test_a_malformed_plan_is_rejected_with_its_error(model: Callable[..., ScriptedLLM],
                                                    answer: str | dict[str, Any], reason: str) -> None:
    model(text(answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)))
    outcome = generate(QUESTION, "analytical", get_settings())
    assert outcome.plan is None and outcome.error is not None and reason in outcome.error


def test_too_many_steps_for_the_settings_are_rejected(model: Callable[..., ScriptedLLM]) -> None:
    model(text(json.dumps(GOOD, ensure_ascii=False)), GROVE_PLANNER_MAX_STEPS="3")
    outcome = generate(QUESTION, "analytical", get_settings())
    assert outcome == PlanOutcome(plan=None, error="the plan has 4 steps; at most 3 are allowed")


def test_a_refusing_model_is_no_plan_not_a_crash(model: Callable[..., ScriptedLLM]) -> None:
    llm = model(error(400, "model does not support response_format"))
    outcome = generate(QUESTION, "analytical", get_settings())
    assert outcome.plan is None and outcome.error and "response_format" in outcome.error
    assert len(llm.requests) == 1


def test_the_task_logs_the_plan_or_why_it_was_rejected(model: Callable[..., ScriptedLLM],
                                                      caplog: pytest.LogCaptureFixture) -> None:
    model(text(json.dumps(GOOD, ensure_ascii=False)), text("нет плана"))
    with caplog.at_level(logging.INFO, logger="grove.run"):
        accepted = generate_plan(QUESTION, "analytical", get_settings())
        rejected = generate_plan(QUESTION, "analytical", get_settings())
    assert accepted.plan is not None and rejected.plan is None
    messages = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "grove.run"]
    assert messages == [
        ("INFO", "plan: s1:search<-∅ · s2:search<-∅ · c1:compare<-s1,s2 · final:synthesize<-c1"),
        ("WARNING", "plan rejected, falling back to the simple path: the plan is not a JSON object"),
    ]
