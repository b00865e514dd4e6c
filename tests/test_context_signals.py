"""The turn's detectors (nodes/answering/context_signals.py): what they notice in a message, and what they do not."""

from __future__ import annotations

import pytest

from nodes.answering.context_signals import Signal, asks, detect_signals


def names(message: str) -> list[str]:
    return [s.name for s in detect_signals(message)]


@pytest.mark.parametrize("message", ["Здравствуйте, коллеги", "  —Добрый вечер!", "Доброе утро", "Hi!",
                                     "Доброго времени суток. Как обрезать малину?"])
def test_a_greeting_opens_the_message(message: str) -> None:
    assert names(message) == ["greeting"]


@pytest.mark.parametrize("message", ["Скажи привет маме", "history of raspberry", "Приветливые соседи подарили саженцы"])
def test_a_greeting_word_elsewhere_is_no_greeting(message: str) -> None:
    assert "greeting" not in names(message)


def test_a_document_question_names_at_most_three_indicators() -> None:
    [signal] = detect_signals("Что в https://example.com/a и в файле отчёт.pdf по базе из документа?")
    assert signal == Signal(name="asks_document", detail="url, file name, phrase «по базе»")


@pytest.mark.parametrize("message", ["Где это написано?", "На что вы опираетесь?", "Откуда информация?",
                                     "Дайте ссылку на статью"])
def test_asking_where_it_comes_from_is_asks_source(message: str) -> None:
    assert "asks_source" in names(message)


@pytest.mark.parametrize(("message", "complains"), [
    ("Вы ошибаетесь", True),
    ("Не работает ваш совет", True),
    ("Это бред", True),
    ("Ерунда какая-то", True),
    ("Не то!", True),
    ("Я не согласна", True),
    ("Это не того сорта малина", False),  # «не то» as a whole word only
    ("Бредовые идеи соседа про обрезку", False),  # «бред» as a whole word only
    ("Спасибо, всё получилось", False),
])
def test_a_complaint_is_noticed(message: str, complains: bool) -> None:
    assert ("complaint" in names(message)) is complains


def test_signals_come_in_the_detectors_order() -> None:
    signals = detect_signals("Здравствуйте, в файле отчёт.pdf ерунда, где это написано?")
    assert [s.name for s in signals] == ["greeting", "asks_document", "asks_source", "complaint"]
    assert signals[1].detail == "file name, phrase «в файле»"
    assert signals[0].detail == signals[2].detail == signals[3].detail == ""


@pytest.mark.parametrize("message", [
    "Как обрезать малину?", "подскажи сорт малины", "Можно ли сажать осенью",
    # as users type in a chat: no question mark, the question word inside (set BD, Totem's help)
    "звук с клавы как прибавить", "зум картинки на какую кнопку",
    "раскадровку из фильма сделал, в каком формате она сохранится", "малина засохла, че делать",
    "сабы вообще откуда качать", "сколько гигов надо под винду", "флешку в виртуалку прокинуть как",
    "панелька с настройками налезает на превью, как её убрать", "поставил пароль, а файлы открываются, чё за дела",
    # two choices, and «скока» (set BE)
    "адрес для перехода писать с 0x или просто цифрами", "по скока бит группирует по дефолту",
    # a question word last (set BG)
    "хроматическое число графа это что", "а сохраняется оно куда", "обновление выйдет когда",
    # a question pronoun after a preposition (set BJ)
    "в формах поля на выходе через что разделяются по дефолту", "а эта кнопка для чего", "скорость от чего зависит",
    # «ли» after its word, no mark (set BP: answered from general knowledge with no word that it was)
    "законно ли вообще рипать диски которые сам купил", "а работает ли это без интернета",
])
def test_a_question_asks_with_or_without_its_mark(message: str) -> None:
    assert asks(message)


@pytest.mark.parametrize("message", [
    "Привет", "Спасибо, всё работает как надо", "сделал как ты сказал", "ок, понял", "малина как раз поспела",
    "Отлично, что получилось", "я рад, что смог посадить",
    "понял, что к чему, спасибо", "сделал всё, как и когда надо",
    "спасибо! не за что", "ни за что бы не догадался", "это то, о чём я говорил", "это то о чем я говорил",
    "вряд ли это поможет", "едва ли успею сегодня",
])
def test_a_remark_asks_nothing(message: str) -> None:
    assert not asks(message)
