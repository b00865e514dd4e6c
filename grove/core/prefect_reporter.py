"""Writes grove's runs to the Prefect API in the background, so Prefect observes without blocking.

A few daemon threads bring each changed run's record (`touch`) up to date in as few calls as the API
allows, since every write costs the server CPU: a run that already ended is created in its final state in
one call; stages worth watching (slow, failed, retried) go as Prefect's task-run events in one batch,
which carry their true start and end; logs of many runs go in one call. When the API fails the threads
back off together and say so once per outage (`OUTAGE_SECONDS`); the work never waits. On start, Running
runs of grove processes on this host that no longer exist are marked Crashed.
Figures: bench/README.md, «What a recorded turn costs Prefect's server» (bench.prefect_record).
"""

from __future__ import annotations

import atexit
import logging
import socket
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any

import httpx

from grove.core.runs import Run, Stage, process_tag

log = logging.getLogger(__name__)

STAGE_MIN_SECONDS = 0.25
MAX_PENDING_RUNS = 20_000
MAX_WAITING_LOGS = 20_000
LOG_BATCH = 500
MESSAGE_LIMIT = 4000
THREADS = 2
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 30.0  # seconds between tries while the API does not answer: doubling
OUTAGE_SECONDS = 3.0
"""A failing API is an outage worth a warning once it lasts this long (a 503 blip is retried quietly)."""


class PrefectUnavailable(RuntimeError):
    """The API did not answer or answered 5xx / 429: try again later."""


@dataclass
class _Sent:
    """What Prefect already has of one run."""

    flow_run_id: uuid.UUID | None = None
    running: bool = False
    stages: dict[uuid.UUID, str] = field(default_factory=dict)  # stage id -> state sent
    artifacts: int = 0
    logs: int = 0


