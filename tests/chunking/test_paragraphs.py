"""Paragraph splitting: blank lines, lists, wrapped prose, one-line paragraphs."""

from __future__ import annotations

import pytest

from chunking import split_paragraphs
from tests.chunking.texts import DOCUMENT, generate_text

LONG_1 = (
    "Первый абзац документа в формате DOCX, где каждый абзац записан одной длинной "
    "строкой. Он содержит несколько предложений, т. е. явно длиннее строки при переносе."
)
LONG_2 = (
    "Второй абзац тоже длинный: сотрудники обязаны соблюдать правила внутреннего "
    "распорядка, в т. ч. приходить вовремя и не опаздывать на совещания к 9.30."
)


def texts(text: str) -> list[str]:
    return [p.text for p in split_paragraphs(text)]


def assert_exact_cover(text: str) -> None:
    previous_end = 0
    for p in split_paragraphs(text):
        assert text[p.start : p.end] == p.text
        assert p.text and p.text == p.text.strip()
        assert previous_end <= p.start
        assert text[previous_end : p.start].strip() == ""
        previous_end = p.end
    assert text[previous_end:].strip() == ""


def test_blank_lines_separate_paragraphs() -> None:
    text = "Первый абзац. Т. е. вступление.\n\nВторой абзац.\n \t \n\n\nТретий абзац."
    assert texts(text) == ["Первый абзац. Т. е. вступление.", "Второй абзац.", "Третий абзац."]


def test_crlf_and_surrounding_whitespace() -> None:
    text = "\r\n  Первый абзац.\r\n\r\nВторой\r\nабзац.  \r\n\r\n \u00a0 \r\n"
    paragraphs = split_paragraphs(text)
    assert [p.text for p in paragraphs] == ["Первый абзац.", "Второй\r\nабзац."]
    assert paragraphs[0].start == 4
    assert_exact_cover(text)


def test_document_paragraphs() -> None:
    paragraphs = texts(DOCUMENT)
    assert len(paragraphs) == 7
    assert paragraphs[0] == "Положение о библиотеке им. А. С. Пушкина"
    assert paragraphs[4] == (
        "Для записи необходимы:\n- паспорт гражданина РФ;\n- фотография 3×4 см;\n"
        "- заявление установленного образца."
    )
    assert paragraphs[5].startswith("Часы работы:\nПонедельник")
    assert paragraphs[5].endswith("Воскресенье: выходной")


def test_one_item_per_line_lists_stay_together() -> None:
    text = (
        "Контакты:\nТелефон: 8 800 000-00-00\n"
        "Адрес: г. Москва, ул. Ленина, д. 5\nE-mail: info@example.org"
    )
    assert texts(text) == [text]


def test_hard_wrapped_prose_stays_together() -> None:
    text = (
        "Настоящий регламент определяет порядок работы\n"
        "с обращениями граждан, поступившими в\n"
        "Министерство по почте или через\n"
        "электронную приёмную."
    )
    assert texts(text) == [text]


def test_single_newlines_between_long_lines_are_paragraph_breaks() -> None:
    items = "Состав комиссии:\n- председатель;\n- секретарь."
    text = f"{LONG_1}\n{LONG_2}\n{items}\n{LONG_1}"
    assert texts(text) == [LONG_1, LONG_2, items, LONG_1]
    assert_exact_cover(text)


def test_lowercase_continuation_of_a_long_line_is_not_a_break() -> None:
    text = f"{LONG_1}\nи это продолжение того же абзаца."
    assert texts(text) == [text]


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "\r\n \t\r\n\u00a0"])
def test_empty_and_whitespace(text: str) -> None:
    assert split_paragraphs(text) == []


@pytest.mark.parametrize("seed", range(40))
def test_generated_texts_exact_cover(seed: int) -> None:
    assert_exact_cover(generate_text(seed))
