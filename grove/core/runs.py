"""Runs and their stages: what ops watch in Prefect, kept in the process first.

A **run** is one unit of work (a Telegram update, an ingestion job, a CLI command); its **stages** are the
steps worth watching (`grove.core.observe`). Each run keeps its trace in memory — stages, artifacts, logs,
the final state — and a background :class:`~grove.core.prefect_reporter.PrefectReporter` writes it to the
Prefect API when the API answers, so an outage delays the record, never the user. A run started inside a
real Prefect flow run attaches its stages to that run. Deadlines (`deadline`, `time_left`) bound a turn.
"""


from __future__ import annotations

import contextvars
import dataclasses
import logging
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any, Literal, Protocol

from grove.core.settings import Settings, get_settings
from grove.core.shutdown import Interrupted


log = logging.getLogger(__name__)

State = Literal["RUNNING", "COMPLETED", "FAILED", "CRASHED", "CANCELLED"]
MAX_LOGS_PER_RUN = 200


def now() -> datetime:
    return datetime.now(UTC)


def process_tag() -> str:
    """Names this process on this host, so a later start can tell which runs died with it."""
    import psutil

    me = psutil.Process()
    return f"grove-proc:{socket.gethostname()}:{me.pid}:{int(me.create_time())}"


@dataclass
class Stage:
    """One stage of a run: a task run in Prefect."""

    name: str
    key: str
    index: int
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    started: datetime = field(default_factory=now)
    ended: datetime | None = None
    state: State = "RUNNING"
    message: str | None = None
    attempts: int = 1

    @property
    def seconds(self) -> float | None:
        return (self.ended - self.started).total_seconds() if self.ended else None


@dataclass
class Artifact:
    markdown: str
    description: str | None
    stage_id: uuid.UUID | None
    key: str | None = None


@dataclass
class LogLine:
    name: str
    level: int
    message: str
    timestamp: datetime
    stage_id: uuid.UUID | None


class Reporter(Protocol):
    """Whoever records runs somewhere (Prefect); called from the working thread, must not block."""

    def touch(self, run: Run) -> None: ...


