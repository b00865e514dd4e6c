"""Lanes: a user's work of one kind, run by one Prefect background task at a time (scale-out).

With `GROVE_DISPATCH=prefect` Prefect delivers the work; Postgres keeps it and its order. A **lane** is one
user's `turns` or `jobs`: while it is open one task run holds it and takes the user's items until none is
left, so they run one at a time and in order, and a burst costs Prefect one task run. The receiver `open`s
a lane after storing the item, a worker `claim`s it with a lease it `renew`s, `close` ends it under the
lane's row lock only when nothing is left, and `stale` hands back lanes whose worker died or never came.
A lease cannot make a lane run once (a slow worker misses its renewal), so a lane also runs under
`exclusive`, a Postgres advisory lock held on a connection of its own.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from grove.store.db import StoreUnavailable, database_url, transaction

# Where a lane's items wait, and which of their states are unfinished (one line per kind).
ITEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "turns": ("inbox", ("pending", "running")),
    "jobs": ("jobs", ("queued", "running")),
}


def _waiting(kind: str) -> str:
    """`from <table> w where <unfinished>`: a lane's items not finished yet."""
    table, states = ITEMS[kind]
    return f"from {table} w where w.status in ({', '.join(repr(s) for s in states)})"  # registry names only


@dataclass(frozen=True)
class Lane:
    user_id: int
    kind: str
    task_run_id: uuid.UUID | None
    worker: str | None
    opened_at: datetime


def open(user_id: int, kind: str) -> bool:  # noqa: A001 - the lane's verb
    """Open the lane unless it is open; True when this call opened it (the caller submits it).

    The row is locked until the caller's transaction ends, so a worker closing the lane at
    that moment waits and then sees the item just stored.
    """
    with transaction() as conn:
        row = conn.execute(
            "insert into lanes (user_id, kind) values (%s, %s)"
            " on conflict (user_id, kind) do update set kind = excluded.kind"
            " returning (xmax = 0) as opened", (user_id, kind)).fetchone()
    return bool(row and row["opened"])


def submitted(user_id: int, kind: str, task_run_id: uuid.UUID) -> None:
    """The Prefect task run that should take the lane (what ops and the sweeper look at)."""
    with transaction() as conn:
        conn.execute("update lanes set task_run_id = %s where user_id = %s and kind = %s and worker is null",
                     (task_run_id, user_id, kind))


def claim(user_id: int, kind: str, worker: str, lease_seconds: float, task_run_id: uuid.UUID | None) -> bool:
    """Hold the lane for `worker`, unless a live worker holds it already."""
    with transaction() as conn:
        row = conn.execute(
            "update lanes set worker = %(worker)s, task_run_id = coalesce(%(run)s, task_run_id),"
            "       lease_until = now() + make_interval(secs => %(lease)s)"
            " where user_id = %(user_id)s and kind = %(kind)s"
            "   and (worker is null or worker = %(worker)s or lease_until < now())"
            " returning user_id",
            {"worker": worker, "run": task_run_id, "lease": lease_seconds, "user_id": user_id,
             "kind": kind}).fetchone()
    return row is not None


def renew(worker: str, lease_seconds: float) -> int:
    """Extend every lease `worker` holds (its heartbeat); the number of lanes it still holds."""
    with transaction() as conn:
        result = conn.execute(
            "update lanes set lease_until = now() + make_interval(secs => %s) where worker = %s",
            (lease_seconds, worker))
    return result.rowcount


def close(user_id: int, kind: str, worker: str) -> bool:
    """End the lane if nothing of its kind is left; False (lane kept, still ours) otherwise."""
    with transaction() as conn:
        held = conn.execute("select 1 from lanes where user_id = %s and kind = %s and worker = %s for update",
                            (user_id, kind, worker)).fetchone()
        if held is None:
            return True  # not ours any more (handed back after a stall): nothing to close
        # A new statement, so a fresh snapshot: an item stored while we waited for the lock is seen.
        if conn.execute(f"select 1 {_waiting(kind)} and w.user_id = %s", (user_id,)).fetchone() is not None:
            return False
        conn.execute("delete from lanes where user_id = %s and kind = %s", (user_id, kind))
    return True


def release(user_id: int, kind: str, worker: str) -> bool:
    """Give the lane back unfinished (a worker stopping): True when it was ours; resubmit it."""
    with transaction() as conn:
        row = conn.execute(
            "update lanes set worker = null, lease_until = null, task_run_id = null, opened_at = now()"
            " where user_id = %s and kind = %s and worker = %s returning user_id", (user_id, kind, worker)).fetchone()
    return row is not None


def held_by(user_id: int, kind: str, worker: str) -> bool:
    with transaction() as conn:
        return conn.execute("select 1 from lanes where user_id = %s and kind = %s and worker = %s",
                            (user_id, kind, worker)).fetchone() is not None


@contextmanager
def exclusive(user_id: int, kind: str, stop: threading.Event, every: float = 0.5) -> Iterator[bool]:
    """Run a lane alone: True once this process holds the lane's advisory lock (waiting while
    another process still runs an item of it), False when `stop` was set first. The lock lives
    on a connection outside the pool, so it ends with this block or with the process."""
    try:
        conn = psycopg.connect(database_url(), autocommit=True, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise StoreUnavailable(f"Postgres is unavailable: {exc}") from exc
    key = f"grove-lane:{kind}:{user_id}"
    try:
        held = False
        while not held and not stop.is_set():
            row = conn.execute("select pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()
            held = bool(row and row[0])
            if not held:
                stop.wait(every)
        yield held
    finally:
        conn.close()  # the session's advisory lock ends with it


def stale(unclaimed_seconds: float) -> list[Lane]:
    """Lanes to hand to Prefect again, each taken back in the same statement (so one sweeper
    resubmits it): a worker's lease ran out, or no worker took it for `unclaimed_seconds`.
    First opens the lanes of users whose items wait with no lane (a receiver died in between)."""
    with transaction() as conn:
        for kind in ITEMS:
            conn.execute(
                f"insert into lanes (user_id, kind, opened_at) select distinct w.user_id, %s, '-infinity'::timestamptz"
                f" {_waiting(kind)} and w.user_id is not null"
                "   and not exists (select 1 from lanes l where l.user_id = w.user_id and l.kind = %s)"
                " on conflict do nothing", (kind, kind))
        rows = conn.execute(
            "with due as (select user_id, kind, worker, task_run_id from lanes"
            "              where (worker is not null and lease_until < now())"
            "                 or (worker is null and opened_at < now() - make_interval(secs => %s))"
            "              for update skip locked)"
            " update lanes l set worker = null, lease_until = null, task_run_id = null, opened_at = now()"
            "   from due where l.user_id = due.user_id and l.kind = due.kind"
            " returning l.user_id, l.kind, due.worker, due.task_run_id, l.opened_at",
            (unclaimed_seconds,)).fetchall()
    return [_lane(r) for r in rows]


def all_lanes() -> list[Lane]:
    with transaction() as conn:
        return [_lane(r) for r in conn.execute(
            "select user_id, kind, task_run_id, worker, opened_at from lanes order by opened_at").fetchall()]


def _lane(row: dict[str, Any]) -> Lane:
    return Lane(user_id=row["user_id"], kind=row["kind"], task_run_id=row["task_run_id"],
                worker=row["worker"], opened_at=row["opened_at"])

