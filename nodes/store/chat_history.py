"""Chat history (seed 001 §4.2): read the last Q/A pairs, append a pair, clean.

Appending goes through the SQL function `insert_and_trim_pairs`, which trims the
user's history to the newest messages atomically, even with concurrent writers.
"""

from __future__ import annotations

from typing import Literal

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import transaction

HISTORY_KEEP = 30  # messages = 15 Q/A pairs
NO_ANSWER_MARK = "[ответ не получен: сервис ответов был недоступен]"  # stored when the LLM failed


class ChatMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str


@task(name="load-history", retries=2, retry_delay_seconds=1)
def load_history(user_id: int, session_id: str, pairs: int = 15, topic_id: int | None = None) -> list[ChatMessage]:
    """The newest `pairs` Q/A pairs of this user's session (of one topic, when given), oldest first.

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
    return [ChatMessage(**row) for row in rows]


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
