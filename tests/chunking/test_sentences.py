"""Sentence splitting: Russian boundaries, exact offsets, razdel parity, speed."""

from __future__ import annotations


import pytest
from razdel import sentenize

from chunking import Span, split_sentences
from chunking.sentences import _razdel_bounds_fast
from tests.chunking.texts import DOCUMENT, LONG_PARAGRAPHS, generate_text


def texts(text: str) -> list[str]:
    return [s.text for s in split_sentences(text)]


def assert_exact_cover(text: str, spans: list[Span]) -> None:
    """Spans are exact, tight, ordered and cover all non-whitespace once."""
    previous_end = 0
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert span.text and span.text == span.text.strip()
        assert previous_end <= span.start
        assert text[previous_end : span.start].strip() == ""
        previous_end = span.end
    assert text[previous_end:].strip() == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "Это было в 1830 г. в Болдине. Потом он уехал.",
            ["Это было в 1830 г. в Болдине.", "Потом он уехал."],
            id="year-abbreviation",
        ),
        pytest.param(
            "Стихи написал А. С. Пушкин. Их читали все.",
            ["Стихи написал А. С. Пушкин.", "Их читали все."],
            id="initials",
        ),
        pytest.param(
            "Мы пришли рано, т. е. до открытия. Двери были закрыты.",
            ["Мы пришли рано, т. е. до открытия.", "Двери были закрыты."],
            id="t-e",
        ),
        pytest.param(
            "Собрание прошло в ДК им. Горького. Пришли все.",
            ["Собрание прошло в ДК им. Горького.", "Пришли все."],
            id="imeni",
        ),
        pytest.param(
            "Рост составил 3.5 процента. Это много.",
            ["Рост составил 3.5 процента.", "Это много."],
            id="decimal",
        ),
        pytest.param(
            "Купили хлеб, молоко и т. д. Потом пошли домой.",
            ["Купили хлеб, молоко и т. д.", "Потом пошли домой."],
            id="i-t-d-at-sentence-end",
        ),
        pytest.param(
            "«Ты придёшь?» — спросила она. «Приду!» — ответил он.",
            ["«Ты придёшь?» — спросила она.", "«Приду!» — ответил он."],
            id="direct-speech",
        ),
        pytest.param(
            "Он молчал... Потом заговорил. Тишина…",
            ["Он молчал...", "Потом заговорил.", "Тишина…"],
            id="ellipsis",
        ),
        pytest.param(
            "Адрес: ул. Ленина, д. 5, кв. 12. Звоните.",
            ["Адрес: ул. Ленина, д. 5, кв. 12.", "Звоните."],
            id="address",
        ),
        pytest.param(
            "Подробности см. в п. 4.2 регламента. Вопросы? Пишите!",
            ["Подробности см. в п. 4.2 регламента.", "Вопросы?", "Пишите!"],
            id="see-clause",
        ),
    ],
)
def test_tricky_russian_boundaries(text: str, expected: list[str]) -> None:
    assert texts(text) == expected
    assert_exact_cover(text, split_sentences(text))


def test_document_abbreviations_are_not_boundaries() -> None:
    sentences = texts(DOCUMENT)
    assert "Библиотека основана в 1899 г. по инициативе проф. И. И. Петрова." in sentences
    assert "В 2023 г. фонд составил 3.5 млн экз., т. е. вырос почти вдвое за 20 лет." in sentences
    assert "«Мы открыты для всех!» — говорит директор Н. В. Смирнова." in sentences
    assert "Адрес: г. Москва, ул. Ленина, д. 5, стр. 2." in sentences
    for sentence in sentences:
        assert not sentence.endswith((" г.", " им.", " т.", " А.", " С.", " проф.", " ул."))


def test_sentences_never_cross_paragraphs_and_list_lines() -> None:
    sentences = texts(DOCUMENT)
    assert sentences[0] == "Положение о библиотеке им. А. С. Пушкина"  # heading, no period
    assert sentences[1].startswith("Библиотека основана")
    start = sentences.index("Для записи необходимы:")
    assert sentences[start : start + 4] == [
        "Для записи необходимы:",
        "- паспорт гражданина РФ;",
        "- фотография 3×4 см;",
        "- заявление установленного образца.",
    ]
    start = sentences.index("Часы работы:")
    assert sentences[start : start + 4] == [
        "Часы работы:",
        "Понедельник – пятница: 9:00–20:00",
        "Суббота: 10:00–18:00",
        "Воскресенье: выходной",
    ]


def test_hard_wrapped_prose_is_joined_across_lines() -> None:
    text = (
        "Настоящий регламент определяет порядок работы\n"
        "с обращениями граждан, поступившими в\n"
        "Министерство по почте. Ответ даётся\n"
        "в течение 30 дней."
    )
    assert texts(text) == [
        "Настоящий регламент определяет порядок работы\nс обращениями граждан, "
        "поступившими в\nМинистерство по почте.",
        "Ответ даётся\nв течение 30 дней.",
    ]


def test_dialogue_lines_are_separate_sentences() -> None:
    text = "— Куда ты идёшь? — спросил он.\n— Домой, — ответила она."
    assert texts(text) == ["— Куда ты идёшь? — спросил он.", "— Домой, — ответила она."]


def test_numbered_list_items_keep_their_numbers() -> None:
    text = "Порядок действий:\n1. Заполнить анкету.\n2. Приложить фото.\n3) Подать заявление."
    assert texts(text) == [
        "Порядок действий:",
        "1. Заполнить анкету.",
        "2. Приложить фото.",
        "3) Подать заявление.",
    ]


@pytest.mark.parametrize("text", ["", " ", "\n\n\t \u00a0\r\n"])
def test_empty_and_whitespace(text: str) -> None:
    assert split_sentences(text) == []


def test_offsets_exact_on_document_and_long_paragraphs() -> None:
    for text in [DOCUMENT, *LONG_PARAGRAPHS, "\r\n  " + DOCUMENT.replace("\n", "\r\n") + " \n"]:
        assert_exact_cover(text, split_sentences(text))


@pytest.mark.parametrize("seed", range(40))
def test_generated_texts_exact_cover(seed: int) -> None:
    text = generate_text(seed)
    assert_exact_cover(text, split_sentences(text))


@pytest.mark.parametrize("seed", range(40))
def test_fast_driver_matches_razdel_sentenize(seed: int) -> None:
    """Our linear-time driver makes exactly razdel's decisions."""
    text = generate_text(seed).replace("\n", " ")
    expected = [(s.start, s.stop) for s in sentenize(text)]
    got = []
    for start, end in _razdel_bounds_fast(text, 0, len(text)):
        stripped = text[start:end].strip()
        if stripped:
            offset = text.index(stripped, start)
            got.append((offset, offset + len(stripped)))
    assert got == expected


def test_long_boundary_free_run_is_linear() -> None:
    # razdel.sentenize needs seconds here (it rebuilds the sentence string on
    # every joined delimiter); bench/chunking_speed.py measures our driver.
    text = "3.5 т. е. " * 20_000
    spans = split_sentences(text)
    assert_exact_cover(text, spans)
