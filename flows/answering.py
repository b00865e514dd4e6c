"""Which flow answers a question in this deployment: one decision, for Telegram and the console.

A deployment with a domain profile (seed 000) consults — culture, clarifying questions, the three
tiers; without one, a question is a chat turn over the user's own base (seed 001).
"""

from __future__ import annotations

from collections.abc import Callable

from flows.chat import ChatAnswer, chat
from flows.consultation import ConsultationAnswer, consultation
from grove.core.domain_profile import active_profile

Answer = ChatAnswer | ConsultationAnswer


def answering_flow() -> Callable[[str, int, str], Answer]:
    """`consultation` when the deployment carries a domain profile, else `chat`."""
    return consultation if active_profile() is not None else chat
