"""nodes/store/user_state.py against the real Postgres: the mode upsert, reads, sessions.

(tests/test_store.py already checks one row under racing upserts and the unknown-mode refusal.)
"""

from __future__ import annotations

import psycopg

from nodes.store.user_state import read_user_state, session_of, set_user_mode, start_new_session


def _rows(pg_url: str, user_id: int) -> list[tuple[int | None, str | None, str]]:
    with psycopg.connect(pg_url) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "select chat_id, current_mode, session_id from user_state where user_id = %s", (user_id,))]


def test_set_mode_creates_then_updates_the_one_row(pg_url: str, user_id: int) -> None:
    created = set_user_mode(user_id, 500, "documents")
    assert (created.user_id, created.chat_id, created.current_mode) == (user_id, 500, "documents")
    assert created.session_id

    switched = set_user_mode(user_id, 501, "chat")  # the user now writes from another chat
    assert (switched.chat_id, switched.current_mode, switched.session_id) == (501, "chat", created.session_id)
    assert switched.updated_at >= created.updated_at
    assert _rows(pg_url, user_id) == [(501, "chat", created.session_id)]


def test_read_returns_this_users_row_only(pg_url: str, user_id: int, other_user_id: int) -> None:
    assert read_user_state(user_id) is None
    set_user_mode(other_user_id, other_user_id, "documents")
    assert read_user_state(user_id) is None
    mine = set_user_mode(user_id, user_id, "chat")
    read = read_user_state(user_id)
    assert read == mine
    other = read_user_state(other_user_id)
    assert other is not None and other.current_mode == "documents" and other.session_id != mine.session_id


def test_start_new_session_changes_the_session_and_keeps_the_mode(pg_url: str, user_id: int) -> None:
    before = set_user_mode(user_id, user_id, "chat")
    fresh = start_new_session(user_id, user_id)
    assert fresh != before.session_id
    after = read_user_state(user_id)
    assert after is not None and after.session_id == fresh and after.current_mode == "chat"
    assert start_new_session(user_id, user_id) not in {fresh, before.session_id}
    assert len(_rows(pg_url, user_id)) == 1


def test_start_new_session_creates_a_row_without_a_mode(pg_url: str, user_id: int) -> None:
    session = start_new_session(user_id, 77)
    assert _rows(pg_url, user_id) == [(77, None, session)]
    state = read_user_state(user_id)
    assert state is not None and state.current_mode is None


def test_session_of_is_stable_until_a_new_session(pg_url: str, user_id: int) -> None:
    first = session_of(user_id, 10)
    assert _rows(pg_url, user_id) == [(10, None, first)]  # created without a mode
    assert session_of(user_id, 11) == first
    assert _rows(pg_url, user_id) == [(10, None, first)]  # a known chat is kept
    fresh = start_new_session(user_id, 10)
    assert session_of(user_id, 10) == fresh != first
    assert set_user_mode(user_id, 10, "documents").session_id == fresh
