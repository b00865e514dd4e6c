"""The consultation state machine's memory (seed 000), in `consultation_state`, one row per user.

The seed keeps it in two process dictionaries, so a restart forgets every open
clarification and two workers disagree. Here it is a row, read at the start of a
turn and written at its end, so any process (a restarted bot, another worker)
continues the dialogue where it stopped.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import transaction
from nodes.store.moderation import add_to_queue
from nodes.store.topics import append_pair

class State(StrEnum):
    """What a user's consultation waits for (seed 000), as stored: the table's check constraint names the
    same values. A user in no state asks a new question."""

    WAITING_VARIETY = "waiting_variety_clarification"  # the variety of a culture named only in general
    WAITING_CLARIFICATION = "waiting_clarification_answer"  # the answer to a clarifying question


class ConsultationContext(BaseModel):
    category: str
    root_question: str
    culture: str
    topic_id: int | None
    session_id: str
    user_id: int


class ConsultationState(BaseModel):
    user_id: int
    state: State | None
    context: ConsultationContext | None
    turns: int = 0
    updated_at: datetime | None = None


@task(name="read-consultation-state", retries=2, retry_delay_seconds=1)
def read_state(user_id: int) -> ConsultationState:
    """The user's state; an empty one (no state) when there is no row."""
    with transaction() as conn:
        row = conn.execute("select * from consultation_state where user_id = %s", (user_id,)).fetchone()
    if row is None or row["state"] is None:
        return ConsultationState(user_id=user_id, state=None, context=None)
    return ConsultationState(user_id=user_id, state=row["state"], turns=row["turns"],
                             context=ConsultationContext.model_validate(row["context"]),
                             updated_at=row["updated_at"])


@task(name="save-consultation-state", retries=2, retry_delay_seconds=1)
def save_state(user_id: int, state: State, context: ConsultationContext, turns: int) -> None:
    with transaction() as conn:
        conn.execute(
            """
            insert into consultation_state (user_id, state, context, turns, updated_at)
            values (%s, %s, %s::jsonb, %s, now())
            on conflict (user_id) do update
               set state = excluded.state, context = excluded.context,
                   turns = excluded.turns, updated_at = excluded.updated_at
            """,
            (user_id, str(state), context.model_dump_json(), turns))


@task(name="clear-consultation-state", retries=2, retry_delay_seconds=1)
def clear_state(user_id: int) -> None:
    with transaction() as conn:
        conn.execute("delete from consultation_state where user_id = %s", (user_id,))


@task(name="finish-consultation-turn", retries=2, retry_delay_seconds=1)
def finish_turn(user_id: int, session_id: str, topic_id: int | None, question: str, answer: str,
                culture: str | None, category: str | None, *, queue: bool, keep: int = 30,
                queued_question: str | None = None, queued_answer: str | None = None) -> int | None:
    """A final answer, in one transaction: state cleared, pair logged, item queued for moderation.

    The history gets the reply as the user saw it; the queue gets `queued_question` /
    `queued_answer` when given (a follow-up with its root question, the answer without its
    source block, which would otherwise enter `knowledge_base` on approval).
    Returns the moderation item id (None when not queued). A crash leaves all or none of it.
    """
    with transaction() as conn:
        conn.execute("delete from consultation_state where user_id = %s", (user_id,))
        append_pair(conn, user_id, session_id, topic_id, question, answer, keep)
        if not queue:
            return None
        return add_to_queue(conn, user_id, topic_id, queued_question or question, queued_answer or answer,
                            culture, category)
