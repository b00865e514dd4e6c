"""Hard guards of the dialogue (seed 003 §3.4): code that stops loops, never writes answers.

- conversation guard: the user repeats a recent question, or the bot's last replies
  are near copies → signals telling the model to change tack (it still decides how);
- anti-repetition: a reply too similar to a recent one is regenerated once, with a signal.
The stall guard lives with the state it bounds (the consultation flow), and the
terminal gate with the action it protects (`nodes/moderation.approve`).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from pydantic import BaseModel, Field

from nodes.answering.context_signals import Signal

_WORDS = re.compile(r"\w+")


def normalise(text: str) -> str:
    return " ".join(_WORDS.findall(text.casefold().replace("ё", "е")))


def similarity(a: str, b: str) -> float:
    """0..1 similarity of two texts, ignoring case, punctuation and spacing."""
    left, right = normalise(a), normalise(b)
    if not left or not right:
        return 0.0
    return SequenceMatcher(None, left, right, autojunk=False).ratio()


def most_similar(text: str, previous: list[str]) -> float:
    return max((similarity(text, p) for p in previous), default=0.0)


class GuardResult(BaseModel):
    signals: list[Signal] = Field(default_factory=list)
    fired: list[str] = Field(default_factory=list)


def conversation_guard(message: str, recent_user: list[str], recent_bot: list[str], threshold: float) -> GuardResult:
    """Loop detection: the user asking again, or the bot saying the same thing twice running
    (texts at least `threshold` similar, `repeat_similarity`)."""
    result = GuardResult()
    if most_similar(message, recent_user) >= threshold:
        result.signals.append(Signal(name="user_repeats"))
    if len(recent_bot) >= 2 and similarity(recent_bot[-1], recent_bot[-2]) >= threshold:
        result.signals.append(Signal(name="bot_repeats"))
    if result.signals:
        result.signals.append(Signal(name="change_tack"))
        result.fired.append("conversation")
    return result


def is_repetition(reply: str, recent_bot: list[str], threshold: float) -> bool:
    """Anti-repetition: the draft is a near copy (`threshold`, `repeat_similarity`) of one of the bot's recent replies."""
    return bool(reply) and most_similar(reply, recent_bot) >= threshold
