"""Old Office files (`nodes.ingestion.formats.ole`): never read, refused with what to do. No
library writes real OLE compound files here, so the files carry the OLE signature and a zero
body — the format only ever looks at the signature, the name and the MIME type."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError
from nodes.ingestion.formats import Upload, detect
from nodes.ingestion.formats.ole import FORMAT

OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


def _refusal(tmp_path: Path, name: str, mime: str | None = None) -> IngestError:
    path = tmp_path / (name or "file")
    path.write_bytes(OLE)
    upload = Upload.open(path, name, mime)
    assert detect(upload) is FORMAT  # the signature decides, whatever the name
    with pytest.raises(IngestError) as caught:
        FORMAT.parse(upload)
    return caught.value


def test_a_docx_in_an_ole_container_is_a_password_protected_one(tmp_path: Path) -> None:
    refused = _refusal(tmp_path, "отчёт.docx")
    assert refused.user_message == "DOCX защищён паролем — снимите защиту и пришлите файл снова."
    assert "encrypted" in refused.reason


def test_a_legacy_word_file_is_asked_for_as_docx(tmp_path: Path) -> None:
    for name, mime in (("old.doc", None), ("old", "application/msword")):
        refused = _refusal(tmp_path, name, mime)
        assert refused.user_message.startswith(
            "Этот тип файла не поддерживается: DOC (старый формат Word; сохраните файл как DOCX).")


def test_other_old_office_files_are_named_by_extension_or_mime(tmp_path: Path) -> None:
    assert _refusal(tmp_path, "budget.xls").user_message.startswith("Этот тип файла не поддерживается: XLS.")
    assert _refusal(tmp_path, "talk.ppt").user_message.startswith("Этот тип файла не поддерживается: PPT.")
    assert _refusal(tmp_path, "", "application/vnd.ms-excel").user_message.startswith(
        "Этот тип файла не поддерживается: application/vnd.ms-excel.")
    assert _refusal(tmp_path, "").user_message.startswith("Этот тип файла не поддерживается: неизвестный.")


def test_the_ole_format_is_not_offered_to_users() -> None:
    assert FORMAT.hint is None and FORMAT.signatures == frozenset({"ole"})
