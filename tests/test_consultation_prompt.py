"""The consultation's system prompt (nodes/answering/consultation_prompt.py) and seed 000's clarification test."""

from __future__ import annotations

import pytest

from nodes.answering.consultation_prompt import (
    KNOWLEDGE_HEADER,
    answer_context,
    fragment_text,
    is_clarification_question,
    knowledge_block,
    system_prompt,
)
from nodes.answering.context_signals import Signal
from grove.core.domain_profile import DomainProfile, load_profile
from nodes.retrieval.unified_retrieve import Snippet

WATERING = Snippet(source_type="qa", priority_level=1, content="Голубику поливают кислой водой.", distance=0.1, id=1)
PRUNING = Snippet(source_type="document", priority_level=2, content="Малину обрезают осенью.", distance=0.3, id=2)


@pytest.fixture(scope="module")
def berries() -> DomainProfile:
    return load_profile("berries")


@pytest.mark.parametrize(("text", "asks"), [
    ("Какая у вас почва", True),  # asks without a question mark
    ("О КАКОЙ КУЛЬТУРЕ речь", True),  # whatever the case
    ("Уточните: ремонтантная или летняя", True),
    ("А" * 298 + "?", True),
    ("А" * 299 + "?", False),  # 300 characters: an answer, not a clarifying question
    ("Весной подкормите голубику серой, летом — калием.", False),
])
def test_a_clarification_is_short_and_asks(text: str, asks: bool) -> None:
    assert is_clarification_question(text) is asks


def test_fragments_are_numbered_under_the_knowledge_header() -> None:
    assert fragment_text(3, PRUNING) == "### Фрагмент 3 [УРОВЕНЬ 2] [document]\nМалину обрезают осенью.\n"
    block = knowledge_block([WATERING, PRUNING])
    assert block.startswith(KNOWLEDGE_HEADER)
    assert block.index("### Фрагмент 1 [УРОВЕНЬ 1] [qa]\nГолубику") < block.index("### Фрагмент 2 [УРОВЕНЬ 2]")
    assert knowledge_block([]) == ""


def test_a_known_culture_is_collected(berries: DomainProfile) -> None:
    context = answer_context(berries, "голубика", "общая консультация", "grounded", [WATERING])
    assert context.mode == "grounded" and context.collected == ["культура: голубика"] and context.missing == []
    assert context.role == berries.role
    assert context.situation == ["Текущая культура: голубика", "Категория консультации: общая консультация"]


@pytest.mark.parametrize("culture", ["не определено", "клубника садовая"])  # unclear, or no label of the profile
def test_an_unclear_culture_is_missing(berries: DomainProfile, culture: str) -> None:
    context = answer_context(berries, culture, "общая консультация", "clarify", [])
    assert context.mode == "clarify" and context.collected == [] and context.missing == ["культура"]


def test_the_prompt_names_the_culture_and_lists_the_fragments(berries: DomainProfile) -> None:
    prompt = system_prompt(berries, "голубика", "общая консультация", "grounded", [WATERING, PRUNING],
                           [Signal(name="followup")], ["Поливайте голубику кислой водой."])
    assert prompt.startswith(f"Ты — {berries.role}.\n\nПравила:")
    assert "\nТекущая культура: голубика\nКатегория консультации: общая консультация\n" in prompt
    assert "Известно о запросе: культура: голубика\nЧего не хватает: —" in prompt
    assert "- Это продолжение темы; культура взята из неё." in prompt
    assert "- «Поливайте голубику кислой водой.»" in prompt
    # rules, then the situation, the fragments in their order, and the turn's context last
    order = [prompt.index(p) for p in ("Правила:", "Текущая культура", "БАЗА ЗНАНИЙ", "Фрагмент 1", "Фрагмент 2",
                                       "Известно о запросе")]
    assert order == sorted(order)


def test_the_short_style_keeps_the_fragments_and_drops_past_replies(berries: DomainProfile) -> None:
    prompt = system_prompt(berries, "голубика", "общая консультация", "grounded", [WATERING], None,
                           ["Поливайте голубику кислой водой."], style="short")
    assert "### Фрагмент 1 [УРОВЕНЬ 1] [qa]\nГолубику поливают кислой водой." in prompt
    assert "Поливайте голубику" not in prompt and "Известно о запросе" not in prompt
    assert "Текущая культура: голубика" in prompt


def test_an_unclear_culture_is_asked_about(berries: DomainProfile) -> None:
    prompt = system_prompt(berries, "не определено", "общая консультация", "clarify", [])
    assert "Чего не хватает: культура" in prompt and "БАЗА ЗНАНИЙ" not in prompt
    assert "«О какой культуре речь?»" in prompt  # the clarify mode's line
