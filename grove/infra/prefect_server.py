"""A local Prefect server (API + UI) as a child process of `grove up`.

Started only when no PREFECT_API_URL is configured. Its state lives in the
project data dir, so flow-run history survives restarts.

It is Prefect's own app served by uvicorn the way `prefect server start --background` does,
with the event loop and HTTP parser named rather than left to whatever happens to be
installed, so every machine runs the same server: uvloop and httptools, which leaned cheaper
per recorded run than asyncio and h11 within this machine's noise (bench.prefect_record, `--servers`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from grove.infra.child_process import ChildProcess, ChildStartError


class PrefectServerError(RuntimeError):
    """The server did not become healthy; the message carries the tail of its log."""


@dataclass
class PrefectServer:
    home: Path
    port: int = 4200
    host: str = "127.0.0.1"
    pid_file: Path | None = None
    nice: int = 0
    database_url: str | None = None  # postgresql+asyncpg://…; None: SQLite in `home`
    loop: str = "uvloop"  # uvicorn's --loop
    http: str = "httptools"  # uvicorn's --http
    child: ChildProcess | None = field(default=None, init=False)

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api"

    @property
    def ui_url(self) -> str:
        return f"http://{self.host}:{self.port}"

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
            "PREFECT__SERVER_FINAL": "1",  # this app runs the server's services too (as the CLI's)
        }
        env.pop("PREFECT_API_URL", None)
        if self.database_url:
            env["PREFECT_API_DATABASE_CONNECTION_URL"] = self.database_url
        self.child = ChildProcess(
            "Prefect server",
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", self.host, "--port", str(self.port), "--timeout-keep-alive", "5",
             "--loop", self.loop, "--http", self.http, "--no-access-log"],
            log_file=self.home / "server.log", env=env, pid_file=self.pid_file, nice=self.nice,
        )
        self.child.start()
        try:
            self.child.wait_until(self.healthy, timeout)
        except ChildStartError as exc:
            raise PrefectServerError(str(exc)) from exc
        return self.api_url

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()
