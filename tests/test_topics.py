"""nodes/store/topics.py against the real Postgres: the open topic reused or replaced, closing, the last question."""

from __future__ import annotations

from grove.core.settings import get_settings
import psycopg

from nodes.store.topics import close_topic, close_user_topics, last_question, log_turn, open_topic, set_topic_culture


def _statuses(pg_url: str, user_id: int) -> list[tuple[int, str, str]]:
    with psycopg.connect(pg_url) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "select id, session_id, status from topics where user_id = %s order by id", (user_id,))]


def _idle(pg_url: str, topic_id: int, minutes: int) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute("update topics set updated_at = now() - make_interval(mins => %s) where id = %s",
                     (minutes, topic_id))


def test_an_open_topic_is_reused_in_its_session(pg_url: str, user_id: int) -> None:
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    assert (topic.user_id, topic.session_id, topic.status, topic.category, topic.culture, topic.message_count) == \
        (user_id, "s", "open", "общая консультация", None, 0)
    set_topic_culture(topic.id, "малина")
    log_turn(user_id, "s", topic.id, "вопрос", "ответ")
    again = open_topic(user_id, "s", "другая категория", get_settings().topic_idle_minutes)
    assert again.id == topic.id
    assert (again.category, again.culture, again.message_count) == ("общая консультация", "малина", 2)
    assert _statuses(pg_url, user_id) == [(topic.id, "s", "open")]


def test_a_new_session_closes_the_old_topic(pg_url: str, user_id: int) -> None:
    old = open_topic(user_id, "s1", "общая консультация", get_settings().topic_idle_minutes)
    new = open_topic(user_id, "s2", "общая консультация", get_settings().topic_idle_minutes)
    assert new.id != old.id and new.session_id == "s2"
    assert _statuses(pg_url, user_id) == [(old.id, "s1", "closed"), (new.id, "s2", "open")]


def test_an_idle_topic_closes_and_a_new_one_opens(pg_url: str, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_TOPIC_IDLE_MINUTES="30")
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    _idle(pg_url, topic.id, 29)
    assert open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes).id == topic.id
    _idle(pg_url, topic.id, 31)
    fresh = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    assert fresh.id != topic.id
    assert _statuses(pg_url, user_id) == [(topic.id, "s", "closed"), (fresh.id, "s", "open")]


def test_a_closed_topic_is_not_reused(pg_url: str, user_id: int) -> None:
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    close_topic(topic.id)
    assert _statuses(pg_url, user_id) == [(topic.id, "s", "closed")]
    fresh = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    assert fresh.id != topic.id and fresh.status == "open" and fresh.message_count == 0


def test_last_question_is_the_topics_latest_user_message(pg_url: str, user_id: int) -> None:
    topic = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    assert last_question(topic.id) is None
    log_turn(user_id, "s", topic.id, "Как обрезать малину?", "Осенью.")
    log_turn(user_id, "s", topic.id, "А когда лучше?", "В октябре.")
    log_turn(user_id, "s", None, "вопрос вне темы", "ответ")
    assert last_question(topic.id) == "А когда лучше?"
    other = open_topic(user_id, "s2", "общая консультация", get_settings().topic_idle_minutes)
    assert last_question(other.id) is None


def test_close_user_topics_closes_only_this_users_open_topics(
    pg_url: str, user_id: int, other_user_id: int
) -> None:
    closed_before = open_topic(user_id, "s1", "общая консультация", get_settings().topic_idle_minutes)
    mine = open_topic(user_id, "s2", "общая консультация", get_settings().topic_idle_minutes)  # closes s1's topic
    theirs = open_topic(other_user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    assert close_user_topics(user_id) == 1
    assert _statuses(pg_url, user_id) == [(closed_before.id, "s1", "closed"), (mine.id, "s2", "closed")]
    assert _statuses(pg_url, other_user_id) == [(theirs.id, "s", "open")]
    assert close_user_topics(user_id) == 0
