"""Plain text and Markdown (`nodes.ingestion.formats.text`): decoding text files and web pages,
Markdown sections, and which uploads the format claims."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.text import FORMAT, decode_body, decode_declared, decode_text, markdown_text

RUSSIAN = "Съешь же ещё этих мягких французских булок, да выпей чаю."


def test_decode_text_names_the_encoding_it_used() -> None:
    assert decode_text(RUSSIAN.encode("utf-8"), "a.txt") == (RUSSIAN, "utf-8")
    assert decode_text(codecs.BOM_UTF8 + RUSSIAN.encode("utf-8"), "a.txt") == (RUSSIAN, "utf-8-sig")
    assert decode_text(RUSSIAN.encode("utf-16-le"), "a.txt") == (RUSSIAN, "utf-16-le")  # no BOM
    assert decode_text(RUSSIAN.encode("utf-16-be"), "a.txt") == (RUSSIAN, "utf-16-be")
    assert decode_text(RUSSIAN.encode("cp866"), "a.txt")[0] == RUSSIAN  # a DOS code page too


def test_a_bom_that_lies_is_a_broken_file_and_nuls_are_binary() -> None:
    with pytest.raises(IngestError) as caught:
        decode_text(codecs.BOM_UTF8 + b"\xff\xfe\xfa", "lie.txt")
    assert caught.value.user_message == "Не удалось прочитать текст: файл повреждён (неверная кодировка)."
    assert "lie.txt" in caught.value.reason
    with pytest.raises(IngestError) as caught:
        decode_text(b"text\x00with a NUL and not utf-16 at all.", "nul.txt")
    assert caught.value.user_message == "Файл не похож на текст — внутри двоичные данные."


def test_a_declared_charset_is_trusted_only_when_the_bytes_agree() -> None:
    data = RUSSIAN.encode("koi8-r")
    assert decode_declared(data, "page", "KOI8-R") == (RUSSIAN, "koi8-r")
    # utf-8 declared but the bytes are cp1251: detection takes over
    text, encoding = decode_declared(RUSSIAN.encode("cp1251"), "page", "utf-8")
    assert (text, encoding) == (RUSSIAN, "cp1251")
    assert decode_declared(RUSSIAN.encode("utf-8"), "page", "no-such-charset") == (RUSSIAN, "utf-8")


def test_a_page_is_decoded_by_bom_then_header_then_meta_then_utf8() -> None:
    page = f"<html><head><meta charset=\"windows-1251\"></head><body>{RUSSIAN}</body></html>"
    encoded = page.encode("cp1251")
    assert decode_body(encoded, None, html=True) == (page, "cp1251")  # from <meta charset>
    # a page says koi8-r but is utf-8: for HTML the <meta> comes before utf-8; plain text ignores it
    mislabelled = page.replace("windows-1251", "koi8-r").encode("utf-8")
    assert decode_body(mislabelled, None, html=True)[1] == "koi8-r"
    assert decode_body(mislabelled, None, html=False) == (page.replace("windows-1251", "koi8-r"), "utf-8")
    # the HTTP header wins over the page's own declaration
    assert decode_body(page.encode("koi8-r"), "koi8-r", html=True) == (page, "koi8-r")
    assert decode_body(codecs.BOM_UTF8 + page.encode("utf-8"), "cp1251", html=True) == (page, "utf-8-sig")
    xml = '<?xml version="1.0" encoding="koi8-r"?><html><body>Привет</body></html>'
    assert decode_body(xml.encode("koi8-r"), None, html=True) == (xml, "koi8-r")


def test_markdown_sections_nest_atx_and_setext_headings_and_skip_fenced_code() -> None:
    source = ("Вступление.\n\n"
              "Установка\n=========\n\nТекст.\n\n"
              "## Linux ##\n\n```sh\n# не заголовок\n```\n\n"
              "Windows\n-------\n\nЕщё текст.\n"
              "### Прокси\nНастройка.\n")
    rendered = markdown_text(source)
    text, sections = rendered.text, rendered.sections
    assert [s.path for s in sections] == [[], ["Установка"], ["Установка", "Linux"], ["Установка", "Windows"],
                                          ["Установка", "Windows", "Прокси"]]
    assert text[sections[0].start:sections[0].end].strip() == "Вступление."
    assert text[sections[2].start:sections[2].end].strip() == "Linux\n\n# не заголовок"
    assert text[sections[4].start:sections[4].end] == "Прокси\n\nНастройка."
    assert sections[-1].end == len(text)


def test_a_dash_line_after_a_blank_line_is_no_heading_and_hashes_need_a_space() -> None:
    rendered = markdown_text("Текст.\n\n---\n\n#хэштег\n####### семь решёток\n")
    assert rendered.sections == []
    assert rendered.text == "Текст.\n\n#хэштег ####### семь решёток"  # one paragraph, as a renderer shows it


def test_markdown_reaches_the_store_as_its_reader_sees_it() -> None:
    """The markup pandoc writes for a handbook (set U's KTurtle manual) never reaches a quote."""
    source = (
        "**`вперёд 100`** двигает Черепашку на 100 [*[пикселов](Glossary.html#pixels \"пикселы\")*]"
        "(Glossary.html#pixels) вперёд.\n"
        "Перезапуск — ****Ctrl**+**Shift**+**Z****, см. [Редактор](using-kturtle.html#the-editor \"Редактор\").\n\n"
        "Символ \\] и \\* экранированы; ![картинка](turtle.png) и <span>HTML</span> тоже.\n\n"
        "-   первый пункт,\n    продолжение строки;\n-   второй пункт.\n\n"
        "1. раз\n2. два\n\n"
        "| Команда | Смысл |\n|---|---|\n| **`$A == $B`** | равно |\n\n"
        "```\nповтори 4 {\n  вперёд 100  # [ссылка](не.трогать)\n}\n```\n\n"
        "Код `d[k](x.y)` не меняется.\n"
    )
    text = markdown_text(source).text
    assert text.split("\n\n") == [
        "вперёд 100 двигает Черепашку на 100 пикселов вперёд. Перезапуск — Ctrl+Shift+Z, см. Редактор.",
        # a list follows the line before it, as in every web page (`nodes.ingestion.html_text`)
        "Символ ] и * экранированы; и HTML тоже.\n- первый пункт, продолжение строки;\n- второй пункт."
        "\n1. раз\n2. два",
        "Команда | Смысл\n$A == $B | равно",
        "повтори 4 {\n  вперёд 100  # [ссылка](не.трогать)\n}",
        "Код d[k](x.y) не меняется.",
    ]


def _upload(tmp_path: Path, name: str, data: bytes, mime: str | None = None) -> Upload:
    path = tmp_path / (name or "file")
    path.write_bytes(data)
    return Upload.open(path, name, mime)


def test_the_text_format_claims_txt_and_markdown_by_name_or_mime(tmp_path: Path) -> None:
    assert FORMAT.extensions == frozenset({".txt", ".text", ".md", ".markdown"})
    data = "# Заголовок\n\nТекст.\n".encode()
    assert detect(_upload(tmp_path, "notes.markdown", data)) is FORMAT
    assert detect(_upload(tmp_path, "notes.text", data)) is FORMAT
    assert detect(_upload(tmp_path, "", data, "text/x-markdown")) is FORMAT


def test_markdown_is_told_by_extension_and_by_mime_only_without_a_text_extension(tmp_path: Path) -> None:
    data = "# Сад\n\nЯблони.\n".encode()
    as_md = FORMAT.parse(_upload(tmp_path, "", data, "text/markdown"))
    assert as_md.source_type == "md" and as_md.title == "Сад" and [s.path for s in as_md.sections] == [["Сад"]]
    as_txt = FORMAT.parse(_upload(tmp_path, "sad.txt", data, "text/markdown"))  # .txt says plain text
    assert as_txt.source_type == "txt" and as_txt.title is None and as_txt.sections == []
    assert as_txt.text == "# Сад\n\nЯблони."
