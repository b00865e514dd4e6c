"""Which flow answers a question in this deployment: one decision, for Telegram and the console.

A deployment with a domain profile (seed 000) consults — culture, clarifying questions, the three
tiers; without one, a question is a chat turn over the user's own base (seed 001).
"""

from __future__ import annotations

from typing import Protocol

from flows.chat import ChatAnswer, chat
from flows.consultation import ConsultationAnswer, consultation
from grove.core.domain_profile import active_profile
from grove.core.settings import Settings
from nodes.telegram.stream import Show

Answer = ChatAnswer | ConsultationAnswer


class AnsweringFlow(Protocol):
    """A question answered; `show` is the turn's draft the answer is written into, if any; `settings` the
    turn's (None: the process's, as a run Prefect starts has)."""

    def __call__(self, question: str, user_id: int, session_id: str, show: Show | None = None,
                 settings: Settings | None = None) -> Answer: ...


def answering_flow() -> AnsweringFlow:
    """`consultation` when the deployment carries a domain profile, else `chat`."""
    return consultation if active_profile() is not None else chat
