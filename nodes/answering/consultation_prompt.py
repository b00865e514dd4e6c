"""The consultation's inputs to the one answer template (seed 002 "Инъекция контекста").

Retrieved snippets become numbered fragments with their tier and type; the
culture and category become the situation; the dialogue step picks the mode
line. Wording lives in `prompts/answer.md` and `prompts/answer_parts.yaml`.
"""

from __future__ import annotations

from typing import Literal

from nodes.answering.answer_prompt import AnswerContext, Style, render
from nodes.answering.context_signals import Signal
from grove.core.domain_profile import DomainProfile
from nodes.retrieval.unified_retrieve import Snippet

Mode = Literal["clarify", "grounded", "ungrounded", "best_general"]


KNOWLEDGE_HEADER = "\n## БАЗА ЗНАНИЙ (используй эту информацию для ответа):\n"


def fragment_text(n: int, snippet: Snippet) -> str:
    """One `### Фрагмент n [УРОВЕНЬ p] [qa|document]` block."""
    return f"### Фрагмент {n} [УРОВЕНЬ {snippet.priority_level}] [{snippet.source_type}]\n{snippet.content}\n"


def knowledge_block(snippets: list[Snippet]) -> str:
    """The header and the numbered fragments, quoted as data."""
    if not snippets:
        return ""
    return "\n".join([KNOWLEDGE_HEADER] + [fragment_text(n, s) for n, s in enumerate(snippets, 1)])


def answer_context(profile: DomainProfile, culture: str, category: str, mode: Mode,
                   snippets: list[Snippet], signals: list[Signal] | None = None,
                   do_not_repeat: list[str] | None = None, style: Style = "full") -> AnswerContext:
    if mode == "grounded" and not snippets:
        mode = "ungrounded"
    unclear = profile.case_of(culture) == "unclear"
    return AnswerContext(
        role=profile.role, mode=mode,
        situation=[f"Текущая культура: {culture}", f"Категория консультации: {category}"],
        collected=[] if unclear else [f"культура: {culture}"],
        missing=["культура"] if unclear else [],
        signals=signals or [], do_not_repeat=do_not_repeat or [], facts=knowledge_block(snippets), style=style)


def system_prompt(profile: DomainProfile, culture: str, category: str, mode: Mode,
                  snippets: list[Snippet], signals: list[Signal] | None = None,
                  do_not_repeat: list[str] | None = None, style: Style = "full") -> str:
    return render(answer_context(profile, culture, category, mode, snippets, signals, do_not_repeat, style))


def is_clarification_question(text: str) -> bool:
    """Seed 000's test: a short reply (< 300 chars) that asks — «уточните», «какая у вас», or a «?»."""
    lowered = text.lower()
    return len(text) < 300 and ("уточните" in lowered or "о какой культуре" in lowered
                                or "какая у вас" in lowered or "?" in text)
