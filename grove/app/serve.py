"""`grove serve`: the project's flows as Prefect deployments served from this process.

Ops can start any of them from the Prefect UI (each run in a process of its own, as Prefect's
runner does). This is the one place the deployments are registered; the bot's own turns never
go through them (scale-out runs them on task workers: grove/app/engine.py). The objects below
are real Prefect flows; run by Prefect's engine, their stages attach to its flow run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from prefect import flow

from flows.ingest import IngestOutcome, ingest as _ingest
from flows.mode_switch import mode_switch as _mode_switch
from grove.core.ingest_types import IngestItem
from grove.core.messages import IncomingUpdate, Reply
from grove.core.observe import flow as observed_flow

if TYPE_CHECKING:
    from prefect.deployments.runner import RunnerDeployment

DEPLOYMENT_NAME = "grove"


@flow(name="handle-update", persist_result=False)
def handle_update(update: IncomingUpdate) -> list[Reply]:
    """The main workflow; one run per Telegram update, routed by user_state.current_mode."""
    from grove.app.dispatch import process
    from grove.core.settings import get_settings
    from nodes.telegram.reply import opened

    with opened(get_settings()) as sender:
        return process(update, sender)




@observed_flow(name="mode-switch", flow_run_name="mode-switch-user{update.user_id}")
def _mode_switch_said(update: IncomingUpdate) -> list[Reply]:
    """/start shows the menu; a press on «Чат» / «База» stores the mode and confirms it.

    Run by itself (from the UI) there is no turn around it, so this entry point opens a sender
    and sends what the flow returns at once (`send_replies` outside a turn), as the turn does for an update.
    """
    from grove.core.settings import get_settings
    from nodes.telegram.reply import opened, send_replies

    with opened(get_settings()) as sender:
        replies = _mode_switch(update, sender)
        send_replies(update.origin, replies, sender)
    return replies


@observed_flow(name="ingest", flow_run_name=_ingest.flow_run_name)
def _ingest_said(items: list[IngestItem], owner_id: int, subcategory: str | None = None,
                 job_id: int | None = None, pending: bool = False) -> list[IngestOutcome]:
    """Index the items into the owner's base, each a parallel branch; the run is Failed (with the reasons)
    if any item failed. Files users sent to the bot are downloaded by this run's own Bot."""
    from grove.core.settings import get_settings
    from nodes.telegram.reply import opened

    settings = get_settings()
    with opened(settings) as sender:
        return _ingest.fn(items, owner_id, subcategory, job_id, pending, files=sender.api, settings=settings)


mode_switch: Any = _mode_switch_said.to_prefect()
ingest: Any = _ingest_said.to_prefect()


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
