"""File formats grove reads: one module per format, each defining `FORMAT` (a `base.Format`).

Adding a format is adding a module here (and its test): the package finds every module
that defines `FORMAT` when it is first imported, so nothing else is edited — not the
dispatcher, not the list of supported formats shown to users.

`detect` picks the format of an upload: its first bytes first (a PNG named «report.pdf» is
a picture), then its extension, then, for a file with no extension, its content, then the
MIME type Telegram reports. What nothing claims is refused with a Russian message that names
the file's kind and lists what is supported.
"""

from __future__ import annotations

import zipfile

from nodes.ingestion.formats.base import Format, Upload, unsupported
from grove.core.ingest_types import IngestError
from grove.core.plugins import discover


FORMATS: tuple[Format, ...] = tuple(sorted(
    discover(__name__, __path__, "FORMAT", lambda d: isinstance(d, Format), lambda f: f.name),
    key=lambda f: (f.order, f.name)))


def file_kinds() -> str:
    """«PDF (и сканы), DOCX, …, фото страниц»: the formats users are told they may send, in order."""
    return ", ".join(f.hint for f in FORMATS if f.hint)


def supported_hint() -> str:
    """The line under every refusal of a file: what is supported instead."""
    return f"Поддерживаются {file_kinds()}, а также аудио и видео."


def _by_name(upload: Upload) -> Format | None:
    """The format the file's name — or, failing that, its content or MIME type — says it is."""
    if upload.ext:
        named = next((f for f in FORMATS if upload.ext in f.extensions), None)
        if named is not None:
            return named
    else:
        looks = next((f for f in FORMATS if f.looks_like is not None and f.looks_like(upload.head)), None)
        if looks is not None:
            return looks
    by_mime = next((f for f in FORMATS if upload.mime in f.mime_types), None)
    if by_mime is not None or upload.ext:
        return by_mime
    return next((f for f in FORMATS if f.looks_like_last is not None and f.looks_like_last(upload.head)), None)


def _zip_kind(upload: Upload) -> str:
    """A Russian name for a zip no format reads."""
    if upload.zip_mimetype.startswith("application/vnd.oasis.opendocument"):
        return "документ OpenDocument (не текстовый)"
    if "[Content_Types].xml" in upload.zip_names:
        return "документ Office"
    return "ZIP-архив"


def _kind_by_name(upload: Upload) -> str:
    if upload.ext:
        return upload.ext.lstrip(".").upper()
    return upload.mime or "неизвестный"


def detect(upload: Upload) -> Format:
    """The format that reads `upload`; IngestError (Russian) when none does or the file is broken."""
    named = _by_name(upload)
    if upload.signature is not None:
        try:
            chosen = next((f for f in FORMATS if upload.signature in f.signatures and f.claims(upload)), None)
            if chosen is not None:
                return chosen
            kind = _zip_kind(upload) if upload.signature == "zip" else upload.signature_label
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
            label = named.broken if named is not None else "Не удалось открыть архив: файл повреждён."
            raise IngestError(label, f"{upload.name}: not a readable zip: {exc!r}") from exc
        raise unsupported(kind, f"{upload.name}: sniffed as {kind}")
    if named is None:
        raise unsupported(_kind_by_name(upload), f"{upload.name}: unsupported ext {upload.ext!r} / mime {upload.mime!r}")
    if named.signatures and not named.plain:  # a PDF, DOCX, … whose bytes are not one
        raise IngestError(named.broken, f"{upload.name}: named {named.label} but no {sorted(named.signatures)} header")
    return named


__all__ = ["FORMATS", "Format", "Upload", "detect", "file_kinds", "supported_hint"]
