"""Tests that need real models or Debian's speech packages.

On a developer's machine without them such a test is skipped with the command
that fixes it; in CI (`CI=true`, where `make test` installs both) a missing
prerequisite fails the run, so a broken install can never pass as "skipped".
"""

from __future__ import annotations

from grove.core.settings import get_settings
import os

import pytest


def require(missing: str | None) -> None:
    """Skip (locally) or fail (in CI) when `missing` names what is not there."""
    if missing is None:
        return
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"prerequisite missing in CI: {missing}")
    pytest.skip(missing)


def ocr_missing() -> str | None:
    """None when Tesseract reads Russian here, else why not (for `require`)."""
    from nodes.ingestion import ocr

    return None if ocr.Ocr.of(get_settings()).available() else "tesseract-ocr with Russian missing: make ocr-deps"


def history_documents_missing() -> str | None:
    """None when Debian's project history (HTML, PDF, EPUB) is installed, else the fix."""
    from tests.support.extraction_stress import HISTORY_DOCS

    return None if HISTORY_DOCS.is_dir() else "debian-history missing: make test-deps"
