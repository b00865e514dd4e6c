"""grove/core/messages.py: command parsing and what an IncomingUpdate says about itself."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grove.core.messages import Attachment, Button, IncomingUpdate, Reply, parse_command


@pytest.mark.parametrize(("text", "expected"), [
    ("/start", ("start", "")),
    ("/start@grove_bot", ("start", "")),
    ("/start@grove_bot  ссылка-приглашение ", ("start", "ссылка-приглашение")),
    ("/MODE чат", ("mode", "чат")),
    ("/delete 12 13", ("delete", "12 13")),
    ("/", (None, "")),
    ("/@grove_bot что-то", (None, "что-то")),
])
def test_a_command_is_its_lower_case_name_and_the_rest(text: str, expected: tuple[str | None, str]) -> None:
    assert parse_command(text) == expected


@pytest.mark.parametrize("text", ["Как подкормить малину?", " /start", "", "малина /start"])
def test_a_plain_message_is_no_command_and_stays_as_written(text: str) -> None:
    assert parse_command(text) == (None, text)


def test_the_kind_names_what_the_user_did() -> None:
    doc = Attachment(kind="document", file_id="F1", file_name="малина.pdf")
    voice = Attachment(kind="voice", file_id="F2", duration=3)
    assert IncomingUpdate(user_id=1, chat_id=1, text="привет").kind == "text"
    assert IncomingUpdate(user_id=1, chat_id=1, text="/start", command="start").kind == "cmd-start"
    assert IncomingUpdate(user_id=1, chat_id=1, attachments=[voice, doc]).kind == "voice"  # the first one
    # A press wins over anything else the update carries; an empty callback payload is still a press.
    assert IncomingUpdate(user_id=1, chat_id=1, callback_data="", command="start", attachments=[doc]).kind == "button"
    # A command outranks the files sent with it.
    assert IncomingUpdate(user_id=1, chat_id=1, command="add", attachments=[doc]).kind == "cmd-add"


@pytest.mark.parametrize(("chat_type", "in_group"), [
    ("private", False), ("group", True), ("supergroup", True), ("channel", True)])
def test_in_group_is_any_chat_but_a_private_one(chat_type: str, in_group: bool) -> None:
    update = IncomingUpdate(user_id=5, chat_id=-100 if in_group else 5, chat_type=chat_type)  # type: ignore[arg-type]
    assert update.in_group is in_group


def test_defaults_describe_a_plain_private_telegram_message() -> None:
    update = IncomingUpdate(user_id=7, chat_id=7)
    assert (update.origin, update.chat_type, update.edited, update.addressed) == ("telegram", "private", False, True)
    assert (update.command, update.command_args, update.attachments) == (None, "", [])


def test_an_update_survives_the_trip_to_a_worker_as_json() -> None:
    update = IncomingUpdate(origin="console", update_id=3, user_id=9, chat_id=9, text="/find малина",
                            command="find", command_args="малина",
                            attachments=[Attachment(kind="photo", file_id="P", file_size=10)])
    again = IncomingUpdate.model_validate_json(update.model_dump_json())
    assert again == update and again.kind == "cmd-find" and again.attachments[0].file_size == 10


def test_unknown_origins_and_kinds_are_refused() -> None:
    with pytest.raises(ValidationError):
        IncomingUpdate(origin="whatsapp", user_id=1, chat_id=1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Attachment(kind="sticker", file_id="S")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Reply(chat_id=1, text="x", parse_mode="Markdown")  # type: ignore[arg-type]


def test_a_reply_defaults_to_plain_text_without_buttons_or_edits() -> None:
    reply = Reply(chat_id=4, text="Готово", buttons=[[Button(label="Да", data="yes"), Button(label="Нет", data="no")]])
    assert [[b.data for b in row] for row in reply.buttons] == [["yes", "no"]]
    assert (reply.parse_mode, reply.markdown, reply.replaces_message_id, reply.edits_reply,
            reply.acknowledges_job) == (None, False, None, None, None)
    assert Reply.model_validate(reply.model_dump(mode="json")) == reply
