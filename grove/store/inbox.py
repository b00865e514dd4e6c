"""The inbox: every Telegram update, stored in Postgres before Telegram may consider it delivered.

Polling acknowledges a batch with the next `getUpdates` offset and a webhook with HTTP 200;
both happen only after `store` returned, so an update the process had not finished when it
died is still here on the next start (`unfinished`). `claim` counts attempts: an update that
kept killing its process is given up after `MAX_ATTEMPTS` instead of crashing every start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from psycopg.types.json import Jsonb

from grove.store.db import transaction

MAX_ATTEMPTS = 3
Status = Literal["done", "failed", "skipped"]


@dataclass(frozen=True)
class InboxRow:
    update_id: int
    user_id: int | None
    chat_id: int | None
    payload: dict[str, Any]
    attempts: int
    incoming: dict[str, Any] | None = None  # what the receiver made of it (scale-out)


def store(update_id: int, user_id: int | None, chat_id: int | None, payload: dict[str, Any]) -> bool:
    """Keep an update (idempotent); True when it is new. An update with no user is kept as skipped."""
    status = "pending" if user_id is not None else "skipped"
    with transaction() as conn:
        row = conn.execute(
            "insert into inbox (update_id, user_id, chat_id, payload, status) values (%s, %s, %s, %s, %s)"
            " on conflict (update_id) do nothing returning update_id",
            (update_id, user_id, chat_id, Jsonb(payload), status)).fetchone()
    return row is not None


def claim(update_id: int) -> InboxRow | None:
    """Start (or restart) work on an update; None when it is already finished or unknown."""
    with transaction() as conn:
        row = conn.execute(
            "update inbox set status = 'running', attempts = attempts + 1, started_at = now()"
            " where update_id = %s and status in ('pending', 'running')"
            " returning update_id, user_id, chat_id, payload, attempts", (update_id,)).fetchone()
    return _row(row) if row else None


def release(update_id: int) -> None:
    """Hand an update back unfinished (its turn was cut by a stop): it runs again, and the cut
    attempt does not count towards giving up."""
    with transaction() as conn:
        conn.execute("update inbox set status = 'pending', attempts = greatest(attempts - 1, 0)"
                     " where update_id = %s and status = 'running'", (update_id,))


def set_incoming(update_id: int, incoming: dict[str, Any]) -> None:
    """Keep what the receiver parsed the update into, for a worker on another machine."""
    with transaction() as conn:
        conn.execute("update inbox set incoming = %s where update_id = %s", (Jsonb(incoming), update_id))


def next_of(user_id: int) -> InboxRow | None:
    """This user's oldest unfinished update (what their lane runs next)."""
    with transaction() as conn:
        row = conn.execute(
            "select update_id, user_id, chat_id, payload, attempts, incoming from inbox"
            " where user_id = %s and status in ('pending', 'running') order by update_id limit 1",
            (user_id,)).fetchone()
    return _row(row) if row else None


def finish(update_id: int, status: Status, *, error: str | None = None,
           trace: dict[str, Any] | None = None) -> None:
    """Record how an update ended; inside a unit of work this commits with the turn's writes."""
    with transaction() as conn:
        conn.execute(
            "update inbox set status = %s, finished_at = now(), error = %s, trace = %s"
            " where update_id = %s",
            (status, error, Jsonb(trace) if trace is not None else None, update_id))


def unfinished() -> list[InboxRow]:
    """Updates received but not finished (the process stopped), oldest first per user."""
    with transaction() as conn:
        rows = conn.execute(
            "select update_id, user_id, chat_id, payload, attempts from inbox"
            " where status in ('pending', 'running') order by update_id").fetchall()
    return [_row(r) for r in rows]


def forget_older_than(days: int) -> int:
    """Finished updates are kept for a while (ops may look at them), then deleted."""
    with transaction() as conn:
        result = conn.execute(
            "delete from inbox where status not in ('pending', 'running')"
            " and coalesce(finished_at, received_at) < now() - make_interval(days => %s)", (days,))
    return result.rowcount


def _row(row: dict[str, Any]) -> InboxRow:
    payload = row["payload"]
    return InboxRow(update_id=row["update_id"], user_id=row["user_id"], chat_id=row["chat_id"],
                    payload=payload if isinstance(payload, dict) else json.loads(payload),
                    attempts=row["attempts"], incoming=row.get("incoming"))
