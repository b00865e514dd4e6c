"""HTML to text as a reader sees it (`nodes.ingestion.html_text`): blocks rendered with all their
inline text, lists right after their lead-in, table rows, <pre> verbatim, hidden and navigation
blocks left out, h1–h6 as sections with their heading path."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import Section
from nodes.ingestion.html_text import HtmlExtraction, extract, parse_tree, render_blocks, to_document

PAGE = """<!DOCTYPE html>
<html><head><title>Прививка яблони — Сад</title><meta name="author" content="Пётр Яблоков"></head>
<body>
<nav><ul><li><a href="/">Главная</a></li><li><a href="/blog">Блог</a></li><li><a href="/shop">Магазин</a></li></ul></nav>
<main>
<h1>Прививка яблони</h1>
<p>Прививку делают весной, когда начинается <em>сокодвижение</em>, острым ножом
и <span class="guimenu">обвязочной лентой</span>.</p>
<h2>Инструменты</h2>
<p>Для работы понадобятся:</p>
<ul><li>нож <b>окулировочный</b>;</li><li>лента <code>ПВХ</code>;</li><li>садовый вар.</li></ul>
<h3>Нож</h3>
<p>Нож точат на бруске до остроты бритвы<br>и протирают спиртом.</p>
<pre>  угол заточки:
    20 градусов</pre>
