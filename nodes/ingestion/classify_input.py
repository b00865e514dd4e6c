"""Split one "База" message into things to index (the `Classifier Code` node).

Every http(s) link in the text becomes a "link" item, voice/audio/video (and
documents that are really audio or video) become "media", other documents
(and photos) become "file" — the file parser decides whether it can read them —
and whatever text is left once the links are taken out becomes a "text" item
if it is long enough to be worth indexing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

from grove.core.observe import task

from grove.core.ingest_types import IngestItem

MIN_TEXT_CHARS = 20  # non-space characters for a text-only message to be worth indexing
# Beside links or files, leftover words are usually a caption ("почитай это"); only a
# real note of its own is indexed.
MIN_CAPTION_AS_TEXT_CHARS = 200

MEDIA_KINDS = {"voice", "audio", "video", "video_note"}
MEDIA_EXTENSIONS = {
    # audio
    ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".wav", ".flac", ".aac", ".wma", ".amr", ".aiff",
    # video
    ".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi", ".wmv", ".mpeg", ".mpg", ".3gp", ".flv",
}

# Any scheme: «file:///etc/passwd» or «gopher://…» is a link the user meant, refused by name
# (nodes/ingestion/web/guard.py says only http(s) is fetched) rather than indexed as text.
_URL = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]{1,15}://\S+", re.IGNORECASE)
_STOP = re.compile(r"""[<>"«»“”„]""")  # quotes and angle brackets never belong to a pasted link
_TRAILING = ".,;:!?…'\")]}»›"
_PAIRS = {")": "(", "]": "[", "}": "{"}


def _trim(url: str) -> str:
    stop = _STOP.search(url)
    if stop:
        url = url[: stop.start()]
    while url and url[-1] in _TRAILING:
        last = url[-1]
        opener = _PAIRS.get(last)
        if opener and url.count(opener) >= url.count(last):
            break  # balanced, e.g. https://en.wikipedia.org/wiki/Python_(language)
        url = url[:-1]
    return url


def find_urls(text: str) -> list[tuple[str, int, int]]:
    """(url, start, end) of each link, trailing punctuation stripped (any scheme: fetching refuses
    all but http(s) with its own message)."""
    found = []
    for match in _URL.finditer(text):
        url = _trim(match.group(0))
        scheme, rest = url.split("://", 1)
        web = scheme.lower() in ("http", "https")
        if not rest or (web and not (rest[0].isalnum() or rest[0] == "[")):
            continue
        found.append((url, match.start(), match.start() + len(url)))
    return found


def _field(attachment: Any, key: str) -> Any:
    if isinstance(attachment, Mapping):
        return attachment.get(key)
    return getattr(attachment, key, None)


def _is_media(kind: str | None, file_name: str | None, mime_type: str | None) -> bool:
    if kind in MEDIA_KINDS:
        return True
    mime = (mime_type or "").lower()
    if mime.startswith(("audio/", "video/")):
        return True
    if not file_name:
        return False
    return PurePosixPath(file_name).suffix.lower() in MEDIA_EXTENSIONS


def classify_message(text: str | None, attachments: Iterable[Any] | None = None) -> list[IngestItem]:
    """Items to index from one message: links (in text order), attachments, leftover text.

    `attachments` are `grove.core.messages.Attachment` objects or dicts with the same keys.
    """
    items: list[IngestItem] = []
    text = text or ""
    seen: set[str] = set()
    leftover = []
    position = 0
    for url, start, end in find_urls(text):
        leftover.append(text[position:start])
        position = end
        if url in seen:
            continue
        seen.add(url)
        items.append(IngestItem(kind="link", source_identifier=url, url=url))
    leftover.append(text[position:])

    for attachment in attachments or []:
        kind = _field(attachment, "kind")
        file_id = _field(attachment, "file_id")
        file_name = _field(attachment, "file_name")
        mime_type = _field(attachment, "mime_type")
        items.append(IngestItem(
            kind="media" if _is_media(kind, file_name, mime_type) else "file",
            source_identifier=file_name or file_id or str(kind or "file"),
            file_name=file_name,
            mime_type=mime_type,
            telegram_file_id=file_id,
            attachment_kind=kind,
            file_size=_field(attachment, "file_size"),
        ))

    rest = re.sub(r"[ \t]+", " ", "".join(leftover))
    rest = re.sub(r"\s*\n\s*", "\n", rest).strip()
    minimum = MIN_CAPTION_AS_TEXT_CHARS if items else MIN_TEXT_CHARS
    if len(re.sub(r"\s", "", rest)) >= minimum:
        items.append(IngestItem(kind="text", source_identifier=note_label(rest), text=rest))
    return items


NOTE_LABEL_CHARS = 48


def note_label(text: str) -> str:
    """A text note's name in confirmations and source blocks: its opening words
    («текст: Ремонтантную малину весной…» says which note; «текст: text» said nothing)."""
    line = " ".join(text.split())
    if len(line) > NOTE_LABEL_CHARS:
        line = line[:NOTE_LABEL_CHARS].rsplit(" ", 1)[0].rstrip(",.;:—-") + "…"
    return line


@task(name="classify-input")
def classify_input(text: str | None, attachments: list[Any] | None = None) -> list[IngestItem]:
    """Prefect task around `classify_message`."""
    return classify_message(text, attachments)
