"""nodes/store/confirmations.py against the real Postgres: one-time tokens bound to an action, a user and a chat."""

from __future__ import annotations

import threading

import psycopg

from nodes.store.confirmations import VALID_MINUTES, issue, spend, use


def _age(pg_url: str, token: str, minutes: float) -> None:
    with psycopg.connect(pg_url) as conn:
        conn.execute("update confirmations set created_at = now() - make_interval(secs => %s) where token = %s",
                     (minutes * 60, token))


def _used(pg_url: str, token: str) -> bool:
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("select used_at is not null from confirmations where token = %s", (token,)).fetchone()
    assert row is not None
    return bool(row[0])


def test_a_token_is_good_once(pg_url: str, user_id: int) -> None:
    token = issue("clean_base", user_id, 900)
    assert not _used(pg_url, token)
    assert use(token, "clean_base", user_id, 900) == "ok"
    assert _used(pg_url, token)
    assert use(token, "clean_base", user_id, 900) == "used"
    assert spend(token, "clean_base", user_id, 900) == ("used", None)


def test_tokens_are_distinct(pg_url: str, user_id: int) -> None:
    tokens = {issue("clean_base", user_id, 900) for _ in range(5)}
    assert len(tokens) == 5
    assert all(len(t) >= 12 for t in tokens)  # 9 random bytes, url-safe


def test_someone_else_cannot_use_it_and_does_not_spend_it(pg_url: str, user_id: int, other_user_id: int) -> None:
    token = issue("clean_base", user_id, 900)
    assert use(token, "clean_base", other_user_id, 900) == "not_yours"  # another member of the group
    assert use(token, "clean_base", user_id, 901) == "not_yours"  # the same user in another chat
    assert not _used(pg_url, token)
    assert use(token, "clean_base", user_id, 900) == "ok"


def test_unknown_token_or_another_action_is_unknown(pg_url: str, user_id: int) -> None:
    token = issue("clean_base", user_id, 900)
    assert use("forged-token", "clean_base", user_id, 900) == "unknown"
    assert use(token, "index_offer", user_id, 900) == "unknown"
    assert not _used(pg_url, token)
    assert use(token, "clean_base", user_id, 900) == "ok"


def test_a_stale_token_is_expired_and_stays_unused(pg_url: str, user_id: int) -> None:
    fresh = issue("clean_base", user_id, 900)
    stale = issue("clean_base", user_id, 900)
    _age(pg_url, fresh, VALID_MINUTES - 1)
    _age(pg_url, stale, VALID_MINUTES + 1)
    assert use(stale, "clean_base", user_id, 900) == "expired"
    assert not _used(pg_url, stale)
    assert use(stale, "clean_base", user_id, 900) == "expired"
    assert use(fresh, "clean_base", user_id, 900) == "ok"


def test_a_used_token_says_used_even_when_stale(pg_url: str, user_id: int) -> None:
    token = issue("clean_base", user_id, 900)
    assert use(token, "clean_base", user_id, 900) == "ok"
    _age(pg_url, token, VALID_MINUTES + 1)
    assert use(token, "clean_base", user_id, 900) == "used"


def test_spend_hands_back_the_payload_only_when_ok(pg_url: str, user_id: int, other_user_id: int) -> None:
    payload = {"items": [{"file_id": "BQACAgIAAx" + "x" * 80, "name": "малина.pdf"}]}
    token = issue("index_offer", user_id, 900, payload)
    assert spend(token, "index_offer", other_user_id, 900) == ("not_yours", None)
    assert spend(token, "index_offer", user_id, 900) == ("ok", payload)
    assert spend(token, "index_offer", user_id, 900) == ("used", None)

    bare = issue("clean_base", user_id, 900)
    assert spend(bare, "clean_base", user_id, 900) == ("ok", None)


def test_two_presses_at_once_spend_it_once(pg_url: str, user_id: int) -> None:
    token = issue("clean_base", user_id, 900)
    barrier = threading.Barrier(8)
    verdicts: list[str] = []

    def press() -> None:
        barrier.wait(timeout=30)
        verdicts.append(use(token, "clean_base", user_id, 900))

    threads = [threading.Thread(target=press) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(verdicts) == ["ok"] + ["used"] * 7
