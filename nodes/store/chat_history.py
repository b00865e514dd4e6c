"""Chat history (seed 001 §4.2): read the last Q/A pairs, append a pair, clean.

Appending goes through the SQL function `insert_and_trim_pairs`, which trims the
user's history to the newest messages atomically, even with concurrent writers.

A turn the model could not answer (an outage, the turn's deadline) is stored as its question
with `NO_ANSWER_MARK` for an answer: the question is kept, the marker is never read back to a
model (`dialogue`). A retry request right after it («ещё раз», `is_retry_request`) takes the
saved question as its own (`unanswered_turn`), and its answer replaces the marker
(`answer_unanswered`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from grove.core.observe import task
from pydantic import BaseModel, Field

from grove.store.db import transaction

HISTORY_KEEP = 30  # messages = 15 Q/A pairs
NO_ANSWER_MARK = "[ответ не получен: сервис ответов был недоступен]"  # stored when the LLM failed

# What a user writes to have the last unanswered question answered, normalised as `retry_words`
# normalises a message: lower case, «ё» as «е», words only, the filler words below left out.
RETRY_REQUESTS: frozenset[str] = frozenset({
    "еще раз", "еще разок", "еще раз ответь", "еще раз ответьте", "еще раз попробуй", "еще раз попробуйте",
    "повтори", "повторите", "повтори еще раз", "повторите еще раз", "повтори ответ", "повторите ответ",
    "повтори попытку", "повторите попытку", "попробуй", "попробуйте", "попробуй еще", "попробуйте еще",
    "попробуй еще раз", "попробуйте еще раз", "попробуй снова", "попробуйте снова", "попробуй заново",
    "попробуйте заново", "снова", "заново", "ответь", "ответьте", "ответь еще раз", "ответьте еще раз",
    "ответь снова", "ответьте снова", "ответь на вопрос", "ответьте на вопрос", "again", "retry", "try again",
})
RETRY_FILLERS: frozenset[str] = frozenset({
    "пожалуйста", "пож", "пжл", "пж", "плиз", "please", "давай", "давайте", "ну", "а", "так", "ок", "окей",
    "ok", "теперь", "сейчас",
})
RETRY_MAX_CHARS = 40  # a retry request is a short message; a longer one is a question of its own


class ChatMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class Unanswered(BaseModel):
    """The newest turn of a session when the model gave no answer to it."""

    question: str
    answer_id: int = Field(description="the row holding NO_ANSWER_MARK, which the retry's answer replaces")


def retry_words(text: str) -> str:
    """A message as `RETRY_REQUESTS` lists it: «Ещё раз, пожалуйста!» → «еще раз»."""
    words = re.findall(r"[a-zа-я]+", text.lower().replace("ё", "е"))
    return " ".join(w for w in words if w not in RETRY_FILLERS)


def is_retry_request(text: str) -> bool:
    """A short «ещё раз», «повтори», «попробуй ещё раз, пожалуйста!» and the like (`RETRY_REQUESTS`)."""
    return len(text.strip()) <= RETRY_MAX_CHARS and retry_words(text) in RETRY_REQUESTS


def dialogue(history: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The history as a model reads it: the answered pairs only, a failed turn's pair left out whole.

    Its marker given to the model as an assistant message is read back as something the model
    said: asked «ещё раз», it answered with the marker itself. Its question alone is no better:
    a small model answers an open question just before the new one instead of the new one (or
    both), two user turns in a row break the alternation some chat templates require, and the
    question retyped would look to the turn's guard like the user repeating themselves. Nothing
    is lost: the pair stays stored, and a retry request makes the question the turn's own.
    """
    kept: list[ChatMessage] = []
    for message in history:
        if message.role == "assistant" and message.content == NO_ANSWER_MARK:
            if kept and kept[-1].role == "user":
                kept.pop()  # the question the marker stands under
            continue
        kept.append(message)
    return kept


@task(name="load-history", retries=2, retry_delay_seconds=1)
def load_history(user_id: int, session_id: str, pairs: int = 15, topic_id: int | None = None) -> list[ChatMessage]:
    """The newest `pairs` Q/A pairs of this user's session (of one topic, when given), oldest first,
    as the model reads them: a turn left unanswered is not among them (`dialogue`).

    A consultation reads its topic's messages only: a new topic starts clean, so what was
    said about another crop neither leaks into the answer nor fills the prompt.
    """
    with transaction() as conn:
        rows = conn.execute(
            """
            select role, content from (
                select id, role, content from chat_messages
                 where user_id = %s and session_id = %s
                   and (%s::bigint is null or topic_id = %s)
                 order by id desc limit %s) newest
             order by id
            """,
            (user_id, session_id, topic_id, topic_id, pairs * 2),
        ).fetchall()
    return dialogue([ChatMessage(**row) for row in rows])


@task(name="unanswered-turn", retries=2, retry_delay_seconds=1)
def unanswered_turn(user_id: int, session_id: str) -> Unanswered | None:
    """The session's newest turn when it was left unanswered (its answer is `NO_ANSWER_MARK`), else None."""
    with transaction() as conn:
        rows = conn.execute(
            """
            select id, role, content from chat_messages
             where user_id = %s and session_id = %s
             order by id desc limit 2
            """,
            (user_id, session_id),
        ).fetchall()
    if len(rows) < 2:
        return None
    answer, question = rows
    if answer["role"] != "assistant" or answer["content"] != NO_ANSWER_MARK or question["role"] != "user":
        return None
    return Unanswered(question=question["content"], answer_id=answer["id"])


@task(name="answer-unanswered", retries=2, retry_delay_seconds=1)
def answer_unanswered(user_id: int, turn: Unanswered, answer: str) -> bool:
    """The retried question's answer in place of its marker: the pair becomes the question and its answer.

    False when the marker is gone (the history was cleaned meanwhile): nothing changed.
    """
    with transaction() as conn:
        row = conn.execute(
            "update chat_messages set content = %s where id = %s and user_id = %s and content = %s returning id",
            (answer, turn.answer_id, user_id, NO_ANSWER_MARK),
        ).fetchone()
    return row is not None


@task(name="store-pair", retries=2, retry_delay_seconds=1)
def store_pair(
    user_id: int, session_id: str, question: str, answer: str, keep: int = HISTORY_KEEP
) -> None:
    with transaction() as conn:
        conn.execute(
            "select insert_and_trim_pairs(%s, %s, %s, %s, %s)",
            (user_id, session_id, question, answer, keep),
        )


@task(name="clean-chat", retries=2, retry_delay_seconds=1)
def clean_chat(user_id: int) -> int:
    """Delete this user's history (and only theirs); returns the number of messages removed."""
    with transaction() as conn:
        cursor = conn.execute("delete from chat_messages where user_id = %s", (user_id,))
        return cursor.rowcount
