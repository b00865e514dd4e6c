"""A PDF's structure (`nodes.ingestion.formats.pdf_structure`): body size,
headings from the outline or from larger fonts, a title from the first page's largest line,
and the section spans headings open over the page texts."""

from __future__ import annotations

import io

import pypdfium2 as pdfium
from pypdf import PdfReader, PdfWriter

from nodes.ingestion.formats.pdf_structure import (
    Heading,
    Run,
    body_size,
    font_headings,
    locate_sections,
    outline_headings,
    title_from_fonts,
)
from tests.support.documents import make_pdf


def test_the_body_size_is_the_size_most_characters_are_set_in() -> None:
    pages = [[Run("Заголовок\n", 18), Run("Короткий текст\n", 11)], [Run("Ещё немного обычного текста\n", 11.04)]]
    assert body_size(pages) == 11.0  # sizes are rounded to 0.1
    assert body_size([]) == 0.0


PAGES = [
    [Run("Сад у дома\n", 24), Run("Анна Садовая\n", 14), Run("Книга о саде в десять глав и о том как за ним ходить.\n", 10)],
    [Run("1 Посадка\n", 16), Run("Сажают весной, когда почва оттает и прогреется.\n", 10),
     Run("1.1 Яма\n", 13), Run("Яму копают заранее, за две недели до посадки.\n", 10),
     Run("2024\n", 16)],  # a large number is not a heading
]


def test_headings_are_lines_larger_than_the_body_with_levels_by_size() -> None:
    assert font_headings(PAGES, 10) == [
        Heading("Сад у дома", 0, 1), Heading("Анна Садовая", 0, 3), Heading("1 Посадка", 1, 2),
        Heading("1.1 Яма", 1, 4)]
    assert font_headings(PAGES, 0) == []


def test_the_title_is_the_largest_line_on_the_first_page_when_clearly_larger() -> None:
    assert title_from_fonts(PAGES[0], 10) == "Сад у дома"
    assert title_from_fonts([Run("Почти как текст\n", 12), Run("текст\n", 10)], 10) is None  # 1.2x: not enough
    split = [Run("Большой ", 20), Run("заголовок\n", 20), Run("текст\n", 10)]
    assert title_from_fonts(split, 10) == "Большой заголовок"  # runs of one line are merged


def test_sections_start_where_headings_are_printed_numbered_or_not() -> None:
    pages = ["Предисловие автора.", "Текст до главы.\n3.1 Установка   пакета\nСтавим пакет.", "Продолжение."]
    headings = [Heading("Установка пакета", 1, 1), Heading("Настройка", 2, 2)]  # the second is not printed
    sections = locate_sections(pages, headings)
    text = "\n\n".join(pages)
    assert [s.path for s in sections] == [[], ["Установка пакета"], ["Установка пакета", "Настройка"]]
    assert text[sections[1].start:sections[1].end] == "3.1 Установка   пакета\nСтавим пакет.\n\n"
    assert text[sections[2].start:sections[2].end] == "Продолжение."  # from the top of its page


def test_headings_off_the_pages_are_ignored_and_two_at_one_place_leave_the_deeper() -> None:
    pages = ["Глава 1\nТекст."]
    sections = locate_sections(pages, [Heading("Глава 1", 0, 1), Heading("Глава 1", 0, 2), Heading("Х", 7, 1)])
    assert [(s.start, s.end, s.path) for s in sections] == [(0, len(pages[0]), ["Глава 1", "Глава 1"])]
    assert locate_sections(pages, []) == []


def test_the_outline_gives_headings_with_their_nesting_and_pages() -> None:
    source = io.BytesIO()
    make_pdf(["Введение.", "Глава 1 Посадка", "Раздел 1.1 Яма", "Глава 2 Уход"], source)
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(source.getvalue())))
    chapter = writer.add_outline_item(title="Глава 1  Посадка", page_number=1)
    writer.add_outline_item(title="Раздел 1.1 Яма", page_number=2, parent=chapter)
    writer.add_outline_item(title="  ", page_number=3)  # an empty title is skipped
    writer.add_outline_item(title="Глава 2 Уход", page_number=3)
    out = io.BytesIO()
    writer.write(out)
    assert outline_headings(pdfium.PdfDocument(out.getvalue())) == [
        Heading("Глава 1 Посадка", 1, 1), Heading("Раздел 1.1 Яма", 2, 2), Heading("Глава 2 Уход", 3, 1)]
    assert outline_headings(pdfium.PdfDocument(source.getvalue())) == []


def test_an_outline_title_without_the_printed_spaces_finds_its_heading() -> None:
    pages = ["3.1.1 UNIX\nЗапустите install-tl.\n3.1.2 Mac OS X\nОткройте пакет MacTeX."]
    sections = locate_sections(pages, [Heading("UNIX", 0, 2), Heading("MacOSX", 0, 2)])
    assert [(pages[0][s.start:s.end], s.path) for s in sections] == [
        ("3.1.1 UNIX\nЗапустите install-tl.\n", ["UNIX"]), ("3.1.2 Mac OS X\nОткройте пакет MacTeX.", ["MacOSX"])]
