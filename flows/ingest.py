"""Ingestion ("База" mode, seed 001 §4.1.2): links, media and files → chunks → pgvector.

`ingest` is one flow run per message, named after its source: a classifier
splits the message into items and each item runs as its own parallel branch
(`ingest-file-report.pdf`), with one task per stage and an artifact. The bot
only confirms what was indexed.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Literal

from prefect import flow, runtime, task
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed, Failed, State
from pydantic import BaseModel

from nodes.chunk_document import chunk_document
from nodes.document_store import content_hash, find_document, store_document
from nodes.embedder import embed_chunks
from nodes.fetch_url import fetch_url, user_message_for
from nodes.ingest_types import ExtractedDocument, IngestError, IngestItem, SourceType
from nodes.parse_files import parse_file_task
from nodes.progress import report
from nodes.telegram_files import download_telegram_file
from nodes.transcribe import transcribe

GENERIC_FAILURE = "Не удалось обработать «{name}»: внутренняя ошибка. Попробуйте ещё раз позже."


class IngestOutcome(BaseModel):
    name: str
    status: Literal["indexed", "duplicate", "failed"]
    title: str | None = None
    chunks: int = 0
    duration_seconds: float | None = None
    user_message: str | None = None
    reason: str | None = None
    document_id: int | None = None


def display_name(item: IngestItem) -> str:
    if item.kind == "link" and item.url:
        return item.url
    if item.kind == "text":
        return "текст сообщения"
    return item.file_name or item.source_identifier


def _source_label(item: IngestItem) -> str:
    return f"{item.kind}-{display_name(item).split('://', 1)[-1][:80]}"


def _flow_run_name() -> str:
    """Named after the source (`ingest-file-report.pdf`), or the first of several (`… +2`)."""
    items = [i if isinstance(i, IngestItem) else IngestItem.model_validate(i)
             for i in runtime.flow_run.parameters.get("items") or []]
    if not items:
        return "ingest"
    more = f" +{len(items) - 1}" if len(items) > 1 else ""
    return f"ingest-{_source_label(items[0])}{more}"


def _branch_run_name() -> str:
    item = runtime.task_run.parameters.get("item")
    if isinstance(item, dict):
        item = IngestItem.model_validate(item)
    return f"ingest-{_source_label(item)}" if isinstance(item, IngestItem) else "ingest-branch"


def _text_document(item: IngestItem) -> ExtractedDocument:
    text = (item.text or "").strip()
    first_line = text.splitlines()[0] if text else ""
    title = first_line[:60] + ("…" if len(first_line) > 60 else "")
    return ExtractedDocument(source_type="text", source_identifier=item.source_identifier,
                             title=title or None, text=text)


def media_source_type(item: IngestItem) -> SourceType:
    if item.attachment_kind in ("video", "video_note") or (item.mime_type or "").startswith("video"):
        return "video"
    return "voice" if item.attachment_kind == "voice" else "audio"


def extract(item: IngestItem) -> ExtractedDocument:
    """The branch for the item's kind: link → crawler, media → Whisper, file → parsers."""
    if item.kind == "text":
        return _text_document(item)
    if item.kind == "link":
        assert item.url is not None
        return fetch_url(item.url)
    if item.path is None and item.telegram_file_id:
        item = download_telegram_file(item)
    if item.path is None:
        raise ValueError(f"item {item.source_identifier!r} has no file")
    if item.kind == "media":
        source_type = media_source_type(item)
        return transcribe(item.path, source_type=source_type,
                          source_identifier=item.file_name or item.source_identifier)
    document = parse_file_task(item.path, item.file_name or Path(item.path).name, item.mime_type)
    if item.file_name:
        document = document.model_copy(update={"source_identifier": item.file_name})
    return document


def _summary(item: IngestItem, outcome: IngestOutcome, document: ExtractedDocument | None,
             timings: dict[str, float]) -> str:
    rows = [f"| source | {display_name(item)} |", f"| status | {outcome.status} |"]
    if document is not None:
        rows += [f"| type | {document.source_type} |", f"| title | {document.title or '—'} |",
                 f"| characters | {len(document.text)} |"]
        if document.pages:
            rows.append(f"| pages | {len(document.pages)} |")
        if document.duration_seconds:
            rows.append(f"| duration | {document.duration_seconds:.1f} s |")
    rows.append(f"| chunks | {outcome.chunks} |")
    rows += [f"| time: {stage} | {seconds:.2f} s |" for stage, seconds in timings.items()]
    return "### Ingestion\n\n| | |\n|---|---|\n" + "\n".join(rows)


