"""The query analyzer (seed 004): cheap markers first, the model only for questions with a marker."""

from __future__ import annotations

import pytest

from grove.core.settings import get_settings

from nodes.answering.query_analyzer import analyze, marker_kind
from tests.support.scripted_llm import ScriptedLLM, error, text


@pytest.fixture
def llm(env):  # type: ignore[no-untyped-def]
    with ScriptedLLM() as server:
        env(GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted")
        yield server


@pytest.mark.parametrize(("question", "kind"), [
    ("Сравни полив голубики и малины", "analytical"),
    ("Что говорят все мои документы об обрезке?", "analytical"),
    ("Найди все упоминания тли", "iterative"),
    ("Почему у малины не завязываются ягоды?", "diagnostic"),
    ("Когда обрезать смородину?", "simple"),
])
def test_markers(question: str, kind: str) -> None:
    assert marker_kind(question) == kind


def test_a_question_without_a_marker_costs_no_model_call(llm: ScriptedLLM) -> None:
    assert analyze("Когда обрезать смородину?", get_settings()).model_dump() == {"kind": "simple", "by": "markers"}
    assert llm.requests == []


def test_the_model_decides_a_marked_question(llm: ScriptedLLM) -> None:
    llm.script(text("Diagnostic."))
    assert analyze("Сравни, почему малина не плодоносит", get_settings()).model_dump() == {"kind": "diagnostic", "by": "llm"}
    assert llm.requests[0]["messages"][-1]["content"] == "Сравни, почему малина не плодоносит"


@pytest.mark.parametrize("reply", [text("не знаю"), text(""), error(400)])
def test_the_marker_stands_when_the_model_fails_or_answers_off_the_list(llm: ScriptedLLM, reply) -> None:  # type: ignore[no-untyped-def]
    llm.script(reply)
    assert analyze("Сравни полив голубики и малины", get_settings()).model_dump() == {"kind": "analytical", "by": "markers"}
