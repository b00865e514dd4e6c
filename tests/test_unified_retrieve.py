"""Three-tier retrieval (seed 002) on real Postgres + pgvector, with vectors at exact distances.

Rows are built at chosen cosine distances from the query, so the seed's examples
(0.21, 0.38, 0.54, …), the strict thresholds and the fallbacks are checked exactly.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import uuid

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from nodes.retrieval.unified_retrieve import _CHUNKS_SEARCH, LIBRARY_OWNER, chunks_search, unified_snippets

pytestmark = pytest.mark.timeout(300)
DIM = 768


def unit(index: int) -> np.ndarray:
    vector = np.zeros(DIM, dtype=np.float32)
    vector[index] = 1.0
    return vector


def at_distance(query: np.ndarray, distance: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector whose cosine distance to the unit `query` is `distance`."""
    noise = rng.standard_normal(DIM)
    noise -= (noise @ query) * query
    noise /= np.linalg.norm(noise)
    cos = 1.0 - distance
    return (cos * query + np.sqrt(1 - cos * cos) * noise).astype(np.float32)


class Rows:
    """Inserts knowledge-base pairs and library chunks under names unique to one test."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.tag = uuid.uuid4().hex[:8]
        self.documents: list[int] = []

    def name(self, label: str) -> str:
        return f"{label} [{self.tag}]"

    def qa(self, category: str, subcategory: str | None, question: str, vector: np.ndarray) -> None:
        with psycopg.connect(self.url) as conn:
            register_vector(conn)
            conn.execute("insert into knowledge_base (category, subcategory, question, answer, embedding)"
                         " values (%s, %s, %s, %s, %s)",
                         (self.name(category), subcategory and self.name(subcategory), question,
                          f"ответ: {question}", vector))

    def chunks(self, subcategory: str, vectors: list[np.ndarray], owner: int = LIBRARY_OWNER) -> None:
        with psycopg.connect(self.url) as conn:
            register_vector(conn)
            document = conn.execute(
                "insert into documents (owner_id, source_type, source_identifier, subcategory, content_hash)"
                " values (%s, 'pdf', %s, %s, md5(random()::text)) returning id",
                (owner, f"{subcategory}.pdf", self.name(subcategory))).fetchone()[0]
            self.documents.append(document)
            with conn.cursor().copy(
                "copy document_chunks (document_id, owner_id, source_type, source_identifier, subcategory,"
                " position, chunk_text, content_hash, embedding) from stdin with (format binary)") as copy:
                copy.set_types(["bigint", "bigint", "text", "text", "text", "integer", "text", "text", "vector"])
                for n, vector in enumerate(vectors):
                    copy.write_row((document, owner, "pdf", f"{subcategory}.pdf", self.name(subcategory), n,
                                    f"{subcategory} #{n}", f"{self.tag}{n}", vector))

    def search(self, category: str, subcategory: str | None, general: str | None, query: np.ndarray,
               family: tuple[str, ...] = ()):
        return unified_snippets(self.name(category), subcategory and self.name(subcategory),
                                general and self.name(general), query, get_settings(), [self.name(f) for f in family])

    def cleanup(self) -> None:
        with psycopg.connect(self.url) as conn:
            conn.execute("delete from knowledge_base where category like %s", (f"%[{self.tag}]",))
            conn.execute("delete from documents where id = any(%s)", (self.documents,))


@pytest.fixture
def rows(pg_url: str):  # type: ignore[no-untyped-def]
    made = Rows(pg_url)
    yield made
    made.cleanup()


def test_seed_example_1_full_context_sorted_by_distance(rows: Rows) -> None:
    rng = np.random.default_rng(1)
    query = unit(0)
    for question, distance in (("q-0.38", 0.38), ("q-0.21", 0.21)):
        rows.qa("посадка и уход", "клубника ремонтантная", question, at_distance(query, distance, rng))
    rows.chunks("клубника ремонтантная", [at_distance(query, d, rng) for d in (0.71, 0.54, 0.62)])

    found = rows.search("посадка и уход", "клубника ремонтантная", "клубника общая", query)
    assert [(s.priority_level, s.source_type, round(s.distance, 2)) for s in found.snippets] == [
        (1, "qa", 0.21), (1, "qa", 0.38), (2, "document", 0.54), (2, "document", 0.62), (2, "document", 0.71)]
    assert not any("та же культура" in line for line in found.trace)  # tier 1 found its own pairs
    assert any(f"общая культура {rows.name('клубника общая')}: 0" in line for line in found.trace)


def test_seed_example_2_both_tiers_fall_back_within_the_crop(rows: Rows) -> None:
    rng = np.random.default_rng(2)
    query = unit(0)
    rows.qa("защита растений", "голубика", "другая культура той же категории", at_distance(query, 0.1, rng))
    rows.qa("защита растений", "малина общая", "та же культура, общая", at_distance(query, 0.3, rng))
    rows.qa("защита растений", None, "пара без культуры", at_distance(query, 0.45, rng))
    rows.qa("посадка и уход", "малина ремонтантная", "другая категория", at_distance(query, 0.1, rng))
    rows.chunks("малина общая", [at_distance(query, d, rng) for d in (0.4, 0.5, 0.6, 0.7)])
    rows.chunks("клубника общая", [at_distance(query, 0.2, rng)])  # another crop: never a fallback

    found = rows.search("защита растений", "малина ремонтантная", "малина общая", query,
                        family=("малина", "малина общая", "малина ремонтантная", "малина летняя"))
    assert [(s.source_type, s.question or s.subcategory) for s in found.snippets] == [
        ("qa", "та же культура, общая"), ("document", rows.name("малина общая")), ("qa", "пара без культуры"),
        *[("document", rows.name("малина общая"))] * 3]
    assert any("или без subcategory: 2" in line for line in found.trace)
    assert any(f"общая культура {rows.name('малина общая')}: 4" in line for line in found.trace)


def test_another_crops_approved_pair_never_answers_for_this_crop(rows: Rows) -> None:
    """The leak seen in use: two approved strawberry pairs, then «Как ухаживать за ежевикой?»."""
    rng = np.random.default_rng(7)
    query = unit(0)
    for n in range(2):
        rows.qa("общая консультация", "клубника летняя", f"клубника {n}", at_distance(query, 0.497 + n / 100, rng))
    found = rows.search("общая консультация", "ежевика", "ежевика", query, family=("ежевика",))
    assert found.snippets == []  # seed 002 example 3: nothing found for ежевика
    assert found.trace[-1].startswith("ничего не найдено")

    rows.chunks("малина ремонтантная", [at_distance(query, 0.348, rng)])
    raspberry = rows.search("общая консультация", "малина ремонтантная", "малина общая", query,
                            family=("малина", "малина общая", "малина ремонтантная", "малина летняя"))
    assert [s.subcategory for s in raspberry.snippets] == [rows.name("малина ремонтантная")]


def test_a_closer_document_outranks_a_farther_approved_pair(rows: Rows) -> None:
    rng = np.random.default_rng(8)
    query = unit(0)
    rows.qa("общая консультация", "малина ремонтантная", "одобренная пара", at_distance(query, 0.5, rng))
    rows.chunks("малина ремонтантная", [at_distance(query, 0.35, rng)])
    found = rows.search("общая консультация", "малина ремонтантная", "малина общая", query)
    assert [(s.priority_level, round(s.distance, 2)) for s in found.snippets] == [(2, 0.35), (1, 0.5)]


def test_the_general_culture_competes_with_far_exact_documents(rows: Rows) -> None:
    """Exact-culture chunks under the soft threshold no longer hide a closer general document."""
    rng = np.random.default_rng(9)
    query = unit(0)
    rows.chunks("малина ремонтантная", [at_distance(query, d, rng) for d in (0.6, 0.7)])
    rows.chunks("малина общая", [at_distance(query, d, rng) for d in (0.3, 0.6)])
    found = rows.search("общая консультация", "малина ремонтантная", "малина общая", query)
    assert [(s.subcategory, round(s.distance, 2)) for s in found.snippets] == [
        (rows.name("малина общая"), 0.3), (rows.name("малина ремонтантная"), 0.6),
        (rows.name("малина общая"), 0.6), (rows.name("малина ремонтантная"), 0.7)]


def test_seed_example_3_empty_base_says_so(rows: Rows) -> None:
    rows.chunks("малина общая", [at_distance(unit(0), 0.1, np.random.default_rng(3))])
    found = rows.search("посадка и уход", "ежевика", "ежевика", unit(0))
    assert found.snippets == []
    assert found.trace[-1].startswith("ничего не найдено")


def test_thresholds_are_strict_exactly_at_the_edges(rows: Rows) -> None:
    """Integer vectors give exact cosines: (2,4,2,1) is at 0.6 from e1, (1,3,2,1,1) at 0.75."""
    query = unit(0)
    qa_edge = np.zeros(DIM, dtype=np.float32)
    qa_edge[:4] = [2, 4, 2, 1]  # cos = 2/5 → distance 0.6, not < 0.6
    doc_edge = np.zeros(DIM, dtype=np.float32)
    doc_edge[:5] = [1, 3, 2, 1, 1]  # cos = 1/4 → distance 0.75, not < 0.75
    inside = at_distance(query, 0.5999, np.random.default_rng(4))
    doc_inside = at_distance(query, 0.7499, np.random.default_rng(5))
    rows.qa("питание растений", "малина летняя", "на границе", qa_edge)
    rows.qa("питание растений", "малина общая", "внутри, та же культура", inside)
    rows.chunks("малина летняя", [doc_edge])
    rows.chunks("малина общая", [doc_inside])

    with psycopg.connect(rows.url) as conn:
        register_vector(conn)
        assert conn.execute("select %s <=> %s", (qa_edge, query)).fetchone()[0] == 0.6
        assert conn.execute("select %s <=> %s", (doc_edge, query)).fetchone()[0] == 0.75

    found = rows.search("питание растений", "малина летняя", "малина общая", query,
                        family=("малина общая", "малина летняя"))
    # Both edge rows are excluded, so both tiers fall back, to the rows just inside.
    assert [(s.source_type, round(s.distance, 4)) for s in found.snippets] == [("qa", 0.5999),
                                                                               ("document", 0.7499)]
    assert found.snippets[0].question == "внутри, та же культура"
    assert found.snippets[1].subcategory == rows.name("малина общая")


def test_thresholds_are_settings(rows: Rows, env) -> None:  # type: ignore[no-untyped-def]
    query = unit(0)
    rows.chunks("смородина", [at_distance(query, 0.5, np.random.default_rng(6))])
    assert len(rows.search("x", "смородина", "смородина", query).snippets) == 1
    env(GROVE_DOC_DISTANCE_THRESHOLD="0.4")
    assert rows.search("x", "смородина", "смородина", query).snippets == []


def test_filtered_hnsw_returns_the_full_limit_under_the_threshold(rows: Rows) -> None:
    """3,000 chunks of other cultures sit closer to the query than any of the culture's 60.

    The seed's way (index top N, then filter) finds none of them; the iterative scan
    with the culture in WHERE and the threshold outside returns the full 30, in order,
    the same rows an exact search finds.
    """
    rng = np.random.default_rng(7)
    query = at_distance(unit(0), 0.5, rng)
    crowd = [at_distance(query, d, rng) for d in rng.uniform(0.05, 0.3, 3000)]
    mine_distances = rng.uniform(0.35, 0.9, 60)
    mine = [at_distance(query, d, rng) for d in mine_distances]
    rows.chunks("other cultures", crowd)
    rows.chunks("жимолость", mine)
    culture = rows.name("жимолость")

    def on_hnsw(iterative: bool) -> tuple[list, str]:
        with psycopg.connect(rows.url, row_factory=dict_row) as conn:
            register_vector(conn)
            conn.execute("set local enable_sort = off")  # the planner must walk the HNSW index
            found = chunks_search(conn, culture, query, 30, 0.75, iterative=iterative, ef_search=40)
            plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
                "explain " + _CHUNKS_SEARCH, {"query": query, "owner": LIBRARY_OWNER, "subcategory": culture,
                                              "limit": 30, "threshold": 0.75}, prepare=False))
        return found, plan

    plain, plan = on_hnsw(iterative=False)
    assert "document_chunks_embedding_hnsw" in plan
    assert len(plain) < 30  # top-N-then-filter: the crowd fills the candidates
    found, _ = on_hnsw(iterative=True)
    assert len(found) == 30
    assert [s.distance for s in found] == sorted(s.distance for s in found)
    assert all(s.distance < 0.75 for s in found)
    exact = sorted(d for d in mine_distances if d < 0.75)[:30]
    assert len(exact) == 30
    assert np.allclose([s.distance for s in found], exact, atol=1e-5)
    # The production path (planner's choice, settings' ef_search) gives the same full list.
    production = rows.search("any", "жимолость", None, query).snippets
    assert len(production) == 30 and np.allclose([s.distance for s in production], exact, atol=1e-5)


def test_filtered_hnsw_returns_the_full_qa_limit_for_a_small_category(rows: Rows) -> None:
    """Tier 1 the same way: 2,000 closer pairs of another category, 40 of ours under 0.6 → all 20."""
    rng = np.random.default_rng(8)
    query = at_distance(unit(1), 0.5, rng)
    with psycopg.connect(rows.url) as conn:
        register_vector(conn)
        with conn.cursor().copy("copy knowledge_base (category, subcategory, question, answer, embedding)"
                                " from stdin with (format binary)") as copy:
            copy.set_types(["text", "text", "text", "text", "vector"])
            for n, d in enumerate(rng.uniform(0.05, 0.3, 2000)):
                copy.write_row((rows.name("crowd"), None, f"c{n}", "a", at_distance(query, d, rng)))
            ours = rng.uniform(0.3, 0.59, 40)
            for n, d in enumerate(ours):
                copy.write_row((rows.name("питание растений"), rows.name("голубика"), f"q{n}", "a",
                                at_distance(query, d, rng)))
    with psycopg.connect(rows.url, row_factory=dict_row) as conn:
        register_vector(conn)
        conn.execute("set local enable_sort = off")
        from nodes.retrieval.unified_retrieve import kb_search

        plain = kb_search(conn, rows.name("питание растений"), rows.name("голубика"), query, 20, 0.6,
                          iterative=False, ef_search=40)
        found = kb_search(conn, rows.name("питание растений"), rows.name("голубика"), query, 20, 0.6,
                          ef_search=40)
    assert len(plain) < 20
    assert np.allclose([s.distance for s in found], sorted(ours)[:20], atol=1e-5)
