"""A local Prefect server (API + UI) as a child process of `grove up`.

Started only when no PREFECT_API_URL is configured. Its state lives in the
project data dir, so flow-run history survives restarts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


class PrefectServerError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


@dataclass
class PrefectServer:
    home: Path
    port: int = 4200
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.home / "server.log"

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 90.0) -> str:
        """Start the server and wait until /api/health answers; returns the API URL."""
        if self.healthy():
            raise PrefectServerError(
                f"something already answers on {self.ui_url}: set PREFECT_API_URL to use it, "
                "or GROVE_PREFECT_PORT to start another"
            )
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PREFECT_HOME": str(self.home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_API_HOST": self.host,
            "PREFECT_SERVER_API_PORT": str(self.port),
            "PREFECT_UI_API_URL": self.api_url,
        }
        env.pop("PREFECT_API_URL", None)
        log = self.log_file.open("ab")
        # Own session: Ctrl-C reaches `grove up` only, which stops us after the bot.
        self.process = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", self.host,
             "--port", str(self.port), "--analytics-off"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PrefectServerError(f"Prefect server exited at start:\n{self._tail()}")
            if self.healthy():
                return self.api_url
            time.sleep(0.5)
        self.stop()
        raise PrefectServerError(f"Prefect server not healthy after {timeout:.0f} s:\n{self._tail()}")

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the whole process group (uvicorn and its services), then SIGKILL if needed."""
        if self.process is None or self.process.poll() is not None:
            return
        pgid = os.getpgid(self.process.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.process.wait(5)
        _reap_group(pgid)

    def _tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def _reap_group(pgid: int) -> None:
    """Kill anything left in the group (children that outlived the leader)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
