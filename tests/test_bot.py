"""The mode switch end to end: python-telegram-bot ↔ Bot API stand-in over HTTP ↔ flows ↔ Postgres."""

from __future__ import annotations

import psycopg
import pytest

from tests.support.bot import new_bot, running
from tests.support.telegram_standin import TelegramStandin

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]


def mode_in_db(url: str, user_id: int) -> str | None:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select current_mode from user_state where user_id = %s", (user_id,)).fetchall()
    assert len(rows) <= 1
    return rows[0][0] if rows else None


def buttons(message: dict) -> list[tuple[str, str]]:
    keyboard = (message.get("reply_markup") or {}).get("inline_keyboard", [])
    return [(b["text"], b["callback_data"]) for row in keyboard for b in row]


async def test_start_press_and_confirmation(standin: TelegramStandin, store: str, user_id: int) -> None:
    async with running(new_bot()):
        standin.send_text(user_id, "/start")
        [menu] = await standin.wait_for_bot_messages_async(user_id, 1)
        assert menu["text"] == "Выберите режим работы"
        assert buttons(menu) == [("Чат", "chat"), ("База", "documents")]

        standin.press_button(user_id, "documents", message_id=menu["message_id"])
        messages = await standin.wait_for_bot_messages_async(user_id, 2)
        assert "Режим «База» включён" in messages[1]["text"]
        assert "/clean_base" in messages[1]["text"]
        assert mode_in_db(store, user_id) == "documents"
        answers = standin.callback_answers()
        assert any(a.get("text") == "Режим: База" for a in answers)

        standin.press_button(user_id, "chat", message_id=menu["message_id"])
        messages = await standin.wait_for_bot_messages_async(user_id, 3)
        assert "Режим «Чат» включён" in messages[2]["text"]
        assert mode_in_db(store, user_id) == "chat"


async def test_mode_survives_a_bot_restart(standin: TelegramStandin, store: str, user_id: int) -> None:
    async with running(new_bot()):
        standin.send_text(user_id, "/start")
        await standin.wait_for_bot_messages_async(user_id, 1)
        standin.press_button(user_id, "documents")
        await standin.wait_for_bot_messages_async(user_id, 2)

    async with running(new_bot()):  # a fresh Application: nothing carried over in memory
        standin.send_text(user_id, "привет")
        messages = await standin.wait_for_bot_messages_async(user_id, 3)
    assert messages[2]["text"].startswith("Пришлите ссылку")  # the documents branch, by the stored mode
    assert mode_in_db(store, user_id) == "documents"


async def test_message_before_choosing_a_mode_gets_the_menu(standin: TelegramStandin, user_id: int) -> None:
    async with running(new_bot()):
        standin.send_text(user_id, "привет")
        [reply] = await standin.wait_for_bot_messages_async(user_id, 1)
    assert reply["text"].startswith("Сначала выберите режим")
    assert buttons(reply) == [("Чат", "chat"), ("База", "documents")]


async def test_unknown_button_gets_a_clear_reply(standin: TelegramStandin, store: str, user_id: int) -> None:
    async with running(new_bot()):
        standin.send_text(user_id, "/start")
        await standin.wait_for_bot_messages_async(user_id, 1)
        standin.press_button(user_id, "drop_tables", strict=False)  # e.g. an old keyboard
        messages = await standin.wait_for_bot_messages_async(user_id, 2)
    assert "кнопка устарела" in messages[1]["text"]
    assert buttons(messages[1]) == [("Чат", "chat"), ("База", "documents")]
    assert any(a.get("text") == "Неизвестная кнопка" for a in standin.callback_answers())
    assert mode_in_db(store, user_id) is None


async def test_malformed_updates_do_not_kill_the_bot(standin: TelegramStandin, user_id: int) -> None:
    async with running(new_bot()):
        standin.send_raw_update({"message": "garbage"})  # PTB cannot parse this at all
        standin.send_raw_update({"message": {"message_id": 1, "date": "yesterday", "text": "x"}})
        standin.send_raw_update({"mystery_update": {"x": 1}})
        standin.send_raw_update({"message": {"message_id": 2, "date": 0, "text": "no sender"}})
        standin.send_text(user_id, "/start")
        [menu] = await standin.wait_for_bot_messages_async(user_id, 1, timeout=30)
    assert menu["text"] == "Выберите режим работы"
    assert not standin.pending_updates()


async def test_users_are_routed_by_their_own_mode(
    standin: TelegramStandin, user_id: int, other_user_id: int
) -> None:
    async with running(new_bot()):
        for uid, mode in ((user_id, "chat"), (other_user_id, "documents")):
            standin.send_text(uid, "/start")
            await standin.wait_for_bot_messages_async(uid, 1)
            standin.press_button(uid, mode)
            await standin.wait_for_bot_messages_async(uid, 2)
        standin.send_document(user_id, b"%PDF-1.4 not really", "a.pdf", "application/pdf")  # chat: questions
        standin.send_text(other_user_id, "документ")
        mine = await standin.wait_for_bot_messages_async(user_id, 3)
        theirs = await standin.wait_for_bot_messages_async(other_user_id, 3)
    assert "В режиме «Чат» я отвечаю на вопросы" in mine[2]["text"]
    assert theirs[2]["text"].startswith("Пришлите ссылку")


async def test_webhook_mode_receives_updates(standin: TelegramStandin, store: str, user_id: int,
                                             env) -> None:  # type: ignore[no-untyped-def]
    import httpx

    from grove.channels.bot import webhook_options
    from grove.core.settings import get_settings
    from tests.support.ports import free_port

    port = free_port()
    env(GROVE_TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram/hook",
        GROVE_TELEGRAM_WEBHOOK_PORT=str(port), GROVE_TELEGRAM_WEBHOOK_SECRET="s3cret")
    options = webhook_options(get_settings())
    app = new_bot()
    async with app:
        await app.start()
        await app.updater.start_webhook(**options)
        try:
            assert standin.calls("setWebhook")[-1]["params"]["url"] == options["webhook_url"]
            update = standin.send_text(user_id, "/start")
            async with httpx.AsyncClient() as client:
                refused = await client.post(options["webhook_url"], json=update)
                accepted = await client.post(options["webhook_url"], json=update,
                                             headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret"})
            [menu] = await standin.wait_for_bot_messages_async(user_id, 1)
        finally:
            await app.updater.stop()
            await app.stop()
    assert refused.status_code == 403 and accepted.status_code == 200
    assert menu["text"] == "Выберите режим работы"


async def test_the_command_menu_and_help(standin: TelegramStandin, user_id: int, other_user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    admin = other_user_id
    env(GROVE_ADMIN_IDS=f"[{admin}]")
    async with running(new_bot()):
        await standin.wait_for_calls_async("setMyCommands", 2)
        standin.send_text(user_id, "/help")
        [reply] = await standin.wait_for_bot_messages_async(user_id, 1)
    assert [c["command"] for c in standin.my_commands()] == ["start", "help", "clean_chat", "clean_base", "base"]
    assert [c["command"] for c in standin.my_commands(admin)][-1] == "moderation"
    assert standin.my_commands(user_id) == []  # a user who is no admin sees the default list only
    assert "20 МБ" in reply["text"] and "«База»" in reply["text"] and "/clean_base" in reply["text"]
