"""The local LLM: llama-cpp-python's OpenAI-compatible server as a child process (`grove.infra.llm_serve`).

Used when no LLM API key is configured, so the project answers fully offline.
The model (Qwen2.5-Coder-1.5B-Instruct, GGUF) is loaded once, by this server.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from grove.infra.child_process import ChildProcess, ChildStartError


class LocalLLMError(RuntimeError):
    """The local server could not start; the message says why."""


@dataclass
class LocalLLMServer:
    model_path: Path
    port: int
    log_file: Path
    context: int = 4096
    threads: int = 2
    gpu_layers: int = 0
    host: str = "127.0.0.1"
    pid_file: Path | None = None
    nice: int = 0
    draft: str = ""  # "prompt-lookup-decoding": speculative decoding from the prompt's own n-grams
    draft_tokens: int = 10
    chat_format: str = "chatml"  # not `chatml-function-calling`: its template escapes messages as HTML
    module: str = "grove.infra.llm_serve"  # llama_cpp.server with threads that make room for other work
    child: ChildProcess | None = field(default=None, init=False)

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
        self.child = ChildProcess(
            "local LLM server",
            [sys.executable, "-m", self.module, "--model", str(self.model_path),
             "--chat_format", self.chat_format, "--n_ctx", str(self.context),
             "--n_threads", str(self.threads), "--n_gpu_layers", str(self.gpu_layers),
             "--host", self.host, "--port", str(self.port),
             # A streamed answer is cut when another request waits, unless this is off; grove
             # streams every plain answer so that an abandoned one stops (nodes/answering/llm.py).
             "--interrupt_requests", "False", *self.draft_arguments()],
            log_file=self.log_file, pid_file=self.pid_file, nice=self.nice,
        )
        self.child.start()
        try:
            self.child.wait_until(self.healthy, timeout)
        except ChildStartError as exc:
            raise LocalLLMError(str(exc)) from exc
        return self.base_url

    def draft_arguments(self) -> list[str]:
        if not self.draft:
            return []
        return ["--draft_model", self.draft, "--draft_model_num_pred_tokens", str(self.draft_tokens)]

    @property
    def device(self) -> str:
        """Where the model runs, as announced at start."""
        if self.gpu_layers == 0:
            return f"CPU, {self.threads} threads"
        return f"GPU, {'all' if self.gpu_layers < 0 else self.gpu_layers} layers offloaded"

    def stop(self) -> None:
        if self.child is not None:
            self.child.stop()
