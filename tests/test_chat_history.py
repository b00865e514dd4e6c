"""nodes/store/chat_history.py against the real Postgres: the pair limit, the trim, isolation, topics, clean.

(tests/test_store.py already checks 18 pairs read back as the newest 15, oldest first.)
"""

from __future__ import annotations

from grove.core.settings import get_settings
import psycopg

import pytest

from nodes.store.chat_history import (NO_ANSWER_MARK, ChatMessage, answer_unanswered, clean_chat, dialogue,
                                      is_retry_request, load_history, store_pair, unanswered_turn)
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
    first = open_topic(user_id, "s", "общая консультация", get_settings().topic_idle_minutes)
    log_turn(user_id, "s", first.id, "про малину", "ответ про малину")
    second = open_topic(user_id, "other-session", "общая консультация", get_settings().topic_idle_minutes)  # closes the first
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


# ------------------------------------------------------------------ a turn left unanswered, and its retry

def _pairs(*pairs: tuple[str, str]) -> list[ChatMessage]:
    return [ChatMessage(role=role, content=content)
            for question, answer in pairs for role, content in (("user", question), ("assistant", answer))]


def test_a_failed_turn_is_left_out_of_the_dialogue_whole() -> None:
    history = _pairs(("q1", "a1"), ("Чем подкормить малину?", NO_ANSWER_MARK), ("q3", "a3"))
    assert _contents(dialogue(history)) == ["q1", "a1", "q3", "a3"]
    # the oldest pair cut in half by the history's limit: a lone marker goes too
    assert _contents(dialogue(history[1:])) == ["a1", "q3", "a3"]
    assert _contents(dialogue(history[3:])) == ["q3", "a3"]
    assert dialogue(_pairs(("q", NO_ANSWER_MARK))) == []


def test_the_marker_never_reaches_a_model_from_the_stored_history(pg_url: str, user_id: int) -> None:
    from nodes.answering.chat_prompt import build_messages, local_messages
    from nodes.answering.turn_policy import prepare_turn

    store_pair(user_id, "s", "Когда сажать малину?", "Осенью.")
    store_pair(user_id, "s", "Чем подкормить малину?", NO_ANSWER_MARK)
    history = load_history(user_id, "s")
    assert _contents(history) == ["Когда сажать малину?", "Осенью."]
    store_pair(user_id, "s", "А голубику?", NO_ANSWER_MARK)  # two failures in a row, the newest last
    assert load_history(user_id, "s", pairs=2) == []  # the newest two pairs both failed
    policy = prepare_turn("Чем подкормить малину?", load_history(user_id, "s"), get_settings())
    assert "user_repeats" not in policy.signal_names  # the unanswered question is no repeat
    remote = build_messages("Чем подкормить малину?", load_history(user_id, "s"), policy)
    local, _ = local_messages("Чем подкормить малину?", load_history(user_id, "s"), policy, [], get_settings())
    for messages in (remote, local):
        assert not any(NO_ANSWER_MARK in str(m["content"]) for m in messages)
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]


@pytest.mark.parametrize("text", ["ещё раз", "Еще раз!", "ещё раз, пожалуйста", "Повтори", "повтори ответ",
                                  "Попробуй ещё раз", "попробуйте снова.", "давай ещё раз", "ещё разок?",
                                  "  Повторите, пожалуйста  "])
def test_a_short_retry_request_is_recognised(text: str) -> None:
    assert is_retry_request(text)


@pytest.mark.parametrize("text", ["Ещё раз про малину: чем её подкормить?", "Повтори рецепт варенья",
                                  "раз", "ещё", "Как часто поливать малину?", "",
                                  "ещё раз " + "пожалуйста " * 5])
def test_other_messages_are_not_retry_requests(text: str) -> None:
    assert not is_retry_request(text)


def test_the_apologys_suggestion_is_a_retry_request() -> None:
    import re

    from flows.texts import APOLOGY

    suggested = re.findall(r"«([^»]+)»", APOLOGY)
    assert suggested and all(is_retry_request(s) for s in suggested)


def test_the_newest_unanswered_turn_is_found_and_answered_in_place(pg_url: str, user_id: int) -> None:
    assert unanswered_turn(user_id, "s") is None  # no history at all
    store_pair(user_id, "s", "Когда сажать малину?", "Осенью.")
    assert unanswered_turn(user_id, "s") is None  # the newest turn was answered
    store_pair(user_id, "s", "Чем подкормить малину?", NO_ANSWER_MARK)
    assert unanswered_turn(user_id, "other session") is None
    turn = unanswered_turn(user_id, "s")
    assert turn is not None and turn.question == "Чем подкормить малину?"
    assert answer_unanswered(user_id, turn, "Азотом весной.")
    assert _stored(pg_url, user_id) == [("s", "user", "Когда сажать малину?"), ("s", "assistant", "Осенью."),
                                        ("s", "user", "Чем подкормить малину?"), ("s", "assistant", "Азотом весной.")]
    assert unanswered_turn(user_id, "s") is None
    assert not answer_unanswered(user_id, turn, "второй ответ")  # only a marker is replaced


def test_an_older_unanswered_turn_is_not_retried(pg_url: str, user_id: int, other_user_id: int) -> None:
    store_pair(user_id, "s", "Чем подкормить малину?", NO_ANSWER_MARK)
    store_pair(user_id, "s", "Когда сажать малину?", "Осенью.")
    assert unanswered_turn(user_id, "s") is None
    store_pair(other_user_id, "s", "чужой вопрос", NO_ANSWER_MARK)
    turn = unanswered_turn(other_user_id, "s")
    assert turn is not None and not answer_unanswered(user_id, turn, "не свой ответ")  # another user's row
    clean_chat(other_user_id)
    assert not answer_unanswered(other_user_id, turn, "после очистки")
