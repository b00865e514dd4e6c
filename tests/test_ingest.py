"""Ingestion end to end: a user in «База» mode sends links, files, voice and video to the bot.

Every file is generated here (Cyrillic PDF, DOCX with a table, cp1251 text,
festival speech as OGG/Opus and MP4, an HTML page served on 127.0.0.1), goes
through python-telegram-bot ↔ Bot API stand-in ↔ flows, and is checked by
querying the chunks in Postgres.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    TaskRunFilter,
    TaskRunFilterName,
)

from nodes.ingestion.web.guard import MSG_SCHEME
from tests.support.bot import new_bot, running
from tests.support.documents import (
    ARTICLE_SENTENCES,
    FOOTER_MARKER,
    HtmlSite,
    Route,
    make_docx,
    make_pdf,
    make_text_file,
)
from tests.support.speech import festival_missing, speak, write_audio, write_video
from tests.support.telegram_standin import TelegramStandin
from tests.support.prerequisites import require

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(300)]

PDF_PAGES = [
    "Малина ремонтантная плодоносит на побегах текущего года. Осенью все побеги срезают под корень.",
    "Голубика любит кислую почву с кислотностью от 4 до 5. Мульчируйте её хвоей или опилками.",
    "Смородину подкармливают весной азотом, а после сбора ягод — калием и фосфором.",
]
SPEECH = "Клубнику поливают утром тёплой водой. Ягоды собирают каждые два дня."
# A different recording for the video: the same words would be the same document (a duplicate).
VIDEO_SPEECH = "Ягоды клубники собирают утром, пока они прохладные."


@pytest.fixture
def uploads_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The process's temp folders go under `tmp_path`: the Telegram downloads still on disk."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return lambda: sorted(path.name for path in temp.glob("grove-upload-*"))


def chunks_of(url: str, user_id: int) -> list[dict]:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.row_factory = psycopg.rows.dict_row
        return conn.execute(
            "select c.*, d.title as doc_title, d.duration_seconds, d.chunk_count"
            " from document_chunks c join documents d on d.id = c.document_id"
            " where c.owner_id = %s order by c.document_id, c.position", (user_id,)).fetchall()


def documents_of(url: str, user_id: int) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("select count(*) from documents where owner_id = %s", (user_id,)).fetchone()[0]


async def choose_documents(standin: TelegramStandin, user_id: int) -> None:
    standin.send_text(user_id, "/start")
    await standin.wait_for_bot_messages_async(user_id, 1)
    standin.press_button(user_id, "documents")
    await standin.wait_for_bot_messages_async(user_id, 2)


async def reply_to(standin: TelegramStandin, user_id: int, send) -> str:  # type: ignore[no-untyped-def]
    before = len(standin.bot_messages(user_id))
    send()
    messages = await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=240)
    assert len(messages) == before + 1, [m["text"] for m in messages[before:]]
    return messages[-1]["text"]


async def indexed(standin: TelegramStandin, user_id: int, send) -> str:  # type: ignore[no-untyped-def]
    """An upload is acknowledged at once; that one message is then edited into what was indexed."""
    before = len(standin.bot_messages(user_id))
    send()
    messages = await standin.wait_for_bot_messages_async(user_id, before + 1, timeout=60)
    ack = messages[before]
    said = standin.sent_text(user_id, ack["message_id"])  # as sent: the job may have edited it already
    assert said is not None and said.startswith("Принял «"), said
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        now = standin.bot_messages(user_id)
        current = next(m for m in now if m["message_id"] == ack["message_id"])
        if not current["text"].startswith(("Принял", "Индексирую")):
            assert len(now) == before + 1, [m["text"] for m in now[before:]]  # edited, not sent anew
            return current["text"]
        await asyncio.sleep(0.1)
    raise AssertionError(f"the upload was not confirmed: {current['text']!r}; {_jobs_and_outbox(user_id)}")


def _jobs_and_outbox(user_id: int) -> str:
    """What the worker was doing, for a failure report: every open job and this user's jobs and
    outbox rows (a job waiting behind another, a job done whose edit was never delivered)."""
    import os

    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        jobs = conn.execute("select id, user_id, kind, status, worker, attempts, lease_until, created_at,"
                            " finished_at, error from jobs where status in ('queued', 'running') or user_id = %s"
                            " order by id", (user_id,)).fetchall()
        rows = conn.execute("select * from outbox where chat_id = %s order by id", (user_id,)).fetchall()
    return f"jobs: {jobs}; outbox: {rows}"


def job_trace(url: str, user_id: int) -> dict:
    with psycopg.connect(url) as conn:
        return conn.execute("select result from jobs where user_id = %s order by id desc limit 1",
                            (user_id,)).fetchone()[0]["trace"]


async def test_pdf_docx_and_text_files(standin: TelegramStandin, store: str, user_id: int,
                                       other_user_id: int, tmp_path: Path,
                                       uploads_left: Callable[[], list[str]]) -> None:
    pdf = make_pdf(PDF_PAGES, tmp_path / "ягоды.pdf", title="Ягодник")
    docx = make_docx(["Обрезка крыжовника", "Крыжовник обрезают ранней весной до распускания почек."],
                     [["Сорт", "Срок созревания"], ["Малахит", "июль"]], tmp_path / "крыжовник.docx")
    txt = make_text_file(tmp_path / "заметки.txt", "Жимолость цветёт первой из ягодных культур.\n"
                         "Её ягоды созревают в конце мая.", "cp1251")
    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        said_pdf = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, pdf.read_bytes(), "ягоды.pdf", "application/pdf"))
        said_docx = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, docx.read_bytes(), "крыжовник.docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document"))
        said_txt = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, txt.read_bytes(), "заметки.txt", "text/plain"))
        again = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, pdf.read_bytes(), "ягоды-копия.pdf", "application/pdf"))

    assert said_pdf.startswith("✅ Проиндексировано: «Ягодник»") and "фрагментов:" in said_pdf
    assert "✅" in said_docx and "✅" in said_txt
    assert "уже есть в вашей базе" in again  # same content, same user: not stored twice
    assert uploads_left() == []  # the user's files were removed from the machine's disk once read
    rows = chunks_of(store, user_id)
    assert documents_of(store, user_id) == 3
    pdf_rows = [r for r in rows if r["source_type"] == "pdf"]
    assert {r["page"] for r in pdf_rows} == {1, 2, 3}
    assert any("кислую почву" in r["chunk_text"] and r["page"] == 2 for r in pdf_rows)
    assert all(r["source_identifier"] == "ягоды.pdf" for r in pdf_rows)
    docx_text = " ".join(r["chunk_text"] for r in rows if r["source_type"] == "docx")
    assert "Малахит | июль" in docx_text
    assert any("Жимолость цветёт" in r["chunk_text"] for r in rows if r["source_type"] == "txt")
    vectors = [r["embedding"].to_numpy() for r in rows]
    norms = [float(np.linalg.norm(v)) for v in vectors]
    assert all(v.shape == (768,) for v in vectors) and all(abs(n - 1) < 1e-2 for n in norms), norms
    assert all(r["content_hash"] and r["is_active"] for r in rows)
    assert chunks_of(store, other_user_id) == []


@pytest.mark.usefixtures("prefect_records")  # reads its runs in Prefect
async def test_links_in_one_message_run_as_parallel_branches(
    standin: TelegramStandin, store: str, user_id: int, env
) -> None:
    env(GROVE_ALLOW_LOOPBACK_URLS="true")
    with HtmlSite(slow_seconds=3) as site:
        site.routes["/slow-plain"] = Route(headers={"Content-Type": "text/plain; charset=utf-8"},
                                           body="\n".join(ARTICLE_SENTENCES[:3]).encode(), delay=3)
        async with running(new_bot(), worker=True):
            await choose_documents(standin, user_id)
            said = await indexed(standin, user_id, lambda: standin.send_text(
                user_id, f"Почитай {site.url('/slow')}, {site.url('/slow-plain')} и ещё "
                         f"{site.url('/missing')}, пожалуйста"))
    lines = said.splitlines()
    assert len(lines) == 3 and lines[0].startswith("✅ Проиндексировано")
    assert lines[2].startswith("⚠️") and "404" in lines[2]
    text = " ".join(r["chunk_text"] for r in chunks_of(store, user_id))
    assert ARTICLE_SENTENCES[0] in text and FOOTER_MARKER not in text  # boilerplate dropped
    assert {r["source_type"] for r in chunks_of(store, user_id)} == {"url"}
    stages = {st["name"]: st for st in job_trace(store, user_id)["stages"]
              if st["name"].startswith(f"ingest-link-127.0.0.1:{site.port}") and " +" not in st["name"]}
    assert sorted(st["state"] for st in stages.values()) == ["COMPLETED", "COMPLETED", "FAILED"]
    # Each slow page takes 3 s to answer; run one after the other they could not overlap.
    first, second = sorted((st for st in stages.values() if st["state"] == "COMPLETED"),
                           key=lambda st: st["started"])
    assert second["started"] < first["started"] + first["seconds"]
    with get_client(sync_client=True) as client:  # ops see the same in Prefect: one run, its branches
        deadline = time.monotonic() + 60
        while True:  # the record reaches the server in the background
            runs = [r for r in client.read_task_runs(task_run_filter=TaskRunFilter(
                name=TaskRunFilterName(like_=f"ingest-link-127.0.0.1:{site.port}"))) if " +" not in r.name]
            if (len(runs) == 3 and all(r.state and r.state.is_final() for r in runs)) \
                    or time.monotonic() > deadline:
                break
            time.sleep(1)
    assert sorted(r.state.type.value for r in runs) == ["COMPLETED", "COMPLETED", "FAILED"]
    failed = next(r for r in runs if r.state.is_failed())
    assert "404" in (failed.state.message or "")  # the reason is in the Prefect run
    assert runs[0].flow_run_id == runs[1].flow_run_id == runs[2].flow_run_id  # branches of one flow run
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[runs[0].flow_run_id])))
    summaries = [a.data for a in artifacts if a.type == "markdown"]
    assert len(summaries) == 2 and all("| chunks |" in md and "time: embed" in md for md in summaries)


@pytest.mark.models
async def test_voice_and_video_are_transcribed_with_timestamps(
    standin: TelegramStandin, store: str, user_id: int, tmp_path: Path
) -> None:
    require(festival_missing())
    samples = speak(SPEECH, tmp_path, "speech")
    video_samples = speak(VIDEO_SPEECH, tmp_path, "video-speech")
    voice = write_audio(tmp_path / "voice.ogg", [samples])
    video = write_video(tmp_path / "clip.mp4", video_samples)
    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        said_voice = await indexed(standin, user_id, lambda: standin.send_voice(
            user_id, voice.read_bytes(), duration=int(len(samples) / 16000) + 1))
        said_video = await indexed(standin, user_id, lambda: standin.send_video(
            user_id, video.read_bytes(), duration=int(len(video_samples) / 16000) + 1, file_name="clip.mp4"))
    assert "✅" in said_voice and "длительность 0:0" in said_voice
    assert "✅" in said_video
    rows = chunks_of(store, user_id)
    assert {r["source_type"] for r in rows} == {"voice", "video"}
    heard = " ".join(r["chunk_text"] for r in rows).lower()
    assert "клубник" in heard and "поливают" in heard and "прохладн" in heard  # both recordings, by their words
    assert all(r["ts_start"] is not None and r["ts_end"] >= r["ts_start"] for r in rows)
    assert all(r["duration_seconds"] and r["duration_seconds"] > 2 for r in rows)


async def test_bad_input_gets_a_clear_message_and_writes_nothing(
    standin: TelegramStandin, store: str, user_id: int, tmp_path: Path, uploads_left: Callable[[], list[str]]
) -> None:
    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        unknown = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, b"MZ\x90\x00binary", "setup.exe", "application/octet-stream"))
        corrupt = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, b"%PDF-1.7\n garbage that is not a pdf", "broken.pdf", "application/pdf"))
        empty_audio = await indexed(standin, user_id, lambda: standin.send_voice(
            user_id, write_audio(tmp_path / "silence.ogg", [np.zeros(16000 * 3, np.float32)]).read_bytes(),
            duration=3))
        dead_link = await indexed(standin, user_id, lambda: standin.send_text(
            user_id, "http://169.254.169.254/latest/meta-data/"))
        schemes = await indexed(standin, user_id, lambda: standin.send_text(
            user_id, "file:///etc/passwd и gopher://127.0.0.1:25/"))
        file_fetches = len(standin.calls("getFile"))
        huge = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, b"%PDF-1.7\n" + bytes(21 * 1024 * 1024), "огромный.pdf", "application/pdf"))
    assert unknown.startswith("⚠️") and "не поддерживается" in unknown
    assert corrupt.startswith("⚠️") and "PDF" in corrupt
    assert empty_audio.startswith("⚠️") and "речь" in empty_audio
    assert dead_link.startswith("⚠️") and "169.254.169.254" in dead_link
    assert schemes.splitlines() == [f"⚠️ «file:///etc/passwd»: {MSG_SCHEME}",
                                    f"⚠️ «gopher://127.0.0.1:25/»: {MSG_SCHEME}"]  # each link named, by its scheme
    assert huge.startswith("⚠️") and "20 МБ" in huge  # Telegram bots cannot download more
    assert len(standin.calls("getFile")) == file_fetches  # refused before any transfer
    assert documents_of(store, user_id) == 0 and chunks_of(store, user_id) == []
    assert uploads_left() == []  # nor is a refused or unreadable file left on disk


async def test_clean_base_removes_only_this_users_documents(
    standin: TelegramStandin, store: str, user_id: int, other_user_id: int
) -> None:
    note = "Ежевику укрывают на зиму, пригибая плети к земле и засыпая их лапником."
    async with running(new_bot(), worker=True):
        for uid in (user_id, other_user_id):
            await choose_documents(standin, uid)
            assert "✅" in await indexed(standin, uid, lambda uid=uid: standin.send_text(uid, note))
        forged = await reply_to(standin, user_id, lambda: standin.press_button(
            user_id, "clean_base:yes", strict=False))  # no /clean_base asked: a forged press
        assert "больше не действует" in forged and documents_of(store, user_id) == 1
        ask = await reply_to(standin, user_id, lambda: standin.send_text(user_id, "/clean_base"))
        assert "Удалить все ваши документы" in ask
        confirm = standin.bot_messages(user_id)[-1]
        [yes, _no] = [b["callback_data"] for b in confirm["reply_markup"]["inline_keyboard"][0]]
        theirs = await reply_to(standin, other_user_id, lambda: standin.press_button(
            other_user_id, yes, strict=False))  # someone else's press of this button
        assert "больше не действует" in theirs
        press = lambda: standin.press_button(user_id, yes, message_id=confirm["message_id"])  # noqa: E731
        done = await reply_to(standin, user_id, press)
        again = await reply_to(standin, user_id, press)  # a button is valid once
    assert done == "База очищена: удалено документов — 1."
    assert "больше не действует" in again
    assert documents_of(store, user_id) == 0 and chunks_of(store, user_id) == []
    assert documents_of(store, other_user_id) == 1


async def test_a_file_sent_in_chat_is_offered_for_the_base_and_indexed_on_a_press(
    standin: TelegramStandin, store: str, user_id: int, other_user_id: int, tmp_path: Path
) -> None:
    txt = make_text_file(tmp_path / "жимолость.txt", "Жимолость цветёт первой из ягодных культур.", "utf-8")
    async with running(new_bot(), worker=True):
        for uid in (user_id, other_user_id):
            standin.send_text(uid, "/start")
            await standin.wait_for_bot_messages_async(uid, 1)
            standin.press_button(uid, "chat")
            await standin.wait_for_bot_messages_async(uid, 2)
        offer = await reply_to(standin, user_id, lambda: standin.send_document(
            user_id, txt.read_bytes(), "жимолость.txt", "text/plain"))
        assert "«жимолость.txt»" in offer and "Добавить" in offer and documents_of(store, user_id) == 0
        [yes, no] = [b["callback_data"] for b in standin.bot_messages(user_id)[-1]["reply_markup"]
                     ["inline_keyboard"][0]]
        assert yes.startswith("index_offer:yes:") and no.startswith("index_offer:no:")
        theirs = await reply_to(standin, other_user_id, lambda: standin.press_button(
            other_user_id, yes, strict=False))  # not their offer: nothing is indexed for anyone
        assert "недействительно" in theirs and documents_of(store, other_user_id) == 0
        said = await indexed(standin, user_id, lambda: standin.press_button(user_id, yes))
        again = await reply_to(standin, user_id, lambda: standin.press_button(user_id, yes, strict=False))
    assert said.startswith("✅") and "жимолость.txt" in said
    assert "Жимолость цветёт" in " ".join(r["chunk_text"] for r in chunks_of(store, user_id))
    assert "недействительно" in again and documents_of(store, user_id) == 1  # a button is valid once
    assert mode_of(store, user_id) == "chat"  # the offer does not switch the mode


def mode_of(url: str, user_id: int) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("select current_mode from user_state where user_id = %s", (user_id,)).fetchone()
    return row[0] if row else None


async def test_an_edited_note_replaces_what_its_first_version_indexed(
    standin: TelegramStandin, store: str, user_id: int
) -> None:
    first = "Жимолость цветёт первой из ягодных культур, её ягоды созревают в конце июня."
    fixed = "Жимолость цветёт первой из ягодных культур, её ягоды созревают в конце мая."
    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        sent: dict = {}
        said = await indexed(standin, user_id, lambda: sent.update(standin.send_text(user_id, first)))
        assert said.startswith("✅")
        message_id = sent["message"]["message_id"]
        again = await indexed(standin, user_id, lambda: standin.edit_text(user_id, message_id, fixed))
        broken = await indexed(standin, user_id, lambda: standin.edit_text(
            user_id, message_id, "http://169.254.169.254/latest/meta-data/"))  # a version that cannot be indexed
        before = len(standin.bot_messages(user_id))
        standin.press_button(user_id, "chat", strict=False)  # to Чат: an edit there is not answered
        await standin.wait_for_bot_messages_async(user_id, before + 1)
        standin.edit_text(user_id, message_id, fixed + " Укрывать не нужно.")
        helped = await reply_to(standin, user_id, lambda: standin.send_text(user_id, "/help"))
    assert again.startswith("✏️") and "удалена" in again and "✅" in again
    assert broken.startswith("⚠️") and "✏️" not in broken  # nothing replaced: the last good version stays
    text = " ".join(r["chunk_text"] for r in chunks_of(store, user_id))
    assert "конце мая" in text and "конце июня" not in text and documents_of(store, user_id) == 1
    assert "20 МБ" in helped  # the Чат edit got no reply: the next message is /help's
    assert "Укрывать" not in text


def searchable_text(url: str, user_id: int) -> str:
    """What a search of this user's base can find now (another connection: committed rows only)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("select chunk_text from document_chunks where owner_id = %s and is_active"
                            " order by document_id, position", (user_id,)).fetchall()
    return " ".join(r[0] for r in rows)


