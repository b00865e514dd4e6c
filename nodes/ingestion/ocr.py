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
from dataclasses import dataclass
from functools import cache

from grove.core.settings import DEFAULTS, Settings


class OcrUnavailable(RuntimeError):
    """No Tesseract with the configured languages on this machine."""


@cache
def _languages(command: str) -> frozenset[str]:
    try:
        listed = subprocess.run([command, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return frozenset()
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


@dataclass(frozen=True)
class Ocr:
    """Tesseract as the settings name it (`Ocr.of`): the command, its languages, how long one image and how
    many scanned pages it may take. Handed to the readers of scans and photos; its defaults are the settings'."""

    command: str = DEFAULTS.ocr_command
    languages: str = DEFAULTS.ocr_languages
    timeout_seconds: float = DEFAULTS.ocr_timeout_seconds
    max_pages: int = DEFAULTS.ocr_max_pages

    @classmethod
    def of(cls, settings: Settings) -> Ocr:
        return cls(settings.ocr_command, settings.ocr_languages, settings.ocr_timeout_seconds, settings.ocr_max_pages)

    def available(self) -> bool:
        """Tesseract is installed with every language OCR asks for."""
        command = shutil.which(self.command)
        return command is not None and set(self.languages.split("+")) <= _languages(command)

    def image_text(self, image: bytes) -> str:
        """The text Tesseract reads in one encoded image (PNG, JPEG, TIFF, …); empty when it reads none."""
        if not self.available():
            raise OcrUnavailable(f"{self.command} with {self.languages} is not installed")
        done = subprocess.run([self.command, "stdin", "stdout", "-l", self.languages],
                              input=image, capture_output=True, timeout=self.timeout_seconds, check=False)
        if done.returncode != 0:
            raise ValueError(f"tesseract failed ({done.returncode}): {done.stderr.decode(errors='replace')[-300:]}")
        return done.stdout.decode("utf-8", errors="replace").replace("\x0c", "").strip()
