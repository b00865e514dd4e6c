"""nodes/telegram/files.py through the Bot API stand-in: getFile + download into a private folder, and the
size limits refused before any transfer with a message the user can read.

(tests/test_ingest.py holds the file whose size only getFile knows, and the local Bot API server.)
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from grove.core.ingest_types import IngestError, IngestItem
from nodes.telegram.files import TELEGRAM_DOWNLOAD_LIMIT, download_limit, download_telegram_file
from grove.core.settings import get_settings
from nodes.telegram.api import LoopBot
from tests.support.telegram_standin import TelegramStandin

USER = 4242
MB = 1024 * 1024


@pytest.fixture
def tg(env) -> Iterator[TelegramStandin]:  # type: ignore[no-untyped-def]
    """A stand-in of our own (no database needed) with the reply node's bot pointed at it."""
    with TelegramStandin() as server:
        env(TELEGRAM_BOT_TOKEN="123456:FILES-TOKEN", GROVE_TELEGRAM_API_URL=server.api_url)
        yield server


@pytest.fixture(autouse=True)
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The downloads of these tests go under `tmp_path`, removed with it."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def api(tg: TelegramStandin) -> Iterator[LoopBot]:
    """The Bot an entry point hands in, pointed at the stand-in."""
    bot = LoopBot.open(get_settings())
    yield bot
    bot.close()


def sent(tg: TelegramStandin, content: bytes, name: str, mime: str) -> IngestItem:
    """The item the bot makes of a document the user sent."""
    document = tg.send_document(USER, content, name, mime)["message"]["document"]
    return IngestItem(kind="file", source_identifier=name, file_name=name, mime_type=mime,
                      telegram_file_id=document["file_id"], file_size=document["file_size"])


def test_the_file_is_downloaded_into_a_private_folder_under_its_suffix(tg: TelegramStandin, api: LoopBot) -> None:
    content = "Малину подкармливают весной.\n".encode() * 100
    item = sent(tg, content, "Уход за малиной.TXT", "text/plain")
    got = download_telegram_file(item, api, download_limit(get_settings()))
    path = Path(got.path or "")
    assert path.read_bytes() == content and path.name == "upload.TXT"
    assert path.parent.name.startswith("grove-upload-") and (path.parent.stat().st_mode & 0o077) == 0
    assert got.file_size == len(content)
    assert got.model_dump(exclude={"path"}) == item.model_dump(exclude={"path"})
    assert item.path is None  # the caller's item is left as it was
    assert len(tg.calls("getFile")) == 1 and len(tg.calls("file")) == 1


def test_two_downloads_of_one_file_do_not_share_a_folder(tg: TelegramStandin, api: LoopBot) -> None:
    item = sent(tg, b"%PDF-1.7 tiny", "a.pdf", "application/pdf")
    first, second = download_telegram_file(item, api, download_limit(get_settings())), download_telegram_file(item, api, download_limit(get_settings()))
    assert first.path != second.path and Path(first.path or "").read_bytes() == b"%PDF-1.7 tiny"


def test_a_file_known_to_be_too_big_is_refused_before_any_transfer(tg: TelegramStandin, api: LoopBot) -> None:
    item = IngestItem(kind="file", source_identifier="атлас.pdf", file_name="атлас.pdf",
                      telegram_file_id="BQACAgIAAx-not-needed", file_size=21 * MB)
    with pytest.raises(IngestError) as refused:
        download_telegram_file(item, api, download_limit(get_settings()))
    assert refused.value.user_message == ("Файл «атлас.pdf» слишком большой (21.0 МБ): боты Telegram могут "
                                          "скачивать файлы не больше 20 МБ.")
    assert refused.value.reason == f"file {21 * MB} bytes exceeds the {20 * MB} byte limit"
    assert tg.calls("getFile") == [] and tg.calls("file") == []  # not even getFile


def test_groves_own_smaller_limit_is_checked_against_getfiles_size(tg: TelegramStandin, api: LoopBot, env,  # type: ignore[no-untyped-def]
                                                                    temp: Path) -> None:
    env(GROVE_MAX_FILE_BYTES=str(1 * MB))
    item = sent(tg, bytes(2 * MB), "скан.pdf", "application/pdf").model_copy(update={"file_size": None})
    with pytest.raises(IngestError) as refused:
        download_telegram_file(item, api, download_limit(get_settings()))
    assert refused.value.user_message == "Файл «скан.pdf» больше 1 МБ: бот не может его скачать."
    assert len(tg.calls("getFile")) == 1 and tg.calls("file") == []  # asked once, nothing downloaded
    assert list(temp.iterdir()) == []  # and no empty folder left for it


def test_a_file_named_only_by_its_source_is_named_so_in_the_refusal(tg: TelegramStandin, api: LoopBot) -> None:
    item = IngestItem(kind="media", source_identifier="голосовое сообщение", telegram_file_id="X",
                      file_size=30 * MB)
    with pytest.raises(IngestError) as refused:
        download_telegram_file(item, api, download_limit(get_settings()))
    assert refused.value.user_message.startswith("Файл «голосовое сообщение» слишком большой (30.0 МБ)")


def test_an_item_without_a_telegram_file_is_a_programming_error(tg: TelegramStandin, api: LoopBot) -> None:
    with pytest.raises(ValueError, match="no telegram_file_id"):
        download_telegram_file.fn(IngestItem(kind="file", source_identifier="a.pdf", file_size=10), api,
                                  download_limit(get_settings()))


def test_a_download_with_no_bot_handed_in_is_a_programming_error(tg: TelegramStandin) -> None:
    item = sent(tg, b"%PDF-1.7 tiny", "a.pdf", "application/pdf")
    with pytest.raises(ValueError, match="no Telegram bot was handed in"):
        download_telegram_file.fn(item, None, download_limit(get_settings()))
    assert tg.calls("getFile") == []


@pytest.mark.parametrize(("local", "grove_limit", "limit"), [
    ("false", 20 * MB, TELEGRAM_DOWNLOAD_LIMIT),
    ("false", 50 * MB, 20 * MB),   # the Bot API's 20 MB caps a bigger grove limit
    ("false", 5 * MB, 5 * MB),     # grove's own smaller limit wins
    ("true", 50 * MB, 50 * MB),    # a local Bot API server: grove's limit only
])
def test_download_limit(env, local: str, grove_limit: int, limit: int) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_TELEGRAM_LOCAL_MODE=local, GROVE_MAX_FILE_BYTES=str(grove_limit))
    assert download_limit(get_settings()) == limit
