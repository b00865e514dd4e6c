"""The model's Markdown as Telegram HTML, checked against the stand-in's parser of Telegram's HTML subset."""

from __future__ import annotations

import pytest

from nodes.telegram.html import markdown_html, plain
from tests.support.telegram_standin import _parse_markup

ANSWER = """## Полив
**Важно:** лейте `2 л` под куст, *не* на листья; 2*3 < 10 & file_name_x.pdf
- пункт [1] [сайт](https://example.org/a?b=1&c=2)
```
x < y && z
```
~~старое~~ __жирно__ _курсив_"""


def test_markdown_becomes_telegrams_html_subset() -> None:
    converted = markdown_html(ANSWER)
    assert converted.splitlines() == [
        "<b>Полив</b>",
        "<b>Важно:</b> лейте <code>2 л</code> под куст, <i>не</i> на листья; 2*3 &lt; 10 &amp; file_name_x.pdf",
        '• пункт [1] <a href="https://example.org/a?b=1&amp;c=2">сайт</a>',
        "<pre>x &lt; y &amp;&amp; z</pre>",
        "<s>старое</s> <b>жирно</b> <i>курсив</i>",
    ]
    error, visible = _parse_markup(converted, "HTML")
    assert error is None and "2*3 < 10 & file_name_x.pdf" in visible and "**" not in visible


@pytest.mark.parametrize("text", [
    "a < b > c & d", "**незакрытое", "`код без конца", "```\nблок без конца", "*a **b* c**",
    "snake_case_name и __init__", "[ссылка](javascript:alert(1))", "<b>не тег</b>",
])
def test_whatever_the_model_writes_the_html_parses(text: str) -> None:
    error, visible = _parse_markup(markdown_html(text), "HTML")
    assert error is None, (text, markdown_html(text))
    assert visible.strip()


def test_the_plain_fallback_drops_markers_only() -> None:
    assert plain("**Важно:** `2 л`, [сайт](https://e.org)") == "Важно: 2 л, сайт (https://e.org)"


ANSWER_WITH_PASSAGES = """Главный файл игры называется `main3.lua` [1].

Из документа:
> «Чтобы игра запускалась на STEAD3, главный файл должен называться main3.lua.»
> «Файл main.lua читается старыми версиями <2.0 & выше.»"""


def test_quoted_passages_fold_into_one_expandable_blockquote() -> None:
    converted = markdown_html(ANSWER_WITH_PASSAGES)
    assert converted.splitlines()[:3] == ["Главный файл игры называется <code>main3.lua</code> [1].", "",
                                          "Из документа:"]
    assert converted.count("<blockquote expandable>") == 1 and converted.endswith("</blockquote>")
    assert "&lt;2.0 &amp; выше" in converted  # a document's words are escaped, never read as Markdown
    error, visible = _parse_markup(converted, "HTML")
    assert error is None and "main3.lua.»\n«Файл main.lua" in visible and ">" not in visible.replace("->", "")


def test_the_plain_fallback_keeps_the_passages_without_their_markers() -> None:
    assert plain(ANSWER_WITH_PASSAGES).splitlines()[-2:] == [
        "«Чтобы игра запускалась на STEAD3, главный файл должен называться main3.lua.»",
        "«Файл main.lua читается старыми версиями <2.0 & выше.»"]


def test_a_piece_cut_inside_the_passages_still_parses() -> None:
    for piece in (ANSWER_WITH_PASSAGES[:120], ANSWER_WITH_PASSAGES[120:]):
        error, _ = _parse_markup(markdown_html(piece), "HTML")
        assert error is None, piece


ANSWER_WITH_SOURCES = ANSWER_WITH_PASSAGES + """

Информация взята из:
• STEAD3: руководство, стр. 12 — Главный файл
• STEAD3: руководство, стр. 40 — Совместимость <2.0"""


def test_the_source_list_folds_under_its_header() -> None:
    converted = markdown_html(ANSWER_WITH_SOURCES)
    assert converted.count("<blockquote expandable>") == 2  # the passages, then the sources
    _, folded = converted.rsplit("Информация взята из:\n", 1)
    assert folded == ("<blockquote expandable>• STEAD3: руководство, стр. 12 — Главный файл\n"
                      "• STEAD3: руководство, стр. 40 — Совместимость &lt;2.0</blockquote>")
    error, visible = _parse_markup(converted, "HTML")
    assert error is None and visible.endswith("стр. 40 — Совместимость <2.0")
    assert plain(ANSWER_WITH_SOURCES).endswith("• STEAD3: руководство, стр. 40 — Совместимость <2.0")


def test_text_after_the_source_list_is_not_folded() -> None:
    converted = markdown_html("Ответ.\n\nИнформация взята из:\n• Документ, стр. 1\n\nЕщё **слово**.")
    assert converted.endswith("<blockquote expandable>• Документ, стр. 1</blockquote>\n\nЕщё <b>слово</b>.")
