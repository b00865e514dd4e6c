"""Old Office files (OLE compound documents): not read, but refused with what to do — a DOCX
in an OLE container is a password-protected one, a .doc is Word's old format."""

from __future__ import annotations

from nodes.ingestion.formats.base import Format, Upload, unsupported
from grove.core.ingest_types import ExtractedDocument, IngestError


def parse(upload: Upload) -> ExtractedDocument:
    if upload.ext == ".docx":
        raise IngestError("DOCX защищён паролем — снимите защиту и пришлите файл снова.",
                          f"{upload.name}: OLE container with a .docx name (encrypted Office file)")
    if upload.ext == ".doc" or "word" in upload.mime:
        raise unsupported("DOC (старый формат Word; сохраните файл как DOCX)", f"{upload.name}: legacy .doc")
    kind = upload.ext.lstrip(".").upper() or upload.mime or "неизвестный"
    raise unsupported(kind, f"{upload.name}: OLE compound file")


FORMAT = Format(name="ole", label="документ Office старого формата", parse=parse, signatures=frozenset({"ole"}))
