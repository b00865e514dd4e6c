"""A question asked by voice (`nodes.ingestion.voice_question`): which attachment is speech, the
length check before anything is downloaded, the transcript without timestamps as the question,
and the downloaded file removed whatever happens. The Bot API download and Whisper are stood in
for; their own tests are tests/test_transcribe.py and the Telegram tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from grove.core.ingest_types import ExtractedDocument, IngestError, IngestItem
from grove.core.messages import Attachment
from nodes.ingestion import transcribe
from grove.core.settings import get_settings
from nodes.ingestion.voice_question import spoken, transcribe_question
from nodes.telegram import files
from tests.support.documents import grove_settings


def _attachment(kind: str, **fields: object) -> Attachment:
    return Attachment(kind=kind, file_id=f"id-{kind}", **fields)  # type: ignore[arg-type]


def test_the_first_spoken_attachment_is_the_question() -> None:
    photo, document = _attachment("photo"), _attachment("document", file_name="a.ogg", mime_type="audio/ogg")
    note, voice = _attachment("video_note"), _attachment("voice")
    assert spoken([photo, note, voice]) is note
    assert spoken([document, photo]) is None  # an audio file sent as a document is material, not a question
    for kind in ("voice", "audio", "video_note", "video"):
        assert spoken([photo, _attachment(kind)]) == _attachment(kind)
    assert spoken([]) is None


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, object]:
    """A download that writes a file into its own folder, and a transcriber that returns `said["text"]`."""
    said: dict[str, object] = {"text": "", "downloads": [], "folders": []}

    def download(item: IngestItem, api: object, limit: int) -> IngestItem:
        folder = tmp_path / f"grove-upload-{len(said['downloads'])}"  # type: ignore[arg-type]
        folder.mkdir()
        (folder / "voice.ogg").write_bytes(b"OggS")
        said["downloads"].append(item)  # type: ignore[attr-defined]
        said["folders"].append(folder)  # type: ignore[attr-defined]
        return item.model_copy(update={"path": str(folder / "voice.ogg")})

    def transcribe_media(path: str, *, source_type: str, source_identifier: str) -> ExtractedDocument:
        assert Path(path).exists() and source_type == "voice"
        if said["text"] is None:
            raise IngestError("В записи не удалось распознать речь", "no speech")
        return ExtractedDocument(source_type=source_type, source_identifier=source_identifier,
                                 text=str(said["text"]))

    monkeypatch.setattr(files, "download_telegram_file", download)
    monkeypatch.setattr(transcribe, "transcribe_media", transcribe_media)
    return said


def test_the_transcript_without_timestamps_is_the_question_and_the_file_is_removed(
        stand_ins: dict[str, object]) -> None:
    stand_ins["text"] = "[00:00] Когда обрезать   малину?\n\n[01:02] И чем\nподкормить?\n\n[1:00:05] Спасибо."
    question = transcribe_question.fn(_attachment("voice", duration=70), None, get_settings())
    assert question == "Когда обрезать малину? И чем подкормить? Спасибо."
    (item,) = stand_ins["downloads"]  # type: ignore[misc]
    assert item.kind == "media" and item.telegram_file_id == "id-voice"
    assert not any(folder.exists() for folder in stand_ins["folders"])  # type: ignore[attr-defined]


def test_a_note_without_words_is_refused_and_its_file_still_removed(stand_ins: dict[str, object]) -> None:
    stand_ins["text"] = "[00:00] "
    with pytest.raises(IngestError) as caught:
        transcribe_question.fn(_attachment("voice"), None, get_settings())
    assert caught.value.user_message == "Не удалось разобрать слова в записи. Попробуйте ещё раз или напишите текстом."
    stand_ins["text"] = None  # the transcriber itself refuses
    with pytest.raises(IngestError, match="no speech"):
        transcribe_question.fn(_attachment("audio"), None, get_settings())
    assert not any(folder.exists() for folder in stand_ins["folders"])  # type: ignore[attr-defined]


def test_a_long_note_is_refused_before_anything_is_downloaded(stand_ins: dict[str, object]) -> None:
    with grove_settings(voice_question_max_seconds=120), pytest.raises(IngestError) as caught:
        transcribe_question.fn(_attachment("voice", duration=121), None, get_settings())
    assert caught.value.user_message.startswith("Голосовой вопрос длиннее 2 мин. Задайте его короче или текстом")
    assert caught.value.reason == "voice question of 121 s > 120.0 s"
    assert stand_ins["downloads"] == []


def test_an_attachment_that_is_not_media_is_not_taken_for_a_voice_note(stand_ins: dict[str, object]) -> None:
    with pytest.raises(IngestError) as caught:
        transcribe_question.fn(_attachment("photo"), None, get_settings())
    assert caught.value.user_message == "Это не похоже на голосовое сообщение."
    assert stand_ins["downloads"] == []


def test_the_length_limit_is_said_as_it_is_not_rounded_down() -> None:
    from nodes.ingestion.voice_question import duration_text

    assert duration_text(120) == "2 мин"
    assert duration_text(90) == "1 мин 30 с"
    assert duration_text(45) == "45 с"
