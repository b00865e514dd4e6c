"""PDF text without layout debris (`nodes.ingestion.formats.pdf_layout`): running lines detected
across pages, hyphenation decided by the document, words broken across pages moved back."""

from __future__ import annotations

from nodes.ingestion.formats.pdf_layout import (
    join_across_pages,
    join_hyphenation,
    strip_leaders,
    strip_running_lines,
    vocabulary,
)

BODY = [
    "Берёзу сажают весной на светлом месте.\nПочва должна быть влажной и рыхлой.",
    "Саженец заглубляют на сорок сантиметров.\nКорни расправляют и засыпают землёй.",
    "Первый год дерево поливают раз в неделю.\nМульча сохраняет влагу в жару.",
    "Через пять лет на участке шумит роща.\nОбрезка нужна только сухим ветвям.",
]


def test_a_header_repeated_on_every_page_and_varying_page_numbers_go() -> None:
    pages = [f"Справочник садовода · 2024\n{body}\n— {n} —" for n, body in enumerate(BODY, 1)]
    result = strip_running_lines(pages, ["1", "2", "3", "4"])
    assert result.pages == BODY
    assert (0, "Справочник садовода · 2024") in result.removed and (3, "— 4 —") in result.removed
    assert len(result.removed) == 8


def test_a_running_head_with_the_printed_page_label_goes_even_when_the_words_change() -> None:
    heads = ["xi Введение", "Введение xii", "13 Глава 1. Посадка", "Глава 1. Посадка 14"]
    pages = [f"{head}\n{body}" for head, body in zip(heads, BODY)]
    result = strip_running_lines(pages, ["xi", "xii", "13", "14"])
    assert result.pages == BODY


def test_a_line_seen_on_scattered_pages_and_a_single_page_stay() -> None:
    pages = [f"Важно!\n{BODY[0]}", BODY[1], BODY[2], BODY[3], f"Важно!\n{BODY[0]}"]
    assert strip_running_lines(pages, []).pages == pages  # twice, far apart: not running
    assert strip_running_lines(["Заголовок\nтекст\n1"], ["1"]).pages == ["Заголовок\nтекст\n1"]


def test_blank_pages_stay_blank_and_keep_their_place() -> None:
    pages = [f"Справочник\n{BODY[0]}", "", f"Справочник\n{BODY[1]}", f"Справочник\n{BODY[2]}"]
    assert strip_running_lines(pages, []).pages == [BODY[0], "", BODY[1], BODY[2]]


def test_dot_leaders_of_any_spacing_become_one_space() -> None:
    assert strip_leaders("Посадка .......... 5\nУход . . . . 17\nИтак.. ладно") == "Посадка 5\nУход 17\nИтак.. ладно"


def test_vocabulary_counts_compounds_whole_and_skips_broken_words() -> None:
    words = vocabulary(["Что-то растёт. ЧТО-ТО цветёт; сад-\nовод пришёл."])
    assert words["что-то"] == 2 and words["растёт"] == 1
    assert words["сад"] == 0 and words["овод"] == 0 and words["садовод"] == 0


def test_hyphenation_keeps_russian_compounds_and_records_each_decision() -> None:
    text = "Кое-\nкак, какой-\nнибудь сорт, где-\nлибо, из-\nпод снега, поли-\nвают\u00ad\nся."
    result = join_hyphenation(text, vocabulary([text]))
    assert result.text == "Кое-как, какой-нибудь сорт, где-либо, из-под снега, поливаются."
    assert result.decisions == [("Кое", "как", False), ("какой", "нибудь", False), ("где", "либо", False),
                                ("из", "под", False), ("поли", "ваются", True)]  # soft hyphens join first


def test_the_document_decides_against_the_rule_both_ways() -> None:
    # «пол-» + «года» is usually broken-and-joined, but the document writes «пол-года» elsewhere
    text = "Прошло пол-года. Ещё пол-\nгода ждём. Сорт жаро-\nстойкий: жаростойкий сорт."
    assert join_hyphenation(text, vocabulary([text])).text == (
        "Прошло пол-года. Ещё пол-года ждём. Сорт жаростойкий: жаростойкий сорт.")


def test_a_word_broken_across_pages_is_moved_back_to_its_first_page() -> None:
    pages = ["Саженцы дистри-", "бутируют весной. Дальше текст.", "Без переноса."]
    assert join_across_pages(pages, vocabulary(pages)) == 1
    assert pages == ["Саженцы дистрибутируют", "весной. Дальше текст.", "Без переноса."]


def test_a_page_ending_in_a_dash_before_a_number_or_blank_page_is_left() -> None:
    pages = ["Годы 2010-", "2017 были сухими.", "конец-", ""]
    assert join_across_pages(pages, vocabulary(pages)) == 0
    assert pages == ["Годы 2010-", "2017 были сухими.", "конец-", ""]

