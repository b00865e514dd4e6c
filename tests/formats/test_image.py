"""Pictures of pages (`nodes.ingestion.formats.image`): read by OCR when Tesseract with Russian is
installed, refused saying so when not; claimed by an image signature only."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.ocr import Ocr
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.image import FORMAT
from tests.support.documents import page_image
from tests.support.prerequisites import ocr_missing, require


def _upload(tmp_path: Path, name: str, data: bytes, mime: str | None = None) -> Upload:
    path = tmp_path / (name or "file")
    path.write_bytes(data)
    return Upload.open(path, name, mime)


def _jpeg(lines: list[str]) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.open(io.BytesIO(page_image(lines))).convert("RGB").save(out, format="JPEG", quality=95)
    return out.getvalue()


def test_a_jpeg_photo_of_a_page_is_read_titled_by_its_name(tmp_path: Path) -> None:
    require(ocr_missing())
    upload = _upload(tmp_path, "страница.jpg", _jpeg(["Груши поливают вечером", "тёплой водой."]))
    assert detect(upload) is FORMAT
    document = FORMAT.parse(upload)
    assert document.source_type == "image" and document.title == "страница"
    assert "поливают вечером" in document.text and "тёплой водой" in document.text
    assert document.meta == {"ocr": True}


def test_a_picture_with_fewer_than_three_words_is_refused(tmp_path: Path) -> None:
    require(ocr_missing())
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(_upload(tmp_path, "подпись.png", page_image(["Груша"])))
    assert caught.value.user_message == "На изображении «подпись.png» не удалось распознать текст."


def test_without_tesseract_the_refusal_names_the_kind_of_picture(tmp_path: Path) -> None:
    upload = _upload(tmp_path, "scan.jpg", _jpeg(["Груши"]))
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(replace(upload, ocr=Ocr(command="no-such-tesseract")))
    assert caught.value.user_message.startswith(
        "Этот тип файла не поддерживается: изображение JPEG (распознавание текста на этом сервере не установлено).")


def test_pictures_are_claimed_by_signature_not_by_name_or_mime(tmp_path: Path) -> None:
    assert FORMAT.signatures == frozenset({"image"}) and not FORMAT.extensions and not FORMAT.mime_types
    webp = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(32)
    assert detect(_upload(tmp_path, "photo.txt", webp, "text/plain")) is FORMAT
    with pytest.raises(IngestError) as caught:  # a name alone is not a picture
        detect(_upload(tmp_path, "photo.jpg", b"not a picture at all", "image/jpeg"))
    assert caught.value.user_message.startswith("Этот тип файла не поддерживается: JPG.")
