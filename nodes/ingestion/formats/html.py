"""HTML files (.html/.htm/.xhtml), extracted exactly as a fetched page is (`nodes.ingestion.html_text`):
main content, inline elements, lists, h1–h6 sections."""

from __future__ import annotations

import re

from nodes.ingestion.formats.text import decode_body
from nodes.ingestion.native import with_libxml
from nodes.ingestion.formats.base import Format, Upload, empty, file_stem, is_junk_title
from grove.core.ingest_types import ExtractedDocument, IngestError

_HTML_START = re.compile(rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b",
                         re.I | re.S)


@with_libxml
def parse(upload: Upload) -> ExtractedDocument:
    from nodes.ingestion import html_text

    name = upload.name
    markup, encoding = decode_body(upload.path.read_bytes(), None, html=True)
    try:
        extraction = html_text.extract(markup)
    except Exception as exc:  # lxml/trafilatura on hostile markup
        raise IngestError("Не удалось разобрать HTML-файл.", f"HTML extraction failed on {name}: {exc!r}") from exc
    if not extraction.text.strip():
        raise empty(name, f"HTML file {name} has no main text")
    document = html_text.to_document(extraction, source_type="html", identifier=name, meta={"encoding": encoding})
    if is_junk_title(document.title):
        document.title = file_stem(name)
    return document


FORMAT = Format(name="html", label="HTML", parse=parse, hint="HTML", order=75,
                extensions=frozenset({".html", ".htm", ".xhtml"}),
                mime_types=frozenset({"text/html", "application/xhtml+xml"}),
                looks_like=lambda head: _HTML_START.match(head) is not None)
