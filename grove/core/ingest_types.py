"""Shapes shared by the ingestion nodes: what goes in, what comes out, how it fails."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# A file format's name (`nodes.ingestion.formats`: "pdf", "docx", …) or another source's kind: "url",
# "text", "voice", "audio", "video". Open, so that a new format is one module, not two edits.
SourceType = str
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

    @property
    def label(self) -> str:
        """How the user's messages and the runs name it: the link, «текст сообщения», or the file name."""
        if self.kind == "link" and self.url:
            return self.url
        if self.kind == "text":
            return "текст сообщения"
        return self.file_name or self.source_identifier


class Segment(BaseModel):
    """A timed piece of a transcript (seconds from the start of the media)."""

    start: float
    end: float
    text: str


class Section(BaseModel):
    """A stretch of the document under one heading: ``text[start:end]``, heading included.

    ``path`` runs from the outermost heading to this one («Установка», «Windows»);
    text before the first heading has an empty path. The chunker keeps chunks
    inside one section, so a chunk can say where in the document it comes from.
    """

    start: int
    end: int
    path: list[str] = Field(default_factory=list)


class ExtractedDocument(BaseModel):
    """Plain text of one source plus what we know about it, ready for chunking.

    `pages` is set for paged sources (PDF: one string per physical page, 1-based
    order, blank pages kept as empty strings so indexes stay physical) and then
    `text == "\n\n".join(pages)`; `page_labels` are the page numbers the document
    prints (a PDF's /PageLabels: «vii», «12»), one per page. `sections` are spans
    of `text` under the document's headings, in order and not overlapping.
    `segments` are set for media transcripts. `text` is always the whole document.
    """

    source_type: SourceType
    source_identifier: str
    title: str | None = None
    author: str | None = None
    published_at: str | None = None
    text: str
    pages: list[str] | None = None
    page_labels: list[str] | None = None
    sections: list[Section] = Field(default_factory=list)
    segments: list[Segment] | None = None
    duration_seconds: float | None = None
    meta: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
