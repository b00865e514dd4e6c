"""The outbox: replies written with the turn that made them, delivered after it commits.

A turn's replies and its other writes (history, state, the inbox mark) commit in one transaction, so a
crash either loses the whole turn (it runs again from the inbox) or keeps all of it (only delivery is
left, and a reply marked sent is never sent again). Only a crash between Telegram accepting a message and
the mark being written sends that one message twice. Delivery holds an advisory lock on the row, so the
bot and a sweeping worker never send one reply twice, and records each piece of a split reply as it goes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from psycopg.types.json import Jsonb

from grove.store.db import get_pool, transaction, unit_of_work

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    """Whose replies these are: an update's turn or a background job."""

    update_id: int | None = None
    job_id: int | None = None


@dataclass(frozen=True)
class OutboxRow:
    id: int
    chat_id: int
    payload: dict[str, Any]
    edit_message_id: int | None
    pieces_sent: int


EDIT_WAIT_SECONDS = 30.0
"""How long an edit waits for the reply it changes while another process is sending that one."""


class Undeliverable(Exception):
    """Telegram refused the reply for good (chat gone, bot blocked): it is not retried."""


class Sender(Protocol):
    """Sends one row; calls `sent(message_id)` after each piece, starting at `row.pieces_sent`."""

    def __call__(self, row: OutboxRow, sent: Callable[[int], None]) -> None: ...


@contextmanager
def committed(source: Source | None, sender: Sender) -> Iterator[None]:
    """A turn's writes and its replies in one transaction; the replies sent once it commits.

    The one place the order *commit, then deliver* is written: an update's turn, a failed turn's
    apology, a job's confirmation and a job's failure all go through it. When the block raises,
    nothing was committed and nothing is sent. The block adds its replies with `source` (`add`), the
    one `send_reply` is handed. `source` None (the console, an update outside the inbox): only the
    unit of work, and the caller says its replies after it.
    """
    if source is None:
        with unit_of_work():
            yield
        return
    with unit_of_work():
        yield
    try:
        ids = unsent(source)
    except Exception as exc:  # noqa: BLE001 - committed: the sweep delivers once the store is back
        log.warning("replies of %s kept for the sweep: %s", source, exc)
        return
    deliver_or_keep(ids, sender)


def deliver_or_keep(ids: list[int], sender: Sender) -> int:
    """Send these rows now; a transient failure keeps them for the sweep (logged, not raised)."""
    if not ids:
        return 0
    try:
        return deliver(ids, sender)
    except Exception as exc:  # noqa: BLE001 - undelivered rows stay in the outbox for the sweep
        log.warning("replies %s not delivered yet: %s", ids, exc)
        return 0


def add(chat_id: int, payload: dict[str, Any], source: Source, *, edit_of: int | None = None) -> int:
    """Queue one reply of `source` (inside its unit of work); returns its outbox id."""
    with transaction() as conn:
        row = conn.execute(
            "insert into outbox (update_id, job_id, chat_id, payload, edit_of)"
            " values (%s, %s, %s, %s, %s) returning id",
            (source.update_id, source.job_id, chat_id, Jsonb(payload), edit_of)).fetchone()
    assert row is not None  # insert … returning
    return int(row["id"])


def message_id_of(outbox_id: int) -> int | None:
    """The Telegram message a delivered reply became (its first piece), if delivered."""
    with transaction() as conn:
        row = conn.execute("select message_ids from outbox where id = %s", (outbox_id,)).fetchone()
    return int(row["message_ids"][0]) if row and row["message_ids"] else None


def unsent(source: Source | None = None, *, chat_id: int | None = None) -> list[int]:
    """Ids of replies not yet delivered: of one source, of one chat, or all, oldest first."""
    clauses, params = ["sent_at is null"], []
    if source is not None and source.update_id is not None:
        clauses.append("update_id = %s")
        params.append(source.update_id)
    if source is not None and source.job_id is not None:
        clauses.append("job_id = %s")
        params.append(source.job_id)
    if chat_id is not None:
        clauses.append("chat_id = %s")
        params.append(chat_id)
    with transaction() as conn:
        rows = conn.execute(f"select id from outbox where {' and '.join(clauses)} order by id",
                            params).fetchall()
    return [int(r["id"]) for r in rows]


