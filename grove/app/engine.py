"""Scale-out on Prefect: turns and indexing as background tasks run by task workers anywhere.

With `GROVE_DISPATCH=prefect` the receiver stores each update in the inbox, opens its user's lane
(`grove.store.lanes`) and hands the lane to Prefect as a background task run; every `grove work` process,
on this machine or another, serves the lane tasks in threads. A lane task takes its user's items in order
until none is left, so a user's updates stay in order and a burst costs Prefect one task run. Prefect
delivers, Postgres keeps: an outage only delays the work, and a killed worker's turn rolls back and is
handed to another worker by the sweeper. Several machines must share Prefect's task-scheduling storage
(README, "Scale-out").
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from prefect import task

from grove.app.dispatch import process, run_update
from grove.core import shutdown
from grove.core.messages import IncomingUpdate, Reply
from grove.core.settings import get_settings
from grove.store import inbox, jobs, lanes
from grove.store.db import StoreUnavailable
from nodes.telegram.reply import CONSOLE, Sender, sender_for

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 2.0
SWEEP_SECONDS = 5.0


# ------------------------------------------------------------------------------- the tasks

@task(name="turns", task_run_name="turns-user{user_id}", persist_result=False)
def turns(user_id: int) -> str:
    """A user's updates, one at a time in order, until none is left."""
    return _worker().run_lane(user_id, "turns")


@task(name="jobs", task_run_name="jobs-user{user_id}", persist_result=False)
def index_jobs(user_id: int) -> str:
    """A user's indexing jobs, one at a time in order, until none is left."""
    return _worker().run_lane(user_id, "jobs")


LANE_TASKS = {"turns": turns, "jobs": index_jobs}


def submit(user_id: int, kind: str) -> None:
    """Hand a lane to Prefect; a failure is logged and left to the sweeper (the lane is stored)."""
    try:
        future = LANE_TASKS[kind].delay(user_id)
    except Exception as exc:  # noqa: BLE001 - Prefect down: the sweeper submits the lane again
        log.warning("lane %s of user %s not handed to Prefect yet: %s", kind, user_id, exc)
        return
    try:
        lanes.submitted(user_id, kind, future.task_run_id)
    except StoreUnavailable as exc:
        log.warning("lane %s of user %s: task run not noted: %s", kind, user_id, exc)


def open_lane(user_id: int, kind: str) -> None:
    """After the item is stored: open the user's lane, and submit it when this opened it."""
    if lanes.open(user_id, kind):
        submit(user_id, kind)


class Receiver:
    """The receiver's side (`grove up` with GROVE_DISPATCH=prefect), off the bot's event loop:
    each update the bot stored gets what the bot made of it and its user's lane, in arrival
    order on one thread; lanes go to Prefect from a few more (a submission takes a round trip)."""

    def __init__(self, submitters: int = 4) -> None:
        from concurrent.futures import ThreadPoolExecutor

        logging.getLogger("prefect.tasks").setLevel(logging.WARNING)  # a line per submission is noise
        self._ordered = ThreadPoolExecutor(max_workers=1, thread_name_prefix="receive")
        self._submitters = ThreadPoolExecutor(max_workers=submitters, thread_name_prefix="submit-lane")

    def __call__(self, update: IncomingUpdate) -> bool:
        if update.update_id is None or update.origin != "telegram":
            raise ValueError("only updates stored in the inbox run on Prefect workers")
        self._ordered.submit(self._receive, update)
        return True

    def _receive(self, update: IncomingUpdate) -> None:
        assert update.update_id is not None
        try:
            inbox.set_incoming(update.update_id, update.model_dump(mode="json"))
            if lanes.open(update.user_id, "turns"):
                self._submitters.submit(submit, update.user_id, "turns")
        except StoreUnavailable as exc:  # the update is in the inbox: the sweeper opens its lane
            log.warning("update %s stored, its lane not opened yet: %s", update.update_id, exc)

    def close(self, timeout: float = 10.0) -> None:
        self._ordered.shutdown(wait=True)
        self._submitters.shutdown(wait=True)


# ------------------------------------------------------------------------------ the worker

