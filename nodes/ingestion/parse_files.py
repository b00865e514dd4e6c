"""Turn an uploaded file into plain text (the "База" file branch).

The formats themselves live in `nodes.ingestion.formats`, one module each; this node checks what
holds for every file — it can be read, it is not empty, it is not larger than Telegram lets
a bot download — then lets `nodes.ingestion.formats` pick the format by the file's first bytes before
its name or MIME type, and reads it. Messages for the user are Russian; `IngestError.reason`
is English for the logs and the Prefect run.
"""

from __future__ import annotations

import os
from pathlib import Path

from grove.core.observe import task
from grove.core.settings import Settings
from nodes.ingestion.ocr import Ocr
from nodes.ingestion import formats
from nodes.ingestion.formats.base import empty
from grove.core.ingest_types import ExtractedDocument, IngestError
from grove.core.progress import Step, quiet


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f}".rstrip("0").rstrip(".")


def parse_file(path: str, file_name: str, mime_type: str | None, settings: Settings,
               progress: Step = quiet) -> ExtractedDocument:
    """Parse a local file into an ExtractedDocument; IngestError (Russian `user_message`) for
    anything that cannot be indexed. `settings`: its size limit and OCR; `progress`: told how a long read goes."""
    name = file_name or Path(path).name
    limit = settings.max_file_bytes
    try:
        size = os.path.getsize(path)
        upload = formats.Upload.open(path, name, mime_type, progress, Ocr.of(settings))
    except OSError as exc:
        raise IngestError("Не удалось прочитать файл.", f"cannot read {path}: {exc!r}") from exc
    if size > limit:
        raise IngestError(
            f"Файл слишком большой ({_mb(size)} МБ). Максимум — {_mb(limit)} МБ: "
            "больше Telegram не даёт боту скачать.",
            f"{name} is {size} bytes > max_file_bytes {limit}",
        )
    if size == 0:
        raise empty(name, f"{name} is an empty file")
    return formats.detect(upload).parse(upload)


@task(name="parse-file")
def parse_file_task(path: str, file_name: str, mime_type: str | None, settings: Settings,
                    progress: Step = quiet) -> ExtractedDocument:
    """Prefect task around `parse_file`."""
    return parse_file(path, file_name, mime_type, settings, progress)
