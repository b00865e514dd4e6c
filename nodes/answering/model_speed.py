"""How fast the local model reads a prompt and writes, measured where it runs.

A fixed time limit fits one machine: on a busy small box it cuts answers short, on an idle one it waits
just as long for a hung server. So each streamed answer is timed (first token after the prompt, then the
pieces), the rates are kept as a moving average, and a call's limit is what its prompt and token cap need
at the speed seen lately, with room to spare: a busy machine gets longer limits, an idle one shorter.
Figures: bench/README.md, «Offline answers end to end» (bench.answer_eval).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cache

SLACK = 2.0
"""A call may take this many times what the recent speed says it needs (speed swings with load)."""
MARGIN = 15.0
"""Seconds added to every limit: connection, the server's queue, the first chunk."""
FLOOR = 60.0
"""No limit is shorter: a short prompt on a fast machine still gets a minute."""
WEIGHT = 0.3
"""Weight of the newest measurement in the moving average."""


@dataclass
class ModelSpeed:
    """Prompt tokens read per second and tokens written per second, as last measured."""

    prompt_per_s: float
    tokens_per_s: float
    measured: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def observe(self, prompt_tokens: int, first_after: float, tokens: int, writing_for: float) -> None:
        """One streamed call: `prompt_tokens` read before the first piece came `first_after` s in,
        then `tokens` pieces over `writing_for` s. Too short to say anything is ignored."""
        with self._lock:
            if prompt_tokens >= 32 and first_after > 0.05:
                self.prompt_per_s = self._mix(self.prompt_per_s, prompt_tokens / first_after)
            if tokens >= 8 and writing_for > 0.05:
                self.tokens_per_s = self._mix(self.tokens_per_s, tokens / writing_for)
            self.measured += 1

    def _mix(self, old: float, new: float) -> float:
        return new if self.measured == 0 else (1 - WEIGHT) * old + WEIGHT * new

    def seconds_for(self, prompt_tokens: int, max_tokens: int) -> float:
        """What a call of this prompt and token cap takes at the measured speed."""
        return prompt_tokens / self.prompt_per_s + max_tokens / self.tokens_per_s

    def limit(self, prompt_tokens: int, max_tokens: int, cap: float) -> float:
        """The call's limit: the time it needs, with slack and a margin, between `FLOOR` and `cap`."""
        return min(cap, max(FLOOR, SLACK * self.seconds_for(prompt_tokens, max_tokens) + MARGIN))


@cache
def local_speed() -> ModelSpeed:
    """The local model's speed in this process, starting from the settings' conservative guess."""
    from grove.core.settings import get_settings

    settings = get_settings()
    return ModelSpeed(settings.local_prompt_tokens_per_s, settings.local_tokens_per_s)


forget = local_speed.cache_clear
"""Start again from the settings' guess (a new model, or tests)."""
