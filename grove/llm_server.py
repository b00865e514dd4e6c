"""The local LLM: llama-cpp-python's OpenAI-compatible server as a child process.

Used when no LLM API key is configured, so the project answers fully offline.
The model (Qwen2.5-Coder-1.5B-Instruct, GGUF) is loaded once, by this server.
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


class LocalLLMError(RuntimeError):
    """The local server could not start; the message says why."""


@dataclass
class LocalLLMServer:
    model_path: Path
    port: int
    log_file: Path
    context: int = 4096
    threads: int = 2
    host: str = "127.0.0.1"
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start(self, timeout: float = 180.0) -> str:
        if not self.model_path.is_file():
            raise LocalLLMError(
                f"the local model {self.model_path} is missing: run `make models` "
                "(or set GROVE_LLM_API_KEY / OPENROUTER_API_KEY to use a remote model)"
            )
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
             "--chat_format", "chatml-function-calling", "--n_ctx", str(self.context),
             "--n_threads", str(self.threads), "--host", self.host, "--port", str(self.port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalLLMError(f"the local LLM server exited:\n{self._tail()}")
            if self.healthy():
                return self.base_url
            time.sleep(0.5)
        self.stop()
        raise LocalLLMError(f"the local LLM server did not answer within {timeout:.0f} s:\n{self._tail()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        pgid = os.getpgid(self.process.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.process.wait(5)

    def _tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
