"""One-time confirmations for destructive commands (`/clean_base`).

A confirmation button carries a random token bound to the action, the user and the chat
that asked. It is valid once and for `VALID_MINUTES`: a stale keyboard, a press by someone
else in a group, or a forged `callback_data` does nothing.
"""

from __future__ import annotations

import secrets
from typing import Literal

from grove.db import transaction
from grove.observe import task

VALID_MINUTES = 10
Verdict = Literal["ok", "unknown", "used", "expired", "not_yours"]


@task(name="issue-confirmation")
def issue(action: str, user_id: int, chat_id: int) -> str:
    token = secrets.token_urlsafe(9)
    with transaction() as conn:
        conn.execute("insert into confirmations (token, action, user_id, chat_id) values (%s, %s, %s, %s)",
                     (token, action, user_id, chat_id))
    return token


@task(name="use-confirmation")
def use(token: str, action: str, user_id: int, chat_id: int) -> Verdict:
    """Spend the token if it is this user's, for this chat and action, unused and fresh."""
    with transaction() as conn:
        row = conn.execute(
            "select action, user_id, chat_id, used_at, created_at > now() - make_interval(mins => %s) as fresh"
            "  from confirmations where token = %s for update", (VALID_MINUTES, token)).fetchone()
        if row is None or row["action"] != action:
            return "unknown"
        if row["user_id"] != user_id or row["chat_id"] != chat_id:
            return "not_yours"
        if row["used_at"] is not None:
            return "used"
        if not row["fresh"]:
            return "expired"
        conn.execute("update confirmations set used_at = now() where token = %s", (token,))
    return "ok"
