"""The channel-neutral shapes that flow between the bot, the console and the flows.

Flows never see python-telegram-bot objects: an update arrives as an
`IncomingUpdate` (serialisable, so it is a readable flow-run parameter in the
Prefect UI and can cross to a worker on another machine) and leaves as `Reply`s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Origin = Literal["telegram", "console"]
ChatType = Literal["private", "group", "supergroup", "channel"]
AttachmentKind = Literal["document", "voice", "audio", "video", "video_note", "photo"]


def parse_command(text: str) -> tuple[str | None, str]:
    """`/start@grove_bot args` → ("start", "args"); (None, text) for a plain message."""
    if not text.startswith("/"):
        return None, text
    head, _, args = text[1:].partition(" ")
    return (head.split("@", 1)[0].lower() or None), args.strip()


# Heads the source block under an answer; Telegram shows the list under it folded.
SOURCES_HEADER = "Информация взята из:"


class Button(BaseModel):
    label: str
    data: str


class Attachment(BaseModel):
    kind: AttachmentKind
    file_id: str
    file_unique_id: str | None = None
    file_name: str | None = None
    mime_type: str | None = None
    file_size: int | None = None
    duration: int | None = None


class Command(BaseModel):
    """A command as users see it: its line in Telegram's menu (`menu`), its words in /help (`help`),
    its place in both (`position`); an `admin` one is listed in admins' chats only."""

    name: str
    menu: str
    help: str
    position: int
    admin: bool = False


class IncomingUpdate(BaseModel):
    """One thing a user did: a message (text, command, files) or a button press."""

    origin: Origin = "telegram"
    update_id: int | None = None
    user_id: int
    chat_id: int
    username: str | None = None
    text: str | None = None
    command: str | None = Field(default=None, description="'start' for /start, without slash")
    command_args: str = ""
    callback_data: str | None = None
    callback_id: str | None = None
    message_id: int | None = None
    attachments: list[Attachment] = Field(default_factory=list)
    chat_type: ChatType = "private"
    edited: bool = Field(default=False, description="the user changed an earlier message (`message_id`)")
    addressed: bool = Field(
        default=True,
        description="in a group: the message mentions the bot, replies to it or is a command for it",
    )

    @property
    def in_group(self) -> bool:
        return self.chat_type != "private"

    @property
    def kind(self) -> str:
        if self.callback_data is not None:
            return "button"
        if self.command:
            return f"cmd-{self.command}"
        if self.attachments:
            return self.attachments[0].kind
        return "text"


class Reply(BaseModel):
    """A message for the user; `buttons` are rows of inline buttons."""

    chat_id: int
    text: str
    buttons: list[list[Button]] = Field(default_factory=list)
    parse_mode: Literal["HTML", "MarkdownV2"] | None = None
    markdown: bool = Field(
        default=False, description="the text is a model's Markdown: each piece is sent as Telegram HTML"
    )
    replaces_message_id: int | None = Field(
        default=None, description="a streamed draft of this reply (nodes/telegram/stream.py): its first piece edits it"
    )
    edits_reply: int | None = Field(
        default=None, description="an earlier reply (its outbox id) whose message this one edits: a job's result "
                                  "edits the job's acknowledgement"
    )
    acknowledges_job: int | None = Field(
        default=None, description="the background job this reply acknowledges: the job edits it with progress"
    )


STOP_PREFIX = "stop"
STOP_TOAST = "Останавливаю"


def stop_data(token: int) -> str:
    """The callback data of the «Стоп» button under a streamed answer."""
    return f"{STOP_PREFIX}:{token}"


def stop_token(data: str) -> int | None:
    """The answer's token in a «Стоп» button's callback data (None: another button)."""
    prefix, _, token = data.partition(":")
    return int(token) if prefix == STOP_PREFIX and token.isdigit() else None
