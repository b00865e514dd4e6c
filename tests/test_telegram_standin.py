"""Tests of the Telegram Bot API stand-in, driving a real python-telegram-bot Application over HTTP.

They pin down the two things grove's bot tests rely on: PTB works against the stand-in unchanged
(polling, handlers, file download), and the stand-in answers the way Telegram would.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.error import BadRequest, Conflict, EndPointNotFound, InvalidToken, NetworkError, RetryAfter
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from tests.support.bot import running
from tests.support.telegram_standin import TelegramStandin

TOKEN = "123456789:TEST-token_for-grove"
ALICE = 1001
BOB = 2002

pytestmark = pytest.mark.timeout(20)


@pytest.fixture
def standin() -> Iterator[TelegramStandin]:
    with TelegramStandin() as tg:
        yield tg


def build_app(tg: TelegramStandin) -> Application:
    """A small bot with the handler kinds grove uses: command, button, text and document."""

    async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        keyboard = InlineKeyboardMarkup(
            [[InlineKeyboardButton("Yes", callback_data="yes"), InlineKeyboardButton("No", callback_data="no")]]
        )
        await update.message.reply_text("Welcome! Shall we start?", reply_markup=keyboard)

    async def button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        await query.answer(f"Noted: {query.data}")
        await query.message.reply_text(f"You chose {query.data}")

    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        await update.message.reply_text(update.message.text, do_quote=True)

    async def document(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        doc = update.message.document
        await context.bot.send_chat_action(update.effective_chat.id, "typing")
        data = await (await doc.get_file()).download_as_bytearray()
        await update.message.reply_text(f"{doc.file_name} ({doc.mime_type}): {len(data)} bytes")

    async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        errors.append(context.error)

    errors: list[BaseException | None] = []
    app = (
        ApplicationBuilder()
        .token(TOKEN)
        .base_url(tg.api_url + "/bot")
        .base_file_url(tg.api_url + "/file/bot")
        .build()
    )
    app.add_handler(CommandHandler("start", start))
    app.add_handler(CallbackQueryHandler(button))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    app.add_handler(MessageHandler(filters.Document.ALL, document))
    app.add_error_handler(on_error)
    app.bot_data["errors"] = errors
    return app


def api(tg: TelegramStandin, method: str, **params: object) -> httpx.Response:
    return httpx.post(f"{tg.api_url}/bot{TOKEN}/{method}", json=params, timeout=10)


# ---------------------------------------------------------------------- driving a real PTB bot


@pytest.mark.asyncio
async def test_start_command_buttons_and_callback(standin: TelegramStandin) -> None:
    async with running(build_app(standin)):
        update = standin.send_text(ALICE, "/start", first_name="Alice", username="alice")
        assert update["message"]["entities"] == [{"type": "bot_command", "offset": 0, "length": 6}]

        [welcome] = await standin.wait_for_bot_messages_async(ALICE, 1)
        assert welcome["text"] == "Welcome! Shall we start?"
        assert welcome["from"]["is_bot"] is True
        assert welcome["chat"] == {"id": ALICE, "type": "private", "first_name": "Alice", "username": "alice"}
        assert welcome["reply_markup"] == {
            "inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}, {"text": "No", "callback_data": "no"}]]
        }
        assert welcome["parse_mode"] is None

        pressed = standin.press_button(ALICE, "no")
        query = pressed["callback_query"]
        assert {"id", "from", "message", "chat_instance", "data"} <= query.keys()
        assert query["message"]["message_id"] == welcome["message_id"]

        messages = await standin.wait_for_bot_messages_async(ALICE, 2)
        assert messages[1]["text"] == "You chose no"
        await standin.wait_for_calls_async("answerCallbackQuery")
        assert standin.callback_answers() == [{"callback_query_id": query["id"], "text": "Noted: no"}]

    assert standin.tokens == [TOKEN]
    assert standin.calls("getMe") and standin.calls("deleteWebhook")
    sent = standin.calls("sendMessage")[0]["params"]
    assert sent["chat_id"] == ALICE and isinstance(sent["reply_markup"], dict)
    assert not standin.pending_updates()  # PTB confirmed everything on shutdown


@pytest.mark.asyncio
async def test_echo_and_per_chat_message_ids(standin: TelegramStandin) -> None:
    async with running(build_app(standin)):
        standin.send_text(ALICE, "first")
        standin.send_text(BOB, "123")  # a text that looks like JSON stays a string
        standin.send_text(ALICE, "second 🌱")
        alice = await standin.wait_for_bot_messages_async(ALICE, 2)
        [bob] = await standin.wait_for_bot_messages_async(BOB, 1)

    assert [m["text"] for m in alice] == ["first", "second 🌱"]
    assert [m["reply_to_message"]["text"] for m in alice] == ["first", "second 🌱"]
    assert bob["text"] == "123"
    # Private-chat message ids are shared by user and bot and count per chat; both of
    # Alice's messages were queued before the bot could answer the first.
    assert [m["message_id"] for m in alice] == [3, 4]
    assert bob["message_id"] == 2
    assert all(isinstance(m["date"], int) for m in alice)
    assert [m["text"] for m in standin.bot_messages()] == ["first", "123", "second 🌱"]


@pytest.mark.asyncio
async def test_document_is_downloaded_by_the_bot(standin: TelegramStandin) -> None:
    content = bytes(range(256)) * 40 + b"\r\n--not-a-boundary\r\n"
    async with running(build_app(standin)):
        update = standin.send_document(ALICE, content, "notes.bin", "application/octet-stream", caption="mine")
        [reply] = await standin.wait_for_bot_messages_async(ALICE, 1)

    assert reply["text"] == f"notes.bin (application/octet-stream): {len(content)} bytes"
    document = update["message"]["document"]
    assert set(document) == {"file_id", "file_unique_id", "file_name", "mime_type", "file_size"}
    [get_file] = standin.calls("getFile")
    assert get_file["params"] == {"file_id": document["file_id"]}
    assert get_file["response"]["result"]["file_size"] == len(content)
    assert [c["params"]["file_path"] for c in standin.calls("file")] == [get_file["response"]["result"]["file_path"]]
    assert standin.chat_actions(ALICE) == ["typing"]


@pytest.mark.asyncio
async def test_malformed_update_does_not_stop_the_bot(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with running(app):
        standin.send_raw_update({"mystery_update": {"x": 1}})  # an update kind PTB does not know
        # Parses, but a handler trips over the missing "from"/"chat".
        standin.send_raw_update({"message": {"message_id": 99, "date": 0, "text": "orphan"}})
        standin.send_text(ALICE, "still alive?")
        [reply] = await standin.wait_for_bot_messages_async(ALICE, 1)

    assert reply["text"] == "still alive?"
    assert len(app.bot_data["errors"]) == 1  # the orphan message reached the error handler
    assert not standin.pending_updates()


@pytest.mark.asyncio
async def test_bot_edits_deletes_and_uploads(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:  # no polling needed to call the API directly
        keyboard = InlineKeyboardMarkup([[InlineKeyboardButton("Go", callback_data="go")]])
        sent = await app.bot.send_message(ALICE, "<b>Working</b>…", parse_mode="HTML", reply_markup=keyboard)
        assert sent.reply_markup == keyboard and sent.from_user.username == "grove_test_bot"

        # Like Telegram, an edit without reply_markup drops the keyboard.
        await app.bot.edit_message_text("Done", chat_id=ALICE, message_id=sent.message_id)
        with pytest.raises(BadRequest, match="not modified"):
            await app.bot.edit_message_text("Done", chat_id=ALICE, message_id=sent.message_id)
        with pytest.raises(BadRequest, match="not found"):
            await app.bot.edit_message_text("x", chat_id=ALICE, message_id=999)

        name = 'Q3 "final" 100%25 отчёт.pdf'
        doc = await app.bot.send_document(ALICE, b"%PDF-1.4 fake", filename=name, caption="Report")
        assert doc.document.file_name == name and doc.document.mime_type == "application/pdf"
        assert standin.file_content(doc.document.file_id) == b"%PDF-1.4 fake"

        await app.bot.delete_message(ALICE, doc.message_id)
        with pytest.raises(BadRequest, match="not found"):
            await app.bot.delete_message(ALICE, doc.message_id)

        with pytest.raises(BadRequest, match=r"[Qq]uery is too old"):
            await app.bot.answer_callback_query("no-such-query")

    edited, uploaded = standin.bot_messages(ALICE)
    assert (edited["text"], edited["reply_markup"], edited["parse_mode"]) == ("Done", None, None)
    assert isinstance(edited["edit_date"], int)
    assert uploaded["caption"] == "Report" and uploaded["deleted"] is True
    assert len(standin.calls("editMessageText")) == 3


# PTB's own RetryAfter.__init__ reads its deprecated int retry_after; nothing to fix here.
@pytest.mark.filterwarnings("ignore:.*retry_after.*")
@pytest.mark.asyncio
async def test_rejects_what_telegram_rejects(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:
        bot = app.bot
        with pytest.raises(BadRequest, match='unsupported start tag "br" at byte offset 4'):
            await bot.send_message(ALICE, "line<br>break", parse_mode="HTML")
        with pytest.raises(BadRequest, match="reserved and must be escaped"):
            await bot.send_message(ALICE, "Saved 3 notes.", parse_mode="MarkdownV2")
        with pytest.raises(BadRequest, match="end of the entity starting at byte offset 9"):
            await bot.send_message(ALICE, "Stored my_notes.txt", parse_mode="Markdown")
        with pytest.raises(BadRequest, match="too long"):
            await bot.send_message(ALICE, "x" * 4097)
        # Telegram says "BUTTON_DATA_INVALID"; PTB capitalises descriptions into "Button_data_invalid".
        with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
            too_long = InlineKeyboardMarkup([[InlineKeyboardButton("x", callback_data="d" * 65)]])
            await bot.send_message(ALICE, "pick", reply_markup=too_long)
        with pytest.raises(BadRequest, match=r"(?i)bot_command_invalid"):
            await bot.set_my_commands([("Start", "Begin")])

        await bot.send_message(ALICE, "<b>ok</b> &amp; <a href='https://x.y'>link</a>", parse_mode="HTML")
        await bot.send_message(ALICE, r"*Saved* 3 notes\. `a.b` [x](https://x.y/a_b)", parse_mode="MarkdownV2")
        await bot.set_my_commands([("start", "Begin"), ("ask", "Ask the knowledge base")])
        assert [c.command for c in await bot.get_my_commands()] == ["start", "ask"]

        standin.fail_next("sendMessage", error_code=429, retry_after=3)
        with pytest.raises(RetryAfter, match="Retry in 3 seconds"):
            await bot.send_message(ALICE, "busy")

        await bot.set_webhook("https://example.invalid/hook")
        with pytest.raises(Conflict, match="webhook is active"):
            await bot.get_updates()
        await bot.delete_webhook()

    assert [m["text"][:4] for m in standin.bot_messages(ALICE)] == ["<b>o", "*Sav"]


@pytest.mark.asyncio
async def test_unknown_method_is_a_404_that_ptb_raises(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:
        with pytest.raises(EndPointNotFound):
            await app.bot.do_api_request("sendTelepathy", api_kwargs={"chat_id": ALICE})
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{standin.api_url}/bot{TOKEN}/sendTelepathy", data={"chat_id": "1"})
    assert response.status_code == 404
    assert response.json() == {"ok": False, "error_code": 404, "description": "Not Found: method not found"}


@pytest.mark.asyncio
async def test_message_drafts_stream_in_private_chats_only(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:
        assert await app.bot.send_message_draft(ALICE, draft_id=7) is True  # the "Thinking…" placeholder
        assert await app.bot.send_message_draft(ALICE, draft_id=7, text="Малину весной …") is True
        with pytest.raises(BadRequest, match="only to private chats"):
            await app.bot.send_message_draft(-100123, draft_id=7, text="в группу")
        with pytest.raises(BadRequest, match="non-zero"):
            await app.bot.send_message_draft(ALICE, draft_id=0, text="без номера")
        standin.refuse_drafts = True  # a server before Bot API 9.3
        with pytest.raises((EndPointNotFound, InvalidToken)):
            await app.bot.send_message_draft(ALICE, draft_id=7, text="старый сервер")
    assert [(d["draft_id"], d["text"]) for d in standin.drafts(ALICE)] == [(7, ""), (7, "Малину весной …")]
    assert standin.bot_messages(ALICE) == []  # a draft is no message


@pytest.mark.asyncio
async def test_folded_quotes_are_checked_as_telegram_checks_them(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:
        await app.bot.send_message(ALICE, "Ответ.\n<blockquote expandable>«цитата»</blockquote>", parse_mode="HTML")
        with pytest.raises(BadRequest, match="can't be nested"):
            await app.bot.send_message(ALICE, "<blockquote>a<blockquote expandable>b</blockquote></blockquote>",
                                       parse_mode="HTML")
        with pytest.raises(BadRequest, match=r"(?i)unsupported attribute"):
            await app.bot.send_message(ALICE, "<blockquote collapsed>b</blockquote>", parse_mode="HTML")
    assert [m["text"][:6] for m in standin.bot_messages(ALICE)] == ["Ответ."]


@pytest.mark.asyncio
async def test_a_draft_sent_with_can_stop_can_be_stopped_by_the_user(standin: TelegramStandin) -> None:
    """Bot API 10.3: Telegram's stop button shows only on a draft sent with `can_stop`, and its
    `stopped_message_generation` update reaches only a bot that asked for it in allowed_updates."""
    app = build_app(standin)
    async with app:
        await app.bot.send_message_draft(ALICE, draft_id=9, text="Малину …")
        with pytest.raises(ValueError, match="no stop button"):
            standin.stop_draft(ALICE)
        await app.bot.send_message_draft(ALICE, draft_id=9, text="Малину весной …",
                                         api_kwargs={"can_stop": True})
        await app.bot.get_updates(timeout=0)  # the default set: the update is not asked for
        assert standin.stop_draft(ALICE) is None
        await app.bot.get_updates(timeout=0, allowed_updates=["message", "stopped_message_generation"])
        queued = standin.stop_draft(ALICE)
        [update] = await app.bot.get_updates(timeout=0)
    assert queued is not None and update.api_kwargs["stopped_message_generation"]["draft_id"] == 9
    assert update.api_kwargs["stopped_message_generation"]["chat"]["id"] == ALICE


@pytest.mark.asyncio
async def test_real_but_unimplemented_method_says_so(standin: TelegramStandin) -> None:
    app = build_app(standin)
    async with app:
        # A plain 404 would reach the bot as InvalidToken; this names the missing feature.
        with pytest.raises(NetworkError, match="stand-in has no sendDice"):
            await app.bot.send_dice(ALICE)


@pytest.mark.asyncio
async def test_media_updates_parse_in_ptb_and_download(standin: TelegramStandin) -> None:
    standin.send_voice(ALICE, b"OggS voice", duration=3)
    standin.send_audio(ALICE, b"ID3 audio", duration=180, title="Talk", performer="Ada")
    standin.send_video(ALICE, b"video bytes", duration=7, caption="clip")
    standin.send_video_note(ALICE, b"round", duration=2)
    standin.send_photo(ALICE, b"\xff\xd8 jpeg", caption="whiteboard")
    app = build_app(standin)
    async with app:
        voice, audio, video, note, photo = [u.message for u in await app.bot.get_updates(timeout=0)]
        assert (voice.voice.mime_type, voice.voice.to_dict()["duration"]) == ("audio/ogg", 3)
        assert (audio.audio.title, audio.audio.performer, audio.audio.mime_type) == ("Talk", "Ada", "audio/mpeg")
        assert (video.video.width, video.video.height, video.caption) == (640, 360, "clip")
        assert note.video_note.length == 384
        assert (photo.photo[-1].width, photo.caption) == (1280, "whiteboard")
        voice_file = await voice.voice.get_file()
        assert voice_file.file_path.endswith(".oga")
        assert await voice_file.download_as_bytearray() == bytearray(b"OggS voice")


@pytest.mark.asyncio
async def test_oversized_file_cannot_be_fetched() -> None:
    with TelegramStandin(max_download_size=10) as tg:
        update = tg.send_document(ALICE, b"x" * 11, "big.txt", "text/plain")
        app = build_app(tg)
        async with app:
            with pytest.raises(BadRequest, match="too big"):
                await app.bot.get_file(update["message"]["document"]["file_id"])


# ---------------------------------------------------------------------- getUpdates semantics over raw HTTP


def test_get_updates_offset_confirms_and_limit(standin: TelegramStandin) -> None:
    first = standin.send_text(ALICE, "one")["update_id"]
    standin.send_text(ALICE, "two")

    assert [u["update_id"] for u in api(standin, "getUpdates", limit=1).json()["result"]] == [first]
    # Not confirmed yet: delivered again, exactly as Telegram does.
    again = api(standin, "getUpdates").json()["result"]
    assert [u["message"]["text"] for u in again] == ["one", "two"]
    # offset confirms everything below it; a confirmed update never comes back.
    after = api(standin, "getUpdates", offset=first + 1).json()["result"]
    assert [u["message"]["text"] for u in after] == ["two"]
    assert api(standin, "getUpdates", offset=first + 2, timeout=0).json() == {"ok": True, "result": []}
    assert api(standin, "getUpdates", offset=first + 2).json()["result"] == []
    assert standin.pending_updates() == []


def test_long_poll_times_out_with_empty_list(standin: TelegramStandin) -> None:
    started = time.monotonic()
    body = api(standin, "getUpdates", timeout=1).json()
    elapsed = time.monotonic() - started
    assert body == {"ok": True, "result": []}
    assert 0.9 <= elapsed < 3


def test_long_poll_returns_as_soon_as_an_update_arrives(standin: TelegramStandin) -> None:
    timer = threading.Timer(0.3, standin.send_text, args=(ALICE, "ping"))
    timer.start()
    started = time.monotonic()
    body = api(standin, "getUpdates", timeout=10).json()
    elapsed = time.monotonic() - started
    timer.join()
    assert [u["message"]["text"] for u in body["result"]] == ["ping"]
    assert 0.2 <= elapsed < 3


def test_form_encoded_requests_and_errors(standin: TelegramStandin) -> None:
    url = f"{standin.api_url}/bot{TOKEN}"
    sent = httpx.post(f"{url}/sendMessage", data={"chat_id": "7", "text": "true", "disable_notification": "true"})
    assert sent.json()["result"]["text"] == "true"
    assert standin.calls("sendMessage")[0]["params"]["disable_notification"] is True
    missing = httpx.post(f"{url}/sendMessage", data={"chat_id": "7"})
    assert (missing.status_code, missing.json()) == (
        400, {"ok": False, "error_code": 400, "description": "Bad Request: message text is empty"},
    )
    me = httpx.get(f"{url}/getMe").json()["result"]
    assert me["is_bot"] is True and me["username"] == "grove_test_bot" and "can_join_groups" in me


def test_waiting_reports_what_happened(standin: TelegramStandin) -> None:
    standin.send_text(ALICE, "hello?")
    with pytest.raises(TimeoutError, match=r"(?s)expected 1 bot message\(s\) in chat 1001.*unconfirmed updates: 1"):
        standin.wait_for_bot_messages(ALICE, 1, timeout=0.2)
    api(standin, "sendMessage", chat_id=ALICE, text="plain")
    with pytest.raises(ValueError, match=r"no button with callback_data 'missing'; it offers \[\]"):
        standin.press_button(ALICE, "missing")


@pytest.mark.asyncio
async def test_sync_wait_refuses_to_block_the_event_loop(standin: TelegramStandin) -> None:
    with pytest.raises(RuntimeError, match="wait_for_bot_messages_async"):
        standin.wait_for_bot_messages(ALICE, 1, timeout=0.1)