@dataclass
class Run:
    """A unit of work with its stages, artifacts and logs, as it happens."""

    flow_name: str
    name: str
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    started: datetime = field(default_factory=now)
    ended: datetime | None = None
    state: State = "RUNNING"
    message: str | None = None
    stages: list[Stage] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    logs: list[LogLine] = field(default_factory=list)
    prefect_flow_run_id: uuid.UUID | None = None  # set when Prefect's engine owns the flow run
    parent_task_run_id: uuid.UUID | None = None  # the Prefect task run this run was started by (a lane)
    notes: list[str] = field(default_factory=list)  # lines for the run's own artifact (see `note`)
    summary_markdown: str | None = None  # the top of that artifact (a turn: question, answer, sources)
    summary_title: str | None = None
    reporter: Reporter | None = None
    on_reported: Callable[[Run], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _keys: dict[str, int] = field(default_factory=dict, repr=False)
    _failure: str | None = field(default=None, repr=False)

    # --- what the working code says ------------------------------------------------
    def fail(self, reason: str) -> None:
        """Mark the run failed although it returns normally (e.g. the user got an apology)."""
        self._failure = reason

    @property
    def failure(self) -> str | None:
        return self._failure

    def new_stage(self, name: str, key: str) -> Stage:
        with self.lock:
            index = self._keys.get(key, 0)
            self._keys[key] = index + 1
            stage = Stage(name=name if index == 0 or name != key else f"{name}-{index}", key=key, index=index)
            self.stages.append(stage)
        self._touch()
        return stage

    def end_stage(self, stage: Stage, state: State, message: str | None = None, attempts: int = 1) -> None:
        with self.lock:
            stage.ended, stage.state, stage.message, stage.attempts = now(), state, message, attempts
        self._touch()

    def add_artifact(self, markdown: str, description: str | None, key: str | None = None) -> None:
        stage = current_stage()
        with self.lock:
            self.artifacts.append(Artifact(markdown, description, stage.id if stage else None, key))
        self._touch()

    def note(self, line: str) -> None:
        """A line for the run's own summary artifact (what ops read first), instead of one of its own."""
        with self.lock:
            self.notes.append(line)

    def add_summary(self) -> None:
        """One artifact for the run, when it has something to say: what the working code set as
        `summary` (a turn: the question, the answer and the sources sent), its notes, and every
        stage with its time — on the flow run itself, so it is one click from the run."""
        with self.lock:
            if self.summary_markdown is None and not self.notes:
                return
            lines = [self.summary_markdown] if self.summary_markdown else []
            lines += [f"- {line}" for line in self.notes]
            timed = [s for s in self.stages if s.seconds is not None]
            if timed:
                lines += ["", "| stage | ms | state |", "|---|---:|---|"]
                lines += [f"| {s.name} | {s.seconds * 1000:.0f} | {s.state.lower()} |"  # type: ignore[operator]
                          for s in timed]
            self.artifacts.append(Artifact("\n".join(lines), self.summary_title or self.name, None))
        self._touch()

    def add_log(self, record: logging.LogRecord) -> None:
        with self.lock:
            if len(self.logs) >= MAX_LOGS_PER_RUN:
                return
            stage = current_stage()
            self.logs.append(LogLine(record.name, record.levelno, record.getMessage(),
                                     datetime.fromtimestamp(record.created, UTC),
                                     stage.id if stage else None))

    def finish(self, state: State, message: str | None = None) -> None:
        with self.lock:
            self.ended, self.state, self.message = now(), state, message
        self._touch()

    @property
    def finished(self) -> bool:
        return self.ended is not None

    @property
    def seconds(self) -> float | None:
        return (self.ended - self.started).total_seconds() if self.ended else None

    def _touch(self) -> None:
        if self.reporter is not None:
            self.reporter.touch(self)

    def summary(self) -> dict[str, Any]:
        """The trace as plain data (kept with the update in the inbox)."""
        with self.lock:
            return {
                "run_id": str(self.id), "flow": self.flow_name, "name": self.name, "state": self.state,
                "message": self.message, "seconds": self.seconds,
                "stages": [{"name": s.name, "state": s.state,
                            "started": round((s.started - self.started).total_seconds(), 4),
                            "seconds": s.seconds, **({"message": s.message} if s.message else {})}
                           for s in self.stages],
            }


_run: contextvars.ContextVar[Run | None] = contextvars.ContextVar("grove_run", default=None)
@dataclass
class _Until:
    """A deadline's moment, shared by the turn's copied contexts so a move is seen by all of them."""

    at: float
    outer: _Until | None = None
    latest: float = float("inf")  # `allow_at_least` never moves `at` past this


_deadline: contextvars.ContextVar[_Until | None] = contextvars.ContextVar("grove_deadline", default=None)


@contextmanager
def deadline(seconds: float | None, *, at_most: float | None = None) -> Iterator[None]:
    """Give the work inside an overall time limit: retries stop and calls shorten their timeouts.

    Why: per-call timeouts and retries add up (two 120 s timeouts plus backoff kept a user
    looking at "typing" for 266 s). Nested deadlines keep the earlier one. `at_most`: the
    furthest `allow_at_least` may move it, counted from now — so a turn of many model calls (a
    plan's steps) cannot be moved on call after call.
    """
    if seconds is None:
        yield
        return
    now = time.monotonic()
    until = now + seconds
    latest = now + at_most if at_most is not None else float("inf")
    outer = _deadline.get()
    if outer is not None:
        until, latest = min(until, outer.at), min(latest, outer.latest)
    token = _deadline.set(_Until(until, outer, max(until, latest)))
    try:
        yield
    finally:
        _deadline.reset(token)


def allow_at_least(seconds: float) -> None:
    """Move the current deadline (and those around it) so `seconds` are left, if fewer are: a
    local model measured slow on this machine gets the time its prompt needs."""
    until = _deadline.get()
    at = time.monotonic() + seconds
    while until is not None:
        until.at = max(until.at, min(at, until.latest))
        until = until.outer


def time_left() -> float | None:
    """Seconds until the current deadline (None without one; never below 0)."""
    until = _deadline.get()
    return None if until is None else max(0.0, until.at - time.monotonic())


_stage: contextvars.ContextVar[Stage | None] = contextvars.ContextVar("grove_stage", default=None)


def current_run() -> Run | None:
    return _run.get()


def current_stage() -> Stage | None:
    return _stage.get()


@contextmanager
def in_stage(stage: Stage) -> Iterator[Stage]:
    """`stage` is the current one inside the block (logs and nested stages attach to it)."""
    token = _stage.set(stage)
    try:
        yield stage
    finally:
        _stage.reset(token)


# ------------------------------------------------------------------------- reporter wiring

_reporter: Reporter | None = None
_reporter_lock = threading.Lock()
_recorder: Callable[[str], Reporter] | None = None


def record_with(recorder: Callable[[str], Reporter]) -> None:
    """Where runs are recorded when an API URL is set: `recorder(api_url)` starts the reporter on the
    first run. `grove.core.observe` hands in Prefect's (`PrefectReporter.start`), so this module
    knows no recorder of its own and the reporter may import it."""
    global _recorder
    with _reporter_lock:
        _recorder = recorder


def set_reporter(reporter: Reporter | None) -> None:
    """Use this reporter for the runs started from now on (None: the default one, on the next run)."""
    global _reporter
    with _reporter_lock:
        _reporter = reporter


def default_reporter() -> Reporter | None:
    """The reporter for PREFECT_API_URL, started on first use; None without a server or a recorder."""
    global _reporter
    with _reporter_lock:
        api = get_settings().prefect_api_url
        if _reporter is None and _recorder is not None and api:
            _reporter = _recorder(api)
        return _reporter


@contextmanager
def run(flow_name: str, name: str, parameters: dict[str, Any] | None = None, *,
        tags: list[str] | None = None, on_reported: Callable[[Run], None] | None = None,
        prefect_flow_run_id: uuid.UUID | None = None, parent_task_run_id: uuid.UUID | None = None) -> Iterator[Run]:
    """Open a run; it ends COMPLETED, or FAILED with the exception (re-raised) or `Run.fail`'s reason.

    Inside a flow run of Prefect's own engine (a deployment), the run attaches to it.
    """
    if prefect_flow_run_id is None:
        prefect_flow_run_id = _prefect_flow_run_id()
    current = Run(flow_name=flow_name, name=name, parameters=_jsonable(parameters or {}),
                  tags=["grove", *(tags or [])], prefect_flow_run_id=prefect_flow_run_id,
                  parent_task_run_id=parent_task_run_id, reporter=default_reporter(), on_reported=on_reported)
    _install_log_capture()
    token = _run.set(current)
    stage_token = _stage.set(None)
    current._touch()
    try:
        yield current
    except Interrupted:
        current.add_summary()
        current.finish("CANCELLED", "stopped with the service; it runs again at the next start")
        raise
    except BaseException as exc:
        state: State = "CRASHED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "FAILED"
        current.add_summary()
        current.finish(state, describe(exc))
        raise
    else:
        current.add_summary()
        if current.failure:
            current.finish("FAILED", current.failure)
        else:
            current.finish("COMPLETED")
    finally:
        _stage.reset(stage_token)
        _run.reset(token)


def _prefect_flow_run_id() -> uuid.UUID | None:
    """The flow run Prefect's engine is running here, if any (only looked up once prefect is loaded)."""
    if "prefect.context" not in sys.modules:
        return None
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return context.flow_run.id if context is not None and context.flow_run is not None else None


def artifact(markdown: str, description: str | None = None, key: str | None = None) -> None:
    """A markdown artifact on the current run (and stage); dropped outside a run."""
    current = current_run()
    if current is not None:
        current.add_artifact(markdown, description, key)


def note(line: str) -> None:
    """A line for the current run's summary artifact; dropped outside a run."""
    current = current_run()
    if current is not None:
        current.note(line)


def run_logger() -> logging.Logger:
    """A logger whose records also go to the current run's logs in Prefect."""
    return logging.getLogger("grove.run")


class _RunLogHandler(logging.Handler):
    """Copies log records made inside a run into that run (grove's own at INFO, others at WARNING)."""

    OWN = ("grove", "flows", "nodes", "chunking")

    def emit(self, record: logging.LogRecord) -> None:
        current = _run.get()
        if current is None:
            return
        threshold = logging.INFO if record.name.startswith(self.OWN) else logging.WARNING
        if record.levelno >= threshold:
            current.add_log(record)


_log_capture_installed = False


def _install_log_capture() -> None:
    global _log_capture_installed
    if not _log_capture_installed:
        _log_capture_installed = True
        logging.getLogger().addHandler(_RunLogHandler(level=logging.INFO))
        if logging.getLogger("grove.run").level == logging.NOTSET:
            logging.getLogger("grove.run").setLevel(logging.INFO)


def describe(exc: BaseException) -> str:
    """An exception in one line, with its cause when its own message says nothing."""
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if text.rstrip(": ") != type(exc).__name__ or not exc.__cause__ else \
        f"{type(exc).__name__} (from {type(exc.__cause__).__name__}: {exc.__cause__})"


def _jsonable(value: Any, limit: int = 4000) -> Any:
    """Parameters as Prefect shows them: plain JSON, long strings cut; a callback handed in (the turn's
    draft, `show`) by its name, not its object's state; the settings handed to a node by that word alone
    (they are the process's, and hold its secrets)."""
    if isinstance(value, Settings):
        return "<settings>"
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, limit) for v in value[:100]]
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + "…"
    if value is None or isinstance(value, (int, float, bool)):
        return value
    if callable(value) and not isinstance(value, type):
        return f"<{getattr(value, '__qualname__', type(value).__name__)}>"
    return repr(value)[:limit]
