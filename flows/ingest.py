"""Ingestion ("База" mode, seed 001 §4.1.2): links, media and files → chunks → pgvector.

`ingest` indexes the items of one message, each item as its own parallel branch
(`ingest-file-report.pdf`), with one task per stage and an artifact. From Telegram
it runs as a background job (`ingest_job`): the upload was acknowledged at once,
the acknowledgement is edited with progress, and finally with what was indexed.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

from grove.core.observe import flow, task
from grove.core.runs import artifact, current_run
from pydantic import BaseModel, Field

from flows import texts
from grove.store import jobs, outbox
from grove.store.db import StoreUnavailable
from grove.core.messages import Reply
from grove.core.settings import Settings, get_settings
from nodes.ingestion.chunk_document import chunk_document
from nodes.store.document_store import (activate_documents, content_hash, delete_documents, discard_pending, find_document,
                                  message_documents, store_document)
from nodes.embedding.embedder import embed_chunks
from nodes.ingestion.fetch_url import fetch_url, user_message_for
from grove.core.ingest_types import ExtractedDocument, IngestError, IngestItem, InputKind, SourceType
from nodes.ingestion.parse_files import parse_file_task
from grove.core.progress import Callback, Step, of_source
from nodes.telegram.api import BotApi
from nodes.telegram.files import download_limit, download_telegram_file
from nodes.telegram.reply import CONSOLE, Sender
from nodes.ingestion.transcribe import transcribe

GENERIC_FAILURE = "Не удалось обработать «{name}»: внутренняя ошибка. Попробуйте ещё раз позже."


class IngestOutcome(BaseModel):
    name: str
    status: Literal["indexed", "duplicate", "failed"]
    title: str | None = None
    chunks: int = 0
    resumed_chunks: int = Field(default=0, description="vectors kept from an earlier, stopped run of the job")
    duration_seconds: float | None = None
    user_message: str | None = None
    reason: str | None = None
    document_id: int | None = None


def _source_label(item: IngestItem) -> str:
    return f"{item.kind}-{item.label.split('://', 1)[-1][:80]}"


def _flow_run_name(parameters: dict[str, Any]) -> str:
    """Named after the source (`ingest-file-report.pdf`), or the first of several (`… +2`)."""
    items = [i if isinstance(i, IngestItem) else IngestItem.model_validate(i)
             for i in parameters.get("items") or []]
    if not items:
        return "ingest"
    more = f" +{len(items) - 1}" if len(items) > 1 else ""
    return f"ingest-{_source_label(items[0])}{more}"


def _branch_run_name(parameters: dict[str, Any]) -> str:
    item = parameters.get("item")
    if isinstance(item, dict):
        item = IngestItem.model_validate(item)
    return f"ingest-{_source_label(item)}" if isinstance(item, IngestItem) else "ingest-branch"


class Extractor(Protocol):
    """Reads one kind of item (`IngestItem.kind`) into a document; IngestError when it cannot."""

    def __call__(self, item: IngestItem, files: BotApi | None, settings: Settings,
                 progress: Step) -> ExtractedDocument: ...


def from_text(item: IngestItem, files: BotApi | None, settings: Settings, progress: Step) -> ExtractedDocument:
    """A text message: itself, titled by its first line."""
    text = (item.text or "").strip()
    first_line = text.splitlines()[0] if text else ""
    title = first_line[:60] + ("…" if len(first_line) > 60 else "")
    return ExtractedDocument(source_type="text", source_identifier=item.source_identifier,
                             title=title or None, text=text)


def from_link(item: IngestItem, files: BotApi | None, settings: Settings, progress: Step) -> ExtractedDocument:
    """A link: the crawler (pages, PDFs behind links)."""
    if item.url is None:
        raise ValueError(f"link item {item.source_identifier!r} has no URL")
    return fetch_url(item.url, settings, progress)


@contextmanager
def _local(item: IngestItem, files: BotApi | None, settings: Settings) -> Iterator[IngestItem]:
    """The item with its bytes on disk: a Telegram file is downloaded through `files` into a private
    temp folder, removed when the block ends (a user's file is not left on the machine's disk)."""
    downloaded = item.path is None and bool(item.telegram_file_id)
    if downloaded:
        item = download_telegram_file(item, files, download_limit(settings))
    if item.path is None:
        raise ValueError(f"item {item.source_identifier!r} has no file")
    try:
        yield item
    finally:
        if downloaded:
            shutil.rmtree(Path(item.path).parent, ignore_errors=True)


def media_source_type(item: IngestItem) -> SourceType:
    if item.attachment_kind in ("video", "video_note") or (item.mime_type or "").startswith("video"):
        return "video"
    return "voice" if item.attachment_kind == "voice" else "audio"


def from_media(item: IngestItem, files: BotApi | None, settings: Settings, progress: Step) -> ExtractedDocument:
    """Voice, audio, video: Whisper."""
    with _local(item, files, settings) as local:
        assert local.path is not None
        return transcribe(local.path, source_type=media_source_type(local),
                          source_identifier=local.file_name or local.source_identifier)


def from_file(item: IngestItem, files: BotApi | None, settings: Settings, progress: Step) -> ExtractedDocument:
    """A document: the file formats (`nodes.ingestion.formats`), named after the file the user sent."""
    with _local(item, files, settings) as local:
        assert local.path is not None
        document = parse_file_task(local.path, local.file_name or Path(local.path).name, local.mime_type, settings,
                                   progress)
    if item.file_name:
        document = document.model_copy(update={"source_identifier": item.file_name})
    return document


EXTRACTORS: dict[InputKind, Extractor] = {"text": from_text, "link": from_link, "media": from_media, "file": from_file}


def extract(item: IngestItem, files: BotApi | None, settings: Settings, progress: Step) -> ExtractedDocument:
    """The branch for the item's kind (`EXTRACTORS`); `files`: the bot a Telegram file is downloaded with."""
    return EXTRACTORS[item.kind](item, files, settings, progress)


