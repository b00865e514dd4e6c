"""`grove up` as a user runs it: embedded Postgres + Prefect + served flows + console, then Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.support.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]  # grove up as a subprocess
# Library noise a user must not read: weight-loading bars, Prefect's and llama.cpp's warnings, tracebacks.
NOISE = re.compile(r"Loading weights|without a flow run id|n_ctx_seq|Traceback|UserWarning|it/s\]")


class Up:
    """A `grove up` child process whose output is read line by line in the background."""

    def __init__(self, data_dir: Path, pg_port: int, prefect_port: int) -> None:
        env = {k: v for k, v in os.environ.items()
               if k not in {"PREFECT_API_URL", "DATABASE_URL", "TELEGRAM_BOT_TOKEN", "PREFECT_HOME"}}
        env.update(GROVE_DATA_DIR=str(data_dir), GROVE_PG_PORT=str(pg_port),
                   GROVE_PREFECT_PORT=str(prefect_port), PYTHONUNBUFFERED="1")
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grove.app.cli", "up"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env, text=True, bufsize=1,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def expect(self, text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            self.seen.append(f"{time.monotonic():.1f} {line}")
            if text in line:
                return line
        raise AssertionError(f"{text!r} not seen; output so far:\n{''.join(self.seen)}")

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def family(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(90)
        except subprocess.TimeoutExpired:  # a hung stop: every thread's stack (faulthandler), then kill
            self.process.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.process.kill()
            code = self.process.wait(30)
        if code != 0:  # what it said on the way out, for the failure report
            time.sleep(0.5)
            while not self.lines.empty():
                self.seen.append(self.lines.get())
            print("".join(self.seen[-200:]))
        return code


def _postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postgres" / "data" / "postmaster.pid").read_text().splitlines()[0])


def test_up_runs_the_flows_and_stops_cleanly_keeping_data() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="grove-up-"))
    data_dir.chmod(0o755)
    pg_port, prefect_port = free_port(), free_port()

    first = Up(data_dir, pg_port, prefect_port)
    first.expect("ready in")
    first.expect("TELEGRAM_BOT_TOKEN is not set")
    first.type("/start")
    first.expect("Выберите режим работы")
    first.type("Чат")  # press the button by its label
    first.expect("Режим «Чат» включён")
    postmaster = psutil.Process(_postmaster_pid(data_dir))
    children = first.family()
    named = {p.pid: " ".join(p.cmdline())[:160] for p in children}
    assert any("prefect.server.api.server:create_app" in line for line in named.values())
    # `grove ask` beside a running `grove up` uses its Postgres, Prefect and local model: it starts
    # none of its own (they would not get the ports) and stops none of those when it ends.
    asked = subprocess.run([sys.executable, "-m", "grove.app.cli", "ask", "Ответь одним словом: как по-русски cat?",
                            "--user", "5"], env=first.env, capture_output=True, text=True, timeout=280,
                           check=False)
    assert asked.returncode == 0 and asked.stdout.strip(), asked.stdout + asked.stderr
    assert not NOISE.search(asked.stdout + asked.stderr), asked.stdout + asked.stderr
    assert postmaster.is_running()
    assert [named[p.pid] for p in children if not p.is_running()] == [], (named, "".join(first.seen[-40:]))
    assert {p.pid for p in children} <= {p.pid for p in first.family()}
    assert first.interrupt() == 0
    for process in [postmaster, *children]:
        assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE, process

    second = Up(data_dir, pg_port, prefect_port)  # a restart keeps everything
    second.expect("ready in")
    second.type("/clean_chat")
    second.expect("История чата очищена")
    second.type("Привет! Ответь одним словом: как по-русски cat?")  # chat mode, kept from the first run
    reply = second.expect("🤖", timeout=240)  # answered by the offline default LLM
    assert "Сначала выберите режим" not in reply
    assert second.interrupt() == 0
    console = "".join(second.seen) + "".join(second.lines.queue)
    assert not NOISE.search(console), console  # the console user reads grove, not its libraries


def test_up_after_kill_9_takes_over_or_stops_the_leftovers_and_stops_everything() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="grove-up-crash-"))
    data_dir.chmod(0o755)
    pg_port, prefect_port = free_port(), free_port()

    crashed = Up(data_dir, pg_port, prefect_port)
    crashed.expect("ready in")
    leftovers = crashed.family()
    postmaster = psutil.Process(_postmaster_pid(data_dir))
    crashed.process.kill()  # kill -9: nothing of grove up's own cleanup runs
    crashed.process.wait(10)
    assert all(p.is_running() for p in leftovers)  # its servers live on

    second = Up(data_dir, pg_port, prefect_port)  # refused before: "something already answers"
    second.expect("taking over the Prefect server")
    second.expect("ready in")
    second.type("/start")
    second.expect("Выберите режим работы")
    started_by_second = second.family()
    started = time.monotonic()
    assert second.interrupt() == 0
    print(f"Ctrl-C stopped grove up in {time.monotonic() - started:.1f} s")
    for process in [postmaster, *leftovers, *started_by_second]:
        assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE, process


def test_a_second_up_on_the_same_data_is_refused_while_the_first_runs() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="grove-up-twice-"))
    data_dir.chmod(0o755)
    first = Up(data_dir, free_port(), free_port())
    first.expect("ready in")
    second = Up(data_dir, free_port(), free_port())
    second.expect("already running")
    assert second.process.wait(30) != 0
    assert first.interrupt() == 0


def test_an_embedded_postgres_that_dies_is_restarted_and_the_service_goes_on() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="grove-up-pg-"))
    data_dir.chmod(0o755)
    up = Up(data_dir, free_port(), free_port())
    up.expect("ready in")
    up.type("/start")
    up.expect("Выберите режим работы")
    os.kill(_postmaster_pid(data_dir), signal.SIGKILL)  # Postgres dies under the running service
    up.expect("Postgres stopped unexpectedly; restarting it", timeout=60)
    up.expect("Postgres is back", timeout=120)
    up.type("/start")
    up.expect("Выберите режим работы")
    assert up.interrupt() == 0


def test_a_worker_or_flow_server_that_dies_is_said_and_started_again() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="grove-up-child-"))
    data_dir.chmod(0o755)
    up = Up(data_dir, free_port(), free_port())
    up.expect("ready in")
    for name, pid_file in [("worker", data_dir / "run" / "worker.pid"), ("served flows", data_dir / "run" / "serve.pid")]:
        dead = json.loads(pid_file.read_text())["pid"]
        os.kill(dead, signal.SIGKILL)  # the child dies under the running service
        said = up.expect(f"{name} stopped unexpectedly; restarting it", timeout=60)
        assert "exit code -9" in said, said
        up.expect(f"{name} is back", timeout=60)
        again = json.loads(pid_file.read_text())["pid"]
        assert again != dead and again in {p.pid for p in up.family()}
    assert up.interrupt() == 0
