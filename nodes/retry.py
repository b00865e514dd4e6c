"""Prefect retry conditions: retry a task only for failures a retry may fix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RetryCondition = Callable[[Any, Any, Any], bool]


def failure_of(state: Any) -> BaseException | None:
    """The exception a failed task state carries (as data, or re-raised by `result()`)."""
    exc = getattr(state, "data", None)
    if isinstance(exc, BaseException):
        return exc
    try:
        exc = state.result(raise_on_failure=False)
    except Exception as raised:  # noqa: BLE001 - the state may re-raise its exception
        exc = raised
    return exc if isinstance(exc, BaseException) else None


def retry_when(is_transient: Callable[[BaseException | None], bool]) -> RetryCondition:
    """A `retry_condition_fn` that retries exactly when `is_transient(exception)`."""

    def condition(task: Any, task_run: Any, state: Any) -> bool:
        return is_transient(failure_of(state))

    return condition
