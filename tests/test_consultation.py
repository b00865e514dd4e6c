"""Consultation end to end (seed 000 examples 1–4, seed 002 example 3, moderation, restart).

Telegram stand-in ↔ the real bot ↔ flows ↔ Postgres, with real EmbeddingGemma vectors
for the shared library and a scripted OpenAI-compatible LLM: the classifier's and
the consultant's words are fixed, so what is checked is grove's state machine,
retrieval, logging and moderation.
"""

from __future__ import annotations

from grove.core.settings import get_settings
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove.core.domain_profile import load_profile
from nodes.telegram.html import markdown_html
from nodes.store.moderation import qa_text
from nodes.store.topics import log_turn, open_topic
from nodes.store.document_store import ChunkRecord, store_document
from nodes.embedding.embedder import get_embedder
from grove.core.ingest_types import ExtractedDocument
from nodes.retrieval.unified_retrieve import LIBRARY_OWNER
from tests.support.berries import berry_documents, store_berry_library
from tests.support.bot import new_bot, running
from tests.support.scripted_llm import Response, ScriptedLLM, error, slow, text
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]

CLASSIFIER_MARK = "Определи культуру"
RASPBERRY_REMONTANT = "Ремонтантную малину весной подкармливают азотом: 15 г мочевины на квадратный метр."
STRAWBERRY_SUMMER = "Летнюю клубнику обрезают сразу после сбора урожая: скашивают старые листья и усы."
BLUEBERRY = "Голубике нужна кислая почва с pH 4–5 и мульча из хвои; поливают часто, понемногу."


class Consultant:
    """A scripted model: classification requests answered from a table, answers from a queue."""

    def __init__(self, cultures: dict[str, str], answers: list) -> None:
        self.cultures = cultures
        self.answers = list(answers)
        self.classified: list[str] = []
        self.answered: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Response:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith(CLASSIFIER_MARK):
            self.classified.append(user)
            return text(self.cultures.get(user, "не определено"))(body)
        self.answered.append(body)
        answer = self.answers.pop(0)
        return answer(body) if callable(answer) else text(answer)(body)

    def system_prompts(self) -> list[str]:
        return [body["messages"][0]["content"] for body in self.answered]


@pytest.fixture
def consult(env, pg_url: str):  # type: ignore[no-untyped-def]
    """Settings for a berry-crop deployment pointed at a scripted model; yields a setter.

    Approved pairs are tier 1 for everyone, so the ones a test creates are removed after it.
    """
    servers: list[ScriptedLLM] = []
    with psycopg.connect(pg_url) as conn:
        last_pair = conn.execute("select coalesce(max(id), 0) from knowledge_base").fetchone()[0]

    def start(consultant: Consultant, **extra: str) -> ScriptedLLM:
        server = ScriptedLLM(default=consultant).__enter__()
        servers.append(server)
        env(GROVE_DOMAIN_PROFILE="berries", GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=server.base_url,
            GROVE_LLM_MODEL="scripted", GROVE_LLM_RETRIES="1", GROVE_LLM_RETRY_DELAYS="[0]", **extra)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from knowledge_base where id > %s", (last_pair,))


@pytest.fixture
def library(pg_url: str):  # type: ignore[no-untyped-def]
    """Put documents into the shared library (owner 0) under a culture; removed afterwards."""
    ids: list[int] = []

    def add(name: str, culture: str, texts: list[str]) -> None:
        vectors = get_embedder().embed_documents(texts)
        document = ExtractedDocument(source_type="pdf", source_identifier=name, title=None,
                                     text="\n\n".join(texts) + f"\n{name}")
        stored = store_document.fn(LIBRARY_OWNER, document,
                                   [ChunkRecord(position=i, text=t, page=i + 1) for i, t in enumerate(texts)],
                                   vectors, culture)
        ids.append(stored.document_id)

    yield add
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from documents where id = any(%s)", (ids,))


async def choose_chat(standin: TelegramStandin, user_id: int) -> None:
    standin.send_text(user_id, "/start")
    await standin.wait_for_bot_messages_async(user_id, 1)
    standin.press_button(user_id, "chat")
    await standin.wait_for_bot_messages_async(user_id, 2)


async def say(standin: TelegramStandin, user_id: int, message: str, expect: int = 1) -> str:
    before = len(standin.bot_messages(user_id))
    standin.send_text(user_id, message)
    replies = await standin.wait_for_bot_messages_async(user_id, before + expect, timeout=120)
    return "\n".join(r["text"] for r in replies[before:])


