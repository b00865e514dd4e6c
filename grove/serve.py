"""`grove serve`: the project's flows as deployments served from this process.

Ops can start any of them from the Prefect UI; with GROVE_DISPATCH=deployment the
bot submits every update here instead of running it inline.
"""

from __future__ import annotations

from prefect import serve

from grove.dispatch import DEPLOYMENT


def serve_flows() -> None:
    from flows.handle_update import handle_update
    from flows.ingest import ingest
    from flows.mode_switch import mode_switch

    deployment_name = DEPLOYMENT.split("/", 1)[1]
    serve(
        handle_update.to_deployment(name=deployment_name, description=handle_update.__doc__),
        mode_switch.to_deployment(name=deployment_name, description=mode_switch.__doc__),
        ingest.to_deployment(name=deployment_name, description=ingest.__doc__),
        limit=8,
    )
