"""Guards and signals in real conversations: stand-in ↔ bot ↔ chat flow ↔ Postgres, scripted model.

Each test drives a short conversation that should trigger one guard or signal, and
checks both what the model was shown (the one template's variables) and what was
counted in `dialogue_turns`.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterName

from tests.support.bot import new_bot, running
from tests.support.scripted_llm import ScriptedLLM, text
from tests.support.telegram_standin import TelegramStandin
from tests.test_chat import ask, choose_chat

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]


@pytest.fixture
def llm(env) -> ScriptedLLM:  # type: ignore[no-untyped-def]
    with ScriptedLLM() as server:
        env(GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=server.base_url, GROVE_LLM_MODEL="scripted",
            GROVE_LLM_RETRIES="1", GROVE_LLM_RETRY_DELAYS="[0]")
        yield server


def turns(url: str, user_id: int) -> list[tuple[str, list[str], list[str]]]:
    with psycopg.connect(url) as conn:
        return conn.execute("select template, signals, guards from dialogue_turns"
                            " where user_id = %s and flow = 'chat' order by id", (user_id,)).fetchall()


async def test_a_repeated_question_fires_the_conversation_guard(
    standin: TelegramStandin, llm: ScriptedLLM, store: str, user_id: int
) -> None:
    llm.script(text("Малину обрезают осенью."), text("Есть два варианта: осенью или ранней весной."))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await ask(standin, user_id, "Когда обрезать малину?")
        await ask(standin, user_id, "когда обрезать малину")
    first, second = (r["messages"][0]["content"] for r in llm.requests)
    assert "Пользователь повторяет" not in first
    assert "Пользователь повторяет свой недавний вопрос" in second and "Смени подход" in second
    assert "«Малину обрезают осенью.»" in second  # do_not_repeat_responses
    assert turns(store, user_id) == [("answer.md", [], []),
                                     ("answer.md", ["user_repeats", "change_tack"], ["conversation"])]


async def test_a_repeated_reply_is_regenerated_once(
    standin: TelegramStandin, llm: ScriptedLLM, store: str, user_id: int
) -> None:
    llm.script(text("Малину обрезают осенью."),
               text("Малину обрезают осенью!"),  # the same reply to a different question
               text("Смородину обрезают ранней весной, до распускания почек."))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await ask(standin, user_id, "Когда обрезать малину?")
        [reply] = await ask(standin, user_id, "А смородину?")
    assert reply["text"] == "Смородину обрезают ранней весной, до распускания почек."
    assert len(llm.requests) == 3
    assert "почти дословно повторил" not in llm.requests[1]["messages"][0]["content"]
    assert "почти дословно повторил прошлый ответ" in llm.requests[2]["messages"][0]["content"]
    assert turns(store, user_id)[-1] == ("answer.md", ["repetition"], ["anti_repetition"])


@pytest.mark.usefixtures("prefect_records")  # reads its runs in Prefect
async def test_signals_reach_the_model_and_the_metrics(
    standin: TelegramStandin, llm: ScriptedLLM, store: str, user_id: int
) -> None:
    llm.script(text("Здравствуйте! Чем помочь?"), text("Простите, уточню: речь о летней малине?"),
               text("В вашей базе нет файла отчёт.pdf."), text("Это общие сведения, не из ваших документов."))
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await ask(standin, user_id, "Привет")
        await ask(standin, user_id, "Это неправильно, вы не поняли")
        await ask(standin, user_id, "Что сказано в файле отчёт.pdf?")
        await ask(standin, user_id, "Откуда вы это взяли?")
    prompts = [r["messages"][0]["content"] for r in llm.requests]
    assert "Пользователь здоровается." in prompts[0]
    assert "Пользователь недоволен прошлым ответом" in prompts[1]
    assert "Пользователь спрашивает о своих документах или базе (file name" in prompts[2]
    assert "Пользователь спрашивает, откуда информация." in prompts[3]
    assert [t[1] for t in turns(store, user_id)] == [["greeting"], ["complaint"], ["asks_document"],
                                                     ["asks_source"]]
    assert {t[0] for t in turns(store, user_id)} == {"answer.md"}  # one template, no overrides
    reports = turn_artifacts(user_id)
    assert any("signals: greeting" in r and "template `answer.md`" in r for r in reports)
    assert any("signals: complaint" in r and "guards fired: —" in r for r in reports)


def turn_artifacts(user_id: int) -> list[str]:
    """The markdown artifacts of this user's question runs (`text-user…`), as ops see them in the Prefect UI."""
    with get_client(sync_client=True) as client:
        deadline = time.monotonic() + 120  # bounds a hang only: the reporter the suite shares may have a backlog
        while True:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                name=FlowRunFilterName(like_=f"text-user{user_id} · ")))
            artifacts = client.read_artifacts(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[r.id for r in runs]))) if runs else []
            if len(artifacts) >= 4 or time.monotonic() > deadline:
                return [a.data for a in artifacts if a.type == "markdown"]
            time.sleep(0.5)
