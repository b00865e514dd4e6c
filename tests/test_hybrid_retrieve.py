"""The hybrid first stage (HNSW + full-text search in one query) on real Postgres.

What must hold, as for the plain HNSW query: a user who owns 1 % of the table still gets the
full k back, and never another user's chunk. What the text branch adds: a chunk that holds the
question's exact command or number comes back even when its vector is the farthest of the user's.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import os
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from nodes.retrieval.rerank_fragments import rerank
from nodes.retrieval.retrieve import _HYBRID_SEARCH, first_stage, hybrid_search_in, search_in, text_queries
from tests.support.documents import grove_settings

pytestmark = pytest.mark.timeout(300)
DIM = 768
K = 30
QUESTION = "Как пересобрать кэш шрифтов командой fc-cache после установки 2021 года?"
TARGET = "Чтобы система увидела новые шрифты, выполните fc-cache -fv от имени администратора."
NUMBER = "Выпуск 48213 добавил поддержку новых форматов."
FILLER = "Раздел {n} описывает настройку программы, параметры окна и порядок работы с документами."


def _unit(rows: int, rng: np.random.Generator) -> np.ndarray:
    vectors = rng.standard_normal((rows, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def crowded(pg_url: str) -> Iterator[tuple[int, np.ndarray]]:
    """6,000 chunks of 60 other owners plus 60 of one user (1 %): the user's id and the query vector.

    The user's chunk with the command is the farthest of the user's 60 from the query vector;
    other owners hold the same command and number in chunks whose vectors are the closest of all.
    Built once for the module (indexing 6,060 vectors in HNSW is most of its time); the tests only read.
    """
    user_id = 9 * 10**11 + os.getpid()  # no other test's user (tests/conftest.py `user_id`)
    rng = np.random.default_rng(17)
    query = _unit(1, rng)[0]
    mine = _unit(60, rng)
    # The command chunk: the user's vector most opposed to the query.
    order = np.argsort(mine @ query)
    target_index = int(order[0])
    mine[target_index] = -query
    others = _unit(6000, rng)
    others[:50] = query + 0.05 * _unit(50, rng)  # other owners' chunks nearest to the query
    others[:50] /= np.linalg.norm(others[:50], axis=1, keepdims=True)
    rows = []
    for n, vector in enumerate(mine):
        text = TARGET if n == target_index else FILLER.format(n=n)
        rows.append((user_id, text, vector))
    for n, vector in enumerate(others):
        text = f"{TARGET} {NUMBER}" if n < 50 else FILLER.format(n=n)
        rows.append((10**12 + n % 60, text, vector))
    owners = sorted({owner for owner, _, _ in rows})
    with psycopg.connect(pg_url) as conn:
        register_vector(conn)
        document_ids = {
            owner: conn.execute(
                "insert into documents (owner_id, source_type, source_identifier, content_hash)"
                " values (%s, 'txt', 'manual.txt', md5(random()::text)) returning id", (owner,)).fetchone()[0]
            for owner in owners
        }
        with conn.cursor().copy(
            "copy document_chunks (document_id, owner_id, source_type, source_identifier, position,"
            " chunk_text, content_hash, embedding) from stdin with (format binary)") as copy:
            copy.set_types(["bigint", "bigint", "text", "text", "integer", "text", "text", "vector"])
            for n, (owner, text, vector) in enumerate(rows):
                copy.write_row((document_ids[owner], owner, "txt", "manual.txt", n, text, str(n), vector))
    yield user_id, query
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from documents where owner_id = any(%s)", (owners,))


def _owners(pg_url: str, chunk_ids: list[int]) -> set[int]:
    with psycopg.connect(pg_url) as conn:
        return {r[0] for r in conn.execute("select owner_id from document_chunks where id = any(%s)",
                                           (chunk_ids,))}


def _hybrid_on_hnsw(pg_url: str, user_id: int, query: np.ndarray) -> tuple[list, str]:
    """The hybrid query with sorting made expensive, so the planner walks the HNSW index."""
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        register_vector(conn)
        conn.execute("set local enable_sort = off")
        found = hybrid_search_in(conn, user_id, QUESTION, query, K, ef_search=40)
        russian, simple = text_queries(QUESTION)
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            "explain " + _HYBRID_SEARCH,
            {"query": query, "owner": user_id, "k": K, "pool": K, "russian": russian, "simple": simple,
             "rrf_k": 60.0, "vector_weight": 1.0, "text_weight": 1.0}, prepare=False))
    return found, plan


def test_text_queries_keep_technical_tokens_apart() -> None:
    question = "Как запустить «tlmgr» с -v или --help в 2021?"
    assert text_queries(question) == (question, "«tlmgr» -v --help 2021?")
    assert text_queries("Почему так?") == ("Почему так?", "")


def test_hybrid_under_a_1_percent_owner_filter_returns_the_full_k(
        pg_url: str, crowded: tuple[int, np.ndarray]) -> None:
    user_id, query = crowded
    found, plan = _hybrid_on_hnsw(pg_url, user_id, query)
    assert "document_chunks_embedding_hnsw" in plan
    assert len(found) == K
    assert len({f.chunk_id for f in found}) == K
    assert _owners(pg_url, [f.chunk_id for f in found]) == {user_id}
    scores = [f.score for f in found]
    assert scores == sorted(scores, reverse=True)
    # The planner's own choice (owner index + exact sort at this size) gives the full list too.
    with grove_settings(retrieval_first_stage="hybrid"):
        planned = first_stage(user_id, QUESTION, query, K, get_settings())
    assert len(planned) == K
    assert _owners(pg_url, [f.chunk_id for f in planned]) == {user_id}


def test_text_branch_rescues_the_exact_command_the_vector_order_misses(
        pg_url: str, crowded: tuple[int, np.ndarray]) -> None:
    user_id, query = crowded
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        register_vector(conn)
        by_vector = search_in(conn, user_id, query, K)
        everything = search_in(conn, user_id, query, 60)
    assert TARGET not in {f.text for f in by_vector}
    assert [f.text for f in everything].index(TARGET) == 59  # the farthest of the user's 60
    with grove_settings(retrieval_first_stage="hybrid"):
        hybrid = first_stage(user_id, QUESTION, query, K, get_settings())
    texts = [f.text for f in hybrid]
    assert TARGET in texts[:2]  # first of the text list, fused with the vector list's first
    assert all(NUMBER not in t for t in texts)  # other owners' chunks with the same terms stay out
    # No rerank keeps the fused order (it must not fall back to the vector distance).
    kept = rerank(QUESTION, hybrid, 10, name="none")
    assert [f.chunk_id for f in kept] == [f.chunk_id for f in hybrid[:10]]


def test_the_setting_switches_the_first_stage(pg_url: str, crowded: tuple[int, np.ndarray]) -> None:
    user_id, query = crowded
    with grove_settings(retrieval_first_stage="vector"):
        vector_only = first_stage(user_id, QUESTION, query, K, get_settings())
    with grove_settings(retrieval_first_stage="hybrid"):
        hybrid = first_stage(user_id, QUESTION, query, K, get_settings())
    assert TARGET not in {f.text for f in vector_only}
    assert all(f.score is None for f in vector_only)
    assert TARGET in {f.text for f in hybrid}
    assert all(f.score is not None for f in hybrid)
    with pytest.raises(ValueError):
        first_stage(user_id, QUESTION, query, K, get_settings(), mode="bm25")  # type: ignore[arg-type]


def test_russian_forms_and_numbers_match(pg_url: str, user_id: int) -> None:
    """`russian` meets inflected forms, `simple` an exact number; a stop-word-only question still works."""
    rng = np.random.default_rng(3)
    texts = ["Малину обрезают осенью под корень.", NUMBER, "Смородину поливают летом.",
             "Клубнику укрывают на зиму."]
    vectors = _unit(len(texts), rng)
    with psycopg.connect(pg_url) as conn:
        register_vector(conn)
        document_id = conn.execute(
            "insert into documents (owner_id, source_type, source_identifier, content_hash)"
            " values (%s, 'txt', 'garden.txt', 'garden') returning id", (user_id,)).fetchone()[0]
        for n, (text, vector) in enumerate(zip(texts, vectors)):
            conn.execute(
                "insert into document_chunks (document_id, owner_id, source_type, source_identifier,"
                " position, chunk_text, content_hash, embedding) values (%s, %s, 'txt', 'garden.txt',"
                " %s, %s, %s, %s)", (document_id, user_id, n, text, str(n), vector))
    try:
        query = _unit(1, rng)[0]
        top = first_stage(user_id, "Когда обрезать малину?", query, 4, get_settings(), mode="hybrid")
        assert top[0].text == texts[0]
        top = first_stage(user_id, "Что нового в выпуске 48213?", query, 4, get_settings(), mode="hybrid")
        assert top[0].text == NUMBER
        assert len(first_stage(user_id, "и в на", query, 4, get_settings(), mode="hybrid")) == 4
    finally:
        with psycopg.connect(pg_url) as conn:
            conn.execute("delete from documents where id = %s", (document_id,))