def ingest_source(item: IngestItem, owner_id: int, subcategory: str | None = None) -> IngestOutcome:
    """extract → (dedupe) → chunk → embed → store for one source; raises IngestError on bad input."""
    name = display_name(item)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    try:
        report(name, "extract", 0, 1)
        document = extract(item)
        timings["extract"] = time.perf_counter() - started
        existing = find_document(owner_id, content_hash(document.text))
        if existing is not None:
            outcome = IngestOutcome(name=name, status="duplicate", title=existing.title or document.title,
                                    chunks=existing.chunk_count, document_id=existing.document_id)
        else:
            mark = time.perf_counter()
            chunked = chunk_document(document)
            timings["chunk"] = time.perf_counter() - mark
            report(name, "embed", 0, len(chunked.chunks))
            mark = time.perf_counter()
            vectors = embed_chunks(chunked.text, chunked.chunks, title=document.title)
            timings["embed"] = time.perf_counter() - mark
            report(name, "store", len(chunked.chunks), len(chunked.chunks))
            mark = time.perf_counter()
            stored = store_document(owner_id, document, chunked.records, vectors, subcategory)
            timings["store"] = time.perf_counter() - mark
            outcome = IngestOutcome(
                name=name, status="duplicate" if stored.duplicate else "indexed",
                title=document.title, chunks=stored.chunk_count,
                duration_seconds=document.duration_seconds, document_id=stored.document_id)
        report(name, "done", 1, 1)
        timings["total"] = time.perf_counter() - started
        create_markdown_artifact(markdown=_summary(item, outcome, document, timings),
                                 description=f"Ingestion of {name}")
        return outcome
    finally:
        _discard_upload(item)


def _discard_upload(item: IngestItem) -> None:
    """Downloaded Telegram files live in a private temp folder: remove it when done."""
    if item.telegram_file_id and item.path and Path(item.path).parent.name.startswith("grove-upload-"):
        shutil.rmtree(Path(item.path).parent, ignore_errors=True)


# One branch per item, run in parallel by the flow's task runner. (Branches are tasks rather
# than sub-flows: prefect 3.8.8 does not reliably run sub-flows started from parallel tasks
# at the same time, and a branch must not wait for another's transcription.)
ingest_branch = task(name="ingest-branch", task_run_name=_branch_run_name)(ingest_source)


def _failed(item: IngestItem, exc: BaseException) -> IngestOutcome:
    """What the user hears about a branch that failed (its task run keeps the traceback)."""
    if isinstance(exc, IngestError):
        return IngestOutcome(name=display_name(item), status="failed",
                             user_message=exc.user_message, reason=exc.reason)
    message = user_message_for(exc) if item.kind == "link" else None
    return IngestOutcome(name=display_name(item), status="failed",
                         user_message=message or GENERIC_FAILURE.format(name=display_name(item)),
                         reason=f"{type(exc).__name__}: {exc}")


def confirmation(outcomes: list[IngestOutcome]) -> str:
    """What the bot says: only what was indexed (or why not)."""
    lines = []
    for outcome in outcomes:
        label = outcome.title or outcome.name
        if outcome.status == "indexed":
            line = f"✅ Проиндексировано: «{label}» — фрагментов: {outcome.chunks}"
            if outcome.duration_seconds:
                minutes, seconds = divmod(int(round(outcome.duration_seconds)), 60)
                line += f", длительность {minutes}:{seconds:02d}"
            lines.append(line)
        elif outcome.status == "duplicate":
            lines.append(f"ℹ️ «{label}» уже есть в вашей базе.")
        else:
            lines.append(f"⚠️ {outcome.user_message}")
    return "\n".join(lines)


@flow(name="ingest", flow_run_name=_flow_run_name)
def ingest(items: list[IngestItem], owner_id: int, subcategory: str | None = None) -> State:
    """Run every item as a parallel branch; Failed (with the reasons) if any item failed."""
    futures = [ingest_branch.submit(item, owner_id, subcategory) for item in items]
    outcomes = []
    for item, future in zip(items, futures):
        result = future.result(raise_on_failure=False)
        outcomes.append(_failed(item, result) if isinstance(result, BaseException) else result)
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        reasons = "; ".join(f"{o.name}: {o.reason}" for o in failed)
        return Failed(message=f"{len(failed)} of {len(outcomes)} items failed: {reasons}", data=outcomes)
    return Completed(data=outcomes)
