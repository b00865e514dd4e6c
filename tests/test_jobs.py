"""grove/store/jobs.py against the real Postgres: queued, leased to one worker, released, finished.

Jobs left by other tests share the table, so every claim here names a kind only its test uses.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove.store import jobs, outbox
from grove.store.jobs import Job


def _kind(user_id: int) -> str:
    return f"test-{user_id}"


@pytest.fixture(autouse=True)
def _forget_these_jobs(pg_url: str, user_id: int) -> Iterator[None]:
    """Open jobs would hold their users' later ones; the acknowledgement would be swept to Telegram."""
    yield
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from jobs where kind = %s", (_kind(user_id),))
        conn.execute("delete from outbox where chat_id = %s", (user_id,))


def _job(pg_url: str, job_id: int) -> dict[str, Any]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        row = conn.execute("select status, attempts, worker, result, error, lease_until is not null as leased,"
                           " started_at is not null as started, finished_at is not null as finished, ack_id"
                           " from jobs where id = %s", (job_id,)).fetchone()
    assert row is not None
    return row


def test_enqueue_then_claim_then_finish(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, 900, {"file": "малина.pdf"}, update_id=12345)
    assert _job(pg_url, job_id)["status"] == "queued"
    assert jobs.open_jobs(user_id) == 1

    job = jobs.claim("w1", 60, [kind])
    assert job == Job(id=job_id, kind=kind, user_id=user_id, chat_id=900, update_id=12345,
                      payload={"file": "малина.pdf"}, attempts=1, ack_id=None)
    row = _job(pg_url, job_id)
    assert (row["status"], row["worker"], row["leased"], row["started"]) == ("running", "w1", True, True)
    assert jobs.open_jobs(user_id) == 1
    assert jobs.claim("w2", 60, [kind]) is None

    jobs.finish(job_id, "done", result={"chunks": 12})
    row = _job(pg_url, job_id)
    assert (row["status"], row["result"], row["error"], row["leased"], row["finished"]) == \
        ("done", {"chunks": 12}, None, False, True)
    assert jobs.open_jobs(user_id) == 0
    assert jobs.claim("w2", 60, [kind]) is None


