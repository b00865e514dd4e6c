"""FB2 books, generated here as the format's producers write them: windows-1251, nested
sections, verse, an epigraph, a picture, footnotes — plain and zipped."""

from __future__ import annotations

from grove.core.settings import get_settings
import base64
import zipfile
from pathlib import Path

import pytest

from nodes.ingestion.formats import FORMATS, supported_hint
from grove.core.ingest_types import IngestError
from nodes.ingestion.parse_files import parse_file

PICTURE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()
BOOK = f"""<?xml version="1.0" encoding="windows-1251"?>
<FictionBook xmlns="http://www.gribuser.ru/xml/fictionbook/2.0" xmlns:l="http://www.w3.org/1999/xlink">
 <description>
  <title-info>
   <genre>home_garden</genre>
   <author><first-name>Анна</first-name><middle-name>Петровна</middle-name><last-name>Садовая</last-name></author>
   <book-title>Берёзовая роща своими руками</book-title>
   <annotation><p>Книга о том, как вырастить рощу за десять лет.</p></annotation>
   <lang>ru</lang>
  </title-info>
 </description>
 <body>
  <title><p>Анна Садовая</p><p>Берёзовая роща своими руками</p></title>
  <epigraph><p>Люблю берёзу русскую.</p><text-author>С. Есенин</text-author></epigraph>
  <section>
   <title><p>Глава 1. Участок</p></title>
   <p>Берёзе нужен светлый участок с влажной почвой.</p>
   <section>
    <title><p>Почва</p></title>
    <p>Кислотность почвы должна быть от 5,5 до 6,5 pH.</p>
    <image l:href="#pic.png"/>
    <table><tr><th>Месяц</th><th>Полив</th></tr><tr><td>Май</td><td>два раза в неделю</td></tr></table>
   </section>
  </section>
  <section>
   <title><p>Глава 2. Посадка</p></title>
   <poem><title><p>Присказка</p></title><stanza><v>Сажай весной,</v><v>поливай водой.</v></stanza></poem>
   <p>Саженцы сажают на глубину 40 сантиметров.<a l:href="#n1" type="note">1</a></p>
  </section>
 </body>
 <body name="notes">
  <title><p>Примечания</p></title>
  <section id="n1"><title><p>1</p></title><p>Глубже — если почва песчаная.</p></section>
 </body>
 <binary id="pic.png" content-type="image/png">{PICTURE}</binary>
</FictionBook>
"""


def _book(path: Path) -> Path:
    path.write_bytes(BOOK.encode("cp1251"))
    return path


def test_an_fb2_book_reads_as_text_with_its_sections_title_and_author(tmp_path: Path) -> None:
    document = parse_file(str(_book(tmp_path / "roshcha.fb2")), "roshcha.fb2", "application/octet-stream", get_settings())
    assert document.source_type == "fb2"
    assert document.title == "Берёзовая роща своими руками"
    assert document.author == "Анна Петровна Садовая"
    text = document.text
    for said in ("Книга о том, как вырастить рощу", "Люблю берёзу русскую.", "С. Есенин",
                 "Кислотность почвы должна быть от 5,5 до 6,5 pH.", "Месяц | Полив", "Май | два раза в неделю",
                 "Сажай весной,", "Глубже — если почва песчаная."):
        assert said in text, said
    assert "iVBOR" not in text  # the picture's base64 is not text
    # the annotation comes first, then the bodies in order
    assert text.index("вырастить рощу") < text.index("Глава 1") < text.index("Глава 2") < text.index("Примечания")
    by_heading = {tuple(s.path): text[s.start:s.end] for s in document.sections}
    assert "pH" in by_heading[("Глава 1. Участок", "Почва")]
    assert "40 сантиметров" in by_heading[("Глава 2. Посадка",)]
    assert "Сажай весной" in by_heading[("Глава 2. Посадка",)]  # a poem's title is not a heading
    assert ("Глава 2. Посадка", "Присказка") not in by_heading


def test_a_zipped_book_and_a_book_without_a_name_are_found_by_their_bytes(tmp_path: Path) -> None:
    book = _book(tmp_path / "roshcha.fb2")
    zipped = tmp_path / "roshcha.fb2.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(book, "roshcha.fb2")
    from_zip = parse_file(str(zipped), "roshcha.fb2.zip", "application/zip", get_settings())
    assert from_zip.source_type == "fb2" and "40 сантиметров" in from_zip.text
    nameless = tmp_path / "download"
    nameless.write_bytes(book.read_bytes())
    assert parse_file(str(nameless), "download", None, get_settings()).title == "Берёзовая роща своими руками"


def test_a_broken_book_is_called_broken_and_a_book_without_a_title_takes_its_first_heading(tmp_path: Path) -> None:
    cut = tmp_path / "cut.fb2"
    cut.write_bytes(BOOK.encode("cp1251")[:700])
    with pytest.raises(IngestError) as caught:
        parse_file(str(cut), "cut.fb2", None, get_settings())
    assert caught.value.user_message == "Не удалось открыть FB2: файл повреждён."
    assert "cut.fb2" in caught.value.reason
    untitled = tmp_path / "untitled.fb2"
    untitled.write_bytes(BOOK.replace("<book-title>Берёзовая роща своими руками</book-title>", "")
                         .encode("cp1251"))
    assert parse_file(str(untitled), "untitled.fb2", None, get_settings()).title == "Глава 1. Участок"


def test_fb2_is_registered_and_offered_to_users() -> None:
    assert [f.name for f in FORMATS].count("fb2") == 1
    assert "FB2" in supported_hint()
