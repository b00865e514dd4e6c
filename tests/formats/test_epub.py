"""EPUB (`nodes.ingestion.formats.epub`): container.xml → package document → spine, each
chapter's headings and blocks; claimed as a zip whose `mimetype` is application/epub+zip."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.epub import FORMAT, chapter_blocks

DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>'
CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles>'
             "</container>")


def _epub(path: Path, chapters: dict[str, str], spine: list[str], *, title: str = "",
          creator: str = "", opf: str = "book/package.opf", mimetype: str = "application/epub+zip") -> Path:
    items = "".join(f'<item id="{href.split(".")[0]}" href="{href}" media-type="application/xhtml+xml"/>'
                    for href in chapters)
    refs = "".join(f'<itemref idref="{ref}"/>' for ref in spine)
    metadata = (f"<dc:title>{title}</dc:title>" if title else "") + (f"<dc:creator>{creator}</dc:creator>"
                                                                       if creator else "")
    package = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
               f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">{metadata}</metadata>'
               f"<manifest>{items}</manifest><spine>{refs}</spine></package>")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", mimetype)
        archive.writestr("META-INF/container.xml", CONTAINER.format(opf=opf))
        archive.writestr(opf, package)
        base = opf.rsplit("/", 1)[0] + "/" if "/" in opf else ""
        for href, body in chapters.items():
            archive.writestr(base + href, f'{DECLARATION}<html xmlns="http://www.w3.org/1999/xhtml"><body>{body}'
                                          "</body></html>")
    return path


def test_chapter_blocks_keep_headings_and_read_a_nested_block_with_its_parent() -> None:
    markup = (DECLARATION + '<html xmlns="http://www.w3.org/1999/xhtml"><body><h2>Уход</h2>'
              "<ul><li><p>Полив</p> по утрам</li></ul>"
              "<table><tr><td>ячейка</td></tr></table><h3>Глубже</h3><blockquote><p>цитата</p></blockquote>"
              "</body></html>").encode()
    assert chapter_blocks(markup) == [("Уход", 2), ("Полив по утрам", 0), ("ячейка", 0), ("Глубже", 3),
                                      ("цитата", 0)]


def test_a_utf8_chapter_without_an_xml_declaration_is_read_as_utf8() -> None:
    markup = '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>Яблоню сажают осенью.</p></body></html>'
    assert chapter_blocks(markup.encode()) == [("Яблоню сажают осенью.", 0)]


def test_chapters_are_found_through_the_package_document_and_read_in_spine_order(tmp_path: Path) -> None:
    path = _epub(tmp_path / "сад.epub", {
        "text/b.xhtml": "<h1>Глава 2. Груша</h1><p>Грушу сажают весной.</p>",
        "text/a.xhtml": "<h1>Глава 1. Яблоня</h1><p>Яблоню сажают осенью.</p>",
        "text/notes.xhtml": "<p>Примечание, которого нет в оглавлении.</p>",
    }, spine=["text/a", "text/b", "ghost"], creator="Иван Садовник")
    doc = FORMAT.parse(Upload.open(path, "сад.epub", None))
    assert doc.source_type == "epub" and doc.author == "Иван Садовник"
    assert doc.text == "Глава 1. Яблоня\n\nЯблоню сажают осенью.\n\nГлава 2. Груша\n\nГрушу сажают весной."
    assert doc.title == "Глава 1. Яблоня"  # no dc:title: the first heading
    assert doc.meta == {"chapters": 2}  # the unknown idref is not a chapter


def test_a_spine_entry_with_a_fragment_or_dot_segments_reaches_its_part(tmp_path: Path) -> None:
    path = tmp_path / "b.epub"
    with zipfile.ZipFile(path, "w") as archive:  # the package points at ../OPS/ch.xhtml#top
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("OPS/ch.xhtml", DECLARATION + "<html><body><p>Текст главы.</p></body></html>")
        archive.writestr("META-INF/container.xml", CONTAINER.format(opf="other/p.opf"))
        archive.writestr("other/p.opf", (
            '<package xmlns="http://www.idpf.org/2007/opf"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            "<dc:title>Другая</dc:title></metadata><manifest>"
            '<item id="x" href="../OPS/ch.xhtml#top"/></manifest><spine><itemref idref="x"/></spine></package>'))
    doc = FORMAT.parse(Upload.open(path, "b.epub", None))
    assert doc.title == "Другая" and doc.text == "Текст главы."


def test_an_epub_without_a_package_document_is_broken(tmp_path: Path) -> None:
    path = tmp_path / "x.epub"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr("META-INF/container.xml", '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"/>')
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(Upload.open(path, "x.epub", None))
    assert caught.value.user_message == "Не удалось открыть EPUB: файл повреждён."
    assert "without a package document" in caught.value.reason


def test_epub_is_claimed_by_its_mimetype_part_not_its_name(tmp_path: Path) -> None:
    book = _epub(tmp_path / "book.zip", {"c.xhtml": "<p>x</p>"}, spine=["c"])
    assert detect(Upload.open(book, "book.zip", "application/zip")) is FORMAT
    odt_like = _epub(tmp_path / "fake.epub", {"c.xhtml": "<p>x</p>"}, spine=["c"],
                     mimetype="application/vnd.oasis.opendocument.text")
    assert not FORMAT.claims(Upload.open(odt_like, "fake.epub", None))


def test_text_written_straight_into_a_div_is_kept() -> None:
    markup = ("<html><body><h1>Глава 2</h1><div>Малину подвязывают к шпалере весной.</div>"
              "<div><p>Абзац в своём блоке.</p></div></body></html>").encode()
    assert chapter_blocks(markup) == [("Глава 2", 1), ("Малину подвязывают к шпалере весной.", 0),
                                      ("Абзац в своём блоке.", 0)]


def test_a_line_break_inside_a_paragraph_parts_its_words() -> None:
    """«строка<br/>строка» is two lines as the book prints it; read as text alone the words glued."""
    markup = (DECLARATION + '<html xmlns="http://www.w3.org/1999/xhtml"><body>'
              "<p>Выкопать яму.<br/>Полить обильно.</p></body></html>").encode()
    assert chapter_blocks(markup) == [("Выкопать яму. Полить обильно.", 0)]
    plain = "<html><body><div>Выкопать яму<br>Полить</div></body></html>".encode()
    assert chapter_blocks(plain) == [("Выкопать яму Полить", 0)]
