"""nodes/store/dialogue_metrics.py against the real Postgres: one row per turn, as the turn reported it."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row

from nodes.store.dialogue_metrics import record_turn


def _turn(pg_url: str, turn_id: int) -> dict[str, Any]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        row = conn.execute("select user_id, flow, template, signals, guards, meta from dialogue_turns"
                           " where id = %s", (turn_id,)).fetchone()
    assert row is not None
    return row


def test_record_turn_writes_what_the_turn_did(pg_url: str, user_id: int) -> None:
    turn = record_turn(user_id, "consultation", "answer.md", ["культура: малина", "follow_up"],
                       ["numbers_checked", "sources_block"], {"fragments": 3, "сорт": "Полка"})
    assert _turn(pg_url, turn) == {
        "user_id": user_id, "flow": "consultation", "template": "answer.md",
        "signals": ["культура: малина", "follow_up"], "guards": ["numbers_checked", "sources_block"],
        "meta": {"fragments": 3, "сорт": "Полка"}}


def test_a_turn_without_signals_guards_or_meta_stores_empty_ones(pg_url: str, user_id: int) -> None:
    turn = record_turn(user_id, "chat", "answer.md", [], [])
    assert _turn(pg_url, turn) == {"user_id": user_id, "flow": "chat", "template": "answer.md",
                                   "signals": [], "guards": [], "meta": {}}


def test_every_turn_is_its_own_row(pg_url: str, user_id: int, other_user_id: int) -> None:
    ids = [record_turn(user_id, "chat", "answer.md", [f"s{n}"], []) for n in range(3)]
    record_turn(other_user_id, "chat", "answer.md", ["чужой"], [])
    assert len(set(ids)) == 3 and ids == sorted(ids)
    with psycopg.connect(pg_url) as conn:
        signals = [r[0] for r in conn.execute(
            "select signals from dialogue_turns where user_id = %s order by id", (user_id,))]
    assert signals == [["s0"], ["s1"], ["s2"]]
