"""Shapes shared by the ingestion nodes: what goes in, what comes out, how it fails."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

SourceType = Literal["url", "pdf", "docx", "txt", "md", "text", "voice", "audio", "video"]
InputKind = Literal["link", "media", "file", "text"]


class IngestError(Exception):
    """Input we cannot index. `user_message` is shown to the user (Russian);
    `reason` goes to the Prefect run and logs (English, technical)."""

    def __init__(self, user_message: str, reason: str) -> None:
        super().__init__(reason)
        self.user_message = user_message
        self.reason = reason


class IngestItem(BaseModel):
    """One thing to index, as classified from a message (or the command line)."""

    kind: InputKind
    source_identifier: str = Field(description="URL, file name, Telegram file id, or 'text'")
    url: str | None = None
    path: str | None = Field(default=None, description="local file holding the bytes, if any")
    file_name: str | None = None
    mime_type: str | None = None
    telegram_file_id: str | None = None
    attachment_kind: str | None = Field(default=None, description="Telegram's kind: voice, audio, video…")
    file_size: int | None = None
    text: str | None = None


class Segment(BaseModel):
    """A timed piece of a transcript (seconds from the start of the media)."""

    start: float
    end: float
    text: str


class ExtractedDocument(BaseModel):
    """Plain text of one source plus what we know about it, ready for chunking.

    `pages` is set for paged sources (PDF: one string per page, 1-based order);
    `segments` for media transcripts. `text` is always the whole document.
    """

    source_type: SourceType
    source_identifier: str
    title: str | None = None
    author: str | None = None
    published_at: str | None = None
    text: str
    pages: list[str] | None = None
    segments: list[Segment] | None = None
    duration_seconds: float | None = None
    meta: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
