"""Conversation topics (seed 000 "Управление контекстом"): the open topic and its culture.

A topic is one line of questions about one culture. It stays open while the
user keeps asking; it closes after `topic_idle_minutes` of silence, on "clean
chat", or when a question names another crop. Follow-up questions in an open
topic keep its culture instead of being classified again.
"""

from __future__ import annotations

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import Connection, transaction


class Topic(BaseModel):
    id: int
    user_id: int
    session_id: str
    status: str
    category: str | None
    culture: str | None
    message_count: int


@task(name="open-topic", retries=2, retry_delay_seconds=1)
def open_topic(user_id: int, session_id: str, category: str, idle_minutes: int) -> Topic:
    """The user's open topic in this session, or a new one when none is open (one idle for `idle_minutes`,
    the settings' `topic_idle_minutes`, closes)."""
    idle = idle_minutes
    with transaction() as conn:
        conn.execute("select pg_advisory_xact_lock(hashtextextended('grove.topics:' || %s::text, 0))",
                     (user_id,))
        conn.execute(
            "update topics set status = 'closed', updated_at = now()"
            " where user_id = %s and status = 'open'"
            "   and (session_id <> %s or updated_at < now() - make_interval(mins => %s))",
            (user_id, session_id, idle))
        row = conn.execute(
            "select * from topics where user_id = %s and session_id = %s and status = 'open'"
            " order by id desc limit 1", (user_id, session_id)).fetchone()
        if row is None:
            row = conn.execute(
                "insert into topics (user_id, session_id, category) values (%s, %s, %s) returning *",
                (user_id, session_id, category)).fetchone()
    return Topic.model_validate(row)


@task(name="close-topic", retries=2, retry_delay_seconds=1)
def close_topic(topic_id: int) -> None:
    with transaction() as conn:
        conn.execute("update topics set status = 'closed', updated_at = now() where id = %s", (topic_id,))


@task(name="close-user-topics", retries=2, retry_delay_seconds=1)
def close_user_topics(user_id: int) -> int:
    with transaction() as conn:
        return conn.execute("update topics set status = 'closed', updated_at = now()"
                            " where user_id = %s and status = 'open'", (user_id,)).rowcount


@task(name="set-topic-culture", retries=2, retry_delay_seconds=1)
def set_topic_culture(topic_id: int, culture: str) -> None:
    with transaction() as conn:
        conn.execute("update topics set culture = %s, updated_at = now() where id = %s", (culture, topic_id))


@task(name="log-turn", retries=2, retry_delay_seconds=1)
def log_turn(user_id: int, session_id: str, topic_id: int | None, question: str, answer: str,
             keep: int = 30) -> None:
    """The Q/A pair into the chat history (trimmed) and the topic's message count, atomically."""
    with transaction() as conn:
        append_pair(conn, user_id, session_id, topic_id, question, answer, keep)


def append_pair(conn: Connection, user_id: int, session_id: str, topic_id: int | None,
                question: str, answer: str, keep: int) -> None:
    """Inside the caller's transaction: the pair into the trimmed history, the topic's count up by 2."""
    conn.execute("select insert_and_trim_pairs(%s, %s, %s, %s, %s, %s)",
                 (user_id, session_id, question, answer, keep, topic_id))
    if topic_id is not None:
        conn.execute("update topics set message_count = message_count + 2, updated_at = now()"
                     " where id = %s", (topic_id,))


@task(name="topic-last-question", retries=2, retry_delay_seconds=1)
def last_question(topic_id: int) -> str | None:
    """The topic's latest user message: a follow-up like «а когда лучше?» is searched with it."""
    with transaction() as conn:
        row = conn.execute("select content from chat_messages where topic_id = %s and role = 'user'"
                           " order by id desc limit 1", (topic_id,)).fetchone()
    return row["content"] if row else None