def _summary(item: IngestItem, outcome: IngestOutcome, document: ExtractedDocument | None,
             timings: dict[str, float]) -> str:
    rows = [f"| source | {item.label} |", f"| status | {outcome.status} |"]
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


def ingest_source(item: IngestItem, owner_id: int, subcategory: str | None = None,
                  job_id: int | None = None, pending: bool = False, files: BotApi | None = None,
                  progress: Callback | None = None, settings: Settings | None = None) -> IngestOutcome:
    """extract → (dedupe) → chunk → embed → store for one source; raises IngestError on bad input.

    A `pending` source is stored unsearchable, for the job to activate (an edited message's new version)."""
    name = item.label
    return _ingest_source(item, name, owner_id, subcategory, job_id, pending, files, settings or get_settings(),
                          of_source(progress, name))


def _ingest_source(item: IngestItem, name: str, owner_id: int, subcategory: str | None, job_id: int | None,
                   pending: bool, files: BotApi | None, settings: Settings, step: Step) -> IngestOutcome:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    step("extract", 0, 1)
    document = extract(item, files, settings, step)
    timings["extract"] = time.perf_counter() - started
    existing = find_document(owner_id, content_hash(document.text))
    if existing is not None:
        # A job resumed after a crash finds what it stored itself: that was "indexed".
        mine = job_id is not None and existing.job_id == job_id
        outcome = IngestOutcome(name=name, status="indexed" if mine else "duplicate",
                                title=existing.title or document.title,
                                chunks=existing.chunk_count, document_id=existing.document_id)
    else:
        mark = time.perf_counter()
        chunked = chunk_document(document, settings)
        timings["chunk"] = time.perf_counter() - mark
        step("embed", 0, len(chunked.chunks))
        mark = time.perf_counter()
        checkpoint = JobCheckpoint(job_id, content_hash(document.text)) if job_id is not None else None
        vectors = embed_chunks(chunked.text, chunked.chunks, title=document.title, checkpoint=checkpoint,
                               progress=step)
        timings["embed"] = time.perf_counter() - mark
        step("store", len(chunked.chunks), len(chunked.chunks))
        mark = time.perf_counter()
        stored = store_document(owner_id, document, chunked.records, vectors, subcategory, job_id,
                                pending=pending)
        timings["store"] = time.perf_counter() - mark
        outcome = IngestOutcome(
            name=name, status="duplicate" if stored.duplicate and stored.job_id != job_id else "indexed",
            title=document.title, chunks=stored.chunk_count,
            duration_seconds=document.duration_seconds, document_id=stored.document_id,
            resumed_chunks=checkpoint.resumed if checkpoint is not None else 0)
    step("done", 1, 1)
    timings["total"] = time.perf_counter() - started
    artifact(markdown=_summary(item, outcome, document, timings), description=f"Ingestion of {name}")
    return outcome


