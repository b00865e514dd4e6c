"""The moderation queue (seed 000 "Модерация", seed 002 tier 1).

Final consultation answers wait here; an admin approves, edits or rejects them.
Approval is the only way into `knowledge_base`, and it checks the reviewer
against `admin_ids` itself, so no flow can write an unreviewed pair by mistake.
The approved pair is embedded before the write and stored in the same
transaction as the status change: it is searchable as tier 1 at once.
"""

from __future__ import annotations

from datetime import datetime
from collections.abc import Collection
from typing import Any

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import Connection, transaction
from nodes.store.document_store import vector_text
from grove.core.domain_profile import active_profile
from nodes.embedding.embedder import get_embedder


class NotAnAdmin(PermissionError):
    """Only Telegram users listed in GROVE_ADMIN_IDS may review answers."""


class ModerationItem(BaseModel):
    id: int
    user_id: int
    topic_id: int | None
    question: str
    answer: str
    culture: str | None
    category_guess: str | None
    status: str
    edited_answer: str | None = None
    editing_by: int | None = None
    knowledge_base_id: int | None = None
    created_at: datetime


class Review(BaseModel):
    item: ModerationItem
    done: bool = True
    reason: str | None = None


def is_admin(user_id: int, admins: Collection[int]) -> bool:
    """Whether the user is among `admins` (the settings' `admin_ids`, handed in by the flow)."""
    return user_id in admins


def require_admin(user_id: int, admins: Collection[int]) -> None:
    if not is_admin(user_id, admins):
        raise NotAnAdmin(f"user {user_id} is not a moderator")


def qa_text(question: str, answer: str) -> str:
    """What a knowledge-base pair is embedded as: the question and its answer, document side."""
    return f"{question}\n{answer}"


def add_to_queue(conn: Connection, user_id: int, topic_id: int | None, question: str, answer: str,
                 culture: str | None, category_guess: str | None) -> int:
    """Inside the caller's transaction: a final answer waiting for an admin; returns its id."""
    row = conn.execute(
        "insert into moderation_queue (user_id, topic_id, question, answer, culture, category_guess)"
        " values (%s, %s, %s, %s, %s, %s) returning id",
        (user_id, topic_id, question, answer, culture, category_guess)).fetchone()
    assert row is not None  # insert … returning: one row
    return int(row["id"])


@task(name="enqueue-for-moderation", retries=2, retry_delay_seconds=1)
def enqueue(user_id: int, topic_id: int | None, question: str, answer: str,
            culture: str | None, category_guess: str | None) -> int:
    with transaction() as conn:
        return add_to_queue(conn, user_id, topic_id, question, answer, culture, category_guess)


def _item(row: dict[str, Any] | None) -> ModerationItem | None:
    return ModerationItem.model_validate(row) if row else None


def _while_pending(conn: Connection, item_id: int, update: str, params: tuple[object, ...]) -> Review:
    """Apply `update … ` to the item only if it is still pending (one statement, so no race)."""
    row = conn.execute(f"{update} where id = %s and status = 'pending' returning *",
                       (*params, item_id)).fetchone()
    return Review(item=ModerationItem.model_validate(row)) if row else _not_pending(conn, item_id)


def _not_pending(conn: Connection, item_id: int) -> Review:
    """The review of an item that was no longer pending (reviewed meanwhile), or LookupError."""
    current = _item(conn.execute("select * from moderation_queue where id = %s", (item_id,)).fetchone())
    if current is None:
        raise LookupError(f"no moderation item {item_id}")
    return Review(item=current, done=False, reason=current.status)


@task(name="next-moderation-item", retries=2, retry_delay_seconds=1)
def next_pending(reviewer_id: int, admins: Collection[int]) -> ModerationItem | None:
    """The oldest pending item nobody else is editing."""
    require_admin(reviewer_id, admins)
    with transaction() as conn:
        return _item(conn.execute(
            "select * from moderation_queue where status = 'pending'"
            " and (editing_by is null or editing_by = %s) order by created_at, id limit 1",
            (reviewer_id,)).fetchone())