<h2>Сроки</h2>
<table><tr><th>Способ</th><th>Месяц</th></tr><tr><td>Копулировка</td><td>апрель</td></tr></table>
<ol><li>Срезать черенок.</li><li>Совместить камбий.</li></ol>
<p style="display:none">Скрытая реклама саженцев.</p>
<p hidden>Тоже скрыто.</p>
<div aria-hidden="true">И это скрыто.</div>
<script>var tracking = "счётчик";</script>
</main>
<footer><p><a href="/about">О сайте</a> · <a href="/contacts">Контакты</a></p></footer>
</body></html>"""


@pytest.fixture(scope="module")
def page() -> HtmlExtraction:
    return extract(PAGE, url="https://sad.example/privivka")


def test_inline_elements_keep_their_words_and_br_breaks_a_line(page: HtmlExtraction) -> None:
    assert ("Прививку делают весной, когда начинается сокодвижение, острым ножом и обвязочной лентой."
            in page.text)
    assert "Нож точат на бруске до остроты бритвы\nи протирают спиртом." in page.text


def test_lists_follow_their_lead_in_and_ordered_lists_are_numbered(page: HtmlExtraction) -> None:
    assert "Для работы понадобятся:\n- нож окулировочный;\n- лента ПВХ;\n- садовый вар." in page.text
    assert "1. Срезать черенок.\n2. Совместить камбий." in page.text


def test_pre_is_verbatim_and_table_rows_are_cells_joined(page: HtmlExtraction) -> None:
    assert "  угол заточки:\n    20 градусов" in page.text
    assert "Способ | Месяц\nКопулировка | апрель" in page.text


def test_hidden_scripts_and_navigation_are_not_text(page: HtmlExtraction) -> None:
    for absent in ("Скрытая реклама", "Тоже скрыто", "И это скрыто", "tracking", "Магазин", "Контакты"):
        assert absent not in page.text, absent


def test_headings_open_sections_with_their_path(page: HtmlExtraction) -> None:
    assert [s.path for s in page.sections] == [
        ["Прививка яблони"],
        ["Прививка яблони", "Инструменты"],
        ["Прививка яблони", "Инструменты", "Нож"],
        ["Прививка яблони", "Сроки"],
    ]
    knife = page.sections[2]
    assert page.text[knife.start:knife.end].startswith("Нож\n\nНож точат")
    assert page.text[knife.start:knife.end].rstrip().endswith("20 градусов")
    assert page.sections[-1].end == len(page.text)


def test_title_and_author_come_with_the_text(page: HtmlExtraction) -> None:
    assert page.title is not None and "Прививка яблони" in page.title
    assert page.author == "Пётр Яблоков"


def test_text_before_the_first_heading_is_a_section_without_a_path() -> None:
    extraction = extract("<html><body><p>Вступление перед главой, довольно длинное, чтобы его оставить.</p>"
                         "<h2>Глава</h2><p>Текст главы, тоже не слишком короткий для страницы.</p></body></html>")
    assert [s.path for s in extraction.sections] == [[], ["Глава"]]
    assert extraction.text[: extraction.sections[0].end].strip() == (
        "Вступление перед главой, довольно длинное, чтобы его оставить.")


def test_render_blocks_marks_list_items_tight_and_counts_link_text() -> None:
    body = parse_tree("<html><body><p>Смотрите <a href='/x'>здесь</a></p><ul><li>раз</li><li>два</li></ul>"
                      "</body></html>").find("body")
    blocks = render_blocks(body)
    assert [(b.text, b.tight, b.link_chars) for b in blocks] == [
        ("Смотрите здесь", False, 5), ("- раз", True, 0), ("- два", True, 0)]


def test_an_xml_declaration_does_not_stop_the_parse() -> None:
    root = parse_tree('<?xml version="1.0" encoding="windows-1251"?><html><body><p>Привет</p></body></html>')
    assert root.find("body").text_content() == "Привет"


def test_an_extraction_becomes_a_document_with_the_callers_meta_first() -> None:
    extraction = HtmlExtraction(text="Текст.", title="Заголовок", author="Автор", date="2024-05-01",
                                meta={"sitename": "Сад"}, sections=[Section(start=0, end=6, path=["Заголовок"])])
    document = to_document(extraction, source_type="url", identifier="https://sad.example/",
                           meta={"encoding": "utf-8", "sitename": "перекрыто"})
    assert (document.source_type, document.source_identifier, document.published_at) == (
        "url", "https://sad.example/", "2024-05-01")
    assert document.meta == {"encoding": "utf-8", "sitename": "Сад"}
    assert document.sections[0].path == ["Заголовок"] and document.author == "Автор"



ROOT = Path(__file__).resolve().parent.parent
TERMINAL_HELP = ROOT / "bench" / "sets" / "docs" / "gnome-terminal-help-ru"


def test_a_footer_longer_than_a_short_page_is_not_taken_for_its_content() -> None:
    """A yelp help page: its licence footer outweighs the page, and trafilatura keeps the footer alone.
    The page's own landmarks (role="contentinfo", role="navigation") are never its main text."""
    text = extract((TERMINAL_HELP / "txt-select-text.html").read_text(encoding="utf-8")).text
    assert "Удерживая Ctrl и нажав и удерживая левую кнопку мыши переместите мышь." in text
    assert "лицензии" not in text and "Герасимова" not in text and "Смотрите также" not in text


def test_short_pages_with_one_footer_are_different_texts() -> None:
    """Taken for the footer, eight short pages of the help had one text, and all but the first were
    refused at upload as duplicates."""
    names = ("app-cursor.html", "app-zoom.html", "pref-bell.html", "pref-menubar.html", "txt-select-text.html")
    texts = {extract((TERMINAL_HELP / name).read_text(encoding="utf-8")).text for name in names}
    assert len(texts) == len(names)


def test_the_title_and_its_first_paragraph_stay_when_the_kept_part_starts_below() -> None:
    """A LibreOffice help page: trafilatura keeps «Доступ к этой команде» and below (and the debug
    footer); the article still starts at its h1, and the footer is left out."""
    page = (ROOT / "tests" / "fixtures" / "libreoffice-05250100-ru.html").read_text(encoding="utf-8")
    text = extract(page).text
    assert text.startswith("На передний план\n\nПеремещает выбранный объект наверх, так чтобы он находился перед")
    assert "Выберите Фигура - Расположить - На передний план (LibreOffice Draw)." in text
    assert "debug" not in text and "This page is" not in text
