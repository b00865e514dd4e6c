"""The schema against the real embedded Postgres: migrations, history trim, mode upsert."""

from __future__ import annotations

import threading

import psycopg
import pytest

from grove.store.db import SchemaMismatch, apply_migrations, check_embedding_dim, list_migrations


def test_migrations_apply_twice_cleanly(pg_url: str) -> None:
    # The session fixture applied them once; a second and third run are no-ops.
    assert apply_migrations(pg_url) == []
    assert apply_migrations(pg_url) == []
    with psycopg.connect(pg_url) as conn:
        versions = [r[0] for r in conn.execute(
            "select version from supabase_migrations.schema_migrations order by version")]
    assert versions == [m.version for m in list_migrations()]


def test_migration_sql_is_idempotent_by_itself(pg_url: str) -> None:
    """Re-running every file by hand (as psql or `supabase db push` might) changes nothing."""
    with psycopg.connect(pg_url) as conn:
        before = conn.execute("select count(*) from pg_class where relnamespace = 'public'::regnamespace").fetchone()
        for migration in list_migrations():
            conn.execute(migration.sql)
        after = conn.execute("select count(*) from pg_class where relnamespace = 'public'::regnamespace").fetchone()
    assert before == after


def test_schema_has_every_table_and_hnsw_indexes(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        tables = {r[0] for r in conn.execute(
            "select tablename from pg_tables where schemaname = 'public'")}
        indexes = {r[0]: r[1] for r in conn.execute(
            "select indexname, indexdef from pg_indexes where schemaname = 'public'")}
    assert {"user_state", "chat_messages", "documents", "document_chunks", "knowledge_base",
            "moderation_queue", "topics", "consultation_state", "dialogue_turns"} <= tables
    for name in ("document_chunks_embedding_hnsw", "knowledge_base_embedding_hnsw"):
        assert "USING hnsw" in indexes[name] and "vector_cosine_ops" in indexes[name]
        assert "ef_construction='256'" in indexes[name]  # the build quality bench/hnsw_recall.py chose


def test_embedding_width_is_checked(pg_url: str) -> None:
    check_embedding_dim(pg_url, 768)
    with pytest.raises(SchemaMismatch, match="settings say 1024"):
        check_embedding_dim(pg_url, 1024)


def _count(pg_url: str, user_id: int) -> int:
    with psycopg.connect(pg_url) as conn:
        return conn.execute("select count(*) from chat_messages where user_id = %s", (user_id,)).fetchone()[0]


def test_insert_and_trim_keeps_exactly_30_under_50_concurrent_writers(
    pg_url: str, user_id: int, other_user_id: int
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("select insert_and_trim_pairs(%s, 's', 'чужой вопрос', 'чужой ответ')", (other_user_id,))

    barrier = threading.Barrier(50)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                barrier.wait(timeout=30)
                conn.execute("select insert_and_trim_pairs(%s, 's', %s, %s)",
                             (user_id, f"вопрос {n}", f"ответ {n}"))
        except BaseException as exc:  # noqa: BLE001 - collected and re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert _count(pg_url, user_id) == 30
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "select role, content from chat_messages where user_id = %s order by id", (user_id,)
        ).fetchall()
    # Pairs stay whole and in order: user, assistant, user, assistant …
    assert [r[0] for r in rows] == ["user", "assistant"] * 15
    for question, answer in zip(rows[::2], rows[1::2]):
        assert question[1].split()[-1] == answer[1].split()[-1]
    # The other user's history is untouched.
    assert _count(pg_url, other_user_id) == 2


def test_trim_keeps_the_newest(pg_url: str, user_id: int) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for n in range(20):
            conn.execute("select insert_and_trim_pairs(%s, 's', %s, %s)", (user_id, f"q{n}", f"a{n}"))
        kept = [r[0] for r in conn.execute(
            "select content from chat_messages where user_id = %s and role = 'user' order by id",
            (user_id,))]
    assert kept == [f"q{n}" for n in range(5, 20)]


def test_user_state_upsert_is_one_row_per_user(store: str, user_id: int) -> None:
    from nodes.store.user_state import read_user_state, set_user_mode

    assert read_user_state(user_id) is None
    first = set_user_mode(user_id, user_id, "chat")
    threads = [threading.Thread(target=set_user_mode, args=(user_id, user_id, mode))
               for mode in ["documents", "chat"] * 5]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = set_user_mode(user_id, user_id, "documents")
    with psycopg.connect(store) as conn:
        count = conn.execute("select count(*) from user_state where user_id = %s", (user_id,)).fetchone()[0]
    assert count == 1
    assert final.current_mode == "documents"
    assert final.session_id == first.session_id  # switching modes keeps the history's session
    assert read_user_state(user_id).current_mode == "documents"


def test_unknown_mode_is_refused(store: str, user_id: int) -> None:
    from nodes.store.user_state import set_user_mode

    with pytest.raises(Exception, match="unknown mode"):
        set_user_mode(user_id, user_id, "admin")  # type: ignore[arg-type]


def test_history_node_returns_last_pairs_oldest_first(store: str, user_id: int, other_user_id: int) -> None:
    from nodes.store.chat_history import clean_chat, load_history, store_pair

    for n in range(18):
        store_pair(user_id, "sess", f"q{n}", f"a{n}")
    store_pair(other_user_id, "sess", "secret", "secret")
    history = load_history(user_id, "sess", pairs=15)
    assert [m.content for m in history[:2]] == ["q3", "a3"]
    assert [m.content for m in history[-2:]] == ["q17", "a17"]
    assert len(history) == 30
    assert clean_chat(user_id) == 30
    assert load_history(user_id, "sess") == []
    assert [m.content for m in load_history(other_user_id, "sess")] == ["secret", "secret"]