@task(name="get-moderation-item", retries=2, retry_delay_seconds=1)
def get_item(item_id: int, reviewer_id: int, admins: Collection[int]) -> ModerationItem | None:
    require_admin(reviewer_id, admins)
    with transaction() as conn:
        return _item(conn.execute("select * from moderation_queue where id = %s", (item_id,)).fetchone())


@task(name="pending-count", retries=2, retry_delay_seconds=1)
def pending_count() -> int:
    with transaction() as conn:
        row = conn.execute("select count(*) as n from moderation_queue where status = 'pending'").fetchone()
    assert row is not None  # count(*): one row
    return int(row["n"])


@task(name="approve-answer", retries=2, retry_delay_seconds=1)
def approve(item_id: int, reviewer_id: int, admins: Collection[int], edited_answer: str | None = None) -> Review:
    """Write the (possibly edited) pair to knowledge_base with its embedding; mark the item approved."""
    require_admin(reviewer_id, admins)
    with transaction() as conn:
        item = _item(conn.execute("select * from moderation_queue where id = %s", (item_id,)).fetchone())
    if item is None:
        raise LookupError(f"no moderation item {item_id}")
    if item.status != "pending":
        return Review(item=item, done=False, reason=item.status)
    answer = (edited_answer or item.answer).strip()
    vector = get_embedder().embed_documents([qa_text(item.question, answer)], urgent=True)[0]
    profile = active_profile()
    category = item.category_guess or (profile.category if profile else "общая консультация")
    with transaction() as conn:
        claimed = conn.execute(
            "update moderation_queue set status = 'approved', reviewer_id = %s, reviewed_at = now(),"
            " edited_answer = %s, editing_by = null where id = %s and status = 'pending' returning id",
            (reviewer_id, edited_answer, item_id)).fetchone()
        if claimed is None:  # another admin was faster
            return _not_pending(conn, item_id)
        kb = conn.execute(
            "insert into knowledge_base (category, subcategory, question, answer, embedding,"
            " moderation_id, approved_by) values (%s, %s, %s, %s, %s::vector, %s, %s) returning id",
            (category, item.culture, item.question, answer, vector_text(vector), item_id,
             reviewer_id)).fetchone()
        assert kb is not None  # insert … returning: one row
        row = conn.execute("update moderation_queue set knowledge_base_id = %s where id = %s returning *",
                           (kb["id"], item_id)).fetchone()
    return Review(item=ModerationItem.model_validate(row))


@task(name="reject-answer", retries=2, retry_delay_seconds=1)
def reject(item_id: int, reviewer_id: int, admins: Collection[int]) -> Review:
    require_admin(reviewer_id, admins)
    with transaction() as conn:
        return _while_pending(conn, item_id,
                              "update moderation_queue set status = 'rejected', reviewer_id = %s,"
                              " reviewed_at = now(), editing_by = null", (reviewer_id,))


@task(name="start-editing", retries=2, retry_delay_seconds=1)
def start_edit(item_id: int, reviewer_id: int, admins: Collection[int]) -> Review:
    """Mark the item as being edited by this admin; their next message is the new answer."""
    require_admin(reviewer_id, admins)
    with transaction() as conn:
        review = _while_pending(conn, item_id, "update moderation_queue set editing_by = %s", (reviewer_id,))
        if review.done:  # a refused press (the item was reviewed meanwhile) keeps the edit in progress
            conn.execute("update moderation_queue set editing_by = null"
                         " where editing_by = %s and status = 'pending' and id <> %s", (reviewer_id, item_id))
        return review


@task(name="item-being-edited", retries=2, retry_delay_seconds=1)
def item_being_edited(reviewer_id: int, admins: Collection[int]) -> ModerationItem | None:
    """The pending item this admin pressed «edit» on, if any (checked for every admin message)."""
    if not is_admin(reviewer_id, admins):
        return None
    with transaction() as conn:
        return _item(conn.execute(
            "select * from moderation_queue where editing_by = %s and status = 'pending'"
            " order by id desc limit 1", (reviewer_id,)).fetchone())
