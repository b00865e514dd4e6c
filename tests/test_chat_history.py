"""nodes/store/chat_history.py against the real Postgres: the pair limit, the trim, isolation, topics, clean.

(tests/test_store.py already checks 18 pairs read back as the newest 15, oldest first.)
"""

from __future__ import annotations

import psycopg

from nodes.store.chat_history import ChatMessage, clean_chat, load_history, store_pair
from nodes.store.topics import log_turn, open_topic


def _contents(history: list[ChatMessage]) -> list[str]:
    return [m.content for m in history]


def _stored(pg_url: str, user_id: int) -> list[tuple[str, str, str]]:
    with psycopg.connect(pg_url) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "select session_id, role, content from chat_messages where user_id = %s order by id", (user_id,))]


def test_pairs_limits_the_history_to_the_newest_pairs(pg_url: str, user_id: int) -> None:
    for n in range(5):
        store_pair(user_id, "s", f"q{n}", f"a{n}")
    history = load_history(user_id, "s", pairs=2)
    assert [(m.role, m.content) for m in history] == [
        ("user", "q3"), ("assistant", "a3"), ("user", "q4"), ("assistant", "a4")]
    assert _contents(load_history(user_id, "s", pairs=1)) == ["q4", "a4"]
    assert len(load_history(user_id, "s")) == 10  # the default (15 pairs) holds all five


def test_a_pair_is_trimmed_to_the_size_it_is_stored_with(pg_url: str, user_id: int) -> None:
    for n in range(5):
        store_pair(user_id, "s", f"q{n}", f"a{n}", keep=6)
    assert _stored(pg_url, user_id) == [("s", "user", "q2"), ("s", "assistant", "a2"),
                                        ("s", "user", "q3"), ("s", "assistant", "a3"),
                                        ("s", "user", "q4"), ("s", "assistant", "a4")]
    assert _contents(load_history(user_id, "s")) == ["q2", "a2", "q3", "a3", "q4", "a4"]


def test_the_trim_counts_the_users_whole_history_not_one_session(pg_url: str, user_id: int) -> None:
    store_pair(user_id, "old", "old q", "old a", keep=4)
    store_pair(user_id, "new", "q1", "a1", keep=4)
    store_pair(user_id, "new", "q2", "a2", keep=4)
    assert load_history(user_id, "old") == []
    assert _contents(load_history(user_id, "new")) == ["q1", "a1", "q2", "a2"]


def test_another_users_or_sessions_history_is_never_returned(
    pg_url: str, user_id: int, other_user_id: int
) -> None:
    store_pair(user_id, "shared-session-name", "мой вопрос", "мой ответ")
    store_pair(other_user_id, "shared-session-name", "чужой вопрос", "чужой ответ")
    store_pair(user_id, "earlier-session", "старый вопрос", "старый ответ")

    assert _contents(load_history(user_id, "shared-session-name")) == ["мой вопрос", "мой ответ"]
    assert _contents(load_history(other_user_id, "shared-session-name")) == ["чужой вопрос", "чужой ответ"]
    assert _contents(load_history(user_id, "earlier-session")) == ["старый вопрос", "старый ответ"]
    assert load_history(other_user_id, "earlier-session") == []


def test_a_topic_reads_only_its_own_messages(pg_url: str, user_id: int) -> None:
    first = open_topic(user_id, "s", "общая консультация")
    log_turn(user_id, "s", first.id, "про малину", "ответ про малину")
    second = open_topic(user_id, "other-session", "общая консультация")  # closes the first
    log_turn(user_id, "s", second.id, "про клубнику", "ответ про клубнику")
    store_pair(user_id, "s", "без темы", "ответ без темы")

    assert _contents(load_history(user_id, "s", topic_id=first.id)) == ["про малину", "ответ про малину"]
    assert _contents(load_history(user_id, "s", topic_id=second.id)) == ["про клубнику", "ответ про клубнику"]
    assert _contents(load_history(user_id, "s")) == [
        "про малину", "ответ про малину", "про клубнику", "ответ про клубнику", "без темы", "ответ без темы"]
    assert _contents(load_history(user_id, "s", pairs=1, topic_id=first.id)) == ["про малину", "ответ про малину"]


def test_clean_chat_removes_every_session_of_the_user_and_nobody_elses(
    pg_url: str, user_id: int, other_user_id: int
) -> None:
    store_pair(user_id, "a", "q1", "a1")
    store_pair(user_id, "b", "q2", "a2")
    store_pair(other_user_id, "a", "чужой", "чужой ответ")

    assert clean_chat(user_id) == 4
    assert _stored(pg_url, user_id) == []
    assert clean_chat(user_id) == 0
    assert _stored(pg_url, other_user_id) == [("a", "user", "чужой"), ("a", "assistant", "чужой ответ")]
