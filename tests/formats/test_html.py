"""HTML files (`nodes.ingestion.formats.html`): read as a fetched page is, decoded by BOM, <meta>
or guess; claimed by extension, MIME type, or — without an extension — by how the bytes begin."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.html import FORMAT

PAGE = """<!DOCTYPE html>
<html><head><meta charset="windows-1251"><title>{title}</title></head>
<body>
<h1>Обрезка яблони</h1>
<p>Яблоню обрезают ранней весной, пока не набухли почки.</p>
<h2>Инструменты</h2>
<p>Понадобятся секатор, садовая пила и садовый вар для срезов.</p>
</body></html>"""


def _upload(tmp_path: Path, name: str, data: bytes, mime: str | None = None) -> Upload:
    path = tmp_path / (name or "page")
    path.write_bytes(data)
    return Upload.open(path, name, mime)


def test_a_cp1251_page_is_decoded_by_its_meta_and_read_with_its_sections(tmp_path: Path) -> None:
    document = FORMAT.parse(_upload(tmp_path, "apple.htm", PAGE.format(title="Уход за садом").encode("cp1251")))
    assert document.source_type == "html" and document.source_identifier == "apple.htm"
    assert document.title == "Обрезка яблони"  # trafilatura prefers the page's h1 to its <title>
    assert document.meta["encoding"] == "cp1251"
    assert "Понадобятся секатор, садовая пила и садовый вар для срезов." in document.text
    assert [s.path for s in document.sections] == [["Обрезка яблони"], ["Обрезка яблони", "Инструменты"]]


def test_a_junk_page_title_gives_way_to_the_file_name(tmp_path: Path) -> None:
    page = PAGE.format(title="Untitled").replace("h1>", "h3>")  # no h1 to stand in either
    document = FORMAT.parse(_upload(tmp_path, "обрезка.html", page.encode("cp1251")))
    assert document.title == "обрезка"


def test_a_page_without_text_is_refused(tmp_path: Path) -> None:
    blank = b"<html><head><title>x</title><script>var a = 1;</script></head><body>   </body></html>"
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(_upload(tmp_path, "blank.html", blank))
    assert caught.value.user_message == "В файле «blank.html» нет текста — индексировать нечего."


@pytest.mark.parametrize("start", [
    b"<!DOCTYPE html><html>",
    b"  \n<html lang='ru'>",
    b'<?xml version="1.0"?>\n<!-- saved from url -->\n<html xmlns="http://www.w3.org/1999/xhtml">',
    b"<HEAD><title>t</title>",
    b"<body><p>x</p>",
])
def test_a_file_without_an_extension_is_taken_for_html_by_how_it_begins(tmp_path: Path, start: bytes) -> None:
    assert detect(_upload(tmp_path, "", start + b"</html>")) is FORMAT


@pytest.mark.parametrize("start", [b"<p>a fragment</p>", b"Text that mentions <html> later", b"<htmlx>"])
def test_fragments_and_text_are_not_taken_for_html(tmp_path: Path, start: bytes) -> None:
    assert FORMAT.looks_like is not None and not FORMAT.looks_like(start)


def test_html_is_claimed_by_its_extensions_and_mime_types(tmp_path: Path) -> None:
    assert FORMAT.extensions == frozenset({".html", ".htm", ".xhtml"})
    assert detect(_upload(tmp_path, "page.xhtml", b"<p>x</p>")) is FORMAT
    assert detect(_upload(tmp_path, "", b"<p>x</p>", "application/xhtml+xml")) is FORMAT