@dataclass
class LaneWorker:
    """What a `grove work` process runs lanes with: its name, its leases, its stop switch."""

    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    lease_seconds: float = 15.0
    stop: threading.Event = field(default_factory=threading.Event)
    parse: Callable[[dict[str, object]], IncomingUpdate | None] | None = None
    sender: Sender = CONSOLE  # the process's one sender, which its entry point builds

    def run_lane(self, user_id: int, kind: str) -> str:
        from prefect.runtime import task_run

        run_id = uuid.UUID(task_run.id) if task_run.id else None
        if not lanes.claim(user_id, kind, self.name, self.lease_seconds, run_id):
            return "held by another worker"
        handled = 0
        with lanes.exclusive(user_id, kind, self.stop) as alone:  # a slow worker's item ends first
            while alone and not self.stop.is_set():
                step = LANE_STEPS[kind](self, user_id, run_id)
                if step == "done":
                    handled += 1
                elif step == "empty" and lanes.close(user_id, kind, self.name):
                    return f"{handled} handled"
                elif step == "wait":
                    self.stop.wait(1.0)
        if lanes.release(user_id, kind, self.name):
            submit(user_id, kind)  # another worker takes it at once, not after the lease
        return f"{handled} handled; handed back (worker stopping)"

    def turn_step(self, user_id: int, run_id: uuid.UUID | None) -> str:
        row = inbox.next_of(user_id)
        if row is None:
            return "empty"
        update = IncomingUpdate.model_validate(row.incoming) if row.incoming else \
            (self.parse(row.payload) if self.parse else None)
        if update is None:
            inbox.finish(row.update_id, "skipped", error="not an update grove handles")
            return "done"
        run_update(update, self.stop, self.sender, functools.partial(self._turn, parent=run_id))
        return "done"

    def _turn(self, update: IncomingUpdate, parent: uuid.UUID | None) -> list[Reply]:
        replies = process(update, self.sender, parent_task_run_id=parent)
        for reply in replies:  # an upload acknowledged: its indexing is the user's jobs lane
            if reply.acknowledges_job is not None:
                open_lane(update.user_id, "jobs")
                break
        return replies

    def job_step(self, user_id: int, run_id: uuid.UUID | None) -> str:
        from grove.app.worker import JobWorker

        job, busy = jobs.claim_next_of(user_id, self.name, get_settings().job_lease_seconds)
        if job is None:
            return "wait" if busy else "empty"
        runner = JobWorker(self.sender, name=self.name)
        runner.stop_event = self.stop  # a stopping worker releases the job at its next batch
        runner.run_job(job)
        return "done"

    # --- heartbeat and sweeper ---------------------------------------------------------
    def start(self) -> LaneWorker:
        threading.Thread(target=self._heartbeat, name="lane-heartbeat", daemon=True).start()
        threading.Thread(target=sweep_forever, args=(self.stop,), name="lane-sweeper", daemon=True).start()
        return self

    def _heartbeat(self) -> None:
        while not self.stop.wait(HEARTBEAT_SECONDS):
            try:
                lanes.renew(self.name, self.lease_seconds)
            except StoreUnavailable as exc:
                log.warning("lane leases not renewed: %s", exc)


LANE_STEPS: dict[str, Callable[[LaneWorker, int, uuid.UUID | None], str]] = {
    "turns": LaneWorker.turn_step,
    "jobs": LaneWorker.job_step,
}

_current: LaneWorker | None = None


def _worker() -> LaneWorker:
    global _current  # the task worker process's one LaneWorker (the entry point sets it)
    if _current is None:
        from grove.channels.bot import parse_stored

        settings = get_settings()
        _current = LaneWorker(parse=parse_stored, lease_seconds=settings.lane_lease_seconds,
                              sender=sender_for(settings)).start()  # its Bot lives as long as the process
    return _current


def sweep(unclaimed_seconds: float = 60.0) -> int:
    """Hand back to Prefect the lanes whose worker died or that no worker took; how many."""
    stale = lanes.stale(unclaimed_seconds)
    for lane in stale:
        log.warning("lane %s of user %s resubmitted (%s)", lane.kind, lane.user_id,
                    "its worker stopped renewing its lease" if lane.worker else "no worker took it")
        mark_crashed(lane.task_run_id, lane.worker)
        submit(lane.user_id, lane.kind)
    return len(stale)


def sweep_forever(stop: threading.Event, every: float = SWEEP_SECONDS) -> None:
    while not stop.wait(every):
        try:
            sweep()
        except StoreUnavailable as exc:
            log.info("lane sweep skipped: %s", exc)
        except Exception:  # noqa: BLE001 - the sweeper must outlive a bad moment
            log.exception("lane sweep failed")


def mark_crashed(task_run_id: uuid.UUID | None, worker: str | None) -> None:
    """A lane task run whose worker died shows Crashed, not Running forever (best effort)."""
    if task_run_id is None or worker is None:
        return
    import httpx

    api = get_settings().prefect_api_url
    if not api:
        return
    try:
        httpx.post(f"{api.rstrip('/')}/task_runs/{task_run_id}/set_state", timeout=10, json={
            "state": {"type": "CRASHED", "name": "Crashed",
                      "message": f"worker {worker} stopped renewing its lease; the lane was resubmitted"},
            "force": True})
    except httpx.HTTPError as exc:
        log.info("task run %s not marked crashed: %s", task_run_id, exc)


def serve_lanes() -> None:
    """`grove work` with GROVE_DISPATCH=prefect: a Prefect task worker for the lanes, until SIGTERM."""
    from prefect.task_worker import TaskWorker

    worker = _worker()

    class Worker(TaskWorker):
        def handle_sigterm(self, signum: int, frame: object) -> None:
            # Prefect's own handler calls back into this very loop from inside it and dies with a
            # traceback; this one stops the lanes and lets the serving task end in its own time.
            worker.stop.set()  # lanes hand themselves back; a job stops at its next batch
            shutdown.request()  # a turn waiting on the model ends now and runs again elsewhere
            if serving is not None:
                serving.get_loop().call_soon_threadsafe(serving.cancel)

    serving: asyncio.Task[None] | None = None

    async def serve() -> None:  # Prefect's task worker is built inside its event loop
        nonlocal serving
        serving = asyncio.current_task()
        try:
            await Worker(turns, index_jobs, limit=get_settings().workers).astart()
        except asyncio.CancelledError:
            log.info("worker %s stopped", worker.name)

    from grove.app import warm

    from grove.store import stops

    warming = warm.start()
    listening = stops.start_listening(shutdown.stop_answer)  # «Стоп» pressed while this worker streams
    log.info("worker %s serving lanes on Prefect", worker.name)
    try:
        asyncio.run(serve())
    finally:
        listening.set()
        shutdown.request()
        warm.settle(warming)
