"""grove/store/db.py: a transaction commits or rolls back; a unit of work makes every transaction of a turn a
savepoint of one transaction, committed or rolled back together; URLs in logs hide the password.

The database tests write outbox rows of a chat only they use and remove them afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import psycopg
import pytest

from grove.core.settings import get_settings
from grove.store.db import (
    StoreUnavailable,
    database_url,
    list_migrations,
    redact,
    transaction,
    unit_of_work,
)

# ------------------------------------------------------------------------------------------ no database


@pytest.mark.parametrize(("url", "expected"), [
    ("postgresql://grove:s3cret@localhost:5432/grove", "user=grove password=*** dbname=grove host=localhost port=5432"),
    ("host=db port=5433 user=u password=p4ss dbname=x", "user=u password=*** dbname=x host=db port=5433"),
    ("postgresql://localhost/grove?password=qwerty&sslmode=require", "password=*** dbname=grove host=localhost sslmode=require"),
    ("postgresql://grove@localhost/grove", "user=grove dbname=grove host=localhost"),  # nothing to hide
    ("host='unterminated", "<unparseable url>"),
])
def test_redact_hides_the_password(url: str, expected: str) -> None:
    assert redact(url) == expected
    for secret in ("s3cret", "p4ss", "qwerty"):
        assert secret not in redact(url)


def test_no_database_url_is_a_clear_store_unavailable(env) -> None:  # type: ignore[no-untyped-def]
    env(DATABASE_URL="")
    with pytest.raises(StoreUnavailable, match=r"DATABASE_URL is not set.*grove up"):
        database_url()
    with pytest.raises(StoreUnavailable), transaction():
        pass


def test_migrations_are_listed_in_version_order(tmp_path: Path) -> None:
    for name in ("20260102000000_second.sql", "20260101000000_first_one.sql", "README.md"):
        (tmp_path / name).write_text("select 1;", encoding="utf-8")
    found = list_migrations(tmp_path)
    assert [(m.version, m.name, m.sql) for m in found] == [("20260101000000", "first_one", "select 1;"),
                                                           ("20260102000000", "second", "select 1;")]
    (tmp_path / "draft_third.sql").write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match=r"draft_third\.sql does not start with a numeric version"):
        list_migrations(tmp_path)


# ------------------------------------------------------------------------------------------ database


@pytest.fixture
def chat(pg_url: str, user_id: int) -> Iterator[int]:
    """A chat id only this test writes outbox rows for; its rows are deleted afterwards."""
    yield user_id
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from outbox where chat_id = %s", (user_id,))


def insert(text: str, chat: int) -> None:
    with transaction() as conn:
        conn.execute("insert into outbox (chat_id, payload) values (%s, jsonb_build_object('text', %s::text))",
                     (chat, text))


def stored(pg_url: str, chat: int) -> list[str]:
    """What another connection sees: committed rows only."""
    with psycopg.connect(pg_url) as conn:
        return [r[0] for r in conn.execute("select payload->>'text' from outbox where chat_id = %s order by id",
                                           (chat,)).fetchall()]


def test_a_transaction_commits_when_its_block_ends(pg_url: str, chat: int) -> None:
    with transaction() as conn:
        conn.execute("insert into outbox (chat_id, payload) values (%s, '{\"text\": \"один\"}')", (chat,))
        assert stored(pg_url, chat) == []  # not yet visible to others
    assert stored(pg_url, chat) == ["один"]


def test_a_transaction_rolls_back_on_error_and_the_error_goes_on(pg_url: str, chat: int) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction() as conn:
        conn.execute("insert into outbox (chat_id, payload) values (%s, '{}')", (chat,))
        raise Boom
    assert stored(pg_url, chat) == []
    # An SQL error is not turned into StoreUnavailable.
    with pytest.raises(psycopg.errors.UndefinedTable), transaction() as conn:
        conn.execute("select * from no_such_table_here")
    insert("после ошибки", chat)  # the pool's connection is usable again
    assert stored(pg_url, chat) == ["после ошибки"]


def test_a_unit_of_work_is_one_transaction_committed_at_its_end(pg_url: str, chat: int) -> None:
    with unit_of_work() as unit:
        assert not unit.started  # no connection is taken before the first transaction
        with transaction() as first:
            first_tx = first.execute("select txid_current() as tx").fetchone()
        insert("один", chat)
        with transaction() as second:
            second_tx = second.execute("select txid_current() as tx").fetchone()
        assert first is second and first_tx == second_tx and unit.started
        with unit_of_work() as nested:  # a nested unit joins the outer one
            assert nested is unit
            insert("два", chat)
        assert stored(pg_url, chat) == []  # the inner blocks ended, but nothing is committed yet
    assert stored(pg_url, chat) == ["один", "два"]


def test_an_error_rolls_back_the_whole_unit(pg_url: str, chat: int) -> None:
    with pytest.raises(RuntimeError, match="the turn failed"), unit_of_work():
        insert("история", chat)
        with unit_of_work():
            insert("ответ", chat)
        raise RuntimeError("the turn failed")
    assert stored(pg_url, chat) == []


def test_a_failed_transaction_caught_inside_the_unit_undoes_only_its_savepoint(pg_url: str, chat: int) -> None:
    with unit_of_work():
        insert("до", chat)
        with pytest.raises(ValueError), transaction() as conn:
            conn.execute("insert into outbox (chat_id, payload) values (%s, '{\"text\": \"внутри\"}')", (chat,))
            raise ValueError("this step failed")
        insert("после", chat)
    assert stored(pg_url, chat) == ["до", "после"]


def test_another_thread_inside_a_unit_has_its_own_transaction(pg_url: str, chat: int) -> None:
    with pytest.raises(RuntimeError), unit_of_work():
        insert("в ходе", chat)
        branch = threading.Thread(target=insert, args=("ветка", chat))
        branch.start()
        branch.join(10)
        assert stored(pg_url, chat) == ["ветка"]  # committed on its own, at once
        raise RuntimeError("the turn failed")
    assert stored(pg_url, chat) == ["ветка"]


def test_a_connection_dropped_while_idle_is_never_handed_out(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool asks a connection that sat idle whether Postgres still holds it; one back a moment
    ago is handed out as it is (the check is a round trip per transaction). A full pool of dropped
    connections is found at the first failed check, not one by one within the pool's timeout."""
    from psycopg_pool import ConnectionPool

    from grove.store import db

    asked: list[int] = []
    real_check = ConnectionPool.check_connection
    monkeypatch.setattr(ConnectionPool, "check_connection",
                        staticmethod(lambda conn: (asked.append(conn.info.backend_pid), real_check(conn))[1]))
    with ExitStack() as stack:  # the pool at its largest: Postgres restarting finds it full
        held = [stack.enter_context(transaction()) for _ in range(get_settings().db_pool_max)]
    deadline = time.monotonic() + 60  # the pool takes them back on its own worker (it resets them)
    while db.get_pool().get_stats().get("pool_available", 0) < len(held) and time.monotonic() < deadline:
        time.sleep(0.01)
    asked.clear()  # new ones were asked once, before they were first handed out
    db._check(held[0])  # back a moment ago
    assert asked == []
    with psycopg.connect(pg_url, autocommit=True) as admin:  # Postgres drops the pool's connections …
        pids = [conn.info.backend_pid for conn in list(db._returned)]
        admin.execute("select pg_terminate_backend(pid) from unnest(%s::int[]) as pid", (pids,))
    with db._returned_lock:  # … while they sat idle longer than the pool trusts them
        for conn in list(db._returned):
            db._returned[conn] -= db.CHECK_AFTER_IDLE
    for _ in range(len(pids) + 1):
        with transaction() as conn:  # every connection the pool hands out works
            assert conn.execute("select 1 as one").fetchone() == {"one": 1}
    assert asked  # the idle ones were asked