class JobCheckpoint:
    """A job's embedded batches in Postgres (`jobs.checkpoint`): a stopped or killed job resumes
    from its last stored batch, not from zero."""

    def __init__(self, job_id: int, document: str) -> None:
        self.job_id, self.document, self.resumed = job_id, document, 0

    def load(self) -> dict[int, list[float]]:
        kept = jobs.checkpointed(self.job_id, self.document)
        self.resumed = len(kept)
        return kept

    def save(self, vectors: dict[int, list[float]]) -> None:
        jobs.checkpoint(self.job_id, self.document, vectors)


# One branch per item, run in parallel by the flow's task runner. (Branches are tasks rather
# than sub-flows: prefect 3.8.8 does not reliably run sub-flows started from parallel tasks
# at the same time, and a branch must not wait for another's transcription.)
ingest_branch = task(name="ingest-branch", task_run_name=_branch_run_name)(ingest_source)


def _failed(item: IngestItem, exc: BaseException) -> IngestOutcome:
    """What the user hears about a branch that failed (its task run keeps the traceback)."""
    if isinstance(exc, IngestError):
        return IngestOutcome(name=item.label, status="failed",
                             user_message=exc.user_message, reason=exc.reason)
    message = user_message_for(exc) if item.kind == "link" else None
    return IngestOutcome(name=item.label, status="failed",
                         user_message=message or GENERIC_FAILURE.format(name=item.label),
                         reason=f"{type(exc).__name__}: {exc}")


def confirmation(outcomes: list[IngestOutcome]) -> str:
    """What the bot says: only what was indexed (or why not)."""
    lines = []
    for outcome in outcomes:
        label = outcome.title or outcome.name
        if outcome.status == "indexed":
            line = f"✅ Проиндексировано: «{label}» — фрагментов: {outcome.chunks}"
            if outcome.duration_seconds:
                minutes, seconds = divmod(round(outcome.duration_seconds), 60)
                line += f", длительность {minutes}:{seconds:02d}"
            lines.append(line)
        elif outcome.status == "duplicate":
            lines.append(f"ℹ️ «{label}» уже есть в вашей базе.")
        else:  # named, so that in a message with several links the user knows which one failed
            message = outcome.user_message or ""
            lines.append(f"⚠️ {message}" if label in message else f"⚠️ «{label}»: {message}")
    return "\n".join(lines)


@flow(name="ingest", flow_run_name=_flow_run_name)
def ingest(items: list[IngestItem], owner_id: int, subcategory: str | None = None,
           job_id: int | None = None, pending: bool = False, files: BotApi | None = None,
           progress: Callback | None = None, settings: Settings | None = None) -> list[IngestOutcome]:
    """Run every item as a parallel branch; the run is Failed (with the reasons) if any item failed.

    `pending`: what is stored stays unsearchable until the caller activates it. `files`: the bot that
    downloads the files users sent (a run started from the UI has none: it indexes links and text);
    `progress`: told how each item goes (a Telegram message, a progress bar), may raise to stop the work;
    `settings`: the caller's (None: the process's, as a run Prefect starts has)."""
    settings = settings or get_settings()
    futures = [ingest_branch.submit(item, owner_id, subcategory, job_id, pending, files, progress, settings)
               for item in items]
    outcomes = []
    for item, future in zip(items, futures):
        result = future.result(raise_on_failure=False)
        if isinstance(result, (StoreUnavailable, JobStopped)):
            raise result  # not the item's fault: the job stops and runs again later
        outcomes.append(_failed(item, result) if isinstance(result, BaseException) else result)
    failed = [o for o in outcomes if o.status == "failed"]
    run = current_run()
    if failed and run is not None:
        reasons = "; ".join(f"{o.name}: {o.reason}" for o in failed)
        run.fail(f"{len(failed)} of {len(outcomes)} items failed: {reasons}")
    return outcomes


# ------------------------------------------------------------------ the background job (Telegram)

STAGE_WORDS = {"extract": "читаю", "ocr": "распознаю скан", "embed": "векторизую", "store": "сохраняю", "done": "готово"}


class JobStopped(Exception):
    """The job was stopped from outside (shutdown, lost lease, store gone): it runs again later."""


