"""nodes/store/consultation_state.py against the real Postgres: the state row, and a final turn in one transaction."""

from __future__ import annotations

from grove.core.settings import get_settings
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from nodes.store.consultation_state import ConsultationContext, State, clear_state, finish_turn, read_state, save_state
from nodes.store.topics import open_topic


@pytest.fixture(autouse=True)
def _forget_queued_items(pg_url: str, user_id: int) -> Iterator[None]:
    """Pending items would be offered to the admins of later tests."""
    yield
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from moderation_queue where user_id = %s", (user_id,))


def _context(user_id: int, topic_id: int | None = None) -> ConsultationContext:
    return ConsultationContext(category="общая консультация", root_question="Как подкормить малину?",
                               culture="малина", topic_id=topic_id, session_id="s", user_id=user_id)


def _rows(pg_url: str, sql: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def test_no_row_reads_as_no_state(pg_url: str, user_id: int) -> None:
    empty = read_state(user_id)
    assert (empty.user_id, empty.state, empty.context, empty.turns) == (user_id, None, None, 0)


def test_every_state_is_one_the_table_accepts_and_reads_back_as_itself(pg_url: str, user_id: int) -> None:
    """The states are data in one place (`State`); the table's check constraint names the same values,
    and a value outside them is refused by the database, not stored."""
    for state in State:
        save_state(user_id, state, _context(user_id), 1)
        assert read_state(user_id).state is state
    with pytest.raises(psycopg.errors.CheckViolation), psycopg.connect(pg_url) as conn:
        conn.execute("update consultation_state set state = 'waiting_for_nothing' where user_id = %s", (user_id,))


def test_save_then_read_then_clear(pg_url: str, user_id: int, other_user_id: int) -> None:
    save_state(user_id, State.WAITING_VARIETY, _context(user_id), 1)
    saved = read_state(user_id)
    assert (saved.state, saved.turns, saved.context) == ("waiting_variety_clarification", 1, _context(user_id))
    assert saved.updated_at is not None
    assert read_state(other_user_id).state is None

    save_state(user_id, State.WAITING_CLARIFICATION, _context(user_id).model_copy(update={"culture": "ежевика"}), 2)
    moved = read_state(user_id)
    assert (moved.state, moved.turns) == ("waiting_clarification_answer", 2)
    assert moved.context is not None and moved.context.culture == "ежевика"
    assert len(_rows(pg_url, "select 1 from consultation_state where user_id = %s", user_id)) == 1

    clear_state(user_id)
    assert read_state(user_id).state is None
    assert _rows(pg_url, "select 1 from consultation_state where user_id = %s", user_id) == []


def test_clear_leaves_other_users_alone(pg_url: str, user_id: int, other_user_id: int) -> None:
    save_state(user_id, State.WAITING_VARIETY, _context(user_id), 1)
    save_state(other_user_id, State.WAITING_CLARIFICATION, _context(other_user_id), 3)
    clear_state(user_id)
    assert read_state(user_id).state is None
    kept = read_state(other_user_id)
    assert (kept.state, kept.turns) == ("waiting_clarification_answer", 3)


def test_finish_turn_clears_logs_and_queues_together(pg_url: str, user_id: int) -> None:
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    save_state(user_id, State.WAITING_CLARIFICATION, _context(user_id, topic.id), 1)
    item = finish_turn(user_id, "s", topic.id, "Сорт Полка", "Подкормите азотом.\n\nИнформация взята из: …",
                       "малина", "общая консультация", queue=True,
                       queued_question="Как подкормить малину? Сорт Полка", queued_answer="Подкормите азотом.")

    assert read_state(user_id).state is None
    assert _rows(pg_url, "select topic_id, role, content from chat_messages where user_id = %s order by id",
                 user_id) == [
        {"topic_id": topic.id, "role": "user", "content": "Сорт Полка"},
        {"topic_id": topic.id, "role": "assistant", "content": "Подкормите азотом.\n\nИнформация взята из: …"}]
    assert _rows(pg_url, "select message_count from topics where id = %s", topic.id) == [{"message_count": 2}]
    assert item is not None
    assert _rows(pg_url, "select id, user_id, topic_id, question, answer, culture, category_guess, status"
                         " from moderation_queue where user_id = %s", user_id) == [
        {"id": item, "user_id": user_id, "topic_id": topic.id, "question": "Как подкормить малину? Сорт Полка",
         "answer": "Подкормите азотом.", "culture": "малина", "category_guess": "общая консультация",
         "status": "pending"}]


def test_finish_turn_queues_the_shown_pair_when_no_other_is_given(pg_url: str, user_id: int) -> None:
    item = finish_turn(user_id, "s", None, "вопрос", "ответ", None, None, queue=True)
    assert _rows(pg_url, "select id, question, answer, topic_id from moderation_queue where user_id = %s",
                 user_id) == [{"id": item, "question": "вопрос", "answer": "ответ", "topic_id": None}]


def test_finish_turn_without_queueing_only_clears_and_logs(pg_url: str, user_id: int) -> None:
    save_state(user_id, State.WAITING_VARIETY, _context(user_id), 1)
    assert finish_turn(user_id, "s", None, "вопрос", "ответ", "малина", None, queue=False) is None
    assert read_state(user_id).state is None
    assert [r["content"] for r in _rows(pg_url, "select content from chat_messages where user_id = %s order by id",
                                        user_id)] == ["вопрос", "ответ"]
    assert _rows(pg_url, "select 1 from moderation_queue where user_id = %s", user_id) == []


def test_finish_turn_that_fails_leaves_nothing_behind(pg_url: str, user_id: int) -> None:
    """The queue write fails after the state was cleared and the pair logged: all of it rolls back."""
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    save_state(user_id, State.WAITING_CLARIFICATION, _context(user_id, topic.id), 1)
    with pytest.raises(psycopg.DataError):  # Postgres text cannot hold NUL; only the queue stores the culture
        finish_turn.fn(user_id, "s", topic.id, "вопрос", "ответ", "мали\x00на", None, queue=True)
    assert read_state(user_id).state == "waiting_clarification_answer"
    assert _rows(pg_url, "select 1 from chat_messages where user_id = %s", user_id) == []
    assert _rows(pg_url, "select message_count from topics where id = %s", topic.id) == [{"message_count": 0}]
    assert _rows(pg_url, "select 1 from moderation_queue where user_id = %s", user_id) == []