def test_a_failed_job_keeps_its_error(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    assert jobs.claim("w", 60, [kind]) is not None
    jobs.finish(job_id, "failed", error="no text in the file")
    row = _job(pg_url, job_id)
    assert (row["status"], row["error"], row["result"]) == ("failed", "no text in the file", None)
    assert jobs.open_jobs(user_id) == 0


def test_only_the_named_kinds_are_claimed(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    assert jobs.claim("w", 60, [f"{kind}-other"]) is None
    claimed = jobs.claim("w", 60, [f"{kind}-other", kind])
    assert claimed is not None and claimed.id == job_id


def test_a_users_jobs_run_one_at_a_time_in_order(pg_url: str, user_id: int, other_user_id: int) -> None:
    kind = _kind(user_id)
    first = jobs.enqueue(kind, user_id, user_id, {"n": 1})
    second = jobs.enqueue(kind, user_id, user_id, {"n": 2})
    theirs = jobs.enqueue(kind, other_user_id, other_user_id, {"n": 3})
    assert jobs.open_jobs(user_id) == 2

    claimed = [jobs.claim(f"w{n}", 60, [kind]) for n in range(3)]
    assert [j.id if j else None for j in claimed] == [first, theirs, None]  # the user's second job waits
    jobs.finish(first, "done")
    after = jobs.claim("w3", 60, [kind])
    assert after is not None and (after.id, after.payload) == (second, {"n": 2})


def test_two_workers_never_claim_one_job(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    users = [user_id * 100 + n for n in range(24)]  # one job per user: all may run side by side
    queued = [jobs.enqueue(kind, u, u, {"user": u}) for u in users]
    barrier = threading.Barrier(8)
    claimed: list[tuple[str, int]] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        barrier.wait(timeout=30)
        while (job := jobs.claim(name, 60, [kind])) is not None:
            with lock:
                claimed.append((name, job.id))

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(job_id for _, job_id in claimed) == queued
    for name, job_id in claimed:
        row = _job(pg_url, job_id)
        assert (row["worker"], row["attempts"], row["status"]) == (name, 1, "running")


def test_racing_workers_take_only_each_users_first_job(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    users = [user_id * 100 + n for n in range(4)]
    firsts = {u: jobs.enqueue(kind, u, u, {"n": 0}) for u in users}
    for n in (1, 2):
        for u in users:
            jobs.enqueue(kind, u, u, {"n": n})
    barrier = threading.Barrier(8)
    claimed: list[Job] = []

    def worker() -> None:
        barrier.wait(timeout=30)
        if (job := jobs.claim(threading.current_thread().name, 60, [kind])) is not None:
            claimed.append(job)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(job.id for job in claimed) == sorted(firsts.values())  # 8 workers, 4 users: 4 jobs run


def test_a_job_whose_lease_ran_out_is_taken_again(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    first = jobs.claim("dead", 0.3, [kind])
    assert first is not None and first.attempts == 1
    assert jobs.claim("next", 60, [kind]) is None  # still leased

    retaken = None
    deadline = time.monotonic() + 20
    while retaken is None and time.monotonic() < deadline:
        time.sleep(0.2)
        retaken = jobs.claim("next", 60, [kind])
    assert retaken is not None and (retaken.id, retaken.attempts) == (job_id, 2)
    assert _job(pg_url, job_id)["worker"] == "next"
    assert jobs.extend_lease(job_id, "dead", 60) is False  # the old worker learns it lost the job
    assert jobs.extend_lease(job_id, "next", 60) is True


def _until_the_database_clock_passes(pg_url: str, moment: object, timeout: float = 60.0) -> None:
    """Wait until Postgres's own clock (what a claim compares a lease with) is past `moment`."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while not (row := conn.execute("select clock_timestamp() > %s", (moment,)).fetchone()) or not row[0]:
            assert time.monotonic() < deadline, f"the database's clock did not pass {moment}"
            time.sleep(0.05)


def test_an_extended_lease_keeps_the_job(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    assert jobs.claim("w1", 0.3, [kind]) is not None
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("select lease_until from jobs where id = %s", (job_id,)).fetchone()
    assert row is not None and row[0] is not None
    first_lease = row[0]
    assert jobs.extend_lease(job_id, "w1", 600) is True
    _until_the_database_clock_passes(pg_url, first_lease)  # the first lease has run out
    assert jobs.claim("w2", 60, [kind]) is None
    jobs.finish(job_id, "done")
    assert jobs.extend_lease(job_id, "w1", 600) is False


def test_release_gives_the_job_back_at_once(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    assert jobs.claim("w1", 600, [kind]) is not None
    jobs.release(job_id, "w2")  # not w2's: nothing happens
    assert (_job(pg_url, job_id)["status"], _job(pg_url, job_id)["worker"]) == ("running", "w1")
    jobs.release(job_id, "w1")
    row = _job(pg_url, job_id)
    assert (row["status"], row["worker"], row["attempts"], row["leased"]) == ("queued", None, 0, False)
    assert jobs.open_jobs(user_id) == 1
    again = jobs.claim("w2", 600, [kind])
    assert again is not None and (again.id, again.attempts) == (job_id, 1)


def test_set_ack_is_returned_with_the_claim(pg_url: str, user_id: int) -> None:
    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    ack = outbox.add(user_id, {"text": "Файл принят, индексирую…"}, outbox.Source(update_id=user_id))
    jobs.set_ack(job_id, ack)
    assert _job(pg_url, job_id)["ack_id"] == ack
    claimed = jobs.claim("w", 60, [kind])
    assert claimed is not None and claimed.ack_id == ack


def test_a_jobs_ending_is_written_in_one_transaction_and_sent_after_it(
        pg_url: str, user_id: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job returns how it ends, as a turn returns its replies; the worker writes its last writes, its
    reply and its end together, and sends the reply once they are committed — or nothing at all."""
    import grove.app.worker
    from grove.core.messages import Reply
    from nodes.telegram.reply import Sender

    kind = _kind(user_id)
    job_id = jobs.enqueue(kind, user_id, user_id, {})
    job = jobs.claim("w1", 60, [kind])
    assert job is not None
    sent: list[str] = []
    sender = Sender()
    monkeypatch.setattr(sender, "deliver_row", lambda row, done: sent.append(row.payload["text"]))

    def queued() -> int:
        with psycopg.connect(pg_url) as conn:
            row = conn.execute("select count(*) from outbox where chat_id = %s", (user_id,)).fetchone()
        assert row is not None
        return int(row[0])

    def full_disk() -> None:
        outbox.add(user_id, {"text": "не должно остаться"}, outbox.Source(job_id=job_id))  # in the same transaction
        raise RuntimeError("disk full")

    reply = Reply(chat_id=user_id, text="Проиндексировано: малина.pdf")
    with pytest.raises(RuntimeError):
        grove.app.worker.close(job, jobs.Ending(replies=[reply], status="done", writes=full_disk), sender)
    assert _job(pg_url, job_id)["status"] == "running" and queued() == 0 and sent == []

    wrote: list[int] = []
    grove.app.worker.close(job, jobs.Ending(replies=[reply], status="done", result={"chunks": 3},
                                            writes=lambda: wrote.append(job_id)), sender)
    row = _job(pg_url, job_id)
    assert wrote == [job_id] and (row["status"], row["result"], row["finished"]) == ("done", {"chunks": 3}, True)
    assert queued() == 1 and sent == ["Проиндексировано: малина.pdf"]
