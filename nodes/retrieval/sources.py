"""The grounding block under an answer: only sources that were retrieved and back the answer.

Which fragments back an answer is decided by `nodes.answering.answer_check` (citations checked
against the fragments' text, or sources chosen by overlap); this module only writes the
block. An answer that nothing backs gets no block: listing every retrieved fragment
put sources under answers that used none of them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, Self

from grove.core.messages import SOURCES_HEADER


class Citable(Protocol):
    """A retrieved piece an answer can stand on — a chat fragment, a consultation snippet, a plan
    step's fragment: its words (what citations are checked against, what a window may cut) and
    the name of its source (what the block under the answer shows)."""

    @property
    def text(self) -> str: ...

    def source_label(self) -> str: ...

    def with_text(self, text: str) -> Self:
        """The same piece with its words replaced (cut to a window, or narrowed to a passage)."""
        ...


# How each kind of source is named in the block («pdf: отчёт.pdf», «ссылка: https://…»).
KIND_NAMES = {"url": "ссылка", "voice": "голосовое", "audio": "аудио", "video": "видео", "text": "текст",
              "document": "документ"}


def document_label(kind: str, identifier: str | None, *, title: str | None = None, page: int | None = None,
                   page_label: str | None = None, ts_start: float | None = None, section: str | None = None) -> str:
    """`pdf: report.pdf («Title»), с. vii, раздел «Установка → Windows»` — the kind and the file name or
    URL, the title when the name does not hold it, the page as the document prints it (or the time in
    a recording), and the section: one label for chat fragments and consultation snippets alike."""
    label = f"{KIND_NAMES.get(kind, kind)}: {identifier}"
    if title and title not in (identifier or ""):
        label += f" («{title}»)"
    if page_label or page is not None:
        label += f", с. {page_label or page}"
    elif ts_start is not None:
        minutes, seconds = divmod(int(ts_start), 60)
        label += f", {minutes}:{seconds:02d}"
    if section:
        label += f", раздел «{section}»"
    return label


HEADER = SOURCES_HEADER
_MODEL_SOURCES = re.compile(r"\n*\s*(Информация взята из|Источники?)\s*:.*\Z", re.IGNORECASE | re.DOTALL)


def strip_model_sources(answer: str) -> str:
    """Drop a source list the model wrote itself: the block is built from real fragments only."""
    return _MODEL_SOURCES.sub("", answer).rstrip()


def source_block(fragments: Sequence[Citable], used: list[int]) -> str:
    """One line per distinct source among the 1-based `used` fragments; empty when none is used."""
    chosen = [fragments[n - 1] for n in used if 1 <= n <= len(fragments)]
    labels: list[str] = []
    for fragment in chosen:
        label = fragment.source_label()
        if label not in labels:
            labels.append(label)
    if not labels:
        return ""
    return HEADER + "\n" + "\n".join(f"• {label}" for label in labels)
