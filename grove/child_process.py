"""Servers `grove up` runs as children: started in their own session, stopped as a group.

An own session keeps Ctrl-C away from them (the terminal signals `grove up`
only), so `grove up` can stop them in order; stopping the whole process group
leaves no orphan behind (uvicorn workers, helper processes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


class ChildStartError(RuntimeError):
    """The child exited or never became healthy; the message ends with the tail of its log."""


class ChildProcess:
    def __init__(self, name: str, command: list[str], *, log_file: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.command = command
        self.log_file = log_file
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with self.log_file.open("ab") as log:
                self.process = subprocess.Popen(self.command, env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
        else:
            self.process = subprocess.Popen(self.command, env=self.env, start_new_session=True)

    def wait_until(self, healthy: Callable[[], bool], timeout: float) -> None:
        """Poll `healthy` until it says yes; stop the child and raise if it dies or times out."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ChildStartError(f"{self.name} exited at start:\n{self.tail()}")
            if healthy():
                return
            time.sleep(0.5)
        self.stop()
        raise ChildStartError(f"{self.name} not ready after {timeout:.0f} s:\n{self.tail()}")

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the group, SIGKILL what is left after `timeout`."""
        if not self.running():
            return
        assert self.process is not None
        group = os.getpgid(self.process.pid)
        os.killpg(group, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            self.process.wait(5)
        try:
            os.killpg(group, signal.SIGKILL)  # children that outlived the leader
        except ProcessLookupError:
            pass

    def tail(self, lines: int = 40) -> str:
        if self.log_file is None:
            return "(output not captured)"
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