class ProgressMessage:
    """The upload's acknowledgement, edited with progress at most every `every` seconds.

    Handed to `ingest` as its progress, called from the branches' threads; raising `JobStopped` there
    stops the work between batches when `stop` is set.
    """

    def __init__(self, job: jobs.Job, labels: list[str], every: float, stop: threading.Event,
                 sender: Sender) -> None:
        self.job, self.labels, self.every, self.stop, self.sender = job, labels, every, stop, sender
        self.state: dict[str, tuple[str, float, float]] = {}
        self.lock = threading.Lock()
        self.last = time.monotonic()
        self.message_id: int | None = None
        self.edits = 0

    def __call__(self, source: str, stage: str, done: float, total: float) -> None:
        if self.stop.is_set():
            raise JobStopped("stopped")
        with self.lock:
            self.state[source] = (stage, done, total)
            if time.monotonic() - self.last < self.every:
                return
            self.last = time.monotonic()
            text = self.text()
        self._edit(text)

    def text(self) -> str:
        lines = []
        for source, (stage, done, total) in self.state.items():
            step = STAGE_WORDS.get(stage, stage)
            amount = f" {done:g}/{total:g}" if total > 1 and stage in ("embed", "ocr") else ""
            lines.append(f"⏳ «{source[:80]}»: {step}{amount}")
        return "Индексирую…\n" + "\n".join(lines)

    def _edit(self, text: str) -> None:
        if self.job.ack_id is None:
            return
        if self.message_id is None:
            try:
                self.message_id = outbox.message_id_of(self.job.ack_id)
            except StoreUnavailable:
                return  # the job's heartbeat reports a lost store; progress is only a courtesy
        if self.message_id is not None and self.sender.edit_text(self.job.chat_id, self.message_id, text):
            self.edits += 1


def _trace() -> dict[str, Any] | None:
    run = current_run()
    return run.summary() if run is not None else None


def _job_run_name(parameters: dict[str, Any]) -> str:
    job = parameters.get("job")
    return f"ingest-job-{job.id}-user{job.user_id}" if isinstance(job, jobs.Job) else "ingest-job"


@flow(name="ingest-job", flow_run_name=_job_run_name)
def ingest_job(job: jobs.Job, stop: threading.Event | None = None, sender: Sender = CONSOLE) -> jobs.Ending:
    """Index an upload in the background: progress in its acknowledgement; returns the confirmation,
    which the worker writes with the job's end in one transaction and delivers after it. `sender`: the
    worker's, which edits the progress and downloads the files."""
    items = [IngestItem.model_validate(i) for i in job.payload["items"]]
    settings = get_settings()
    progress = ProgressMessage(job, [i.label for i in items], settings.progress_every,
                               stop or threading.Event(), sender)
    # An edited message: its new version is stored unsearchable, then takes the place of what the
    # earlier version indexed (jobs of one user run in order, so that job has finished) in the
    # transaction that confirms — a new version that fails leaves the old one searchable, a
    # document whose text did not change is kept, and no moment shows both or neither.
    message_id: int | None = job.payload.get("replaces")
    edit = message_id is not None
    earlier = message_documents(job.user_id, job.chat_id, message_id, job.id) if message_id is not None else []
    discard_pending(job.user_id)  # what an edit that failed or was cut short left unsearchable
    outcomes = ingest(items, job.user_id, job_id=job.id, pending=edit, files=sender.api, progress=progress,
                      settings=settings)
    stored = sorted({o.document_id for o in outcomes if o.status != "failed" and o.document_id is not None})
    failed = [o for o in outcomes if o.status == "failed"]
    replaced = [d for d in earlier if d not in stored] if edit and stored else []

    def writes() -> None:
        if edit and stored:
            activate_documents(job.user_id, stored)
            delete_documents(job.user_id, replaced)

    text = confirmation(outcomes)
    if replaced:
        text = f"{texts.edit_replaced(len(replaced))}\n{text}"
    return jobs.Ending(replies=[Reply(chat_id=job.chat_id, text=text, edits_reply=job.ack_id)],
                       status="failed" if failed else "done",
                       result={"outcomes": [o.model_dump(mode="json") for o in outcomes],
                               "progress_edits": progress.edits, "trace": _trace()},
                       error="; ".join(f"{o.name}: {o.reason}" for o in failed) or None, writes=writes)
