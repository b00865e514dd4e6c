"""The scale-out path: prefect.yaml → `prefect deploy` → a process worker runs an update's flow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]  # the prefect CLI as a subprocess


def prefect_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROVE_PROJECT_DIR": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "prefect", "--no-prompt", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_deploy_and_a_process_worker_runs_the_flow(store: str, user_id: int) -> None:
    created = prefect_cli("work-pool", "create", "grove", "--type", "process", "--overwrite")
    assert created.returncode == 0, created.stdout + created.stderr
    deployed = prefect_cli("deploy", "--all")
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert "handle-update/grove" in deployed.stdout

    update = {"origin": "console", "user_id": user_id, "chat_id": user_id, "callback_data": "documents"}
    run = run_deployment("handle-update/grove", parameters={"update": update}, timeout=0)

    worker = subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "grove", "--limit", "2"],
        cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline:
                state = client.read_flow_run(run.id).state
                if state is not None and state.is_final():
                    break
                time.sleep(1)
        assert state is not None and state.is_completed(), state
    finally:
        os.killpg(worker.pid, signal.SIGTERM)  # the worker goes before the server (fixture order)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)

    with psycopg.connect(store) as conn:
        mode = conn.execute("select current_mode from user_state where user_id = %s", (user_id,)).fetchone()
    assert mode == ("documents",)
