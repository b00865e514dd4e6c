"""A question asked by voice in Чат: the voice note (audio, video note) as text.

A voice note is the natural way to ask in Telegram; refusing it («send text») was what
users met. The note goes through the ingestion's own path — the Bot API download with its
20 MB check, PyAV decoding and faster-whisper with its language choice — and the
transcript, without timestamps, becomes the question. Nothing of it is stored: the
downloaded file is removed at once.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from grove.core.messages import Attachment
from grove.core.observe import task
from grove.core.settings import Settings
from nodes.ingestion.classify_input import classify_message
from grove.core.ingest_types import IngestError

if TYPE_CHECKING:
    from nodes.telegram.api import BotApi

SPOKEN_KINDS = ("voice", "audio", "video_note", "video")
_TIMESTAMP = re.compile(r"^\[\d{1,2}:\d{2}(?::\d{2})?\]\s*", re.MULTILINE)


def spoken(attachments: list[Attachment]) -> Attachment | None:
    """The first attachment that is speech to transcribe (a voice note, audio, a video note)."""
    return next((a for a in attachments if a.kind in SPOKEN_KINDS), None)


def duration_text(seconds: float) -> str:
    """«2 мин», «1 мин 30 с», «45 с»: a limit as the user reads it, not rounded down to whole minutes."""
    minutes, rest = divmod(int(seconds), 60)
    parts = ([f"{minutes} мин"] if minutes else []) + ([f"{rest} с"] if rest or not minutes else [])
    return " ".join(parts)


@task(name="transcribe-voice-question")
def transcribe_question(attachment: Attachment, api: BotApi | None, settings: Settings) -> str:
    """The spoken question as plain text, downloaded through `api`. Raises IngestError with a Russian message for the user."""
    from nodes.telegram.files import download_limit, download_telegram_file
    from nodes.ingestion.transcribe import transcribe_media

    limit = settings.voice_question_max_seconds
    if attachment.duration is not None and attachment.duration > limit:
        raise IngestError(f"Голосовой вопрос длиннее {duration_text(limit)}. Задайте его короче или текстом; "
                          "длинные записи можно добавить в базу в режиме «База».",
                          f"voice question of {attachment.duration} s > {limit} s")
    item = next((i for i in classify_message(None, [attachment]) if i.kind == "media"), None)
    if item is None:
        raise IngestError("Это не похоже на голосовое сообщение.", f"attachment {attachment.kind} is not media")
    downloaded = download_telegram_file(item, api, download_limit(settings))
    assert downloaded.path is not None  # download_telegram_file always sets it
    try:
        document = transcribe_media(downloaded.path, source_type="voice", source_identifier=item.source_identifier)
    finally:
        if downloaded.path:
            shutil.rmtree(Path(downloaded.path).parent, ignore_errors=True)
    text = " ".join(_TIMESTAMP.sub("", document.text).split())
    if not text:
        raise IngestError("Не удалось разобрать слова в записи. Попробуйте ещё раз или напишите текстом.",
                          "empty transcript")
    return text
