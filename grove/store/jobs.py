"""Background jobs in Postgres (ingestion): queued by a turn, claimed by a worker with a lease.

Why a table and a lease: an upload is acknowledged at once and indexed later, possibly by
another process; if that process dies, the job's lease runs out and the next worker takes it
again — nothing is lost and nothing waits for a human. A user's jobs run one at a time, in
the order they were asked for; different users' jobs may run side by side.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from psycopg.types.json import Jsonb

from grove.core.messages import Reply
from grove.store.db import transaction

MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    user_id: int
    chat_id: int
    update_id: int | None
    payload: dict[str, Any]
    attempts: int
    ack_id: int | None


@dataclass
class Ending:
    """How a job ends, returned by the job as a turn returns its replies: the worker writes it, with the
    job's last `writes`, in the one transaction that closes the job, and the replies go out after it
    commits (`grove.app.worker.close`) — a crash never confirms twice or forgets to confirm."""

    replies: list[Reply]
    status: Literal["done", "failed"]
    result: dict[str, Any] | None = None
    error: str | None = None
    writes: Callable[[], None] | None = field(default=None, repr=False)


def enqueue(kind: str, user_id: int, chat_id: int, payload: dict[str, Any], *,
            update_id: int | None = None) -> int:
    with transaction() as conn:
        row = conn.execute(
            "insert into jobs (kind, user_id, chat_id, update_id, payload) values (%s, %s, %s, %s, %s)"
            " returning id", (kind, user_id, chat_id, update_id, Jsonb(payload))).fetchone()
    assert row is not None  # insert … returning: one row
    return int(row["id"])


def set_ack(job_id: int, outbox_id: int) -> None:
    """The reply that acknowledged the job: its message is edited with progress."""
    with transaction() as conn:
        conn.execute("update jobs set ack_id = %s where id = %s", (outbox_id, job_id))


_CLAIM = """
update jobs
   set status = 'running', attempts = attempts + 1, worker = %(worker)s,
       lease_until = now() + make_interval(secs => %(lease)s), started_at = coalesce(started_at, now())
 where id = (
        select j.id from jobs j
         where (j.status = 'queued' or (j.status = 'running' and j.lease_until < now()))
           and (%(kinds)s::text[] is null or j.kind = any(%(kinds)s))
           and not exists (select 1 from jobs o
                            where o.user_id = j.user_id and o.id < j.id
                              and o.status in ('queued', 'running'))
         order by j.id
         for update skip locked
         limit 1)
returning id, kind, user_id, chat_id, update_id, payload, attempts, ack_id
"""


def claim(worker: str, lease_seconds: float, kinds: list[str] | None = None) -> Job | None:
    """The oldest job that is free (or whose worker's lease ran out), now leased to `worker`."""
    with transaction() as conn:
        row = conn.execute(_CLAIM, {"worker": worker, "lease": lease_seconds, "kinds": kinds}).fetchone()
    return _job(row) if row is not None else None


def _job(row: dict[str, Any]) -> Job:
    payload = row["payload"]
    return Job(id=row["id"], kind=row["kind"], user_id=row["user_id"], chat_id=row["chat_id"],
               update_id=row["update_id"], payload=payload if isinstance(payload, dict) else json.loads(payload),
               attempts=row["attempts"], ack_id=row["ack_id"])


_CLAIM_OF_USER = """
update jobs
   set status = 'running', attempts = attempts + 1, worker = %(worker)s,
       lease_until = now() + make_interval(secs => %(lease)s), started_at = coalesce(started_at, now())
 where id = (
        select j.id from jobs j
         where j.user_id = %(user_id)s and j.status in ('queued', 'running')
         order by j.id limit 1)
   and (status = 'queued' or lease_until < now() or worker = %(worker)s)
returning id, kind, user_id, chat_id, update_id, payload, attempts, ack_id
"""


def claim_next_of(user_id: int, worker: str, lease_seconds: float) -> tuple[Job | None, bool]:
    """This user's oldest open job, now leased to `worker` (their lane runs it next).

    Returns (job, busy): no job and `busy` when that job is still leased to a live worker
    (a lane handed over while its old worker finishes): wait for the lease, not past the job.
    """
    with transaction() as conn:
        row = conn.execute(_CLAIM_OF_USER, {"worker": worker, "lease": lease_seconds,
                                            "user_id": user_id}).fetchone()
        if row is None:
            busy = conn.execute("select 1 from jobs where user_id = %s and status in ('queued', 'running')",
                                (user_id,)).fetchone() is not None
            return None, busy
    return _job(row), False


def extend_lease(job_id: int, worker: str, lease_seconds: float) -> bool:
    """Keep the job ours a while longer; False if it is no longer ours (or the store is gone: raises)."""
    with transaction() as conn:
        row = conn.execute(
            "update jobs set lease_until = now() + make_interval(secs => %s)"
            " where id = %s and worker = %s and status = 'running' returning id",
            (lease_seconds, job_id, worker)).fetchone()
    return row is not None


def checkpointed(job_id: int, document: str) -> dict[int, list[float]]:
    """The vectors this job already computed for a document (by chunk position)."""
    with transaction() as conn:
        rows = conn.execute("select position, vector from embedding_checkpoints where job_id = %s and document = %s",
                            (job_id, document)).fetchall()
    return {int(r["position"]): list(r["vector"]) for r in rows}


def checkpoint(job_id: int, document: str, vectors: dict[int, list[float]]) -> None:
    """Keep a batch of computed vectors (committed at once: it is what a restart resumes from)."""
    with transaction() as conn:
        conn.cursor().executemany(
            "insert into embedding_checkpoints (job_id, document, position, vector) values (%s, %s, %s, %s)"
            " on conflict do nothing", [(job_id, document, p, v) for p, v in vectors.items()])


def finish(job_id: int, status: Literal["done", "failed"], *, result: dict[str, Any] | None = None,
           error: str | None = None) -> None:
    with transaction() as conn:
        conn.execute("delete from embedding_checkpoints where job_id = %s", (job_id,))
        conn.execute(
            "update jobs set status = %s, result = %s, error = %s, finished_at = now(), lease_until = null"
            " where id = %s", (status, Jsonb(result) if result is not None else None, error, job_id))


def open_jobs(user_id: int) -> int:
    with transaction() as conn:
        row = conn.execute("select count(*) as n from jobs where user_id = %s and status in ('queued', 'running')",
                           (user_id,)).fetchone()
    assert row is not None  # count(*): one row
    return int(row["n"])


def release(job_id: int, worker: str) -> None:
    """Give a job back (a worker stopping cleanly): the next worker takes it at once, not after the lease."""
    with transaction() as conn:
        conn.execute("update jobs set status = 'queued', lease_until = null, worker = null,"
                     " attempts = greatest(attempts - 1, 0)"
                     " where id = %s and worker = %s and status = 'running'", (job_id, worker))
