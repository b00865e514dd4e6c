"""A complex question end to end: analyzer → plan → parallel searches → compare → synthesis.

Stand-in ↔ bot ↔ chat flow ↔ complex-query sub-flow ↔ Postgres (real EmbeddingGemma vectors),
with a scripted model whose words are fixed; the plan's shape, parallelism, token budget and
fallbacks are grove's.
"""

from __future__ import annotations

from dataclasses import dataclass

import json
from typing import Any

import psycopg
import pytest

from nodes.answering.token_budget import count_message_tokens
from tests.support.bot import new_bot, running
from tests.support.scripted_llm import Response, ScriptedLLM, slow, text, tool_call
from tests.test_chat import ask, choose_chat, index

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]

BLUEBERRY = ["Голубику поливают часто, два-три раза в неделю, понемногу: корни у неё поверхностные. "
             + "Почва под голубикой должна быть постоянно влажной, но без застоя воды. " * 12]
RASPBERRY = ["Малину поливают редко, но обильно: раз в неделю по ведру на куст. "
             + "Перед сбором урожая полив малины усиливают, осенью прекращают. " * 12]
PLAN = {"steps": [
    {"id": "s1", "action": "search", "params": {"query": "полив голубики"}, "depends_on": []},
    {"id": "s2", "action": "search", "params": {"query": "полив малины"}, "depends_on": []},
    {"id": "c1", "action": "compare", "params": {"focus": "частота полива"}, "depends_on": ["s1", "s2"]},
    {"id": "final", "action": "synthesize", "params": {}, "depends_on": ["c1"]}]}
QUESTION = "Сравни, что говорят все мои документы о поливе голубики и малины"


class Planner:
    """Scripted model: the kind, the plan, then the step answers in order."""

    def __init__(self, plan: dict[str, Any] | str, answers: list[str]) -> None:
        self.plan = plan if isinstance(plan, str) else json.dumps(plan, ensure_ascii=False)
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Response:
        self.bodies.append(body)
        system = body["messages"][0]["content"]
        if system.startswith("Определи тип вопроса"):
            return text("analytical")(body)
        if system.startswith("Составь план"):
            return text(self.plan)(body)
        step = self.answers.pop(0)
        return step(body) if callable(step) else text(step)(body)


@pytest.fixture
def planner_llm(env):  # type: ignore[no-untyped-def]
    servers = []

    def start(planner: Planner, **extra: str) -> ScriptedLLM:
        server = ScriptedLLM(default=planner).__enter__()
        servers.append(server)
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted",
            GROVE_LLM_RETRIES="1", GROVE_LLM_RETRY_DELAYS="[0]", **extra)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@dataclass
class StepRun:
    name: str
    start: float
    end: float


def plan_steps(url: str, user_id: int) -> dict[str, StepRun]:
    """The plan's steps as the turn recorded them (the trace kept with the update, also in Prefect)."""
    with psycopg.connect(url) as conn:
        [trace] = conn.execute("select trace from inbox where user_id = %s and status = 'done'"
                               " order by update_id desc limit 1", (user_id,)).fetchone()
    return {s["name"]: StepRun(s["name"], s["started"], s["started"] + s["seconds"]) for s in trace["stages"]
            if s["name"].split("-")[-1] in ("search", "compare", "synthesize")}


async def test_a_comparison_runs_as_a_plan_with_parallel_searches_within_budget(
    standin, planner_llm, store: str, user_id: int, other_user_id: int
) -> None:
    index(user_id, "голубика.pdf", BLUEBERRY)
    index(user_id, "малина.pdf", RASPBERRY)
    index(other_user_id, "чужой.pdf", ["Малину чужого пользователя поливают молоком."])
    planner = Planner(PLAN, ["Голубику поливают чаще [1], малину реже, но обильнее [2].",
                             "Голубике нужен частый полив понемногу [1], малине — редкий и обильный [2]."])
    planner_llm(planner, GROVE_PLANNER_TOKEN_BUDGET="700", GROVE_PLANNER_RESPONSE_TOKENS="200")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        [reply] = await ask(standin, user_id, QUESTION)

    assert reply["text"].startswith("Голубике нужен частый полив")
    assert "голубика.pdf" in reply["text"] and "малина.pdf" in reply["text"]  # sources from both searches
    assert "чужой.pdf" not in reply["text"]
    compare_body, synthesis_body = planner.bodies[2], planner.bodies[3]
    compare_prompt = compare_body["messages"][0]["content"]
    assert "Голубику поливают" in compare_prompt and "Малину поливают" in compare_prompt
    assert "молоком" not in compare_prompt  # searches see only this user's documents
    assert synthesis_body["messages"][0]["content"].startswith("Ты — ")  # the one answer template
    assert "РЕЗУЛЬТАТЫ ШАГОВ ПЛАНА" in synthesis_body["messages"][0]["content"]
    for body in (compare_body, synthesis_body):  # every step's prompt + reserve fits the budget
        assert body["max_tokens"] == 200
        assert count_message_tokens(body["messages"]) + body["max_tokens"] <= 700
    assert "…" in compare_prompt  # the long documents were cut to fit, not sent whole

    runs = plan_steps(store, user_id)
    assert set(runs) >= {"s1-search", "s2-search", "c1-compare", "final-synthesize"}
    first, second = sorted((runs["s1-search"], runs["s2-search"]), key=lambda r: r.start)
    assert second.start < first.end  # independent searches overlapped
    assert runs["c1-compare"].start >= max(first.end, second.end)
    with psycopg.connect(store) as conn:
        signals, meta = conn.execute("select signals, meta from dialogue_turns where user_id = %s"
                                     " order by id desc limit 1", (user_id,)).fetchone()
    assert "plan:analytical" in signals and meta["plan_steps"] == 4


