"""Rich Text (striprtf): the file's own code page (\\ansicpg) and \\u escapes decoded, groups
that are not text (fonts, styles, pictures, headers) skipped."""

from __future__ import annotations

from nodes.ingestion.formats.base import Format, Upload, clean_text, empty, file_stem
from grove.core.ingest_types import ExtractedDocument, IngestError


def parse(upload: Upload) -> ExtractedDocument:
    from striprtf.striprtf import rtf_to_text

    name = upload.name
    raw = upload.path.read_bytes().decode("latin-1")  # RTF is 7-bit: the rest are escapes
    try:
        text: str = rtf_to_text(raw, encoding="cp1251", errors="replace")  # type: ignore[no-untyped-call]
    except (ValueError, LookupError, IndexError, KeyError) as exc:
        raise IngestError(FORMAT.broken, f"striprtf failed on {name}: {exc!r}") from exc
    text = clean_text(text)
    if not text:
        raise empty(name, f"RTF {name} has no text")
    return ExtractedDocument(source_type="rtf", source_identifier=name, title=file_stem(name), text=text)


FORMAT = Format(name="rtf", label="RTF", parse=parse, hint="RTF", order=70,
                signatures=frozenset({"rtf"}), extensions=frozenset({".rtf"}))
