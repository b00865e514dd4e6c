"""Lanes in Postgres (scale-out): one holder at a time, closed only when nothing is left, and
handed back when their worker dies or no worker takes them."""

from __future__ import annotations

import threading
import time

import psycopg

from grove.store import inbox, lanes


def store_update(update_id: int, user_id: int) -> None:
    assert inbox.store(update_id, user_id, user_id, {"update_id": update_id})


def until(check, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    """Wait for `check()` to be true; the deadline only bounds a hang."""
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
    return result


class Refusals(threading.Event):
    """A stop switch that counts its waits: `lanes.exclusive` waits on it after each refused try
    at the lane's advisory lock."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        return super().wait(timeout)


def blocked_by(url: str, holder: psycopg.Connection) -> int:
    """How many sessions wait for a lock that `holder`'s transaction holds."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("select count(*) from pg_stat_activity where %s = any(pg_blocking_pids(pid))",
                           (holder.info.backend_pid,)).fetchone()
    return row[0] if row else 0


def test_a_lane_opens_once_and_has_one_holder(store: str, user_id: int) -> None:
    assert lanes.open(user_id, "turns") is True
    assert lanes.open(user_id, "turns") is False  # already open: nobody submits it twice
    assert lanes.claim(user_id, "turns", "w1", 30, None)
    assert not lanes.claim(user_id, "turns", "w2", 30, None)  # held by a live worker
    assert lanes.claim(user_id, "turns", "w1", 30, None)  # its own holder may claim again


def test_a_lane_closes_only_when_nothing_is_left(store: str, user_id: int) -> None:
    update_id = user_id * 10
    store_update(update_id, user_id)
    lanes.open(user_id, "turns")
    assert lanes.claim(user_id, "turns", "w1", 30, None)
    assert lanes.close(user_id, "turns", "w1") is False  # an update waits: the lane stays
    inbox.finish(update_id, "done")
    assert lanes.close(user_id, "turns", "w1") is True
    assert lanes.open(user_id, "turns") is True  # the next update opens a new one


def test_an_update_stored_while_the_lane_closes_is_never_stranded(store: str, user_id: int) -> None:
    """The receiver's open waits for the closing worker's lock, then opens a new lane."""
    lanes.open(user_id, "turns")
    assert lanes.claim(user_id, "turns", "w1", 30, None)
    with psycopg.connect(store) as conn:  # the closing worker holds the lane row
        conn.execute("select 1 from lanes where user_id = %s for update", (user_id,))
        store_update(user_id * 10 + 1, user_id)
        opened: list[bool] = []
        receiver = threading.Thread(target=lambda: opened.append(lanes.open(user_id, "turns")))
        receiver.start()
        until(lambda: blocked_by(store, conn) or opened)  # the receiver's session waits for the row's lock …
        assert not opened  # … and has not opened anything meanwhile
        conn.execute("delete from lanes where user_id = %s", (user_id,))  # the close commits …
    receiver.join(10)
    assert opened == [True]  # … and the receiver opens a new lane for the update it stored


def test_stale_lanes_are_handed_back_once(store: str, user_id: int) -> None:
    lanes.open(user_id, "turns")
    store_update(user_id * 10 + 2, user_id)
    assert lanes.claim(user_id, "turns", "dead-worker", 0, None)  # a lease nobody renews: run out
    first = [lane for lane in lanes.stale(60) if lane.user_id == user_id]
    second = [lane for lane in lanes.stale(60) if lane.user_id == user_id]
    assert [(lane.kind, lane.worker) for lane in first] == [("turns", "dead-worker")]
    assert second == []  # handed back by one sweeper, once
    assert lanes.claim(user_id, "turns", "w2", 30, None)


def test_waiting_work_without_a_lane_gets_one(store: str, user_id: int) -> None:
    """A receiver that died between storing an update and opening its lane: the sweeper opens it."""
    store_update(user_id * 10 + 3, user_id)
    found = [lane for lane in lanes.stale(60) if lane.user_id == user_id]
    assert [(lane.kind, lane.worker) for lane in found] == [("turns", None)]
    assert lanes.open(user_id, "turns") is False  # it is open now, submitted by the sweeper