async def test_an_edits_new_version_takes_the_old_ones_place_in_one_transaction(
    standin: TelegramStandin, store: str, user_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import flows.ingest

    first = "Крыжовник обрезают ранней весной, до распускания почек, и оставляют пять побегов."
    fixed = "Крыжовник обрезают поздней осенью, после листопада, и оставляют семь побегов."
    real_delete = flows.ingest.delete_documents
    midway: list[str] = []

    def delete_then_fail(owner_id: int, document_ids: list[int]) -> int:
        real_delete(owner_id, document_ids)
        midway.append(searchable_text(store, user_id))  # the swap is done but not committed
        raise RuntimeError("the confirmation could not be written")

    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        sent: dict = {}
        assert (await indexed(standin, user_id, lambda: sent.update(standin.send_text(user_id, first)))).startswith("✅")
        message_id = sent["message"]["message_id"]
        monkeypatch.setattr(flows.ingest, "delete_documents", delete_then_fail)
        failed = await indexed(standin, user_id, lambda: standin.edit_text(user_id, message_id, fixed))
        after_failure = searchable_text(store, user_id)
        monkeypatch.setattr(flows.ingest, "delete_documents", real_delete)
        again = await indexed(standin, user_id, lambda: standin.edit_text(user_id, message_id, fixed))
    # While the new version was stored and the old one deleted inside the job, a search saw only the
    # old one; the failure rolled both back: the old version stays, the new one never showed.
    assert midway == [first] and after_failure == first and failed.startswith("Не получилось")
    assert again.startswith("✏️") and searchable_text(store, user_id) == fixed
    assert documents_of(store, user_id) == 1  # the failed attempt's unsearchable copy is gone too


async def test_a_refused_download_asks_once_and_a_local_bot_api_server_lifts_the_limit(
    standin: TelegramStandin, store: str, user_id: int, tmp_path: Path, env
) -> None:
    from grove.core.ingest_types import IngestError, IngestItem
    from grove.core.settings import get_settings
    from nodes.telegram.api import LoopBot
    from nodes.telegram.files import download_limit, download_telegram_file

    big = b"%PDF-1.7\n" + bytes(21 * 1024 * 1024)
    file_id = standin.send_document(user_id, big, "большой.pdf", "application/pdf")["message"]["document"]["file_id"]
    unknown_size = IngestItem(kind="file", source_identifier="большой.pdf", file_name="большой.pdf",
                              telegram_file_id=file_id)  # no file_size: only getFile can tell
    api = LoopBot.open(get_settings())
    with pytest.raises(IngestError) as refused:
        download_telegram_file(unknown_size, api, download_limit(get_settings()))
    api.close()
    assert "больше 20 МБ" in refused.value.user_message
    assert len(standin.calls("getFile")) == 1  # refused once, not retried

    standin.local_dir = tmp_path / "bot-api"
    env(GROVE_TELEGRAM_LOCAL_MODE="true", GROVE_MAX_FILE_BYTES=str(50 * 1024 * 1024))
    api = LoopBot.open(get_settings())  # a bot restarted against the local server
    got = download_telegram_file(unknown_size.model_copy(update={"file_size": len(big)}), api,
                                 download_limit(get_settings()))
    api.close()
    assert Path(got.path).read_bytes() == big  # copied from the server's disk, past 20 MB


async def test_a_photo_of_a_page_and_a_scanned_pdf_are_indexed_by_ocr(
    standin: TelegramStandin, store: str, user_id: int, tmp_path: Path
) -> None:
    from tests.support.documents import make_scanned_pdf, page_image
    from tests.support.prerequisites import ocr_missing

    require(ocr_missing())
    scan = make_scanned_pdf(tmp_path / "скан.pdf", [["Жимолость цветёт первой", "из ягодных культур."]])
    async with running(new_bot(), worker=True):
        await choose_documents(standin, user_id)
        said_photo = await indexed(standin, user_id, lambda: standin.send_photo(
            user_id, page_image(["Крыжовник обрезают ранней", "весной до распускания почек."])))
        said_scan = await indexed(standin, user_id, lambda: standin.send_document(
            user_id, scan.read_bytes(), "скан.pdf", "application/pdf"))
    assert said_photo.startswith("✅") and said_scan.startswith("✅")
    text = " ".join(r["chunk_text"] for r in chunks_of(store, user_id))
    assert "Крыжовник обрезают" in text and "Жимолость цветёт" in text
