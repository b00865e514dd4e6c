"""The grounding block under an answer: only sources that were retrieved and back the answer.

Which fragments back an answer is decided by `nodes.answer_check` (citations checked
against the fragments' text, or sources chosen by overlap); this module only writes the
block. An answer that nothing backs gets no block: listing every retrieved fragment
put sources under answers that used none of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol


class Labelled(Protocol):
    """A retrieved piece that can name its source (a chat fragment, a consultation snippet)."""

    def source_label(self) -> str: ...


HEADER = "Информация взята из:"
_MODEL_SOURCES = re.compile(r"\n*\s*(Информация взята из|Источники?)\s*:.*\Z", re.IGNORECASE | re.DOTALL)


def strip_model_sources(answer: str) -> str:
    """Drop a source list the model wrote itself: the block is built from real fragments only."""
    return _MODEL_SOURCES.sub("", answer).rstrip()


def source_block(fragments: Sequence[Labelled], used: list[int]) -> str:
    """One line per distinct source among the 1-based `used` fragments; empty when none is used."""
    chosen = [fragments[n - 1] for n in used if 1 <= n <= len(fragments)]
    labels: list[str] = []
    for fragment in chosen:
        label = fragment.source_label()
        if label not in labels:
            labels.append(label)
    if not labels:
        return ""
    return HEADER + "\n" + "\n".join(f"• {label}" for label in labels)