class PrefectReporter:
    def __init__(self, api_url: str, *, timeout: float = 10.0, threads: int = THREADS) -> None:
        self.api_url = api_url.rstrip("/")
        # Uncompressed answers: the server's GZip middleware then skips them, ≈ 4 ms of its CPU
        # per run (bench/prefect_record.py, `flow1~plain`); the answers are a few kB.
        self.client = httpx.Client(base_url=self.api_url, timeout=timeout, headers={"Accept-Encoding": "identity"})
        self.tag = process_tag()
        self._pending: OrderedDict[uuid.UUID, Run] = OrderedDict()
        self._syncing: set[uuid.UUID] = set()
        self._sent: dict[uuid.UUID, _Sent] = {}
        self._flow_ids: dict[str, uuid.UUID] = {}
        self._logs: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._stopped = False
        self._reconciled = False
        self._retry_at = 0.0
        self._backoff = FIRST_BACKOFF
        self._outage_since: float | None = None
        self._outage_said = False
        self.failures = 0
        self.dropped = 0
        self.calls = 0
        self._threads = [threading.Thread(target=self._loop, name=f"prefect-reporter-{i}", daemon=True)
                         for i in range(threads)]

    @classmethod
    def start(cls, api_url: str) -> PrefectReporter:
        reporter = cls(api_url)
        for thread in reporter._threads:
            thread.start()
        atexit.register(reporter.stop, 5.0)
        return reporter

    # --- called by working threads -----------------------------------------------
    def touch(self, run: Run) -> None:
        with self._cond:
            if run.id not in self._pending:
                if len(self._pending) >= MAX_PENDING_RUNS:
                    oldest, _ = self._pending.popitem(last=False)
                    self._sent.pop(oldest, None)
                    self.dropped += 1
                self._pending[run.id] = run
            self._cond.notify()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every touched run (and its logs) is in Prefect; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._syncing or self._logs:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.notify_all()  # logs left over with no run to sync go out now
                self._cond.wait(min(left, 0.2))
        return True

    def stop(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    @property
    def backlog(self) -> int:
        with self._cond:
            return len(self._pending) + len(self._syncing)

    # --- the threads -------------------------------------------------------------------
    def _next(self) -> Run | None:
        """The oldest run nobody is syncing, once any back-off has passed (None: stop)."""
        with self._cond:
            while True:
                if self._stopped:
                    return None
                wait = self._retry_at - time.monotonic()
                if wait > 0:  # backing off: a touch must not wake us early
                    self._cond.wait(wait)
                    continue
                for run_id, run in self._pending.items():
                    if run_id not in self._syncing:
                        del self._pending[run_id]
                        self._syncing.add(run_id)
                        return run
                if self._logs:
                    return _LOGS_ONLY
                self._cond.wait()

    def _loop(self) -> None:
        while (run := self._next()) is not None:
            try:
                if not self._reconciled:
                    self.mark_crashed_runs()
                    self._reconciled = True
                if run is not _LOGS_ONLY:
                    self._sync(run)
                self._send_logs(force=run is _LOGS_ONLY or not self._pending)
                self._answered()
            except PrefectUnavailable as exc:
                self._unavailable(run, exc)
                continue
            except Exception:  # noqa: BLE001 - a bad record must not stop the reporter
                log.exception("could not record run %s in Prefect; dropped", run.name)
                self._sent.pop(run.id, None)
            with self._cond:
                self._syncing.discard(run.id)
                self._cond.notify_all()

    def _unavailable(self, run: Run, exc: PrefectUnavailable) -> None:
        """Back off (all threads), keep the run first in line, and say so once per outage."""
        with self._cond:
            self.failures += 1
            self._syncing.discard(run.id)
            if run is not _LOGS_ONLY:
                self._pending[run.id] = run
                self._pending.move_to_end(run.id, last=False)
            now = time.monotonic()
            if self._outage_since is None:
                self._outage_since = now
                log.info("Prefect API did not answer (%s); trying again", exc)
            elif not self._outage_said and now - self._outage_since >= OUTAGE_SECONDS:
                self._outage_said = True
                log.warning("Prefect API unavailable for %.0f s (%s); runs are kept and recorded when it answers",
                            now - self._outage_since, exc)
            self._retry_at = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, MAX_BACKOFF)
            self._cond.notify_all()

    def _answered(self) -> None:
        with self._cond:
            self._backoff = FIRST_BACKOFF
            if self._outage_said:
                log.warning("Prefect API answers again after %.0f s; %d runs waiting to be recorded",
                            time.monotonic() - (self._outage_since or 0), len(self._pending))
            self._outage_since, self._outage_said = None, False

    # --- HTTP ----------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None) -> Any:
        self.calls += 1
        try:
            response = self.client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise PrefectUnavailable(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise PrefectUnavailable(f"{method} {path} answered {response.status_code}")
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path} refused ({response.status_code}): {response.text[:300]}")
        return response.json() if response.content else None

    def _flow_id(self, name: str) -> uuid.UUID:
        if name not in self._flow_ids:
            self._flow_ids[name] = uuid.UUID(self._call("POST", "/flows/", {"name": name})["id"])
        return self._flow_ids[name]

    def _set_flow_state(self, flow_run_id: uuid.UUID, state: str, message: str | None = None) -> None:
        self._call("POST", f"/flow_runs/{flow_run_id}/set_state",
                   {"state": _state(state, message), "force": True})

    def _send_logs(self, force: bool = False) -> None:
        """Logs of many runs in one call, when enough have gathered or nothing else is waiting."""
        with self._cond:
            if not self._logs or (len(self._logs) < LOG_BATCH and not force):
                return
            batch, self._logs = self._logs[:LOG_BATCH], self._logs[LOG_BATCH:]
        try:
            self._call("POST", "/logs/", batch)
        except PrefectUnavailable:
            with self._cond:
                self._logs[:0] = batch
            raise

    # --- bringing one run up to date ---------------------------------------------------
    def _sync(self, run: Run) -> bool:
        """Send what Prefect lacks of this run; True when the run is final and fully recorded."""
        with run.lock:
            finished, state, message = run.finished, run.state, run.message
            stages = list(run.stages)
            artifacts = list(run.artifacts)
            logs = list(run.logs)
        sent = self._sent.setdefault(run.id, _Sent(flow_run_id=run.prefect_flow_run_id))
        owned = run.prefect_flow_run_id is None  # else Prefect's engine owns the flow run's states
        if sent.flow_run_id is None:
            # A run that already ended goes straight to its final state: one call instead of two.
            first = _state(state, _final_message(message, stages, run)) if finished else _state("RUNNING")
            created = self._call("POST", "/flow_runs/", {
                "flow_id": str(self._flow_id(run.flow_name)), "name": run.name,
                "parameters": run.parameters, "tags": [*run.tags, self.tag], "state": first,
                "idempotency_key": str(run.id),
                **({"parent_task_run_id": str(run.parent_task_run_id)} if run.parent_task_run_id else {}),
            })
            sent.flow_run_id = uuid.UUID(created["id"])
            # (a create retried after a lost answer returns the first one, whatever its state)
            sent.running = created["state"]["type"] == "RUNNING"
        self._sync_stages(run, sent, stages, finished)
        for item in artifacts[sent.artifacts:]:
            self._call("POST", "/artifacts/", {
                "type": "markdown", "data": item.markdown, "description": item.description,
                "key": item.key, "flow_run_id": str(sent.flow_run_id),
                "task_run_id": str(item.stage_id) if item.stage_id in sent.stages else None})
            sent.artifacts += 1
        if len(logs) > sent.logs:
            lines = [{"name": line.name, "level": line.level, "message": line.message,
                      "timestamp": line.timestamp.isoformat(), "flow_run_id": str(sent.flow_run_id),
                      "task_run_id": str(line.stage_id) if line.stage_id in sent.stages else None}
                     for line in logs[sent.logs:]]
            with self._cond:
                room = MAX_WAITING_LOGS - len(self._logs)
                self._logs.extend(lines[:max(room, 0)])
            sent.logs = len(logs)
        if not finished:
            return False
        if owned and sent.running:
            self._set_flow_state(sent.flow_run_id, state, _final_message(message, stages, run))
        self._sent.pop(run.id, None)
        if run.on_reported is not None:
            run.on_reported(run)
        return True

    def _sync_stages(self, run: Run, sent: _Sent, stages: list[Stage], run_finished: bool) -> None:
        """Stages worth watching as task runs, as task-run events in one call (true times)."""
        events = []
        for stage in stages:
            already = sent.stages.get(stage.id)
            if already is not None and already != "RUNNING":
                continue  # its final state is in Prefect
            if stage.ended is not None:
                if already is None and not _worth_watching(stage):
                    continue
                state, ended, message = stage.state, stage.ended, stage.message
            elif run_finished:  # left behind by its run (an abandoned thread): never Running forever
                state, ended, message = "CRASHED", run.ended or _now(), "its run ended before this stage did"
            elif already is None:  # in progress at this sync: shown Running now, closed later
                state, ended, message = "RUNNING", None, None
            else:
                continue
            events.append(_stage_event(sent.flow_run_id, stage, state, ended, message, previous=already))
            sent.stages[stage.id] = state
        if events:
            self._call("POST", "/events", events)

    # --- crashed processes -------------------------------------------------------------
    def mark_crashed_runs(self) -> int:
        """Runs still Running whose grove process on this host is gone become Crashed."""
        import psutil

        host = socket.gethostname()
        runs = self._call("POST", "/flow_runs/filter", {
            "flow_runs": {"state": {"type": {"any_": ["RUNNING", "PENDING"]}},
                          "tags": {"all_": ["grove"]}},
            "limit": 200}) or []
        marked = 0
        for flow_run in runs:
            for tag in flow_run.get("tags", []):
                if not tag.startswith("grove-proc:") or tag == self.tag:
                    continue
                _, tag_host, pid, started = tag.split(":", 3)
                if tag_host != host or _alive(int(pid), int(started), psutil):
                    continue
                self._set_flow_state(uuid.UUID(flow_run["id"]), "CRASHED",
                                     "the grove process running it stopped (killed or crashed); "
                                     "the update was resumed by the next start")
                marked += 1
        if marked:
            log.warning("marked %d run(s) of a stopped grove process as Crashed", marked)
        return marked


