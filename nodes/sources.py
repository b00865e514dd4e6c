"""The grounding block under an answer: only sources that were retrieved, never invented."""

from __future__ import annotations

import re

from nodes.retrieve import Fragment

HEADER = "Информация взята из:"
_CITATION = re.compile(r"\[(\d{1,2})\]")
_MODEL_SOURCES = re.compile(r"\n*\s*(Информация взята из|Источники?)\s*:.*\Z", re.IGNORECASE | re.DOTALL)


def cited(answer: str, count: int) -> list[int]:
    """1-based fragment numbers the answer cites, in order, without duplicates or out-of-range ones."""
    numbers: list[int] = []
    for match in _CITATION.finditer(answer):
        number = int(match.group(1))
        if 1 <= number <= count and number not in numbers:
            numbers.append(number)
    return numbers


def strip_model_sources(answer: str) -> str:
    """Drop a source list the model wrote itself: the block is built from real fragments only."""
    return _MODEL_SOURCES.sub("", answer).rstrip()


def source_block(fragments: list[Fragment], used: list[int]) -> str:
    """One line per distinct source actually used (by citation; all retrieved if none cited)."""
    chosen = [fragments[n - 1] for n in used] if used else fragments
    labels: list[str] = []
    for fragment in chosen:
        label = fragment.source_label()
        if label not in labels:
            labels.append(label)
    if not labels:
        return ""
    return HEADER + "\n" + "\n".join(f"• {label}" for label in labels)
