"""`@task` and `@flow`: the stages of a run (`grove.core.runs`), spelled as Prefect spells them.

Both take Prefect's spelling (`name`, `retries`, `task_run_name`, `.submit`, `.with_options`, `.fn`, …),
so a node reads like a Prefect task. Prefect's own engine stays out of the message path: its synchronous
API calls per run would cap the bot at a few answers a second on two cores, and an API error would fail
the user's turn. The work runs as plain Python; a background :class:`~grove.core.prefect_reporter.PrefectReporter`
records it when the API answers, and a run inside a real Prefect flow run attaches its stages to it.
Figures: bench/README.md, «What a recorded turn costs Prefect's server» (bench.prefect_record).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import random
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, Literal, ParamSpec, TypeVar, overload

from grove.core import runs, shutdown
from grove.core.prefect_reporter import PrefectReporter
from grove.core.runs import current_run, describe, in_stage, run, time_left

runs.record_with(PrefectReporter.start)  # a run is recorded in Prefect when PREFECT_API_URL is set


P = ParamSpec("P")
R = TypeVar("R")

log = logging.getLogger(__name__)


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

    @overload
    def result(self, timeout: float | None = None, raise_on_failure: Literal[True] = True) -> R: ...

    @overload
    def result(self, timeout: float | None = None, raise_on_failure: bool = True) -> R | BaseException: ...

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
        functools.update_wrapper(self, fn)

    def with_options(self, **options: Any) -> Task[P, R]:
        settings: dict[str, Any] = {"name": self.name, "retries": self.retries,
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
        if isinstance(exc, NotRetryable | shutdown.Stopped):
            return False
        return self.retry_condition_fn(exc) if self.retry_condition_fn else True

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        current = current_run()
        if current is None:
            return self._attempts(args, kwargs)
        stage = current.new_stage(self._stage_name(args, kwargs), self.name)
        attempts = [0]
        try:
            with in_stage(stage):
                result = self._attempts(args, kwargs, attempts)
        except BaseException as exc:
            current.end_stage(stage, "CANCELLED" if isinstance(exc, shutdown.Stopped) else "FAILED", describe(exc), attempts[0])
            raise
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
                log.warning("%s failed (%s), retry %d of %d in %.1f s", self.name, describe(exc),
                            attempt + 1, self.retries, wait)
                shutdown.wait(wait)  # a stopping process does not sleep through its retries
                attempt += 1

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> TaskFuture[R]:
        """Run in the shared worker pool, inside the same run (for parallel branches)."""
        context = contextvars.copy_context()
        return TaskFuture(_executor().submit(lambda: context.run(self.__call__, *args, **kwargs)))


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


@overload
def task(fn: Callable[P, R]) -> Task[P, R]: ...
@overload
def task(fn: None = None, **options: Any) -> Callable[[Callable[P, R]], Task[P, R]]: ...
def task(fn: Callable[P, R] | None = None, **options: Any) -> Task[P, R] | Callable[[Callable[P, R]], Task[P, R]]:
    """Decorate a node: `@task` or `@task(name=..., retries=..., retry_delay_seconds=...)`."""
    if fn is not None:
        return Task(fn, **options)
    return lambda f: Task(f, **options)


@overload
def flow(fn: Callable[P, R]) -> Flow[P, R]: ...
@overload
def flow(fn: None = None, **options: Any) -> Callable[[Callable[P, R]], Flow[P, R]]: ...
def flow(fn: Callable[P, R] | None = None, **options: Any) -> Flow[P, R] | Callable[[Callable[P, R]], Flow[P, R]]:
    """Decorate a workflow: `@flow(name=..., flow_run_name=...)`."""
    if fn is not None:
        return Flow(fn, **options)
    return lambda f: Flow(f, **options)
