"""Text from scans and photos: Tesseract, Russian and English.

A scanned PDF has no text layer and a photo of a page is only pixels; both are read by
Debian's `tesseract-ocr` with its Russian data (`tesseract-ocr-rus`), which `make` installs
as it installs the speech packages the tests use. The engine is a command (`GROVE_OCR_COMMAND`)
run once per image with the image on stdin and the text on stdout, so no image touches the
disk and another build of Tesseract is a setting. Without it, scans are refused with a
message that says what is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

from grove.core.settings import get_settings


class OcrUnavailable(RuntimeError):
    """No Tesseract with the configured languages on this machine."""


@cache
def _languages(command: str) -> frozenset[str]:
    try:
        listed = subprocess.run([command, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


def available() -> bool:
    """Tesseract is installed with every language OCR asks for."""
    settings = get_settings()
    command = shutil.which(settings.ocr_command)
    wanted = set(settings.ocr_languages.split("+"))
    return command is not None and wanted <= _languages(command)


def image_text(image: bytes) -> str:
    """The text Tesseract reads in one encoded image (PNG, JPEG, TIFF, …); empty when it reads none."""
    settings = get_settings()
    if not available():
        raise OcrUnavailable(f"{settings.ocr_command} with {settings.ocr_languages} is not installed")
    done = subprocess.run([settings.ocr_command, "stdin", "stdout", "-l", settings.ocr_languages],
                          input=image, capture_output=True, timeout=settings.ocr_timeout_seconds, check=False)
    if done.returncode != 0:
        raise ValueError(f"tesseract failed ({done.returncode}): {done.stderr.decode(errors='replace')[-300:]}")
    return done.stdout.decode("utf-8", errors="replace").replace("\x0c", "").strip()
