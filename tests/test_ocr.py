"""OCR (`nodes.ingestion.ocr`): Tesseract found with every language asked for, a picture of a few
Russian words read back, and the two ways it fails (not installed; an image it cannot read)."""

from __future__ import annotations

from grove.core.settings import get_settings
import io

import pytest

from nodes.ingestion import ocr
from tests.support.documents import grove_settings, page_image
from tests.support.prerequisites import ocr_missing, require


def test_ocr_is_unavailable_without_the_command_or_one_of_its_languages() -> None:
    with grove_settings(ocr_command="no-such-tesseract"):
        assert not ocr.Ocr.of(get_settings()).available()
        with pytest.raises(ocr.OcrUnavailable, match="no-such-tesseract with rus\\+eng is not installed"):
            ocr.Ocr.of(get_settings()).image_text(b"\x89PNG")
    with grove_settings(ocr_languages="rus+xx_no_such_language"):
        assert not ocr.Ocr.of(get_settings()).available()


def test_russian_words_drawn_on_a_picture_are_read_back() -> None:
    require(ocr_missing())
    text = ocr.Ocr.of(get_settings()).image_text(page_image(["Яблоню прививают весной", "острым ножом."]))
    assert text.splitlines()[0] == "Яблоню прививают весной"
    assert "острым ножом" in text
    assert "\x0c" not in text


def test_a_blank_picture_reads_as_nothing_and_a_non_image_fails() -> None:
    require(ocr_missing())
    from PIL import Image

    blank = io.BytesIO()
    Image.new("L", (400, 200), 255).save(blank, format="PNG")
    assert ocr.Ocr.of(get_settings()).image_text(blank.getvalue()) == ""
    with pytest.raises(ValueError, match="tesseract failed"):
        ocr.Ocr.of(get_settings()).image_text(b"this is not an image at all")

