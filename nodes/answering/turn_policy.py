"""One turn's blackboard: detector signals and conversation-guard results, before the model speaks.

Chat and consultation both call `prepare_turn` with the user's message and the
history, put the result into the answer template, and afterwards call
`needs_regeneration` on the draft (anti-repetition). Which guards fired is
returned for the turn's metrics.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from grove.core.settings import Settings
from nodes.store.chat_history import NO_ANSWER_MARK, ChatMessage
from nodes.answering.context_signals import Signal, detect_signals
from nodes.answering.dialogue_guards import conversation_guard, is_repetition
from nodes.retrieval.sources import strip_model_sources


class TurnPolicy(BaseModel):
    signals: list[Signal] = Field(default_factory=list)
    guards: list[str] = Field(default_factory=list)
    recent_bot: list[str] = Field(default_factory=list, description="do_not_repeat_responses")
    repeat_similarity: float = Field(default=0.85, description="how similar a draft to a recent reply is a repeat "
                                                               "(the settings' `repeat_similarity`)")

    @property
    def signal_names(self) -> list[str]:
        return [s.name for s in self.signals]


def prepare_turn(message: str, history: list[ChatMessage], settings: Settings,
                 extra: list[Signal] | None = None) -> TurnPolicy:
    recent_user = [m.content for m in history if m.role == "user"][-5:]
    # Replies are stored as the user saw them; the source block under each is not what repeats.
    recent_bot = [strip_model_sources(m.content) for m in history
                  if m.role == "assistant" and m.content != NO_ANSWER_MARK][-settings.do_not_repeat_count:]
    guard = conversation_guard(message, recent_user, recent_bot, settings.repeat_similarity)
    return TurnPolicy(signals=(extra or []) + detect_signals(message) + guard.signals, guards=guard.fired,
                      recent_bot=recent_bot, repeat_similarity=settings.repeat_similarity)


def needs_regeneration(draft: str, policy: TurnPolicy) -> bool:
    """Anti-repetition: a draft too close to a recent reply is regenerated once, with a signal."""
    return "anti_repetition" not in policy.guards and is_repetition(draft, policy.recent_bot, policy.repeat_similarity)


def with_repetition_signal(policy: TurnPolicy) -> TurnPolicy:
    return policy.model_copy(update={"signals": [*policy.signals, Signal(name="repetition")],
                                     "guards": [*policy.guards, "anti_repetition"]})
