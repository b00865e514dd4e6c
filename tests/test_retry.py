"""«ещё раз» after a turn the model could not answer: the saved question is answered (issue 37, record 7).

Seen: the local model's answer was cut by the turn's deadline, the user was told to write «ещё раз»,
and the reply to it was the history's placeholder — the model had read it back as an answer. Here
the real bot runs against the Bot API stand-in with the scripted local model: the first question
meets the deadline, a retry meets it too, then the model works again and «повтори, пожалуйста»
gets the first question answered; the model never sees the placeholder, and the history ends as the
question with its answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from nodes.store.chat_history import NO_ANSWER_MARK
from nodes.telegram.stream import MORE
from tests.support.bot import choose_chat, new_bot, running
from tests.support.scripted_llm import ScriptedLLM, slow, text
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(240)]

QUESTION = "Сколько азота нужно ремонтантной малине весной?"
ANSWER = "Весной ремонтантной малине дают азот: около пятнадцати граммов мочевины на квадратный метр."


@pytest.fixture
def local(env) -> Iterator[ScriptedLLM]:  # type: ignore[no-untyped-def]
    """The scripted model as the local one (streamed answers, no retries), and a short turn deadline."""
    with ScriptedLLM() as server:
        env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LLM_RETRIES="0", GROVE_TURN_DEADLINE="3",
            GROVE_STREAM_EDIT_INTERVAL="0.3", GROVE_LOCAL_ANSWER_QUOTE="false", GROVE_PLANNER="off")
        yield server


def stored(url: str, user_id: int) -> list[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select role, content from chat_messages where user_id = %s order by id",
                            (user_id,)).fetchall()
    return [(r[0], r[1]) for r in rows]


async def reply_to(standin: TelegramStandin, user_id: int, message: str, timeout: float = 120) -> str:
    """Send `message`; the bot's next message once it is final (a streamed draft edited to the end)."""
    before = len(standin.bot_messages(user_id))
    standin.send_text(user_id, message)
    await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=timeout)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        reply = standin.bot_messages(user_id)[before]["text"]
        if not reply.endswith(MORE):
            return str(reply)
        await asyncio.sleep(0.05)
    raise AssertionError("the reply still shows a draft")


def seen(request: dict[str, Any]) -> str:
    """Everything the model was given in one request (messages or a templated prompt)."""
    return json.dumps(request, ensure_ascii=False)


async def test_a_retry_after_a_failed_turn_answers_the_saved_question(
    standin: TelegramStandin, local: ScriptedLLM, store: str, user_id: int
) -> None:
    from flows.texts import APOLOGY

    local.script(slow(600, text("слишком поздно")))  # the turn's deadline passes first
    async with running(new_bot()):
        await choose_chat(standin, user_id)
        apology = await reply_to(standin, user_id, QUESTION)
        assert stored(store, user_id) == [("user", QUESTION), ("assistant", NO_ANSWER_MARK)]

        local.script(slow(600, text("опять поздно")))  # the retry fails too
        again = await reply_to(standin, user_id, "Ещё раз")
        assert stored(store, user_id) == [("user", QUESTION), ("assistant", NO_ANSWER_MARK)]  # one pair, kept

        local.script(text(ANSWER))  # the model works again
        answer = await reply_to(standin, user_id, "повтори, пожалуйста")

        local.script(text("Что именно повторить?"))
        ordinary = await reply_to(standin, user_id, "ещё раз")  # nothing unanswered: a message like any other

    assert apology == again == APOLOGY
    first, retry, retry_answered, plain = local.requests
    for request in (first, retry, retry_answered):
        assert QUESTION in seen(request)
    for request in (retry, retry_answered, plain):
        assert NO_ANSWER_MARK not in seen(request)  # the placeholder never reaches the model
        assert "Ещё раз" not in seen(request) and "повтори, пожалуйста" not in seen(request)
    assert answer.split() == ANSWER.split()
    assert stored(store, user_id)[:2] == [("user", QUESTION), ("assistant", answer)]
    assert QUESTION in seen(plain) and ANSWER in seen(plain)  # the answered pair is history now
    assert "ещё раз" in seen(plain)
    assert ordinary == "Что именно повторить?"
    assert stored(store, user_id)[2:] == [("user", "ещё раз"), ("assistant", "Что именно повторить?")]
