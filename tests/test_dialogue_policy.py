"""Detectors, guards and the one answer template (seed 003), without the model."""

from __future__ import annotations

import pytest

from nodes.answering.answer_prompt import AnswerContext, render
from nodes.answering.context_signals import Signal, detect_signals
from nodes.answering.dialogue_guards import conversation_guard, is_repetition, similarity


@pytest.mark.parametrize(("message", "expected"), [
    ("Привет!", ["greeting"]),
    ("Добрый день, что в моём файле report.pdf?", ["greeting", "asks_document"]),
    ("Откуда это? Дайте ссылку на источник", ["asks_document", "asks_source"]),
    ("Это неправильно, вы не поняли вопрос", ["complaint"]),
    ("Когда обрезать малину?", []),
])
def test_detectors_add_signals(message: str, expected: list[str]) -> None:
    assert [s.name for s in detect_signals(message)] == expected


def test_similarity_ignores_case_and_punctuation() -> None:
    assert similarity("Когда обрезать малину?", "когда  обрезать малину") == 1.0
    assert similarity("Когда обрезать малину?", "Чем подкормить голубику весной") < 0.6


def test_conversation_guard_fires_on_a_repeated_question() -> None:
    result = conversation_guard("Когда обрезать малину?", ["когда обрезать малину", "привет"], ["a", "b"], 0.85)
    assert result.fired == ["conversation"]
    assert [s.name for s in result.signals] == ["user_repeats", "change_tack"]


def test_conversation_guard_fires_when_the_bot_repeats_itself() -> None:
    same = "Обрезайте малину осенью, удаляя отплодоносившие побеги."
    result = conversation_guard("А ещё?", ["вопрос один"], [same, same + "!"], 0.85)
    assert [s.name for s in result.signals] == ["bot_repeats", "change_tack"]


def test_conversation_guard_stays_quiet_in_a_normal_dialogue() -> None:
    result = conversation_guard("А чем подкормить?", ["Когда обрезать малину?"],
                                ["Осенью.", "Весной азотом, летом калием."], 0.85)
    assert result.fired == [] and result.signals == []


def test_anti_repetition_compares_with_recent_replies() -> None:
    recent = ["Малину обрезают осенью, сразу после плодоношения."]
    assert is_repetition("Малину обрезают осенью — сразу после плодоношения!", recent, 0.85)
    assert not is_repetition("Весной удалите подмёрзшие верхушки.", recent, 0.85)
    assert not is_repetition("", recent, 0.85)


def test_the_template_shows_every_variable() -> None:
    prompt = render(AnswerContext(
        role="агроном", mode="grounded", situation=["Текущая культура: голубика"],
        collected=["культура: голубика"], missing=["сорт"],
        signals=[Signal(name="asks_document", detail="url"), Signal(name="complaint")],
        do_not_repeat=["Прошлый ответ."], facts="## БАЗА ЗНАНИЙ\nфакт"))
    assert prompt.startswith("Ты — агроном.")
    assert "Текущая культура: голубика" in prompt
    assert "Известно о запросе: культура: голубика" in prompt and "Чего не хватает: сорт" in prompt
    assert "- Пользователь спрашивает о своих документах или базе (url)." in prompt
    assert "- Пользователь недоволен прошлым ответом или возражает." in prompt
    assert "- «Прошлый ответ.»" in prompt
    # the cache's order: shared rules, then the situation, the facts, and the turn's context last
    assert prompt.index("Правила:") < prompt.index("Текущая культура") < prompt.index("## БАЗА ЗНАНИЙ\nфакт") \
        < prompt.index("Известно о запросе")
    assert prompt.rstrip().endswith("- «Прошлый ответ.»")
    assert "rag-db-query" not in prompt  # tool rules only when the tool is offered
    assert "rag-db-query" in render(AnswerContext(role="r", mode="chat", tools=True))
    assert "{" not in render(AnswerContext(role="r", mode="chat"))  # nothing left unfilled
