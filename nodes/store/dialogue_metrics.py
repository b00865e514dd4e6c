"""Per-turn dialogue metrics (seed 003): which template, which signals, which guard fired.

One row per answered turn in `dialogue_turns`, so ops can count guard
activations and template use over time with plain SQL.
"""

from __future__ import annotations

import json
from typing import Any

from grove.core.observe import task
from grove.core.runs import note

from grove.store.db import transaction


@task(name="record-dialogue-turn", retries=2, retry_delay_seconds=1)
def record_turn(user_id: int, flow: str, template: str, signals: list[str], guards: list[str],
                meta: dict[str, Any] | None = None) -> int:
    with transaction() as conn:
        row = conn.execute(
            "insert into dialogue_turns (user_id, flow, template, signals, guards, meta)"
            " values (%s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb) returning id",
            (user_id, flow, template, json.dumps(signals, ensure_ascii=False),
             json.dumps(guards), json.dumps(meta or {}, ensure_ascii=False))).fetchone()
    assert row is not None  # insert … returning: one row
    return int(row["id"])


def report_turn(flow: str, user_id: int, signals: list[str], guards: list[str], details: list[str]) -> None:
    """The turn's metrics as lines of the run's one artifact (beside the question and the answer)."""
    note(f"{flow} turn of user {user_id} · template `answer.md`")
    note(f"signals: {', '.join(signals) or '—'} · guards fired: {', '.join(guards) or '—'}")
    for detail in details:
        note(detail)
