"""`grove serve`: the project's flows as Prefect deployments served from this process.

Ops can start any of them from the Prefect UI (each run in a process of its own, as Prefect's
runner does). This is the one place the deployments are registered; the bot's own turns never
go through them (scale-out runs them on task workers: grove/app/engine.py). The objects below
are real Prefect flows; run by Prefect's engine, their stages attach to its flow run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from prefect import flow

from flows.ingest import ingest as _ingest
from flows.mode_switch import mode_switch as _mode_switch
from grove.core.messages import IncomingUpdate, Reply
from grove.core.observe import flow as observed_flow

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

DEPLOYMENT_NAME = "grove"


@flow(name="handle-update", persist_result=False)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """The main workflow; one run per Telegram update, routed by user_state.current_mode."""
    from grove.app.dispatch import process

    return process(update)




@observed_flow(name="mode-switch", flow_run_name="mode-switch-user{update.user_id}")
def _mode_switch_said(update: IncomingUpdate) -> list[Reply]:
    """/start shows the menu; a press on «Чат» / «База» stores the mode and confirms it.

    Run by itself (from the UI) there is no turn around it, so this entry point sends what
    the flow returns (`send_replies`: at once, outside a turn), as the turn does for an update.
    """
    from nodes.telegram.reply import send_replies

    replies = _mode_switch(update)
    send_replies(update.origin, replies)
    return replies


mode_switch: Any = _mode_switch_said.to_prefect()
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