def test_renew_keeps_a_lane_and_release_gives_it_back(store: str, user_id: int) -> None:
    lanes.open(user_id, "jobs")
    assert lanes.claim(user_id, "jobs", "w1", 0, None)
    assert lanes.renew("w1", 30) >= 1
    assert not [lane for lane in lanes.stale(60) if lane.user_id == user_id]  # renewed: not stale
    assert lanes.release(user_id, "jobs", "w1")
    assert lanes.claim(user_id, "jobs", "w2", 30, None)


def test_a_lane_taken_from_a_slow_worker_runs_each_update_once_and_in_order(store: str, user_id: int) -> None:
    """A worker that is slow, not dead, misses its lease mid-turn and the lane goes to another:
    the other waits for the slow one's turn to end (the lane's advisory lock), then goes on."""
    from grove.app.engine import LaneWorker
    from grove.core.messages import IncomingUpdate

    ran: list[tuple[str, int]] = []
    started, let_go = threading.Event(), threading.Event()

    class Recording(LaneWorker):
        def _turn(self, update: IncomingUpdate, parent: object) -> list:  # type: ignore[override]
            assert update.update_id is not None
            ran.append((self.name, update.update_id))
            if len(ran) == 1:
                started.set()
                let_go.wait(60)  # the slow turn: its lease runs out meanwhile
            inbox.finish(update.update_id, "done")
            return []

    ids = [user_id * 10 + n for n in range(3)]
    for update_id in ids:
        store_update(update_id, user_id)
        inbox.set_incoming(update_id, IncomingUpdate(origin="telegram", update_id=update_id, user_id=user_id,
                                                     chat_id=user_id, text=f"вопрос {update_id}").model_dump(mode="json"))
    lanes.open(user_id, "turns")
    refusals = Refusals()
    slow = Recording(name="slow", lease_seconds=0.1)
    other = Recording(name="other", lease_seconds=60, stop=refusals)
    first = threading.Thread(target=slow.run_lane, args=(user_id, "turns"))
    first.start()
    assert started.wait(30)
    deadline = time.monotonic() + 30
    while not [lane for lane in lanes.stale(60) if lane.user_id == user_id]:  # the sweeper hands it back
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second = threading.Thread(target=other.run_lane, args=(user_id, "turns"))
    second.start()
    while not lanes.held_by(user_id, "turns", "other") and len(ran) == 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    # The other worker holds the lane now, and must still wait: it was refused the lane's lock twice.
    until(lambda: refusals.waits >= 2 or len(ran) > 1)
    assert ran == [("slow", ids[0])]
    let_go.set()
    first.join(30)
    second.join(30)
    assert sorted(update_id for _, update_id in ran) == ids and [u for _, u in ran] == ids  # once each, in order
    assert [row.update_id for row in inbox.unfinished() if row.user_id == user_id] == []
    assert not [lane for lane in lanes.all_lanes() if lane.user_id == user_id]  # closed


def test_exclusive_waits_for_the_holder_and_gives_up_on_stop(store: str, user_id: int) -> None:
    stop = threading.Event()
    with lanes.exclusive(user_id, "jobs", stop) as held:
        assert held
        waiting: list[bool] = []
        other_stop = Refusals()

        def wait_for_it() -> None:
            with lanes.exclusive(user_id, "jobs", other_stop, every=0.05) as got:
                waiting.append(got)

        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        until(lambda: other_stop.waits >= 3 or waiting)  # refused the lock three times …
        assert waiting == []  # … held here: it waits
        other_stop.set()
        waiter.join(10)
        assert waiting == [False]  # stopped before it got the lane
    with lanes.exclusive(user_id, "jobs", stop) as held:
        assert held  # released with the block
