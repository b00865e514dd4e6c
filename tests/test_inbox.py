"""grove/store/inbox.py against the real Postgres: every update kept once, claimed, finished, recovered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from grove.store import inbox
from grove.store.inbox import MAX_ATTEMPTS, InboxRow


def _ids(user_id: int, count: int) -> list[int]:
    """Update ids nobody else uses (tests share the inbox)."""
    return [user_id * 1000 + n for n in range(count)]


@pytest.fixture(autouse=True)
def _forget_these_updates(pg_url: str, user_id: int, other_user_id: int) -> Iterator[None]:
    """Left unfinished, these updates would be resumed by the next test that starts a bot."""
    yield
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from inbox where update_id / 1000 = any(%s)", ([user_id, other_user_id],))


def _row(pg_url: str, update_id: int) -> dict[str, Any]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        rows = conn.execute("select user_id, chat_id, payload, status, attempts, error, trace,"
                            " started_at is not null as started, finished_at is not null as finished"
                            " from inbox where update_id = %s", (update_id,)).fetchall()
    assert len(rows) == 1
    return rows[0]


def _mine(ids: list[int]) -> list[InboxRow]:
    return [row for row in inbox.unfinished() if row.update_id in ids]


def test_an_update_is_stored_once(pg_url: str, user_id: int) -> None:
    [update] = _ids(user_id, 1)
    payload = {"update_id": update, "message": {"text": "Привет", "chat": {"id": 5}}}
    assert inbox.store(update, user_id, 5, payload) is True
    assert inbox.store(update, user_id, 5, {"update_id": update, "message": {"text": "другой"}}) is False
    row = _row(pg_url, update)  # exactly one row, the first payload
    assert (row["user_id"], row["chat_id"], row["payload"], row["status"], row["attempts"]) == \
        (user_id, 5, payload, "pending", 0)


def test_an_update_without_a_user_is_kept_as_skipped(pg_url: str, user_id: int) -> None:
    [update] = _ids(user_id, 1)
    assert inbox.store(update, None, None, {"update_id": update, "poll": {}}) is True
    assert _row(pg_url, update)["status"] == "skipped"
    assert inbox.claim(update) is None
    assert _mine([update]) == []


def test_claim_counts_attempts_until_finished(pg_url: str, user_id: int) -> None:
    [update] = _ids(user_id, 1)
    payload = {"update_id": update, "message": {"text": "вопрос"}}
    inbox.store(update, user_id, 7, payload)
    for attempt in range(1, MAX_ATTEMPTS + 2):  # a process died mid-turn each time
        claimed = inbox.claim(update)
        assert claimed == InboxRow(update_id=update, user_id=user_id, chat_id=7, payload=payload, attempts=attempt)
        assert _row(pg_url, update)["status"] == "running"
    assert claimed.attempts > MAX_ATTEMPTS  # what the dispatcher gives up on
    inbox.finish(update, "failed", error="gave up")
    assert inbox.claim(update) is None
    row = _row(pg_url, update)
    assert (row["status"], row["attempts"], row["error"], row["finished"]) == ("failed", MAX_ATTEMPTS + 1, "gave up", True)


def test_finish_records_the_outcome(pg_url: str, user_id: int) -> None:
    done, failed = _ids(user_id, 2)
    for update in (done, failed):
        inbox.store(update, user_id, user_id, {"update_id": update})
        inbox.claim(update)
    inbox.finish(done, "done", trace={"stages": ["route", "answer"]})
    inbox.finish(failed, "failed", error="LLM unavailable")
    assert {k: _row(pg_url, done)[k] for k in ("status", "error", "trace", "started", "finished")} == \
        {"status": "done", "error": None, "trace": {"stages": ["route", "answer"]}, "started": True, "finished": True}
    assert {k: _row(pg_url, failed)[k] for k in ("status", "error", "trace")} == \
        {"status": "failed", "error": "LLM unavailable", "trace": None}
    assert inbox.claim(done) is None and inbox.claim(failed) is None


def test_unfinished_lists_pending_and_running_in_update_order(pg_url: str, user_id: int, other_user_id: int) -> None:
    ids = _ids(user_id, 4)
    theirs = other_user_id * 1000
    for update in reversed(ids):  # stored out of order
        inbox.store(update, user_id, user_id, {"update_id": update})
    inbox.store(theirs, other_user_id, other_user_id, {"update_id": theirs})
    inbox.claim(ids[1])  # running when the process stopped
    inbox.claim(ids[2])
    inbox.finish(ids[2], "done")
    rows = _mine([*ids, theirs])
    assert [(r.update_id, r.attempts) for r in rows] == [(ids[0], 0), (ids[1], 1), (ids[3], 0), (theirs, 0)]
    assert rows[0] == InboxRow(update_id=ids[0], user_id=user_id, chat_id=user_id, payload={"update_id": ids[0]},
                               attempts=0)


def test_unknown_update_is_not_claimed(pg_url: str, user_id: int) -> None:
    [update] = _ids(user_id, 1)
    assert inbox.claim(update) is None


def test_forget_older_than_deletes_only_old_finished_updates(pg_url: str, user_id: int) -> None:
    old_done, new_done, old_pending = _ids(user_id, 3)
    for update in (old_done, new_done, old_pending):
        inbox.store(update, user_id, user_id, {"update_id": update})
    inbox.finish(old_done, "done")
    inbox.finish(new_done, "done")
    with psycopg.connect(pg_url) as conn:
        conn.execute("update inbox set received_at = now() - interval '40 days',"
                     " finished_at = case when status = 'done' then now() - interval '40 days' end"
                     " where update_id = any(%s)", ([old_done, old_pending],))
    assert inbox.forget_older_than(30) >= 1
    with psycopg.connect(pg_url) as conn:
        kept = sorted(r[0] for r in conn.execute("select update_id from inbox where update_id = any(%s)",
                                                 ([old_done, new_done, old_pending],)))
    assert kept == [new_done, old_pending]
