"""Prompt templates as files; `load(name)` reads one.

No code decides wording here: every answer is `answer.md` filled from `answer_parts.yaml`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent


@cache
def load(name: str) -> str:
    """The text of `prompts/<name>` (e.g. `answer.md`)."""
    return (TEMPLATES / name).read_text(encoding="utf-8")
