"""nodes/store/moderation.py against the real Postgres: the queue, its order, and each review's verdict.

The embedder is a stand-in (a fixed vector, the texts it was asked for recorded): approval is
tested here for what it writes, tests/test_consultation.py approves with the real model.
The queue is shared by every test, so the items made here are dated far back (the oldest
pending ones) and deleted afterwards, with any knowledge-base pair they became.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from nodes.store import moderation
from nodes.store.moderation import (NotAnAdmin, Review, approve, enqueue, get_item, item_being_edited, next_pending,
                              pending_count, qa_text, reject, start_edit)

DIM = 768


class FakeEmbedder:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_documents(self, texts: list[str], urgent: bool = False) -> list[list[float]]:
        self.texts += texts
        return [[1.0] + [0.0] * (DIM - 1) for _ in texts]


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> FakeEmbedder:
    fake = FakeEmbedder()
    monkeypatch.setattr(moderation, "get_embedder", lambda: fake)
    return fake


@pytest.fixture
def admins(env, other_user_id: int, third_user_id: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    env(GROVE_ADMIN_IDS=f"[{other_user_id}, {third_user_id}]")
    return other_user_id, third_user_id


def admin_ids() -> list[int]:
    """Who the settings name as admins now (the `admins` fixture sets them): what the flows hand the store."""
    return get_settings().admin_ids


def _rows(pg_url: str, sql: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def queue(pg_url: str, user_id: int) -> Iterator[Callable[..., int]]:
    """Queue an answer of `user_id`, dated so it is older than anything other tests left pending."""
    made = 0

    def add(question: str = "Как подкормить малину?", answer: str = "Азотом весной.",
            culture: str | None = "малина", category: str | None = "общая консультация") -> int:
        nonlocal made
        item = enqueue(user_id, None, question, answer, culture, category)
        made += 1
        with psycopg.connect(pg_url) as conn:
            conn.execute("update moderation_queue set created_at = timestamptz '2000-01-01' + make_interval(secs => %s)"
                         " where id = %s", (made, item))
        return item

    yield add
    with psycopg.connect(pg_url) as conn:
        conn.execute("delete from knowledge_base where moderation_id in"
                     " (select id from moderation_queue where user_id = %s)", (user_id,))
        conn.execute("delete from moderation_queue where user_id = %s", (user_id,))


def test_enqueue_stores_a_pending_item(pg_url: str, user_id: int, admins: tuple[int, int],
                                       queue: Callable[..., int]) -> None:
    before = pending_count()
    item = queue("Чем подкормить голубику?", "Кислым удобрением.", "голубика", None)
    assert pending_count() == before + 1
    stored = get_item(item, admins[0], admin_ids())
    assert stored is not None
    assert (stored.user_id, stored.question, stored.answer, stored.culture, stored.category_guess, stored.status,
            stored.editing_by, stored.knowledge_base_id) == \
        (user_id, "Чем подкормить голубику?", "Кислым удобрением.", "голубика", None, "pending", None, None)
    assert get_item(item + 10**9, admins[0], admin_ids()) is None


def test_next_pending_is_the_oldest_and_moves_on_after_a_review(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int]
) -> None:
    first, second = queue("первый"), queue("второй")
    nxt = next_pending(admins[0], admin_ids())
    assert nxt is not None and nxt.id == first
    assert reject(first, admins[0], admin_ids()).done
    nxt = next_pending(admins[0], admin_ids())
    assert nxt is not None and nxt.id == second


def test_an_item_being_edited_is_skipped_for_other_admins(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int]
) -> None:
    first, second = queue("первый"), queue("второй")
    review = start_edit(first, admins[0], admin_ids())
    assert review.done and review.item.editing_by == admins[0]
    mine, theirs = next_pending(admins[0], admin_ids()), next_pending(admins[1], admin_ids())
    assert mine is not None and mine.id == first
    assert theirs is not None and theirs.id == second
    edited = item_being_edited(admins[0], admin_ids())
    assert edited is not None and edited.id == first
    assert item_being_edited(admins[1], admin_ids()) is None


def test_editing_another_item_lets_go_of_the_first(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int]
) -> None:
    first, second = queue("первый"), queue("второй")
    start_edit(first, admins[0], admin_ids())
    assert start_edit(second, admins[0], admin_ids()).done
    assert _rows(pg_url, "select id, editing_by from moderation_queue where id = any(%s) order by id",
                 [first, second]) == [{"id": first, "editing_by": None}, {"id": second, "editing_by": admins[0]}]
    edited = item_being_edited(admins[0], admin_ids())
    assert edited is not None and edited.id == second


def test_a_refused_edit_keeps_the_item_being_edited(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int]
) -> None:
    editing, reviewed = queue("редактирую"), queue("уже решён")
    assert reject(reviewed, admins[1], admin_ids()).done
    assert start_edit(editing, admins[0], admin_ids()).done
    refused = start_edit(reviewed, admins[0], admin_ids())
    assert (refused.done, refused.reason) == (False, "rejected")
    still = item_being_edited(admins[0], admin_ids())
    assert still is not None and still.id == editing


def test_reject_marks_it_and_a_second_review_is_refused(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int], embedder: FakeEmbedder
) -> None:
    item = queue()
    start_edit(item, admins[0], admin_ids())
    done = reject(item, admins[1], admin_ids())
    assert (done.done, done.reason, done.item.status, done.item.editing_by) == (True, None, "rejected", None)
    assert _rows(pg_url, "select reviewer_id, reviewed_at is not null as reviewed from moderation_queue"
                         " where id = %s", item) == [{"reviewer_id": admins[1], "reviewed": True}]

    assert reject(item, admins[0], admin_ids()) == Review(item=done.item, done=False, reason="rejected")
    late = approve(item, admins[0], admin_ids())
    assert (late.done, late.reason, late.item.status) == (False, "rejected", "rejected")
    late_edit = start_edit(item, admins[0], admin_ids())
    assert (late_edit.done, late_edit.reason, late_edit.item.editing_by) == (False, "rejected", None)
    assert embedder.texts == []
    assert _rows(pg_url, "select 1 from knowledge_base where moderation_id = %s", item) == []
    assert _rows(pg_url, "select reviewer_id from moderation_queue where id = %s", item) == [
        {"reviewer_id": admins[1]}]


def test_approve_writes_the_pair_to_the_knowledge_base(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int], embedder: FakeEmbedder
) -> None:
    item = queue("Как подкормить малину?", "Азотом.", "малина ремонтантная", "подкормка")
    start_edit(item, admins[0], admin_ids())
    review = approve(item, admins[0], admin_ids(), "  Азотом весной, калием осенью.  ")
    assert review.done and review.reason is None
    assert (review.item.status, review.item.edited_answer, review.item.editing_by) == \
        ("approved", "  Азотом весной, калием осенью.  ", None)
    assert embedder.texts == [qa_text("Как подкормить малину?", "Азотом весной, калием осенью.")]
    assert _rows(pg_url, "select id, category, subcategory, question, answer, moderation_id, approved_by, is_active"
                         " from knowledge_base where moderation_id = %s", item) == [
        {"id": review.item.knowledge_base_id, "category": "подкормка", "subcategory": "малина ремонтантная",
         "question": "Как подкормить малину?", "answer": "Азотом весной, калием осенью.", "moderation_id": item,
         "approved_by": admins[0], "is_active": True}]

    again = approve(item, admins[1], admin_ids())
    assert (again.done, again.reason, again.item.knowledge_base_id) == (False, "approved", review.item.knowledge_base_id)
    rejected = reject(item, admins[1], admin_ids())
    assert (rejected.done, rejected.reason, rejected.item.status) == (False, "approved", "approved")
    assert len(_rows(pg_url, "select 1 from knowledge_base where moderation_id = %s", item)) == 1
    assert len(embedder.texts) == 1


def test_approve_without_an_edit_keeps_the_answer(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int], embedder: FakeEmbedder
) -> None:
    item = queue("Когда сажать клубнику?", "В августе.", None, "посадка")
    review = approve(item, admins[1], admin_ids())
    assert review.done and review.item.edited_answer is None
    assert _rows(pg_url, "select subcategory, answer, approved_by from knowledge_base where moderation_id = %s",
                 item) == [{"subcategory": None, "answer": "В августе.", "approved_by": admins[1]}]


def test_two_admins_reviewing_one_item_at_once_decide_it_once(
    pg_url: str, admins: tuple[int, int], queue: Callable[..., int], embedder: FakeEmbedder
) -> None:
    item = queue()
    barrier = threading.Barrier(2)
    reviews: dict[str, Review] = {}

    def review(name: str, act: Callable[[int, int, list[int]], Review], admin: int) -> None:
        barrier.wait(timeout=30)
        reviews[name] = act(item, admin, list(admins))

    threads = [threading.Thread(target=review, args=("approve", approve.fn, admins[0])),
               threading.Thread(target=review, args=("reject", reject.fn, admins[1]))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.done for r in reviews.values()) == [False, True]
    winner = next(name for name, r in reviews.items() if r.done)
    status = "approved" if winner == "approve" else "rejected"
    loser = next(r for r in reviews.values() if not r.done)
    assert loser.reason == status
    [row] = _rows(pg_url, "select status, knowledge_base_id from moderation_queue where id = %s", item)
    assert row["status"] == status
    kb = _rows(pg_url, "select id from knowledge_base where moderation_id = %s", item)
    assert kb == ([{"id": row["knowledge_base_id"]}] if winner == "approve" else [])


def test_reviews_of_an_unknown_item_raise(pg_url: str, admins: tuple[int, int], embedder: FakeEmbedder) -> None:
    missing = 2**62
    for act in (approve, reject, start_edit):
        with pytest.raises(LookupError):
            act.fn(missing, admins[0], admin_ids())


def test_only_admins_review(pg_url: str, user_id: int, admins: tuple[int, int], queue: Callable[..., int]) -> None:
    item = queue()
    for act in (reject, start_edit, get_item):
        with pytest.raises(NotAnAdmin):
            act.fn(item, user_id, admin_ids())
    with pytest.raises(NotAnAdmin):
        next_pending.fn(user_id, admin_ids())
    assert item_being_edited(user_id, admin_ids()) is None
    assert _rows(pg_url, "select status, editing_by from moderation_queue where id = %s", item) == [
        {"status": "pending", "editing_by": None}]
