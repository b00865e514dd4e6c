"""Fetch a file a user sent to the bot (getFile + download) into a private temp folder.

Bots can download at most 20 MB through the Bot API; bigger files are refused
before any transfer, with a message that says so. A local Bot API server started with
`--local` (GROVE_TELEGRAM_LOCAL_MODE) has no such limit: it answers getFile with an
absolute path on its disk, which python-telegram-bot's local mode copies from.
A refusal is final: only failures a retry may fix are retried (one getFile, not three).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TypeGuard

from grove.core.observe import task
from telegram.error import BadRequest

from grove.core.settings import Settings
from grove.core.ingest_types import IngestError, IngestItem
from nodes.telegram.api import BotApi

TELEGRAM_DOWNLOAD_LIMIT = 20 * 1024 * 1024


def _too_big(size: int | None, limit: int) -> TypeGuard[int]:
    """True only for a known size over the limit (so the size is an int then)."""
    return size is not None and size > limit


def download_limit(settings: Settings) -> int:
    """Bytes a bot may download: the Bot API's 20 MB, or with a local server only grove's own limit."""
    return settings.max_file_bytes if settings.telegram_local_mode else min(settings.max_file_bytes,
                                                                          TELEGRAM_DOWNLOAD_LIMIT)


@task(name="download-telegram-file", retries=2, retry_delay_seconds=[2, 6],
      retry_condition_fn=lambda exc: not isinstance(exc, IngestError | ValueError))  # a refusal or a bad item: final
def download_telegram_file(item: IngestItem, api: BotApi | None, limit: int) -> IngestItem:
    """The same item with `path` pointing at the downloaded bytes, fetched through `api` (the process's bot);
    `limit` in bytes (`download_limit`)."""
    name = item.file_name or item.source_identifier
    if _too_big(item.file_size, limit):
        raise IngestError(
            f"Файл «{name}» слишком большой ({item.file_size / 1024 / 1024:.1f} МБ): боты Telegram "
            f"могут скачивать файлы не больше {limit // 1024 // 1024} МБ.",
            f"file {item.file_size} bytes exceeds the {limit} byte limit",
        )
    if not item.telegram_file_id:
        raise ValueError("item has no telegram_file_id")
    if api is None:
        raise ValueError("no Telegram bot was handed in to download the file with")
    folder = Path(tempfile.mkdtemp(prefix="grove-upload-"))
    try:
        return _fetch(item, api, limit, folder / f"upload{Path(item.file_name or '').suffix[:16]}", name)
    except BaseException:  # a refusal, or an attempt the task retries: no folder is left behind
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _fetch(item: IngestItem, api: BotApi, limit: int, target: Path, name: str) -> IngestItem:
    """getFile (its size checked against `limit` again), then the bytes written to `target`; `name`: the
    file as the refusal names it."""
    assert item.telegram_file_id is not None
    try:
        telegram_file = api.get_file(item.telegram_file_id)
    except BadRequest as exc:
        if "too big" in str(exc).lower():
            raise IngestError(
                f"Файл «{name}» больше {limit // 1024 // 1024} МБ: бот не может его скачать.",
                f"getFile refused: {exc}",
            ) from exc
        raise
    if _too_big(telegram_file.file_size, limit):
        raise IngestError(
            f"Файл «{name}» больше {limit // 1024 // 1024} МБ: бот не может его скачать.",
            f"getFile reports {telegram_file.file_size} bytes",
        )
    api.download(telegram_file, target)
    return item.model_copy(update={"path": str(target), "file_size": target.stat().st_size})
