"""Photos and pictures of pages (PNG, JPEG, TIFF, BMP, GIF, WEBP): their text by OCR, Russian
and English (`nodes.ingestion.ocr`)."""

from __future__ import annotations

from nodes.ingestion.formats.base import Format, Upload, clean_text, file_stem, unsupported
from grove.core.ingest_types import ExtractedDocument, IngestError


def parse(upload: Upload) -> ExtractedDocument:
    kind = upload.signature_label or "изображение"
    if not upload.ocr.available():
        raise unsupported(f"{kind} (распознавание текста на этом сервере не установлено)",
                          f"{upload.name}: {kind} and no OCR engine")
    text = clean_text(upload.ocr.image_text(upload.path.read_bytes()))
    if len(text.split()) < 3:
        raise IngestError(f"На изображении «{upload.name}» не удалось распознать текст.",
                          f"{upload.name}: OCR read {len(text)} characters")
    return ExtractedDocument(source_type="image", source_identifier=upload.name, title=file_stem(upload.name),
                             text=text, meta={"ocr": True})


FORMAT = Format(name="image", label="изображение", parse=parse, hint="сканы и фото страниц", order=90,
                signatures=frozenset({"image"}))
