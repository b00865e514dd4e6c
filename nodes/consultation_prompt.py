"""The consultation's system prompt (seed 002 "Инъекция контекста") and the clarification test.

Wording lives in `prompts/consultation_system.md` and `prompts/consultation_modes.yaml`;
this module only fills them: the culture, the category, the mode line, and the
retrieved snippets as numbered fragments with their tier and type.
"""

from __future__ import annotations

from functools import cache
from typing import Literal

import yaml

import prompts
from nodes.domain_profile import DomainProfile
from nodes.unified_retrieve import Snippet

Mode = Literal["clarify", "grounded", "ungrounded", "best_general"]
TEMPLATE = "consultation_system.md"


@cache
def mode_rules() -> dict[str, str]:
    return yaml.safe_load(prompts.load("consultation_modes.yaml"))


def knowledge_block(snippets: list[Snippet]) -> str:
    """`### Фрагмент n [УРОВЕНЬ p] [qa|document]` blocks, quoted as data."""
    if not snippets:
        return ""
    parts = ["\n## БАЗА ЗНАНИЙ (используй эту информацию для ответа):\n"]
    for n, snippet in enumerate(snippets, 1):
        parts.append(f"### Фрагмент {n} [УРОВЕНЬ {snippet.priority_level}] [{snippet.source_type}]\n"
                     f"{snippet.content}\n")
    return "\n".join(parts)


def system_prompt(profile: DomainProfile, culture: str, category: str, mode: Mode,
                  snippets: list[Snippet]) -> str:
    if mode == "grounded" and not snippets:
        mode = "ungrounded"
    return prompts.load(TEMPLATE).format(role=profile.role, culture=culture, category=category,
                                         mode_rule=mode_rules()[mode],
                                         knowledge=knowledge_block(snippets)).rstrip() + "\n"


def is_clarification_question(text: str) -> bool:
    """Seed 000's test: a short reply (< 300 chars) that asks — «уточните», «какая у вас», or a «?»."""
    lowered = text.lower()
    return len(text) < 300 and ("уточните" in lowered or "о какой культуре" in lowered
                                or "какая у вас" in lowered or "?" in text)