@pytest.mark.parametrize("bad_plan", [
    {"steps": [{"id": "a", "action": "search", "params": {"query": "x"}, "depends_on": ["f"]},
               {"id": "f", "action": "synthesize", "depends_on": ["a"]}]},  # a cycle
    {"steps": [{"id": "a", "action": "run_shell", "params": {}}]},  # an unknown action
    {"steps": [{"id": f"s{i}", "action": "search", "params": {"query": "x"}} for i in range(12)]
     + [{"id": "f", "action": "synthesize", "depends_on": ["s0"]}]},  # too many steps
])
async def test_an_invalid_plan_falls_back_to_the_simple_path(
    standin, planner_llm, store: str, user_id: int, bad_plan: dict
) -> None:
    index(user_id, "голубика.pdf", BLUEBERRY)
    planner = Planner(bad_plan, [tool_call({"query": "полив голубики"}), "Голубику поливают часто [1]."])
    planner_llm(planner)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        [reply] = await ask(standin, user_id, QUESTION)
    assert reply["text"].startswith("Голубику поливают часто") and "голубика.pdf" in reply["text"]
    assert [t["function"]["name"] for t in planner.bodies[2]["tools"]] == ["rag-db-query"]  # the simple path
    with psycopg.connect(store) as conn:
        signals = conn.execute("select signals from dialogue_turns where user_id = %s order by id desc limit 1",
                               (user_id,)).fetchone()[0]
    assert "plan_rejected" in signals


async def test_empty_searches_adapt_the_plan(standin, planner_llm, store: str, user_id: int) -> None:
    """Searches that find nothing get a broader search each; a comparison of nothing is skipped."""
    planner = Planner(PLAN, ["В ваших документах об этом ничего нет."])
    planner_llm(planner)
    async with running(new_bot()):
        await choose_chat(standin, user_id)  # this user has no documents at all
        [reply] = await ask(standin, user_id, QUESTION)
    assert reply["text"] == "В ваших документах об этом ничего нет."
    runs = plan_steps(store, user_id)
    assert {"s1-search", "s2-search", "s1-wide-search", "s2-wide-search", "c1-compare",
            "final-synthesize"} <= set(runs)
    assert runs["c1-compare"].start >= runs["s1-wide-search"].end  # dependents wait for the added step
    assert len(planner.bodies) == 3  # kind, plan, synthesis: the empty comparison cost no model call


async def test_a_plan_cut_by_the_turns_deadline_answers_from_the_passages_it_found(
    standin, planner_llm, store: str, user_id: int
) -> None:
    """A step still writing when the turn's time is up ends the plan: the user reads the passages its
    searches found, quoted with their sources — not the outage apology — and ops see why."""
    index(user_id, "голубика.pdf", BLUEBERRY)
    index(user_id, "малина.pdf", RASPBERRY)
    planner = Planner(PLAN, [slow(60, text("Сравнение, которого пользователь не дождётся."))])
    planner_llm(planner, GROVE_TURN_DEADLINE="8")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        [reply] = await ask(standin, user_id, QUESTION)

    assert "сервис ответов недоступен" not in reply["text"]
    assert "не дождётся" not in reply["text"]
    assert reply["text"].startswith("⏱ Не успел сопоставить найденное")
    assert "полив" in reply["text"]  # a searched passage, quoted
    assert "голубика.pdf" in reply["text"] or "малина.pdf" in reply["text"]
    assert len(planner.bodies) == 3  # kind, plan, the comparison cut: no synthesis was asked for
    with psycopg.connect(store) as conn:
        signals = conn.execute("select signals from dialogue_turns where user_id = %s order by id desc limit 1",
                               (user_id,)).fetchone()[0]
    assert "plan_cut" in signals and "plan:analytical" in signals
