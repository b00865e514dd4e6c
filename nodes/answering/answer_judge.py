"""Whether the passages answer the question, asked of the local model before it drafts.

The search gate measures distance, and a question the documents are silent on can sit as close to a
passage as one they answer: the gate passed silent questions, and the small model then wrote an answer
from passages about something else. Asked «does this passage answer?» over the few sentences that would
be quoted, the same model tells the two apart better than the gate or `answer_check.covers` did, and the
odds of its one-word reply (`llm.yes_probability`) give thresholds chosen on measured sets. Past the gate,
below the threshold the passages are shown as only the nearest with no draft, and at or above it a refusal
over them is overruled; in the near band the model drafts only when it is surer still.
Figures: bench/README.md, «Whether the passages answer»."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import prompts
from grove.core.settings import Settings
from nodes.answering.llm import LLMDeadlineExceeded, LLMError, Message, llm_judge_task

log = logging.getLogger(__name__)


def judge_messages(question: str, passages: Sequence[str]) -> list[Message]:
    """The judge's request: its rule, the passages quoted, the question."""
    quoted = "\n".join(f"«{p}»" for p in passages)
    return [{"role": "system", "content": prompts.load("answer_judge.md").strip()},
            {"role": "user", "content": f"Отрывок:\n{quoted}\n\nВопрос: {question}\n\nОтвечает ли отрывок на этот вопрос?"}]


def answer_odds(question: str, passages: Sequence[str], settings: Settings) -> float | None:
    """The model's probability that the passages answer the question; None when it cannot be had
    (no passages, an endpoint without log-probabilities, a failed call): the gate's decision then stands."""
    if not passages:
        return None
    try:
        return llm_judge_task(settings)(judge_messages(question, passages))
    except LLMDeadlineExceeded:
        raise
    except LLMError as exc:
        log.info("no judgment of the passages for %r: %s", question[:60], exc)
        return None
