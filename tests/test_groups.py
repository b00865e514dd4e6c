"""Groups and supergroups: a personal base never answers or grows there (through the Bot API stand-in).

Seen in use: in a supergroup a user in Чат mode asked «Проверь в базе: …» and the bot quoted
their private PDF to the group; in База mode group chatter was indexed into the sender's base.
"""

from __future__ import annotations

import psycopg
import pytest

from nodes.store.document_store import ChunkRecord, store_document
from nodes.embedding.embedder import get_embedder
from grove.core.ingest_types import ExtractedDocument
from tests.support.bot import new_bot, running
from tests.support.scripted_llm import ScriptedLLM, text
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]

GROUP = -1001234567890
SECRET = "Пароль от сейфа в отчёте: 7741, хранить только у бухгалтера."


async def choose(standin: TelegramStandin, user_id: int, mode: str) -> None:
    standin.send_text(user_id, "/start")
    await standin.wait_for_bot_messages_async(user_id, 1)
    standin.press_button(user_id, mode)
    await standin.wait_for_bot_messages_async(user_id, 2)


def documents_of(url: str, user_id: int) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("select count(*) from documents where owner_id = %s", (user_id,)).fetchone()[0]


def private_document(user_id: int) -> None:
    document = ExtractedDocument(source_type="pdf", source_identifier="отчёт.pdf", title=None, text=SECRET)
    store_document.fn(user_id, document, [ChunkRecord(position=0, text=SECRET, page=1)],
                      get_embedder().embed_documents([SECRET]), None)


async def test_a_personal_base_never_answers_in_a_group(
    standin: TelegramStandin, store: str, user_id: int, env
) -> None:  # type: ignore[no-untyped-def]
    private_document(user_id)
    with ScriptedLLM(default=text(f"В вашем отчёте: {SECRET}")) as llm:
        env(GROVE_LLM_API_KEY="test-key", GROVE_LLM_BASE_URL=llm.base_url, GROVE_LLM_MODEL="scripted")
        async with running(new_bot()):
            await choose(standin, user_id, "chat")
            standin.send_group_text(GROUP, user_id, "кто-нибудь знает пароль от сейфа?")  # not to the bot
            standin.send_group_text(GROUP, user_id, "@grove_test_bot Проверь в базе: какой пароль от сейфа?")
            [reply] = await standin.wait_for_bot_messages_async(GROUP, 1)
            standin.send_group_text(GROUP, user_id, "а всё-таки?", reply_to=reply["message_id"])
            replies = await standin.wait_for_bot_messages_async(GROUP, 2)
            standin.send_group_text(GROUP, user_id, "/start@grove_test_bot")
            replies = await standin.wait_for_bot_messages_async(GROUP, 3)
    assert llm.requests == []  # nothing of the base went to a model, let alone to the group
    for message in replies:
        assert "7741" not in message["text"] and "отчёт.pdf" not in message["text"]
        assert "личные сообщения" in message["text"] and not message.get("reply_markup")
    assert len(standin.bot_messages(GROUP)) == 3  # the message not addressed to the bot got no reply
    assert len(standin.bot_messages(user_id)) == 2  # and nothing went to the private chat either


async def test_group_chatter_is_never_indexed_into_a_personal_base(
    standin: TelegramStandin, store: str, user_id: int
) -> None:
    async with running(new_bot()):
        await choose(standin, user_id, "documents")
        before = documents_of(store, user_id)
        standin.send_group_text(GROUP, user_id, "Завтра собираемся в 10, адрес https://example.org/plan")
        standin.send_group_text(GROUP, user_id, "@grove_test_bot сохрани: встреча в 10 у входа")
        [reply] = await standin.wait_for_bot_messages_async(GROUP, 1)
    assert "личные сообщения" in reply["text"]
    assert documents_of(store, user_id) == before
    with psycopg.connect(store) as conn:
        assert conn.execute("select count(*) from jobs where user_id = %s", (user_id,)).fetchone()[0] == 0
