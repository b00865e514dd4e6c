"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Where the LLM's words must be fixed, a test scripts them: each request to
`/v1/chat/completions` is answered by the next scripted step (a text answer, a
tool call, an HTTP error, or a function of the request). Every request is
recorded so tests can assert what the flow sent (history, tools, messages).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Body = dict[str, Any]
Step = Callable[[Body], "Response"]


@dataclass
class Response:
    status: int = 200
    body: Body = field(default_factory=dict)
    delay: float = 0.0


def text(content: str) -> Step:
    return lambda request: Response(body=_completion({"role": "assistant", "content": content}, "stop"))


def tool_call(arguments: str | Body, name: str = "rag-db-query", *, count: int = 1) -> Step:
    """A tool call; `arguments` may be a malformed string on purpose. `count` > 1 asks for several."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": raw}}
             for i in range(count)]
    return lambda request: Response(
        body=_completion({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"))


def error(status: int, message: str = "scripted failure") -> Step:
    return lambda request: Response(status=status, body={"error": {"message": message}})


def slow(seconds: float, then: Step) -> Step:
    def step(request: Body) -> Response:
        response = then(request)
        response.delay = seconds
        return response

    return step


def _completion(message: Body, finish_reason: str) -> Body:
    return {
        "id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": "scripted", "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class ScriptedLLM:
    """`with ScriptedLLM([tool_call({...}), text("…")]) as llm:` then point the settings at llm.base_url."""

    def __init__(self, steps: list[Step] | None = None, *, default: Step | None = None) -> None:
        self.steps: list[Step] = list(steps or [])
        self.default = default
        self.requests: list[Body] = []
        self._lock = threading.Lock()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"]),
                                Route("/v1/models", self._models)])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                     log_level="warning", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *steps: Step) -> None:
        with self._lock:
            self.steps.extend(steps)

    async def _models(self, request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def _complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            step = self.steps.pop(0) if self.steps else self.default
        if step is None:
            return JSONResponse({"error": {"message": "no scripted step left"}}, status_code=400)
        response = step(body)
        if response.delay:
            import asyncio

            await asyncio.sleep(response.delay)
        return JSONResponse(response.body, status_code=response.status)

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted LLM did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(5)
