"""One-time confirmations: destructive commands (`/clean_base`) and offers (index a file sent in Чат).

A confirmation button carries a random token bound to the action, the user and the chat
that asked. It is valid once and for `VALID_MINUTES`: a stale keyboard, a press by someone
else in a group, or a forged `callback_data` does nothing. What an offer would do (the items
to index) waits in the token's payload: Telegram's callback data holds 64 bytes, a file id
alone can be longer.
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from psycopg.types.json import Jsonb

from grove.store.db import transaction
from grove.core.observe import task

VALID_MINUTES = 10
Verdict = Literal["ok", "unknown", "used", "expired", "not_yours"]


@task(name="issue-confirmation")
def issue(action: str, user_id: int, chat_id: int, payload: dict[str, Any] | None = None) -> str:
    token = secrets.token_urlsafe(9)
    with transaction() as conn:
        conn.execute("insert into confirmations (token, action, user_id, chat_id, payload)"
                     " values (%s, %s, %s, %s, %s)",
                     (token, action, user_id, chat_id, Jsonb(payload) if payload is not None else None))
    return token


@task(name="use-confirmation")
def use(token: str, action: str, user_id: int, chat_id: int) -> Verdict:
    """Spend the token if it is this user's, for this chat and action, unused and fresh."""
    return spend.fn(token, action, user_id, chat_id)[0]


@task(name="spend-confirmation")
def spend(token: str, action: str, user_id: int, chat_id: int) -> tuple[Verdict, dict[str, Any] | None]:
    """`use`, and the payload the token carried (only when the verdict is "ok")."""
    with transaction() as conn:
        row = conn.execute(
            "select action, user_id, chat_id, used_at, payload,"
            "       created_at > now() - make_interval(mins => %s) as fresh"
            "  from confirmations where token = %s for update", (VALID_MINUTES, token)).fetchone()
        if row is None or row["action"] != action:
            return "unknown", None
        if row["user_id"] != user_id or row["chat_id"] != chat_id:
            return "not_yours", None
        if row["used_at"] is not None:
            return "used", None
        if not row["fresh"]:
            return "expired", None
        conn.execute("update confirmations set used_at = now() where token = %s", (token,))
    return "ok", row["payload"]
