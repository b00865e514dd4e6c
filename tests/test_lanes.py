"""Lanes in Postgres (scale-out): one holder at a time, closed only when nothing is left, and
handed back when their worker dies or no worker takes them."""

from __future__ import annotations

import threading
import time

import psycopg

from grove.store import inbox, lanes


def store_update(update_id: int, user_id: int) -> None:
    assert inbox.store(update_id, user_id, user_id, {"update_id": update_id})


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
        time.sleep(0.3)
        assert not opened  # waits for the lock
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
