"""How an update reaches its flow: inline in this process, or as a deployment run.

inline: the flow runs in a worker thread here and reports to the Prefect server.
deployment: the update becomes a run of the `handle-update/grove` deployment,
picked up by `grove serve` or by `prefect worker start` on any machine (scale-out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grove.bot import Dispatch
from grove.messages import IncomingUpdate

DEPLOYMENT = "handle-update/grove"


def run_inline(flow_function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a flow in this process (the bot's, the console's, the CLI's).

    Flow-run heartbeats are off for these runs: in prefect 3.8.8 the sync engine
    joins the heartbeat thread at the end of every run, which sleeps in one-second
    steps, adding up to a second per (sub)flow to each reply. Heartbeats exist to
    spot runs whose process died; here that process is the bot or the command
    itself, whose death is seen at once. Deployment runs (workers) keep them.
    """
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        return flow_function(*args, **kwargs)


def flow_runner() -> Callable[[IncomingUpdate], Any]:
    """The main flow for one update, run in this process."""
    from flows.handle_update import handle_update

    def run(update: IncomingUpdate) -> Any:
        return run_inline(handle_update, update)

    return run


def deployment_dispatch(name: str = DEPLOYMENT) -> Dispatch:
    from prefect.deployments import run_deployment

    async def dispatch(update: IncomingUpdate) -> None:
        # timeout=0: submit and return; the run's progress is on the server.
        await run_deployment(
            name, parameters={"update": update.model_dump(mode="json")}, timeout=0
        )

    return dispatch
