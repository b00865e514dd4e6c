"""The things a question names that the user's base never mentions (nodes/retrieval/base_vocabulary.py).

The fixture is the Russian TeX Live 2021 guide as Debian ships it (texlive-ru.pdf, sections 3.1.2
and 3.3), and the questions are from bench/sets/texlive_pdf_ru.json and the development silent set
beside it (texlive_pdf_silent_ru.json).
"""

from __future__ import annotations

import pytest

from nodes.retrieval.base_vocabulary import everyday, named_things, root_start, unknown_things

MAC = ("Как отмечается в разделе 2.1, для Mac OS X существует специальный дистрибутив, MacTEX "
       "(https://tug.org/mactex). Мы рекомендуем пользоваться его системой установки, а не общим скриптом TEX "
       "Live, поскольку у него есть дополнительные возможности, специфические для Макинтошей, например, удобное "
       "переключение между различными дистрибутивами TEXа для Mac OS X (MacTEX, Fink, MacPorts, . . . ), которые "
       "соответствуют стандарту TEXDist.")
# The MetaPost user's manual in Russian (mpman-ru.pdf, p. 8): the file names of outputtemplate.
TEMPLATE = ("Если исходный файл сохранялся как fig.mp, то будет создан выходной файл fig-001.mps вместо fig.1. "
            "Маленькое множество возможных escape-последовательностей см. в таблице 1.")
PORTABLE = ("-portable Установить переносимую версию TEX Live, например, на флешку USB. Эту опцию также можно "
            "указать при помощи команды V в текстовом установки, или из графического режима. См. также раздел 5. "
            "-profile файл Использовать конфигурацию установки file и не задавать пользователю никаких вопросов.")
# The Russian manpath(5) page of man-db (manpages-ru): a path Postgres' parser keeps as one lexeme.
MANPATH = ("Если установлена переменная окружения $MANPATH, то информация из /etc/manpath.config использоваться "
           "не будет.")


@pytest.mark.parametrize(("question", "things"), [
    ("Как установить TeX Live на Mac через Homebrew?", ["TeX", "Live", "Mac", "Homebrew"]),
    # a compound, and its parts that name things
    ("Как запустить TeX Live внутри Docker-контейнера?", ["TeX", "Live", "Docker-контейнера", "Docker", "контейнера"]),
    ("Как назвать выходные картинки вида fig-001.mps?", ["выходные", "картинки", "вида", "fig-001.mps", "fig",
                                                         "001.mps"]),
    # verbs, adjectives and adverbs are the user's own wording, not things; nor is «какой-то»
    ("Как поставить TeX Live на USB-флешку, чтобы он не трогал какие-то настройки компьютера?",
     ["TeX", "Live", "USB-флешку", "USB", "флешку", "настройки", "компьютера"]),
    ("Как добавить к объекту отбрасываемую тень?", ["объекту", "тень"]),
    ("Как провести линию под углом, кратным 15 градусам, in the toolbox?", ["линию", "углом", "кратным",
                                                                            "градусам", "toolbox"]),
])
def test_the_things_a_question_names_are_its_nouns_and_latin_words(question: str, things: list[str]) -> None:
    assert named_things(question) == things


