"""Mode switch store (seed 001 §4.1): which branch a user's messages go to.

One row per user in `user_state`, written with an upsert so a double press or
two workers racing still leave exactly one row.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import transaction

Mode = Literal["chat", "documents"]
MODES: tuple[Mode, ...] = ("chat", "documents")


class UserState(BaseModel):
    user_id: int
    chat_id: int | None
    current_mode: Mode | None
    session_id: str
    updated_at: datetime


@task(name="read-user-state", retries=2, retry_delay_seconds=1)
def read_user_state(user_id: int) -> UserState | None:
    """The user's row, or None when they never chose a mode."""
    with transaction() as conn:
        row = conn.execute("select * from user_state where user_id = %s", (user_id,)).fetchone()
    return UserState(**row) if row else None


@task(name="set-user-mode", retries=2, retry_delay_seconds=1)
def set_user_mode(user_id: int, chat_id: int, mode: Mode) -> UserState:
    """Upsert the chosen mode; the session id is kept so history survives a mode switch."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}")
    with transaction() as conn:
        row = conn.execute(
            """
            insert into user_state (user_id, chat_id, current_mode, updated_at)
            values (%s, %s, %s, now())
            on conflict (user_id) do update
               set current_mode = excluded.current_mode,
                   chat_id = excluded.chat_id,
                   updated_at = excluded.updated_at
            returning *
            """,
            (user_id, chat_id, mode),
        ).fetchone()
    assert row is not None
    return UserState(**row)


@task(name="new-session", retries=2, retry_delay_seconds=1)
def start_new_session(user_id: int, chat_id: int) -> str:
    """Give the user a fresh session id (after "clean chat"); creates the row if needed."""
    with transaction() as conn:
        row = conn.execute(
            """
            insert into user_state (user_id, chat_id) values (%s, %s)
            on conflict (user_id) do update
               set session_id = gen_random_uuid()::text, updated_at = now()
            returning session_id
            """,
            (user_id, chat_id),
        ).fetchone()
    assert row is not None
    return str(row["session_id"])


@task(name="session-of", retries=2, retry_delay_seconds=1)
def session_of(user_id: int, chat_id: int) -> str:
    """The user's current session id, creating their row (without a mode) if needed."""
    with transaction() as conn:
        row = conn.execute(
            """
            insert into user_state (user_id, chat_id) values (%s, %s)
            on conflict (user_id) do update set chat_id = coalesce(user_state.chat_id, excluded.chat_id)
            returning session_id
            """,
            (user_id, chat_id),
        ).fetchone()
    assert row is not None
    return str(row["session_id"])
