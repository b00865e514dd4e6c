"""Runs started by hand from the Prefect UI: `grove serve` registers the flows as deployments
(the only place they are registered) and runs what ops start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]  # `grove serve` as a subprocess


def deployments(api: str) -> list[str]:
    found = httpx.post(f"{api}/deployments/filter", json={}, timeout=10).json()
    flows = {f["id"]: f["name"] for f in httpx.post(f"{api}/flows/filter", json={}, timeout=10).json()}
    return sorted(f"{flows[d['flow_id']]}/{d['name']}" for d in found)


def test_served_deployments_run_what_ops_start_by_hand(store: str, prefect_server: str, user_id: int) -> None:
    serve = subprocess.Popen([sys.executable, "-m", "grove.app.cli", "serve"], cwd=ROOT, env=dict(os.environ),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        expected = ["handle-update/grove", "ingest/grove", "mode-switch/grove"]
        while deployments(prefect_server) != expected and time.monotonic() < deadline:
            time.sleep(1)
        assert deployments(prefect_server) == expected  # these, and nothing else registers them

        update = {"origin": "console", "user_id": user_id, "chat_id": user_id, "callback_data": "documents"}
        run = run_deployment("handle-update/grove", parameters={"update": update}, timeout=0)
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline:
                state = client.read_flow_run(run.id).state
                if state is not None and state.is_final():
                    break
                time.sleep(1)
        assert state is not None and state.is_completed(), state
    finally:
        os.killpg(serve.pid, signal.SIGTERM)  # before the server goes (fixture order)
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)

    with psycopg.connect(store) as conn:
        mode = conn.execute("select current_mode from user_state where user_id = %s", (user_id,)).fetchone()
    assert mode == ("documents",)