def state_of(url: str, user_id: int) -> dict | None:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute("select state, context, turns from consultation_state where user_id = %s",
                            (user_id,)).fetchone()


def queued(url: str, user_id: int) -> list[dict]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute("select * from moderation_queue where user_id = %s order by id",
                            (user_id,)).fetchall()


def topics_of(url: str, user_id: int) -> list[dict]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        return conn.execute("select * from topics where user_id = %s order by id", (user_id,)).fetchall()


async def test_example_1_unclear_culture_then_crop_then_variety(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("малина-ремонтантная.pdf", "малина ремонтантная", [RASPBERRY_REMONTANT])
    model = Consultant(
        {"Как правильно подкармливать?": "не определено",
         "Как правильно подкармливать? Про малину": "малина общая"},
        ["О какой культуре речь? Клубника, малина, смородина?",
         "Весной ремонтантной малине нужен азот: 15 г мочевины на м² [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        first = await say(standin, user_id, "Как правильно подкармливать?")
        assert first == "О какой культуре речь? Клубника, малина, смородина?"
        assert "БАЗА ЗНАНИЙ" not in model.system_prompts()[0]  # CASE 1: no retrieval
        assert state_of(store, user_id)["state"] == "waiting_clarification_answer"

        second = await say(standin, user_id, "Про малину")
        assert second == "Какая у вас малина: летняя (обычная) или ремонтантная?"
        assert model.classified[-1] == "Как правильно подкармливать? Про малину"
        state = state_of(store, user_id)
        assert state["state"] == "waiting_variety_clarification"
        assert state["context"]["culture"] == "малина общая"
        assert state["context"]["root_question"] == "Как правильно подкармливать? Про малину"

        third = await say(standin, user_id, "Ремонтантная")
    assert "15 г мочевины" in third and "малина-ремонтантная.pdf" in third
    final_request = model.answered[-1]
    assert final_request["messages"][-1]["content"] == "Как правильно подкармливать? Про малину (Ремонтантная)"
    prompt = final_request["messages"][0]["content"]
    assert "Текущая культура: малина ремонтантная" in prompt
    assert "[УРОВЕНЬ 2] [document]" in prompt and RASPBERRY_REMONTANT in prompt
    assert len(model.classified) == 2  # «Ремонтантная» mapped by the rules, not by the model
    assert state_of(store, user_id) is None
    [item] = queued(store, user_id)  # the clarifying and the system question are never queued
    assert item["question"] == "Как правильно подкармливать? Про малину (Ремонтантная)"
    assert item["culture"] == "малина ремонтантная" and item["status"] == "pending"
    [topic] = topics_of(store, user_id)
    assert topic["culture"] == "малина ремонтантная"


async def test_example_2_general_culture_asks_the_variety(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("клубника-летняя.pdf", "клубника летняя", [STRAWBERRY_SUMMER])
    model = Consultant({"Когда обрезать клубнику?": "клубника общая"},
                       ["Летнюю клубнику обрезают после сбора урожая [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        first = await say(standin, user_id, "Когда обрезать клубнику?")
        assert first == "Какая у вас клубника: летняя (июньская) или ремонтантная (НСД)?"
        assert model.answered == []  # the type question is the system's, no model call
        assert queued(store, user_id) == []
        final = await say(standin, user_id, "Летняя")
    assert "после сбора урожая" in final and "клубника-летняя.pdf" in final
    request = model.answered[0]
    assert request["messages"][-1]["content"] == "Когда обрезать клубнику? (Летняя)"
    assert "Текущая культура: клубника летняя" in request["messages"][0]["content"]
    assert STRAWBERRY_SUMMER in request["messages"][0]["content"]
    assert [i["question"] for i in queued(store, user_id)] == ["Когда обрезать клубнику? (Летняя)"]


async def test_example_3_specific_culture_is_answered_at_once(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("голубика.pdf", "голубика", [BLUEBERRY])
    model = Consultant({"Как ухаживать за голубикой?": "голубика"},
                       ["Голубике нужна кислая почва, pH 4–5 [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        reply = await say(standin, user_id, "Как ухаживать за голубикой?")
    assert "кислая почва" in reply and "Информация взята из:" in reply and "голубика.pdf, с. 1" in reply
    assert BLUEBERRY in model.system_prompts()[0]
    [item] = queued(store, user_id)
    assert item["culture"] == "голубика" and item["answer"] == reply.split("\n\nИнформация взята из:")[0]
    assert "Информация взята из" not in item["answer"]  # the block never enters knowledge_base
    with psycopg.connect(store) as conn:
        history = conn.execute("select role, content from chat_messages where user_id = %s order by id",
                               (user_id,)).fetchall()
    assert history[0] == ("user", "Как ухаживать за голубикой?") and history[1][0] == "assistant"
    assert markdown_html(history[1][1]) == reply  # what was stored is what was sent (as Telegram HTML)


async def test_example_4_follow_up_keeps_the_topic_culture(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("малина-ремонтантная.pdf", "малина ремонтантная", [RASPBERRY_REMONTANT])
    model = Consultant({"Как подкормить малину ремонтантную?": "малина ремонтантная"},
                       ["Азотом весной [1].", "Лучше рано весной, по талой земле [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как подкормить малину ремонтантную?")
        await say(standin, user_id, "А в какое время лучше?")
    assert model.classified == ["Как подкормить малину ремонтантную?"]  # the follow-up is not reclassified
    second = model.answered[1]
    assert "Текущая культура: малина ремонтантная" in second["messages"][0]["content"]
    assert RASPBERRY_REMONTANT in second["messages"][0]["content"]  # retrieval with the stored culture
    history = [m["content"] for m in second["messages"][1:-1]]
    assert history[0] == "Как подкормить малину ремонтантную?"  # the topic's first pair is context
    [topic] = topics_of(store, user_id)
    assert topic["message_count"] == 4 and topic["culture"] == "малина ремонтантная"


async def test_another_crop_opens_a_new_topic(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    model = Consultant({"Как подкормить малину ремонтантную?": "малина ремонтантная",
                        "А голубику чем подкормить?": "голубика"},
                       ["Азотом весной.", "Кислыми удобрениями."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как подкормить малину ремонтантную?")
        await say(standin, user_id, "А голубику чем подкормить?")
    assert len(model.classified) == 2
    topics = topics_of(store, user_id)
    assert [(t["culture"], t["status"]) for t in topics] == [("малина ремонтантная", "closed"),
                                                             ("голубика", "open")]


async def test_restart_between_question_and_answer_keeps_the_clarification(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("клубника-летняя.pdf", "клубника летняя", [STRAWBERRY_SUMMER])
    model = Consultant({"Когда обрезать клубнику?": "клубника общая"}, ["После сбора урожая [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Когда обрезать клубнику?")
    assert state_of(store, user_id)["state"] == "waiting_variety_clarification"
    async with running(new_bot()):  # a new process: nothing of the dialogue is in memory
        final = await say(standin, user_id, "июньская")
    assert "После сбора урожая" in final
    assert model.answered[0]["messages"][-1]["content"] == "Когда обрезать клубнику? (июньская)"
    assert "клубника летняя" in model.answered[0]["messages"][0]["content"]
    assert state_of(store, user_id) is None


async def test_stall_guard_ends_a_clarification_loop_with_a_general_answer(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    model = Consultant({}, ["Уточните, о какой культуре речь?",
                            "В целом подкармливают весной азотом, летом калием; для точного совета "
                            "назовите культуру."])
    consult(model, GROVE_CONSULTATION_MAX_CLARIFICATIONS="2")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        assert "Уточните" in await say(standin, user_id, "Чем подкормить?")
        again = await say(standin, user_id, "не знаю")
        assert again == "Уточните, пожалуйста, о какой конкретно культуре идёт речь?"
        assert state_of(store, user_id)["turns"] == 2
        final = await say(standin, user_id, "всё равно")
    assert "весной азотом" in final
    assert state_of(store, user_id) is None
    assert "лучший общий ответ" in model.system_prompts()[-1]
    with psycopg.connect(store) as conn:
        guards = [g for (g,) in conn.execute(
            "select guards from dialogue_turns where user_id = %s order by id", (user_id,))]
    assert guards == [[], [], ["stall"]]
    assert [i["question"] for i in queued(store, user_id)] == ["Чем подкормить? не знаю всё равно"]


async def test_nothing_found_answers_from_general_knowledge(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    """Seed 002 example 3: an empty base for ежевика; the model answers without sources."""
    model = Consultant({"Как ухаживать за ежевикой?": "ежевика"}, ["Ежевику подвязывают к шпалере."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        reply = await say(standin, user_id, "Как ухаживать за ежевикой?")
    assert reply == "Ежевику подвязывают к шпалере."
    prompt = model.system_prompts()[0]
    assert "БАЗА ЗНАНИЙ" not in prompt and "ничего не найдено" in prompt


async def test_approved_answer_becomes_tier_1_for_everyone(
    standin: TelegramStandin, consult, library, store: str, user_id: int, other_user_id: int
) -> None:
    admin = other_user_id + 1_000_000
    question = "Как укрывать жимолость на зиму?"
    model = Consultant({question: "жимолость"},
                       ["Жимолость не укрывают: она выдерживает до −40 °C.", "Не укрывают [1]."])
    consult(model, GROVE_ADMIN_IDS=f"[{admin}]")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        answer = await say(standin, user_id, question)
        [item] = queued(store, user_id)

        listing = await say(standin, admin, f"/moderation {item['id']}")
        assert f"#{item['id']}" in listing and question in listing
        standin.press_button(admin, f"mod:approve:{item['id']}")
        await standin.wait_for_bot_messages_async(admin, 3, timeout=60)
        assert any(f"#{item['id']} добавлен" in m["text"] for m in standin.bot_messages(admin))

        await choose_chat(standin, other_user_id)
        await say(standin, other_user_id, question)
    [approved] = queued(store, user_id)
    assert approved["status"] == "approved" and approved["reviewer_id"] == admin
    prompt = model.system_prompts()[-1]
    assert "[УРОВЕНЬ 1] [qa]" in prompt and answer in prompt  # searchable at once, as tier 1


async def test_admin_edits_an_answer_before_approving(
    standin: TelegramStandin, consult, store: str, user_id: int, other_user_id: int
) -> None:
    admin = other_user_id + 2_000_000
    model = Consultant({"Когда сажать крыжовник?": "крыжовник"}, ["Весной."])
    consult(model, GROVE_ADMIN_IDS=f"[{admin}]")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Когда сажать крыжовник?")
        [item] = queued(store, user_id)
        await say(standin, admin, f"/moderation {item['id']}")
        prompt = (await _press(standin, admin, f"mod:edit:{item['id']}"))
        assert "исправленный ответ" in prompt
        await say(standin, admin, "Крыжовник сажают осенью, за месяц до заморозков.", expect=1)
    with psycopg.connect(store, row_factory=dict_row) as conn:
        kb = conn.execute("select question, answer, subcategory from knowledge_base where moderation_id = %s",
                          (item["id"],)).fetchone()
    assert kb == {"question": "Когда сажать крыжовник?", "subcategory": "крыжовник",
                  "answer": "Крыжовник сажают осенью, за месяц до заморозков."}


async def _press(standin: TelegramStandin, user_id: int, data: str, *, strict: bool = True,
                 expect: int = 1) -> str:
    """Press a button; the first of the `expect` replies it brings."""
    before = len(standin.bot_messages(user_id))
    standin.press_button(user_id, data, strict=strict)
    replies = await standin.wait_for_bot_messages_async(user_id, before + expect, timeout=60)
    return replies[before]["text"]


async def test_non_admin_cannot_moderate(
    standin: TelegramStandin, consult, store: str, user_id: int, other_user_id: int
) -> None:
    model = Consultant({"Когда сажать смородину?": "смородина"}, ["Осенью."])
    consult(model, GROVE_ADMIN_IDS="[1]")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Когда сажать смородину?")
        [item] = queued(store, user_id)
        refusal = await say(standin, other_user_id, "/moderation")
        assert refusal == "Модерация доступна только администраторам."
        assert str(item["id"]) not in refusal and "Когда сажать" not in refusal
        # A forged button press (no such button was ever shown to this user) is refused too.
        forged = await _press(standin, user_id, f"mod:approve:{item['id']}", strict=False)
        assert forged == "Модерация доступна только администраторам."
    [still] = queued(store, user_id)
    assert still["status"] == "pending" and still["knowledge_base_id"] is None
    with psycopg.connect(store) as conn:
        assert conn.execute("select count(*) from knowledge_base where moderation_id = %s",
                            (item["id"],)).fetchone()[0] == 0
        gates = conn.execute("select guards from dialogue_turns where flow = 'moderation' and user_id = any(%s)",
                             ([user_id, other_user_id],)).fetchall()
    assert [g for (g,) in gates] == [["terminal_gate"], ["terminal_gate"]]  # each refusal counted


async def test_admin_rejects_an_answer(
    standin: TelegramStandin, consult, store: str, user_id: int, other_user_id: int
) -> None:
    admin = other_user_id + 3_000_000
    model = Consultant({"Чем мульчировать голубику?": "голубика"}, ["Опилками хвойных пород."])
    consult(model, GROVE_ADMIN_IDS=f"[{admin}]")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Чем мульчировать голубику?")
        [item] = queued(store, user_id)
        await say(standin, admin, f"/moderation {item['id']}")
        done = await _press(standin, admin, f"mod:reject:{item['id']}", expect=2)  # + the next item
        assert done == f"Отклонено: ответ #{item['id']} не попадёт в базу знаний."
        again = await _press(standin, admin, f"mod:approve:{item['id']}", strict=False)  # a stale button
        assert again == f"Ответ #{item['id']} уже рассмотрен (отклонён)."
    [rejected] = queued(store, user_id)
    assert rejected["status"] == "rejected" and rejected["reviewer_id"] == admin
    assert rejected["knowledge_base_id"] is None


async def test_an_llm_outage_apologises_and_keeps_the_clarification(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    """The answer service fails after the variety question: nothing is logged or queued, and the
    user's next message still answers the variety question."""
    model = Consultant({"Когда обрезать клубнику?": "клубника общая"},
                       [error(503), error(503), "Летнюю клубнику обрезают после сбора урожая."])  # retried once
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Когда обрезать клубнику?")
        apology = await say(standin, user_id, "Летняя")
        assert apology.startswith("Извините, сейчас я не могу ответить")
        assert state_of(store, user_id)["state"] == "waiting_variety_clarification"
        assert queued(store, user_id) == []
        final = await say(standin, user_id, "Летняя")
    assert final == "Летнюю клубнику обрезают после сбора урожая."
    assert [i["question"] for i in queued(store, user_id)] == ["Когда обрезать клубнику? (Летняя)"]
    assert state_of(store, user_id) is None


async def test_an_answer_the_deadline_cuts_is_the_knowledge_bases_passage_not_an_apology(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    """Out of time while the model writes: the passage found for the question is the answer, with its
    source; nothing unchecked is queued for moderation."""
    library("голубика.pdf", "голубика", [BLUEBERRY])
    model = Consultant({"Как ухаживать за голубикой?": "голубика"},
                       [slow(60, text("Ответ, которого пользователь не дождётся."))])
    consult(model, GROVE_TURN_DEADLINE="8")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        reply = await say(standin, user_id, "Как ухаживать за голубикой?")
    assert reply.startswith("⏱ Не успел составить ответ")
    assert "кислая почва" in reply and "голубика.pdf" in reply
    assert "не дождётся" not in reply and "сервис ответов недоступен" not in reply
    assert queued(store, user_id) == []


async def test_fragments_and_history_are_fitted_to_the_models_window(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    from nodes.answering.context_window import prompt_room, request_tokens
    from nodes.answering.token_budget import count_tokens

    pages = [" ".join(f"Голубика, страница {p}: кислая почва с pH 4–5, мульча из хвои, полив понемногу, "
                      f"правило {r}." for r in range(10)) for p in range(1, 9)]
    library("голубика-длинная.pdf", "голубика", pages)
    model = Consultant({"Как ухаживать за голубикой?": "голубика"}, ["Кислая почва и мульча [1], см. также [8]."])
    consult(model, GROVE_LLM_CONTEXT_TOKENS="3000", GROVE_LLM_MAX_TOKENS="300",
            GROVE_CONSULTATION_FRAGMENT_TOKENS="700")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        from nodes.store.user_state import read_user_state

        session = read_user_state.fn(user_id).session_id
        topic = open_topic.fn(user_id, session, "общая консультация", get_settings().topic_idle_minutes)
        for n in range(15):
            log_turn.fn(user_id, session, topic.id, f"вопрос {n}", f"ответ {n}: " + "Голубику поливают часто. " * 25)
        reply = await say(standin, user_id, "Как ухаживать за голубикой?")

    [request] = model.answered
    assert request_tokens(request["messages"]) <= prompt_room(get_settings())
    system = request["messages"][0]["content"]
    facts = system[system.index("## БАЗА ЗНАНИЙ"):]
    facts = facts.split("\nИзвестно о запросе:")[0].split("\nУчти:")[0]  # the turn's context follows the facts
    shown = facts.count("### Фрагмент")
    assert 1 <= shown < len(pages) and count_tokens(facts) <= 700 + 40  # the budget, not all eight pages
    history = request["messages"][1:-1]
    assert 0 < len(history) < 30 and history[-1]["content"].startswith("ответ 14:")
    block = reply.split("Информация взята из:", 1)[1]
    assert block.count("с. ") == 1  # [8] was never shown, so only [1] is a source


def approved_pair(url: str, subcategory: str, question: str, answer: str) -> None:
    """An approved pair as the moderation flow writes it (same embedding text), for the test's duration."""
    vector = get_embedder().embed_documents([qa_text(question, answer)])[0]
    with psycopg.connect(url) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute("insert into knowledge_base (category, subcategory, question, answer, embedding)"
                     " values ('общая консультация', %s, %s, %s, %s)", (subcategory, question, answer, vector))


async def test_another_crops_approved_answer_never_leaks(
    standin: TelegramStandin, consult, library, store: str, user_id: int, other_user_id: int
) -> None:
    """Seen in use: two approved strawberry pairs answered for ежевика and for малина (real vectors)."""
    library("малина-ремонтантная.pdf", "малина ремонтантная", [RASPBERRY_REMONTANT])
    approved_pair(store, "клубника летняя", "Как ухаживать за клубникой?", STRAWBERRY_SUMMER)
    approved_pair(store, "клубника летняя", "Как подкормить клубнику?", "Клубнику подкармливают после сбора урожая.")
    model = Consultant({"Как ухаживать за ежевикой?": "ежевика",
                        "Как подкормить малину ремонтантную?": "малина ремонтантная"},
                       ["Ежевику подвязывают к шпалере.", "Азотом весной [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как ухаживать за ежевикой?")
        await choose_chat(standin, other_user_id)
        raspberry = await say(standin, other_user_id, "Как подкормить малину ремонтантную?")
    blackberry_prompt, raspberry_prompt = model.system_prompts()
    assert "ничего не найдено" in blackberry_prompt  # seed 002 example 3
    for prompt in (blackberry_prompt, raspberry_prompt):
        assert STRAWBERRY_SUMMER not in prompt and "Клубнику подкармливают" not in prompt and "[qa]" not in prompt
    assert RASPBERRY_REMONTANT in raspberry_prompt and "клубник" not in raspberry.lower()


async def test_the_general_cultures_documents_are_searched_beside_the_exact_ones(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    diseases = ("Болезни малины: пурпуровая пятнистость и антракноз; больные побеги вырезают, "
                "кусты опрыскивают бордоской жидкостью до цветения.")
    library("малина-ремонтантная.pdf", "малина ремонтантная", [RASPBERRY_REMONTANT])
    library("малина-общая.pdf", "малина общая", [diseases])
    model = Consultant({"Какие болезни у малины ремонтантной?": "малина ремонтантная"},
                       ["Пурпуровая пятнистость и антракноз [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        reply = await say(standin, user_id, "Какие болезни у малины ремонтантной?")
    prompt = model.system_prompts()[0]
    assert diseases in prompt and prompt.index(diseases) < prompt.index(RASPBERRY_REMONTANT)  # nearer, first
    assert "малина-общая.pdf" in reply and "малина-ремонтантная.pdf" not in reply  # only the cited source


async def test_an_approved_answer_wins_over_the_history_that_contradicts_it(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    question = "Как укрывать жимолость на зиму?"
    wrong = "Жимолость укрывают лапником и плёнкой."
    right = "Жимолость не укрывают: она выдерживает морозы до −40 °C."
    model = Consultant({question: "жимолость"}, [wrong, right])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        assert await say(standin, user_id, question) == wrong
        approved_pair(store, "жимолость", question, right)
        again = await say(standin, user_id, question)
    first, second = model.answered
    assert len(first["messages"]) == 2 and len(second["messages"]) == 2  # no history beside the pair
    assert "[УРОВЕНЬ 1] [qa]" in second["messages"][0]["content"] and right in second["messages"][0]["content"]
    assert right in again and "одобренный ответ базы знаний" in again


async def test_a_new_topic_starts_with_its_own_history(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    model = Consultant({"Как подкормить малину ремонтантную?": "малина ремонтантная",
                        "А голубику чем подкормить?": "голубика"},
                       ["Азотом весной.", "Кислыми удобрениями.", "Раз в месяц."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как подкормить малину ремонтантную?")
        await say(standin, user_id, "А голубику чем подкормить?")
        await say(standin, user_id, "А как часто?")
    _raspberry, blueberry, followup = model.answered
    assert [m["content"] for m in blueberry["messages"][1:]] == ["А голубику чем подкормить?"]
    assert [m["content"] for m in followup["messages"][1:]] == [
        "А голубику чем подкормить?", "Кислыми удобрениями.", "А как часто?"]
    # The follow-up is queued together with the question it follows.
    assert [i["question"] for i in queued(store, user_id)] == [
        "Как подкормить малину ремонтантную?", "А голубику чем подкормить?",
        "А голубику чем подкормить?\n(уточнение: А как часто?)"]


async def test_off_domain_questions_and_questions_back_are_never_queued(
    standin: TelegramStandin, consult, store: str, user_id: int
) -> None:
    model = Consultant({}, ["О какой культуре речь?"])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        off_domain = await say(standin, user_id, "Как настроить роутер?")
        back = await say(standin, user_id, "Чем подкормить кусты?")
    assert off_domain == load_profile("berries").off_domain_reply and back == "О какой культуре речь?"
    assert len(model.answered) == 1  # the refusal is the profile's, without a model call
    assert queued(store, user_id) == []  # a refusal and a question back: nothing to approve
    assert state_of(store, user_id)["state"] == "waiting_clarification_answer"


async def test_the_stall_guard_offers_the_crops_as_buttons_instead_of_asking_again(
    standin: TelegramStandin, consult, library, store: str, user_id: int
) -> None:
    library("голубика.pdf", "голубика", [BLUEBERRY])
    model = Consultant({"Чем опрыскивать кусты весной? не знаю не помню голубика": "голубика"},
                       ["Уточните, о какой культуре речь?", "Уточните культуру, пожалуйста?",
                        "Голубику весной не опрыскивают, ей нужна кислая почва [1]."])
    consult(model, GROVE_CONSULTATION_MAX_CLARIFICATIONS="2")
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Чем опрыскивать кусты весной?")
        await say(standin, user_id, "не знаю")
        honest = await say(standin, user_id, "не помню")
        assert "Не могу определить культуру" in honest
        [message] = [m for m in standin.bot_messages(user_id) if "Не могу определить" in m["text"]]
        labels = [b["text"] for row in message["reply_markup"]["inline_keyboard"] for b in row]
        assert "голубика" in labels and "малина" in labels
        assert queued(store, user_id) == []  # neither the questions back nor the way out
        before = len(standin.bot_messages(user_id))
        standin.press_button(user_id, "culture:голубика")
        replies = await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=120)
    assert "кислая почва" in replies[-1]["text"]
    assert model.classified[-1] == "Чем опрыскивать кусты весной? не знаю не помню голубика"
    [item] = queued(store, user_id)
    assert item["culture"] == "голубика"


# --- issue 37, record 8: the berry library, and drafts that stray from the crop or the question -----


@pytest.fixture
def berries(pg_url: str):  # type: ignore[no-untyped-def]
    """The whole berry library of tests/fixtures/berries in the shared library; removed afterwards."""
    ids = store_berry_library()
    yield {d.culture: d for d in berry_documents()}
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from documents where id = any(%s)", (ids,))


async def test_an_off_domain_question_in_a_crops_topic_gets_the_refusal(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    """Seen offline: «Как настроить роутер?» in a strawberry topic got a strawberry passage as the answer."""
    model = Consultant({"Когда обрезать клубнику летнюю?": "клубника летняя"},
                       ["Летнюю клубнику обрезают сразу после сбора урожая [1]."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Когда обрезать клубнику летнюю?")
        refusal = await say(standin, user_id, "Как настроить роутер?")
    assert refusal == load_profile("berries").off_domain_reply
    assert "сказано так" not in refusal and "Информация взята из" not in refusal
    assert len(model.answered) == 1 and len(model.classified) == 1  # no retrieval, no model, no classifier
    [topic] = topics_of(store, user_id)
    assert topic["status"] == "open" and topic["culture"] == "клубника летняя" and topic["message_count"] == 2
    assert len(queued(store, user_id)) == 1  # the strawberry answer only


async def test_a_question_naming_no_crop_never_inherits_the_topics_crop(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    """Seen offline: «Чем опрыскивать кусты весной?» after a raspberry talk was answered for raspberry."""
    model = Consultant({"Как подкормить малину ремонтантную?": "малина ремонтантная"},
                       ["Весной азотом: 15–20 г мочевины на метр [1].", "О какой культуре речь?"])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как подкормить малину ремонтантную?")
        asked = await say(standin, user_id, "Чем опрыскивать кусты весной?")
    assert asked == "О какой культуре речь?"
    assert model.classified[-1] == "Чем опрыскивать кусты весной?"  # a new question, classified afresh
    prompt = model.system_prompts()[-1]
    assert "малина" not in prompt and "БАЗА ЗНАНИЙ" not in prompt  # the general part's mulch is no answer
    assert [m["content"] for m in model.answered[-1]["messages"][1:]] == ["Чем опрыскивать кусты весной?"]
    assert [(t["culture"], t["status"]) for t in topics_of(store, user_id)] == [
        ("малина ремонтантная", "closed"), ("не определено", "open")]
    assert state_of(store, user_id)["state"] == "waiting_clarification_answer"


async def test_a_follow_up_is_never_answered_with_the_last_reply(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    """Seen offline: «А в какое время лучше?» got the previous reply word for word (twice: the
    regeneration repeated it too); the crop's passage not yet said replaces it."""
    first = "Ремонтантную малину подкармливают три раза за сезон [1]."
    model = Consultant({"Как подкормить малину ремонтантную?": "малина ремонтантная"}, [first, first, first])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        shown = await say(standin, user_id, "Как подкормить малину ремонтантную?")
        followup = await say(standin, user_id, "А в какое время лучше?")
    said = "Ремонтантную малину подкармливают три раза за сезон"
    assert shown.startswith(said)
    assert len(model.answered) == 3  # the follow-up's draft was asked for again once, and repeated again
    body = followup.split("\n\nИнформация взята из:")[0]
    assert said not in body
    assert body.startswith("В базе знаний по культуре «малина ремонтантная» об этом сказано так:")
    assert "Ранней весной" in body and "малина-ремонтантная.pdf" in followup
    assert "ведра воды" not in body  # the feeding topic's passage, not watering
    assert len(queued(store, user_id)) == 1  # the replaced follow-up is not queued


async def test_a_draft_about_watering_for_a_feeding_question_is_replaced(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    """Seen offline: «Как правильно подкармливать?» got a watering passage."""
    watering = "Поливайте клубнику рано утром под корень, 10–12 литров воды на метр раз в неделю [1]."
    model = Consultant({"Как подкормить клубнику?": "клубника общая"}, [watering])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        await say(standin, user_id, "Как подкормить клубнику?")
        final = await say(standin, user_id, "Летняя")
    body = final.split("\n\nИнформация взята из:")[0]
    assert "литров воды" not in body and "10 г мочевины" in body
    assert body.startswith("В базе знаний по культуре «клубника летняя» об этом сказано так:")
    assert "клубника-летняя.pdf" in final
    assert queued(store, user_id) == []


async def test_a_draft_about_mulch_for_a_spraying_question_is_replaced(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    model = Consultant({"Чем опрыскивать смородину весной?": "смородина"},
                       ["Опрыскивать смородину весной лучше соломой, перегноем или корой."])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        reply = await say(standin, user_id, "Чем опрыскивать смородину весной?")
    assert "соломой" not in reply and "бордоской жидкостью" in reply and "смородина.pdf" in reply


async def test_an_unclear_question_is_not_answered_from_a_general_passage_on_another_intent(
    standin: TelegramStandin, consult, berries, store: str, user_id: int
) -> None:
    """Seed 000 example 1 with the whole library: the general part holds planting and mulch, not
    feeding, so the crop is asked (the model's clarifying question, without the knowledge base)."""
    model = Consultant({}, ["О какой культуре речь? Клубника, малина, смородина?"])
    consult(model)
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        first = await say(standin, user_id, "Как правильно подкармливать?")
    assert first == "О какой культуре речь? Клубника, малина, смородина?"
    assert "БАЗА ЗНАНИЙ" not in model.system_prompts()[0]