@pytest.mark.parametrize(("question", "things"), [
    ("На какой ширине режим автозаполнения по умолчанию переносит строки?", ["ширине", "режим", "автозаполнения",
                                                                           "строки"]),
    ("Чем Flowblade на самом деле кодирует итоговый видеофайл?", ["Flowblade", "видеофайл"]),
    ("Как плотнее залить выделение, если с первого раза цвет бледный?", ["выделение", "цвет"]),
    ("Как сделать, чтобы цвет брался из градиента по ходу штриха?", ["цвет", "градиента", "штриха"]),
    ("Что такое раз и навсегда выбранный путь по умолчанию в TeX?", ["раз", "путь", "TeX"]),  # a «раз» of its own
    # spoken forms (issue 37, sets AT–BJ): «по дефолту» is «по умолчанию», «скока» is «сколько»
    ("скока семейств раскрашивается по дефолту", ["семейств"]),
    ("что за зверь этот RFB, ни фига не понятно", ["RFB"]),
    ("файлы открываются без пароля, чё за дела", ["файлы", "пароля"]),
    ("привод вроде в порядке, в чём дело может быть", ["привод", "порядке"]),
    ("Как стереть всё и начать с чистого листа?", []),
    ("Какой штукой дела делаются в TeX?", ["штукой", "дела", "TeX"]),  # the same nouns outside the phrases
    # spoken function words the tagger reads as nouns (sets BZ, CD): «тока» is «только»
    ("xxkb тока под kde работает?", ["xxkb", "kde"]),
    ("мб есть кнопка, када окно закрыто? плиз", ["кнопка", "окно"]),
])
def test_the_nouns_of_set_phrases_name_nothing(question: str, things: list[str]) -> None:
    assert named_things(question) == things


def test_each_thing_is_named_once() -> None:
    assert named_things("Чем TeX отличается от TEX и от tex?") == ["TeX"]


def test_the_base_is_asked_which_things_it_never_mentions(store: str, user_id: int) -> None:
    from tests.test_answers import index

    index(user_id, "texlive-ru.pdf", [MAC, PORTABLE, TEMPLATE, MANPATH])
    assert unknown_things("Как установить TeX Live на Mac через Homebrew?", user_id) == ["Homebrew"]
    assert unknown_things("Как запустить TeX Live внутри Docker-контейнера?", user_id) == ["Docker", "контейнера"]
    # another inflection of a word the base has is the same thing; so is a word's case
    assert unknown_things("Как поставить TeX Live на флешки, не задавая вопросов?", user_id) == []
    assert unknown_things("Что такое MACTEX и TEXDIST?", user_id) == []
    # a compound the base holds whole is known with its parts, whatever its tokenizer made of them
    assert unknown_things("Как получить выходной файл fig-001.mps?", user_id) == []
    assert unknown_things("Как получить выходной файл pic-001.svg?", user_id) == ["pic", "001.svg"]
    # a word inside a path the base holds is in the base; one that is only a word's beginning is not
    assert unknown_things("Что задаёт MINCATWIDTH в /etc/manpath.config?", user_id) == ["MINCATWIDTH"]
    assert unknown_things("Что лежит в /et/manpath.conf?", user_id) == ["et", "manpath.conf"]
    assert unknown_things("Как установить TeX Live на Mac через Homebrew?", user_id + 1) == [
        "TeX", "Live", "Mac", "Homebrew"]  # another user's base holds none of them


# Stellarium's Russian sky-culture descriptions (stellarium-data 0.22.2, the Tongan sky culture).
TONGA = ("Отсутствует имя Северной звезды (Полярная: α UMi). Это обстоятельство связано с широтой тонганских "
         "островов и видимостью этой звезды в определенное время года.")


def test_a_word_derived_from_one_the_base_uses_is_not_unknown(store: str, user_id: int) -> None:
    from tests.test_answers import index

    index(user_id, "skycultures.fb2", [TONGA])
    # «тонганцев» (the people) shares its root with «тонганских» (the islands'): the same thing
    assert unknown_things("Почему у тонганцев отсутствует имя Северной звезды?", user_id) == []
    # a root the base does not hold stays unknown, however close its letters
    assert unknown_things("Почему у маорийцев отсутствует имя Северной звезды?", user_id) == ["маорийцев"]
    assert unknown_things("Почему у тонганцев отсутствует имя Северной звезды?", user_id + 1) == [
        "тонганцев", "имя", "звезды"]  # another user's base holds none of them


