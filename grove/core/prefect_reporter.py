"""Writes grove's runs to the Prefect API in the background, so Prefect observes without blocking.

One daemon thread per process takes runs that changed (`touch`) and brings their record in
Prefect up to date: the flow run (created with an idempotency key, so a retried create
never makes two), its state, the stages worth watching as task runs, artifacts and logs.
A run touched many times while the thread was busy is synced once. When the API fails
(connection refused, timeout, 5xx) the thread backs off and tries again; the work itself
never waits. Under a burst the record lags behind the answers and catches up after.

Stages become task runs when they are worth watching: they took at least
`STAGE_MIN_SECONDS`, failed, were retried, or are still running at sync time. Every stage,
short ones included, is listed with its time in the run's final state message, so nothing
is hidden — it just does not cost a task run each (each is one or two API calls, ≈ 15 ms
of server CPU apiece, measured).

On start the reporter marks Crashed the Running runs of grove processes on this host that
no longer exist (their tag names host, pid and start time), so a killed process leaves no
run "Running" forever.
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
from typing import Any

import httpx

from grove.core.runs import Run, Stage, process_tag

log = logging.getLogger(__name__)

STAGE_MIN_SECONDS = 0.25
MAX_PENDING_RUNS = 20_000
MESSAGE_LIMIT = 4000


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
    def __init__(self, api_url: str, *, timeout: float = 10.0) -> None:
        self.api_url = api_url.rstrip("/")
        self.client = httpx.Client(base_url=self.api_url, timeout=timeout)
        self.tag = process_tag()
        self._pending: OrderedDict[uuid.UUID, Run] = OrderedDict()
        self._sent: dict[uuid.UUID, _Sent] = {}
        self._flow_ids: dict[str, uuid.UUID] = {}
        self._cond = threading.Condition()
        self._busy = False
        self._stopped = False
        self._reconciled = False
        self.failures = 0
        self.dropped = 0
        self._thread = threading.Thread(target=self._loop, name="prefect-reporter", daemon=True)

    @classmethod
    def start(cls, api_url: str) -> PrefectReporter:
        reporter = cls(api_url)
        reporter._thread.start()
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
        """Wait until every touched run is in Prefect; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
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
            return len(self._pending)

    # --- the thread ------------------------------------------------------------------
    def _loop(self) -> None:
        backoff = 0.5
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                run_id, run = next(iter(self._pending.items()))
                del self._pending[run_id]
                self._busy = True
            try:
                if not self._reconciled:
                    self.mark_crashed_runs()
                    self._reconciled = True
                self._sync(run)
            except PrefectUnavailable as exc:
                self.failures += 1
                log.warning("Prefect API unavailable (%s); the run record waits %.0f s", exc, backoff)
                with self._cond:
                    self._pending[run.id] = run
                    self._pending.move_to_end(run.id, last=False)
                    self._busy = False
                    self._cond.wait(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            except Exception:  # noqa: BLE001 - a bad record must not stop the reporter
                log.exception("could not record run %s in Prefect; dropped", run.name)
                self._sent.pop(run.id, None)
            backoff = 0.5
            with self._cond:  # an unfinished run comes back when it is touched again
                self._busy = False
                self._cond.notify_all()

    # --- HTTP ----------------------------------------------------------------------------
    def _call(self, method: str, path: str, body: Any = None) -> Any:
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
            created = self._call("POST", "/flow_runs/", {
                "flow_id": str(self._flow_id(run.flow_name)), "name": run.name,
                "parameters": run.parameters, "tags": [*run.tags, self.tag],
                "idempotency_key": str(run.id),
            })
            sent.flow_run_id = uuid.UUID(created["id"])
        if owned and not sent.running and not finished:
            # Only a run still in progress is shown Running: a run that ended before its first sync
            # (most turns under load) goes straight to its final state — one API call less.
            self._set_flow_state(sent.flow_run_id, "RUNNING")
            sent.running = True
        for stage in stages:
            self._sync_stage(sent, stage, finished)
        if len(artifacts) > sent.artifacts:
            for item in artifacts[sent.artifacts:]:
                self._call("POST", "/artifacts/", {
                    "type": "markdown", "data": item.markdown, "description": item.description,
                    "key": item.key, "flow_run_id": str(sent.flow_run_id),
                    "task_run_id": str(item.stage_id) if item.stage_id in sent.stages else None})
            sent.artifacts = len(artifacts)
        if len(logs) > sent.logs:
            self._call("POST", "/logs/", [{
                "name": line.name, "level": line.level, "message": line.message,
                "timestamp": line.timestamp.isoformat(), "flow_run_id": str(sent.flow_run_id),
                "task_run_id": str(line.stage_id) if line.stage_id in sent.stages else None}
                for line in logs[sent.logs:]])
            sent.logs = len(logs)
        if not finished:
            return False
        if owned:
            self._set_flow_state(sent.flow_run_id, state, _final_message(message, stages, run))
        self._sent.pop(run.id, None)
        if run.on_reported is not None:
            run.on_reported(run)
        return True

    def _sync_stage(self, sent: _Sent, stage: Stage, run_finished: bool) -> None:
        already = sent.stages.get(stage.id)
        final = stage.ended is not None
        if already is not None and (already != "RUNNING" or not final):
            return
        watch = (not final) or stage.state != "COMPLETED" or stage.attempts > 1 or \
            (stage.seconds or 0) >= STAGE_MIN_SECONDS
        if not watch:
            return
        if already is None:
            self._call("POST", "/task_runs/", {
                "id": str(stage.id), "flow_run_id": str(sent.flow_run_id), "task_key": stage.key,
                "dynamic_key": str(stage.index), "name": stage.name, "state": _state("RUNNING")})
            sent.stages[stage.id] = "RUNNING"
        if final:
            self._call("POST", f"/task_runs/{stage.id}/set_state",
                       {"state": _state(stage.state, stage.message), "force": True})
            sent.stages[stage.id] = stage.state

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


def _final_message(message: str | None, stages: list[Stage], run: Run) -> str:
    """The reason (if failed), when it ran (the record may come later), every stage with its time."""
    timeline = " · ".join(
        f"{s.name} {s.seconds * 1000:.0f} ms" + ("" if s.state == "COMPLETED" else f" {s.state}")
        for s in stages if s.seconds is not None)
    when = f"ran {run.started.isoformat(timespec='milliseconds')} for {run.seconds or 0:.3f} s"
    parts = [p for p in (message, when, f"stages: {timeline}" if timeline else "") if p]
    return "\n".join(parts)
