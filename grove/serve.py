"""`grove serve`: the project's flows as Prefect deployments served from this process.

Ops can start any of them from the Prefect UI; with GROVE_DISPATCH=deployment the bot
submits every update here (or to `prefect worker start` on other machines) instead of
running it in its own process. The objects below are real Prefect flows (`prefect deploy`
reads them from prefect.yaml); run by Prefect's engine, their stages attach to its flow run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from prefect import flow

from flows.ingest import ingest as _ingest
from flows.mode_switch import mode_switch as _mode_switch
from grove.messages import IncomingUpdate, Reply

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

DEPLOYMENT_NAME = "grove"


@flow(name="handle-update", persist_result=False)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """The main workflow; one run per Telegram update, routed by user_state.current_mode."""
    from grove.dispatch import process

    return process(update)


mode_switch: Any = _mode_switch.to_prefect()
ingest: Any = _ingest.to_prefect()


def serve_flows() -> None:
    from prefect import serve

    # Prefect types to_deployment as "a deployment, or a coroutine when called in an event loop";
    # this is called outside one, so it is the deployment.
    serve(
        cast("RunnerDeployment",
             handle_update.to_deployment(name=DEPLOYMENT_NAME, description=handle_update.__doc__)),
        mode_switch.to_deployment(name=DEPLOYMENT_NAME, description=mode_switch.__doc__),
        ingest.to_deployment(name=DEPLOYMENT_NAME, description=ingest.__doc__),
        limit=8,
    )
