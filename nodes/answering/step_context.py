"""Context manager of a plan (seed 004): what each step sees of the steps before it.

Three strategies, all cut to the step's token allocation:
- selective: only the results of the steps it depends on (summarize, compare);
- sliding window: the last `window` finished results, whatever they are;
- hierarchical: its direct dependencies in full, every older result as a one-line summary
  (the final synthesis, which would otherwise carry the whole plan).
Each result gets an equal share of the allocation, so no single long search crowds out the rest.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from nodes.retrieval.retrieve import Fragment
from nodes.answering.token_budget import count_tokens, truncate_to_tokens

Strategy = Literal["selective", "sliding", "hierarchical"]
_SENTENCE = re.compile(r"(?<=[.!?…])\s")


class StepResult(BaseModel):
    step_id: str
    action: str
    text: str = ""
    fragments: list[Fragment] = Field(default_factory=list)
    numbers: list[int] = Field(default_factory=list, description="global fragment numbers, for citations")
    skipped: bool = False
    prompt_tokens: int = 0
    usage: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0

    @property
    def empty(self) -> bool:
        return self.skipped or not self.text.strip()


def one_line(result: StepResult) -> str:
    first = _SENTENCE.split(result.text.strip(), maxsplit=1)[0] if result.text.strip() else "нет данных"
    return f"[{result.step_id}, {result.action}, кратко] {first[:240]}"


def build_context(depends_on: list[str], finished: list[StepResult], strategy: Strategy, budget_tokens: int,
                  window: int = 2) -> str:
    """The materials block for a step, within `budget_tokens` tokens."""
    by_id = {r.step_id: r for r in finished}
    if strategy == "selective":
        full = [by_id[d] for d in depends_on if d in by_id]
        brief: list[StepResult] = []
    elif strategy == "sliding":
        full, brief = finished[-window:], []
    else:
        full = [by_id[d] for d in depends_on if d in by_id]
        brief = [r for r in finished if r.step_id not in depends_on]
    summaries = "\n".join(one_line(r) for r in brief)
    share = max(16, (budget_tokens - count_tokens(summaries)) // max(len(full), 1))
    blocks = [f"[{r.step_id}, {r.action}]\n{truncate_to_tokens(r.text or 'нет данных', share)}" for r in full]
    materials = "\n\n".join(([summaries] if summaries else []) + blocks)
    return truncate_to_tokens(materials, budget_tokens)
