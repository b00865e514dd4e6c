"""`grove work`: the background worker — indexing jobs, away from the bot's answers.

Embedding a document keeps both cores busy for minutes, so it runs in a process of its own, at a lower CPU
priority (`background_nice`) and with its own copy of the embedding model: a user's question never waits
behind it. The same worker runs in a thread for tests and for a one-process deployment. A job is leased
and the lease renewed every `HEARTBEAT_SECONDS`, which is also how the worker notices that Postgres went
away: it stops at the next batch, tells the user, and the job runs again once the store is back. A job
that kept failing so `MAX_ATTEMPTS` times is given up with a message.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable

from flows.ingest import JobStopped, ingest_job
from grove.store import jobs, outbox
from grove.core import runs
from grove.store.db import StoreUnavailable
from grove.core.messages import Reply
from grove.core.settings import get_settings
from nodes.telegram.reply import Sender, opened, send_replies

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
MAX_ATTEMPTS = 5
STORE_LOST = ("База данных сейчас недоступна: индексация приостановлена. Я продолжу сам, "
              "как только база снова заработает — присылать файл ещё раз не нужно.")
GAVE_UP = "Не получилось проиндексировать: обработка несколько раз прерывалась. Попробуйте прислать ещё раз."
FAILED = "Не получилось проиндексировать: внутренняя ошибка. Попробуйте, пожалуйста, ещё раз позже."

# What runs a job of each kind (a registry: a new kind of background work is one entry), handed the
# worker's sender for its progress and downloads; it returns how the job ends, which `close` writes.
KINDS: dict[str, Callable[[jobs.Job, threading.Event, Sender], jobs.Ending]] = {
    "ingest": ingest_job,
}


class JobWorker:
    def __init__(self, sender: Sender, name: str | None = None, poll: float = 1.0) -> None:
        self.sender = sender
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 10000}"
        self.poll = poll
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = 0

    # --- running ------------------------------------------------------------------------
    def run(self) -> None:
        """Take jobs until stopped."""
        while not self.stop_event.is_set():
            try:
                job = jobs.claim(self.name, get_settings().job_lease_seconds, list(KINDS))
            except StoreUnavailable as exc:
                log.warning("worker waiting for the store: %s", exc)
                self.stop_event.wait(5)
                continue
            if job is None:
                self.stop_event.wait(self.poll)
                continue
            self.run_job(job)

    def start(self) -> JobWorker:
        self._thread = threading.Thread(target=self.run, name="job-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout)

    # --- one job --------------------------------------------------------------------------
    def run_job(self, job: jobs.Job) -> None:
        if job.attempts > MAX_ATTEMPTS:
            self._end(job, GAVE_UP, f"gave up after {job.attempts - 1} interrupted attempts")
            return
        stop, told = threading.Event(), threading.Event()
        heartbeat = threading.Thread(target=self._heartbeat, args=(job, stop, told), daemon=True)
        heartbeat.start()
        lost = False
        try:
            close(job, KINDS[job.kind](job, stop, self.sender), self.sender)
            self.done += 1
        except (JobStopped, StoreUnavailable) as exc:
            lost = isinstance(exc, StoreUnavailable)
            if self.stop_event.is_set():
                self._release(job)
            log.warning("job %s stopped: %s; it runs again later", job.id, exc)
        except Exception as exc:  # noqa: BLE001 - recorded in the run; the user is told
            log.exception("job %s failed", job.id)
            self._end(job, FAILED, f"{type(exc).__name__}: {exc}")
        finally:
            stop.set()
            heartbeat.join(HEARTBEAT_SECONDS + 1)
        if lost and not told.is_set() and not self.stop_event.is_set():
            self._tell_store_lost(job)  # the job met the lost store before its heartbeat did

    def _tell_store_lost(self, job: jobs.Job) -> None:
        try:
            self.sender.send_now(Reply(chat_id=job.chat_id, text=STORE_LOST))
        except Exception as exc:  # noqa: BLE001
            log.warning("could not tell user %s the store is gone: %s", job.user_id, exc)

    def _heartbeat(self, job: jobs.Job, stop: threading.Event, told: threading.Event) -> None:
        """Renew the lease; on a lost store or lease, stop the job (and say why, once)."""
        lease = get_settings().job_lease_seconds
        while not stop.wait(HEARTBEAT_SECONDS):
            if self.stop_event.is_set():
                stop.set()
                return
            try:
                if not jobs.extend_lease(job.id, self.name, lease):
                    log.warning("job %s is no longer ours; stopping it", job.id)
                    stop.set()
                    return
            except StoreUnavailable:
                told.set()
                stop.set()
                self._tell_store_lost(job)
                return

    def _release(self, job: jobs.Job) -> None:
        try:
            jobs.release(job.id, self.name)
        except StoreUnavailable:
            pass  # the lease runs out instead

    def _end(self, job: jobs.Job, text: str, reason: str) -> None:
        """Close a job as failed with a message in its acknowledgement, in a failed run of its own."""
        with runs.run("ingest-job", f"ingest-job-{job.id}-user{job.user_id}", {"job": job}) as run:
            run.fail(reason)
            close(job, jobs.Ending(replies=[Reply(chat_id=job.chat_id, text=text, edits_reply=job.ack_id)],
                                   status="failed", error=reason), self.sender)


def close(job: jobs.Job, ending: jobs.Ending, sender: Sender) -> None:
    """The job's last writes, its replies and its end in one transaction; the replies sent by `sender`
    once it commits (as a turn's are, `grove.app.dispatch.process`)."""
    source = outbox.Source(job_id=job.id)
    with outbox.committed(source, sender.deliver_row):
        if ending.writes is not None:
            ending.writes()
        send_replies("telegram", ending.replies, sender, source)
        jobs.finish(job.id, ending.status, result=ending.result, error=ending.error)


def work_forever() -> None:
    """`grove work`: run jobs until SIGTERM / Ctrl-C. Either stops the job in hand at its next
    batch and gives it back at once (`jobs.release`), so the next start resumes it instead of
    waiting out its lease."""
    with opened(get_settings()) as sender:
        worker = JobWorker(sender)

        def stop(signum: int, frame: object) -> None:
            worker.stop_event.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        log.info("worker %s taking jobs", worker.name)
        worker.run()
