"""Runs and their stages: what ops watch in Prefect, recorded without Prefect in the way.

A **run** is one unit of work — a Telegram update, an ingestion job, a CLI command. Its
**stages** are the steps worth watching: functions decorated with :func:`task` (nodes) and
nested :func:`flow` calls. Both decorators take Prefect's spelling (`name`, `retries`,
`retry_delay_seconds`, `task_run_name`, `flow_run_name`, `.submit`, `.with_options`, `.fn`),
so a node reads like a Prefect task.

Why not Prefect's own engine in the message path: it makes several synchronous API calls
per flow and task run (measured: 160 ms of CPU for an empty flow run, 520 ms with six
trivial tasks, client and server together), so on two cores it caps the bot at a few
answers a second, and an API error (a 503 from the server's SQLite under load) fails the
user's turn. Here the work runs as plain Python; each run keeps its trace in memory and a
background :class:`~grove.prefect_reporter.PrefectReporter` writes it to the Prefect API —
flow run, task runs, artifacts, logs, final state — when the API answers. An outage delays
the record, never the user.

A run started inside a real Prefect flow run (a deployment started from the UI or by a
worker) attaches its stages to that flow run instead of creating one.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import logging
import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any, Generic, Literal, ParamSpec, Protocol, TypeVar

from grove.settings import get_settings

P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)

State = Literal["RUNNING", "COMPLETED", "FAILED", "CRASHED"]
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
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("grove_deadline", default=None)


class DeadlineExceeded(TimeoutError):
    """The work's overall deadline passed (see `deadline`)."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Give the work inside an overall time limit: retries stop and calls shorten their timeouts.

    Why: per-call timeouts and retries add up (two 120 s timeouts plus backoff kept a user
    looking at "typing" for 266 s). Nested deadlines keep the earlier one.
    """
    if seconds is None:
        yield
        return
    until = time.monotonic() + seconds
    outer = _deadline.get()
    token = _deadline.set(min(until, outer) if outer is not None else until)
    try:
        yield
    finally:
        _deadline.reset(token)


def time_left() -> float | None:
    """Seconds until the current deadline (None without one; never below 0)."""
    until = _deadline.get()
    return None if until is None else max(0.0, until - time.monotonic())
_stage: contextvars.ContextVar[Stage | None] = contextvars.ContextVar("grove_stage", default=None)


def current_run() -> Run | None:
    return _run.get()


def current_stage() -> Stage | None:
    return _stage.get()


# ------------------------------------------------------------------------- reporter wiring

_reporter: Reporter | None = None
_reporter_lock = threading.Lock()
_reporter_factory: Callable[[], Reporter | None] | None = None


def set_reporter(reporter: Reporter | None) -> None:
    """Use this reporter for the runs started from now on (None: record nowhere)."""
    global _reporter, _reporter_factory
    with _reporter_lock:
        _reporter, _reporter_factory = reporter, None


def default_reporter() -> Reporter | None:
    """The Prefect reporter for PREFECT_API_URL, started on first use; None without a server."""
    global _reporter
    with _reporter_lock:
        api = get_settings().prefect_api_url
        if _reporter is None and _reporter_factory is None and api:
            from grove.prefect_reporter import PrefectReporter

            _reporter = PrefectReporter.start(api)
        return _reporter


@contextmanager
def run(flow_name: str, name: str, parameters: dict[str, Any] | None = None, *,
        tags: list[str] | None = None, on_reported: Callable[[Run], None] | None = None,
        prefect_flow_run_id: uuid.UUID | None = None) -> Iterator[Run]:
    """Open a run; it ends COMPLETED, or FAILED with the exception (re-raised) or `Run.fail`'s reason.

    Inside a flow run of Prefect's own engine (a deployment), the run attaches to it.
    """
    if prefect_flow_run_id is None:
        prefect_flow_run_id = _prefect_flow_run_id()
    current = Run(flow_name=flow_name, name=name, parameters=_jsonable(parameters or {}),
                  tags=["grove", *(tags or [])], prefect_flow_run_id=prefect_flow_run_id,
                  reporter=default_reporter(), on_reported=on_reported)
    _install_log_capture()
    token = _run.set(current)
    stage_token = _stage.set(None)
    current._touch()
    try:
        yield current
    except BaseException as exc:
        state: State = "CRASHED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "FAILED"
        current.finish(state, _describe(exc))
        raise
    else:
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


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if text.rstrip(": ") != type(exc).__name__ or not exc.__cause__ else \
        f"{type(exc).__name__} (from {type(exc.__cause__).__name__}: {exc.__cause__})"


def _jsonable(value: Any, limit: int = 4000) -> Any:
    """Parameters as Prefect shows them: plain JSON, long strings cut."""
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
    return repr(value)[:limit]


# ------------------------------------------------------------------------------- decorators

RetryCondition = Callable[[BaseException], bool]
Delays = float | list[float]


class NotRetryable(Exception):
    """Mixin for failures a retry cannot fix (a broken transaction, a refused request)."""


def _delay(delays: Delays, attempt: int, jitter: float | None) -> float:
    if isinstance(delays, list):
        base = delays[min(attempt, len(delays) - 1)] if delays else 0.0
    else:
        base = float(delays)
    if jitter:
        base *= 1 + random.uniform(-jitter, jitter)
    return max(0.0, base)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="grove-task")
        return _pool


class TaskFuture(Generic[R]):
    """The result of `Task.submit`; `result(raise_on_failure=False)` returns the exception instead."""

    def __init__(self, future: Future[R]) -> None:
        self._future = future

    def result(self, timeout: float | None = None, raise_on_failure: bool = True) -> R | BaseException:
        try:
            return self._future.result(timeout)
        except Exception as exc:  # noqa: BLE001 - handed back as a value when asked to
            if raise_on_failure:
                raise
            return exc


class Task(Generic[P, R]):
    """A node: a plain function recorded as a stage of the current run, with retries."""

    def __init__(self, fn: Callable[P, R], *, name: str | None = None, retries: int = 0,
                 retry_delay_seconds: Delays = 0, retry_jitter_factor: float | None = None,
                 retry_condition_fn: RetryCondition | None = None,
                 task_run_name: str | Callable[[dict[str, Any]], str] | None = None,
                 **ignored: Any) -> None:
        self.fn = fn
        self.name = name or fn.__name__.replace("_", "-")
        self.retries = retries
        self.retry_delay_seconds = retry_delay_seconds
        self.retry_jitter_factor = retry_jitter_factor
        self.retry_condition_fn = retry_condition_fn
        self.task_run_name = task_run_name
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def with_options(self, **options: Any) -> Task[P, R]:
        settings = {"name": self.name, "retries": self.retries,
                    "retry_delay_seconds": self.retry_delay_seconds,
                    "retry_jitter_factor": self.retry_jitter_factor,
                    "retry_condition_fn": self.retry_condition_fn, "task_run_name": self.task_run_name}
        settings.update(options)
        return Task(self.fn, **settings)

    def _stage_name(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        if self.task_run_name is None:
            return self.name
        parameters = _bind(self.fn, args, kwargs)
        if callable(self.task_run_name):
            return self.task_run_name(parameters)
        return self.task_run_name.format(**parameters)

    def _retryable(self, exc: BaseException) -> bool:
        if isinstance(exc, NotRetryable):
            return False
        return self.retry_condition_fn(exc) if self.retry_condition_fn else True

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        current = current_run()
        if current is None:
            return self._attempts(args, kwargs)
        stage = current.new_stage(self._stage_name(args, kwargs), self.name)
        token = _stage.set(stage)
        attempts = [0]
        try:
            result = self._attempts(args, kwargs, attempts)
        except BaseException as exc:
            current.end_stage(stage, "FAILED", _describe(exc), attempts[0])
            raise
        finally:
            _stage.reset(token)
        current.end_stage(stage, "COMPLETED", attempts=attempts[0])
        return result

    def _attempts(self, args: tuple[Any, ...], kwargs: dict[str, Any], count: list[int] | None = None) -> R:
        attempt = 0
        while True:
            if count is not None:
                count[0] = attempt + 1
            try:
                return self.fn(*args, **kwargs)
            except Exception as exc:
                if attempt >= self.retries or not self._retryable(exc):
                    raise
                wait = _delay(self.retry_delay_seconds, attempt, self.retry_jitter_factor)
                left = time_left()
                if left is not None and left <= wait:
                    raise  # no time for another attempt before the deadline
                log.warning("%s failed (%s), retry %d of %d in %.1f s", self.name, _describe(exc),
                            attempt + 1, self.retries, wait)
                time.sleep(wait)
                attempt += 1

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> TaskFuture[R]:
        """Run in the shared worker pool, inside the same run (for parallel branches)."""
        context = contextvars.copy_context()
        return TaskFuture(_executor().submit(context.run, self.__call__, *args, **kwargs))


class Flow(Task[P, R]):
    """A workflow: opens a run when called on its own, and is one stage when called inside a run."""

    def __init__(self, fn: Callable[P, R], *, name: str | None = None,
                 flow_run_name: str | Callable[[dict[str, Any]], str] | None = None,
                 **options: Any) -> None:
        super().__init__(fn, name=name, task_run_name=flow_run_name, **options)
        self.flow_run_name = flow_run_name

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if current_run() is not None:
            return super().__call__(*args, **kwargs)
        parameters = _bind(self.fn, args, kwargs)
        with run(self.name, self._stage_name(args, kwargs), parameters):
            return self._attempts(args, kwargs)

    def to_prefect(self) -> Any:
        """This flow as a real Prefect flow (for deployments): stages attach to Prefect's flow run."""
        from prefect import flow as prefect_flow
        from prefect import runtime

        @functools.wraps(self.fn)
        def entry(*args: Any, **kwargs: Any) -> Any:
            parameters = _bind(self.fn, args, kwargs)
            with run(self.name, runtime.flow_run.name or self.name, parameters):
                return self.fn(*args, **kwargs)

        return prefect_flow(name=self.name, description=inspect.getdoc(self.fn),
                            flow_run_name=self.flow_run_name if isinstance(self.flow_run_name, str) else None,
                            persist_result=False)(entry)


def _bind(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
    except TypeError:
        return dict(kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def task(fn: Callable[P, R] | None = None, **options: Any) -> Any:
    """Decorate a node: `@task` or `@task(name=..., retries=..., retry_delay_seconds=...)`."""
    if fn is not None:
        return Task(fn, **options)
    return lambda f: Task(f, **options)


def flow(fn: Callable[P, R] | None = None, **options: Any) -> Any:
    """Decorate a workflow: `@flow(name=..., flow_run_name=...)`."""
    if fn is not None:
        return Flow(fn, **options)
    return lambda f: Flow(f, **options)
