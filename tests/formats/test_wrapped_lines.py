"""Lines wrapped inside a sentence joined back (`nodes.ingestion.formats.wrapped_lines`), in a PDF's
page and in a plain-text or Markdown file; the layout of lists, output, terms and code kept."""

from __future__ import annotations

from pathlib import Path

from nodes.ingestion.formats import Upload
from nodes.ingestion.formats.text import FORMAT as TEXT
from nodes.ingestion.formats.wrapped_lines import join_wrapped_lines


# A page set to about 60 characters a line, as a LibreOffice export of the aptitude manual prints it.
WRAPPED = (
    "Если ваш запрос нарушает зависимости так, что эта проблема не может быть\n"
    "легко разрешена, aptitude спросит, что делать. В TEX Live включены программы для\n"
    "многих вариантов UNIX, включая платформы семейства Linux, а также системы\n"
    "GNU/Linux, Mac OS X и Cygwin, и их можно запустить отовсюду одной командой.\n"
    "Следующие пакеты будут УДАЛЕНЫ, если вы ответите на вопрос утвердительно:\n"
    " libsdl1.2debian-alsa\n"
    "Отметить пакет как установленный вручную, чтобы он не был удалён позднее.\n"
    "пакет&BD\n"
    "Установить сборочные зависимости.\n"
    "Короткая строка\n"
    "продолжение абзаца, которое печать не переносила, а начала заново на новой строке.\n"
    "Команды, которые отменяют установку пакетов, описанные в разделе выше и ниже:\n"
    "• keep-all — отменить все запланированные действия над всеми пакетами разом"
)


def test_lines_wrapped_inside_a_sentence_are_joined_and_the_layout_elsewhere_stays() -> None:
    text, joined = join_wrapped_lines(WRAPPED, body_line=70)
    lines = text.split("\n")
    assert lines[0] == ("Если ваш запрос нарушает зависимости так, что эта проблема не может быть легко "
                        "разрешена, aptitude спросит, что делать. В TEX Live включены программы для многих "
                        "вариантов UNIX, включая платформы семейства Linux, а также системы GNU/Linux, Mac OS X "
                        "и Cygwin, и их можно запустить отовсюду одной командой.")
    assert lines[1:] == [  # after a colon, into indented output, a defined term, a short line, a bullet
        "Следующие пакеты будут УДАЛЕНЫ, если вы ответите на вопрос утвердительно:",
        " libsdl1.2debian-alsa",
        "Отметить пакет как установленный вручную, чтобы он не был удалён позднее.",
        "пакет&BD",
        "Установить сборочные зависимости.",
        "Короткая строка",
        "продолжение абзаца, которое печать не переносила, а начала заново на новой строке.",
        "Команды, которые отменяют установку пакетов, описанные в разделе выше и ниже:",
        "• keep-all — отменить все запланированные действия над всеми пакетами разом",
    ]
    assert joined == 3


def test_a_path_broken_after_its_slash_joins_without_a_space() -> None:
    page = ("Если установлена переменная окружения $MANPATH, то информация из /etc/\n"
            "manpath.config использоваться не будет.")
    assert join_wrapped_lines(page, body_line=60) == (
        "Если установлена переменная окружения $MANPATH, то информация из /etc/manpath.config использоваться "
        "не будет.", 1)


def test_a_page_with_nothing_wrapped_is_left_as_it_is() -> None:
    page = "Глава 1\nУстановка\n\nСаженец заглубляют.\nКорни расправляют."
    assert join_wrapped_lines(page, body_line=20) == (page, 0)


def _parse_text(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return TEXT.parse(Upload.open(path, name, None)).text


RST = (
    "Анализатор\n==========\n\n"
    "Морфологический анализатор разбирает слово и возвращает все возможные варианты\n"
    "разбора, отсортированные по вероятности; для незнакомых слов используются\n"
    "правила предсказания по окончанию.\n\n"
    "Пример::\n\n"
    "    >>> morph.parse('стали')\n"
)


def test_a_text_file_wrapped_at_eighty_columns_reads_as_sentences(tmp_path: Path) -> None:
    text = _parse_text(tmp_path, "analyzer.txt", RST)
    assert ("Морфологический анализатор разбирает слово и возвращает все возможные варианты разбора, "
            "отсортированные по вероятности; для незнакомых слов используются правила предсказания по "
            "окончанию.") in text.split("\n")
    assert "Анализатор\n==========" in text and "Пример::\n\n    >>> morph.parse('стали')" in text


def test_markdown_code_in_fences_keeps_its_lines(tmp_path: Path) -> None:
    code = ("```\nмодель обучают на корпусе текстов с разметкой частей речи и падежей, затем\n"
            "сохраняют её в каталог словарей рядом с программой, чтобы загрузить позже\n```")
    prose = ("Модель обучают на корпусе текстов с разметкой частей речи и падежей, затем\n"
             "сохраняют её в каталог словарей рядом с программой, чтобы загрузить позже.")
    text = _parse_text(tmp_path, "notes.md", f"# Модель\n\n{prose}\n\n{code}\n")
    assert prose.replace("\n", " ") in text and code.removeprefix("```\n").removesuffix("\n```") in text
