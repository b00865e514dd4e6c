"""Servers `grove up` runs as children: started in their own session, stopped as a group.

An own session keeps Ctrl-C away from them (the terminal signals `grove up`
only), so `grove up` can stop them in order; stopping the whole process group
leaves no orphan behind (uvicorn workers, helper processes).

Each child may leave a pid file (pid, start time, command) in the data folder. After a
crash of `grove up` the next start reads them: a process is only ever treated as a
leftover of ours when its pid, start time and command line all match what was written,
so nobody else's process is touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil


def write_pid_file(path: Path, pid: int, command: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    started = psutil.Process(pid).create_time()
    path.write_text(json.dumps({"pid": pid, "started": started, "command": command}))


def process_from_pid_file(path: Path) -> psutil.Process | None:
    """The live process a pid file names, if it is still that very process; else None."""
    try:
        record = json.loads(path.read_text())
        process = psutil.Process(int(record["pid"]))
        if abs(process.create_time() - float(record["started"])) > 1:
            return None
        if process.cmdline()[: len(record["command"])] != record["command"]:
            return None
        return process if process.status() != psutil.STATUS_ZOMBIE else None
    except (OSError, ValueError, KeyError, psutil.Error):
        return None


def stop_group(process: psutil.Process, timeout: float = 5.0) -> None:
    """SIGTERM a leftover's process group, SIGKILL it after `timeout`."""
    try:
        group = os.getpgid(process.pid)
        os.killpg(group, signal.SIGTERM)
        try:
            process.wait(timeout)
        except psutil.TimeoutExpired:
            os.killpg(group, signal.SIGKILL)
            process.wait(5)
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, psutil.Error):
        pass


class ChildStartError(RuntimeError):
    """The child exited or never became healthy; the message ends with the tail of its log."""


class ChildProcess:
    def __init__(self, name: str, command: list[str], *, log_file: Path | None = None,
                 env: dict[str, str] | None = None, pid_file: Path | None = None, nice: int = 0) -> None:
        self.name = name
        self.command = command
        self.log_file = log_file
        self.env = env
        self.pid_file = pid_file
        self.nice = nice
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        nice = self.nice
        lower = (lambda: os.nice(nice)) if nice else None  # background work yields the CPU to answers
        if self.log_file is not None:
            self.log_file.parent.mkdir(parents=True, exist_ok=True)
            with self.log_file.open("ab") as log:
                self.process = subprocess.Popen(self.command, env=self.env, stdout=log, preexec_fn=lower,  # noqa: PLW1509 - os.nice only, before exec
                                                stderr=subprocess.STDOUT, start_new_session=True)
        else:
            self.process = subprocess.Popen(self.command, env=self.env, start_new_session=True,
                                            preexec_fn=lower)  # noqa: PLW1509 - os.nice only, before exec
        if self.pid_file is not None:
            write_pid_file(self.pid_file, self.process.pid, self.command)

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

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def describe_exit(self) -> str:
        """How it ended, for the console: the exit code and where its output went."""
        code = self.process.poll() if self.process is not None else None
        where = f", see {self.log_file}" if self.log_file is not None else ""
        return f"; exit code {code}{where}"

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the group, SIGKILL what is left after `timeout`."""
        if self.pid_file is not None:
            self.pid_file.unlink(missing_ok=True)
        if not self.is_running():
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