_LOGS_ONLY = Run(flow_name="-", name="logs")  # a marker: only the gathered logs are due


def _now() -> datetime:
    return datetime.now(UTC)


def _worth_watching(stage: Stage) -> bool:
    """A finished stage is a task run when it failed, was retried or took a while."""
    return stage.state != "COMPLETED" or stage.attempts > 1 or (stage.seconds or 0) >= STAGE_MIN_SECONDS


def _alive(pid: int, started: int, psutil: Any) -> bool:
    try:
        return int(psutil.Process(pid).create_time()) == started
    except psutil.Error:
        return False


def _state(state: str, message: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": state, "name": state.capitalize()}
    if message:
        body["message"] = message[:MESSAGE_LIMIT]
    return body


def _stage_event(flow_run_id: uuid.UUID | None, stage: Stage, state: str, ended: datetime | None,
                 message: str | None, previous: str | None) -> dict[str, Any]:
    """A stage as Prefect's own task-run state event (what its task engine emits), true times in."""
    name = state.capitalize()
    occurred = ended or stage.started
    task_run: dict[str, Any] = {
        "name": stage.name, "task_key": stage.key, "dynamic_key": str(stage.index),
        "start_time": stage.started.isoformat(), "run_count": stage.attempts, "tags": ["grove"],
        "empirical_policy": {}, "task_inputs": {}}
    if ended is not None:
        task_run["end_time"] = ended.isoformat()
        task_run["total_run_time"] = (ended - stage.started).total_seconds()
    return {
        "id": str(uuid.uuid4()), "occurred": occurred.isoformat(), "event": f"prefect.task-run.{name}",
        "resource": {"prefect.resource.id": f"prefect.task-run.{stage.id}", "prefect.resource.name": stage.name,
                     "prefect.run-count": str(stage.attempts), "prefect.state-name": name,
                     "prefect.state-type": state, "prefect.state-message": (message or "")[:MESSAGE_LIMIT],
                     "prefect.state-timestamp": occurred.isoformat(), "prefect.orchestration": "client"},
        "related": [{"prefect.resource.id": f"prefect.flow-run.{flow_run_id}", "prefect.resource.role": "flow-run"}]
        if flow_run_id else [],
        "payload": {"intended": {"from": previous, "to": state},
                    "initial_state": {"type": previous, "name": previous.capitalize()} if previous else None,
                    "validated_state": {"type": state, "name": name, "message": (message or "")[:MESSAGE_LIMIT]},
                    "task_run": task_run},
    }


def _final_message(message: str | None, stages: list[Stage], run: Run) -> str:
    """The reason (if failed), when it ran (the record may come later), every stage with its time."""
    timeline = " · ".join(
        f"{s.name} {s.seconds * 1000:.0f} ms" + ("" if s.state == "COMPLETED" else f" {s.state}")
        for s in stages if s.seconds is not None)
    when = f"ran {run.started.isoformat(timespec='milliseconds')} for {run.seconds or 0:.3f} s"
    parts = [p for p in (message, when, f"stages: {timeline}" if timeline else "") if p]
    return "\n".join(parts)
