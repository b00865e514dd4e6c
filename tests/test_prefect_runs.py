"""Every update is a named flow run on the Prefect server, with its task runs."""

from __future__ import annotations

import time
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterName
from prefect.client.schemas.objects import FlowRun

from grove.dispatch import flow_runner
from grove.messages import IncomingUpdate


def _poll(check, timeout: float = 90.0, every: float = 0.5):
    """Task runs reach the server asynchronously: ask until they are all there."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)


def _flow_runs_named(name: str) -> list[FlowRun]:
    with get_client(sync_client=True) as client:
        return client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))


def _task_names(flow_run_id: UUID) -> set[str]:
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    return {run.task_key.rsplit("-", 1)[0] if run.task_key else run.name for run in runs} | {
        run.name.rsplit("-", 1)[0] for run in runs
    }


@pytest.mark.timeout(180)
def test_a_button_press_is_a_named_flow_run_with_task_runs(store: str, user_id: int) -> None:
    run = flow_runner()
    run(IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, command="start"))
    run(IncomingUpdate(origin="console", user_id=user_id, chat_id=user_id, callback_data="chat"))

    runs = _poll(lambda: _flow_runs_named(f"button-user{user_id}"))
    assert len(runs) == 1
    main = runs[0]
    assert main.state is not None and main.state.is_completed()

    sub = _poll(lambda: _flow_runs_named(f"mode-switch-user{user_id}"))
    assert len(sub) == 2  # one for /start, one for the press
    press = next(r for r in sub if r.parent_task_run_id is not None and r.start_time >= main.start_time)

    wanted = {"set-user-mode", "answer-callback", "send-reply"}
    names = _poll(lambda: (n := _task_names(press.id)) >= wanted and n, timeout=90)
    assert names and wanted <= names