def deliver(ids: list[int], sender: Sender) -> int:
    """Send these replies in order; returns how many were delivered now.

    A reply another process is sending is skipped (it holds the row's lock). A transient
    failure leaves the row for a later sweep; `Undeliverable` marks it done with the reason.
    """
    delivered = 0
    for outbox_id in ids:
        if _deliver_one(outbox_id, sender):
            delivered += 1
    return delivered


def _read(conn: Any, outbox_id: int) -> dict[str, Any] | None:
    """A row as delivery needs it, with the message it edits (if that one is delivered)."""
    row: dict[str, Any] | None = conn.execute(
        "select o.id, o.chat_id, o.payload, o.pieces_sent, o.sent_at, o.edit_of,"
        "       e.message_ids[1] as edit_message_id, e.sent_at is not null as edited_sent"
        "  from outbox o left join outbox e on e.id = o.edit_of where o.id = %s",
        (outbox_id,)).fetchone()
    return row


def _deliver_first(conn: Any, edited: int, sender: Sender) -> None:
    """The reply an edit changes goes out before the edit, so the edit has its message to change.

    A job's result edits its acknowledgement, and a quick job ends while the turn that acknowledged
    it is still sending that: sent first, the result became a message of its own and the
    acknowledgement stayed «Принял…» above it. The reply is sent here when nobody is sending it
    (a failure then keeps both for the sweep, which goes in order), or waited for while another
    process does, up to `EDIT_WAIT_SECONDS`; after that the edit goes as a new message.
    """
    deadline = time.monotonic() + EDIT_WAIT_SECONDS
    while not _deliver_one(edited, sender):
        done = conn.execute("select sent_at is not null as sent from outbox where id = %s", (edited,)).fetchone()
        if done is None or done["sent"] or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def _deliver_one(outbox_id: int, sender: Sender) -> bool:
    lock = "select pg_try_advisory_lock(hashtextextended('grove.store.outbox:' || %s::text, 0)) as got"
    unlock = "select pg_advisory_unlock(hashtextextended('grove.store.outbox:' || %s::text, 0))"
    with get_pool().connection() as conn:
        conn.autocommit = True
        try:
            locked = conn.execute(lock, (outbox_id,)).fetchone()
            if locked is None or not locked["got"]:
                return False
            try:
                row = _read(conn, outbox_id)
                if row is None or row["sent_at"] is not None:
                    return False
                if row["edit_of"] is not None and not row["edited_sent"]:
                    _deliver_first(conn, row["edit_of"], sender)
                    row = _read(conn, outbox_id)
                    assert row is not None  # we hold its lock: nobody else sent or removed it

                def sent(message_id: int) -> None:
                    conn.execute("update outbox set pieces_sent = pieces_sent + 1,"
                                 " message_ids = message_ids || %s::bigint where id = %s",
                                 (message_id, outbox_id))

                item = OutboxRow(id=row["id"], chat_id=row["chat_id"], payload=row["payload"],
                                 edit_message_id=row["edit_message_id"], pieces_sent=row["pieces_sent"])
                try:
                    sender(item, sent)
                except Undeliverable as exc:
                    log.warning("reply %s cannot be delivered: %s", outbox_id, exc)
                    conn.execute("update outbox set sent_at = now(), error = %s where id = %s",
                                 (str(exc)[:500], outbox_id))
                    return False
                except Exception as exc:
                    log.warning("reply %s not delivered yet: %s", outbox_id, exc)
                    conn.execute("update outbox set error = %s where id = %s", (str(exc)[:500], outbox_id))
                    raise
                conn.execute("update outbox set sent_at = now(), error = null where id = %s", (outbox_id,))
                return True
            finally:
                conn.execute(unlock, (outbox_id,))
        finally:
            conn.autocommit = False
