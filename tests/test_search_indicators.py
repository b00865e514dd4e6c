"""The seed's indicator rules that tell the small local model a question needs the user's base."""

from __future__ import annotations

import pytest

from nodes.retrieval.search_indicators import base_indicators


@pytest.mark.parametrize("question", [
    "Проверь в базе: чем подкармливать малину?",
    "Что сказано в отчёт_2025.pdf про полив?",
    "О чём статья https://example.org/malina?",
    "Сравни, что говорят все мои документы о поливе голубики и малины",
    "Найди в моих файлах, когда обрезать смородину",
    "Что в моём документе о мульче?",
    "Перескажи видео, которое я загрузил",
    "Что было в голосовом сообщении про укрытие?",
    "Ответь по документу: какая норма азота?",
])
def test_questions_about_the_users_base_fire(question: str) -> None:
    assert base_indicators(question), question


@pytest.mark.parametrize("question", [
    "Привет! Как дела?",
    "Когда обрезать смородину?",
    "Какая почва нужна голубике?",
    "Что такое ремонтантная малина?",
])
def test_general_questions_do_not(question: str) -> None:
    assert base_indicators(question) == []


def test_the_rules_that_fired_are_named() -> None:
    found = base_indicators("Проверь в базе отчёт.pdf и https://example.org")
    assert "url" in found and "file name" in found and "phrase «проверь в базе»" in found