def test_a_clipped_word_finds_the_word_it_was_clipped_from(store: str, user_id: int) -> None:
    """Issue 37 (sets AU–AZ): «комп», «прога», «клаву» for the manual's «компьютер», «программа», «клавиатура»
    shut the gate over the passage that answers; the four letters that start the manual's word find it."""
    from tests.test_answers import index

    index(user_id, "krdc.docx", ["Программа позволяет управлять удалённым компьютером с клавиатуры и мыши."])
    assert unknown_things("Как прогой рулить чужим компом с клавы?", user_id) == []
    assert unknown_things("Как прогой рулить чужим компом через роутер?", user_id) == ["роутер"]


@pytest.mark.parametrize(("word", "start"), [
    ("тонганцев", "тонга"), ("анутанцы", "анута"), ("десяток", "деся"), ("гибернацию", "гибер"),
    # a user's clipped word: its four letters start the manual's («компьютер», «программа», «клавиатура»)
    ("компу", "комп"), ("прога", "прог"), ("клаву", "клав"),
    ("кот", None), ("Homebrew", None),  # a short stem, a Latin token: no root looked up
])
def test_the_root_start_looked_up_for_a_missing_noun(word: str, start: str | None) -> None:
    assert root_start(word) == start


@pytest.mark.parametrize(("word", "common"), [
    ("кусок", True), ("партия", True), ("десяток", True), ("Компьютер", True),  # the user's everyday words
    ("гибернация", False), ("макрос", False),  # things a manual would have to name
    ("Docker", False), ("Google", False), ("Docker-контейнер", False),  # Latin and compounds: always things
])
def test_everyday_words_are_the_common_russian_ones(word: str, common: bool) -> None:
    assert everyday(word, 3.5) is common


# The Zenity help in Russian (gnome zenity 3.44, «Параметры общего назначения»).
ZENITY = "Zenity позволяет создавать диалоговые окна. Укажите параметр --timeout, чтобы закрыть окно по времени."


def test_a_name_spelled_in_cyrillic_finds_the_name_in_latin(store: str, user_id: int) -> None:
    """Issue 37 (sets BI, BJ): «калзиум», «зенити» for the Kalzium and Zenity the manuals print were
    «В ваших документах этого нет» over the very program the documents are about."""
    from tests.test_answers import index

    index(user_id, "zenity.fb2", [ZENITY])
    assert unknown_things("Как в зенити закрыть окно по времени?", user_id) == []
    # a name the base does not print stays unknown in either alphabet
    assert unknown_things("Как в кдиалоге закрыть окно?", user_id) == ["кдиалоге"]
    assert unknown_things("Как в kdialog закрыть окно?", user_id) == ["kdialog"]


@pytest.mark.parametrize(("word", "latin"), [
    ("калзиум", "Kalzium"), ("зенити", "Zenity"), ("линуксе", "Linux"), ("питоне", "Python"),
    ("гимп", "GIMP"), ("дебиане", "Debian"), ("виндовс", "Windows"), ("джаву", "Java"), ("ютубе", "YouTube"),
    # English -tion heard «шн» (set BU: «конверсейшн» stayed unknown over the Konversation handbook)
    ("конверсейшн", "Konversation"), ("нотификейшнах", "notifications"), ("конфигурейшн", "configuration"),
])
def test_a_russian_spelling_matches_the_latin_name(word: str, latin: str) -> None:
    import re

    from nodes.retrieval.latin_spelling import latin_pattern

    pattern = latin_pattern(word)
    assert pattern is not None
    as_python = pattern.replace("[:alnum:]", r"\w")  # Postgres' class, as Python's re writes it
    assert re.search(as_python, f"в {latin} есть", re.IGNORECASE)
    assert not re.search(as_python, "в Docker есть", re.IGNORECASE)


# a Russian word of under five letters less its ending («море» would find "more"), a short name, Latin
@pytest.mark.parametrize("word", ["море", "цвет", "гнома", "ком", "Linux", "fig-001"])
def test_a_short_or_latin_word_is_not_spelled(word: str) -> None:
    from nodes.retrieval.latin_spelling import latin_pattern

    assert latin_pattern(word) is None
