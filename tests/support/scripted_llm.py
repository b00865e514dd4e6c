"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Where the LLM's words must be fixed, a test scripts them: each request to
`/v1/chat/completions` is answered by the next scripted step (a text answer, a
tool call, an HTTP error, or a function of the request). Every request is
recorded so tests can assert what the flow sent (history, tools, messages).

A request with `"stream": true` is answered as llama-cpp-python's server answers it:
server-sent events, one `chat.completion.chunk` per word, then `[DONE]`; a client that
goes away stops the stream, and the pieces never sent are counted in `abandoned`.

A request for log-probabilities (`"logprobs": true`, as `nodes.answering.llm.yes_probability` asks
whether passages answer) takes no step: it is answered «да» with the odds `judge` gives (a number or a
function of the request), with none when `judge` is None (an endpoint without log-probabilities), and
recorded in `judgments`.

Raw completions (`/v1/completions`, a prompt instead of messages) take the same steps; their
text is cut as llama.cpp cuts it: before the first `stop` string (finish "stop"), or after
`max_tokens` pieces, a word counting as a token (finish "length").
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

Body = dict[str, Any]
Step = Callable[[Body], "Response"]


@dataclass
class Response:
    status: int = 200
    body: Body = field(default_factory=dict)
    delay: float = 0.0
    piece_delay: float = 0.0  # between streamed pieces


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


def _timed(then: Step, **timing: float) -> Step:
    def step(request: Body) -> Response:
        response = then(request)
        for name, seconds in timing.items():
            setattr(response, name, seconds)
        return response

    return step


def slow(seconds: float, then: Step) -> Step:
    """`then`, answered after `seconds`."""
    return _timed(then, delay=seconds)


def trickle(seconds: float, then: Step) -> Step:
    """`then`, streamed with `seconds` between its pieces (a slow local model)."""
    return _timed(then, piece_delay=seconds)


def _completion(message: Body, finish_reason: str) -> Body:
    return {
        "id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
        "model": "scripted", "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _as_text_completion(body: Body, request: Body) -> Body:
    """A scripted chat answer as a raw completion of `request`: cut at its stops or token limit."""
    choice = body["choices"][0]
    content = choice["message"].get("content") or ""
    finish = choice["finish_reason"]
    stops = [s for s in request.get("stop") or [] if s in content]
    if stops:
        content, finish = content[:min(content.index(s) for s in stops)], "stop"
    words = content.split(" ")
    limit = request.get("max_tokens")
    if limit and len(words) > limit:
        content, finish = " ".join(words[:limit]), "length"
    return {**body, "object": "text_completion",
            "choices": [{"index": 0, "text": content, "finish_reason": finish}]}


class ScriptedLLM:
    """`with ScriptedLLM([tool_call({...}), text("…")]) as llm:` then point the settings at llm.base_url."""

    def __init__(self, steps: list[Step] | None = None, *, default: Step | None = None,
                 judge: float | Callable[[Body], float] | None = None) -> None:
        self.steps: list[Step] = list(steps or [])
        self.default = default
        self.judge = judge
        self.judgments: list[Body] = []
        self.requests: list[Body] = []
        self.abandoned: list[int] = []  # per stream the client left: pieces never sent
        self.abandoned_at: list[float] = []  # when (wall clock) each of those streams ended
        self._lock = threading.Lock()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"]),
                                Route("/v1/completions", self._complete, methods=["POST"]),
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

    async def _complete(self, request: Request) -> JSONResponse | StreamingResponse:
        body = await request.json()
        if body.get("logprobs"):
            return JSONResponse(self._judged(body))
        with self._lock:
            self.requests.append(body)
            step = self.steps.pop(0) if self.steps else self.default
        if step is None:
            return JSONResponse({"error": {"message": "no scripted step left"}}, status_code=400)
        response = step(body)
        raw = request.url.path.endswith("/v1/completions")
        if raw and response.status == 200:
            response.body = _as_text_completion(response.body, body)
        if response.delay:
            import asyncio

            await asyncio.sleep(response.delay)
        if body.get("stream") and response.status == 200:
            return StreamingResponse(self._events(request, response), media_type="text/event-stream")
        return JSONResponse(response.body, status_code=response.status)

    def _judged(self, body: Body) -> Body:
        """A one-token «да» with the odds of «да» and «нет» as llama-cpp-python's server sends them."""
        with self._lock:
            self.judgments.append(body)
        answer = _completion({"role": "assistant", "content": "да"}, "length")
        odds = self.judge(body) if callable(self.judge) else self.judge
        if odds is not None:
            likeliest = [{"token": "да", "logprob": math.log(max(odds, 1e-9))},
                         {"token": "нет", "logprob": math.log(max(1 - odds, 1e-9))}]
            answer["choices"][0]["logprobs"] = {"content": [{"token": "да", "logprob": likeliest[0]["logprob"],
                                                             "top_logprobs": likeliest}]}
        return answer

    async def _events(self, request: Request, response: Response):  # noqa: ANN202 - async iterator
        import asyncio

        choice = response.body["choices"][0]
        raw = "text" in choice
        words = ((choice["text"] if raw else choice["message"].get("content")) or "").split(" ")
        pieces: list[Any] = [w if i == 0 else f" {w}" for i, w in enumerate(words)]
        calls = [] if raw else choice["message"].get("tool_calls") or []
        if calls:  # as OpenAI streams them: index, id and name first, then the arguments in pieces
            pieces = [{"index": i, "id": c["id"], "type": "function",
                       "function": {"name": c["function"]["name"], "arguments": ""}} for i, c in enumerate(calls)]
            pieces += [{"index": i, "function": {"arguments": c["function"]["arguments"][at:at + 8]}}
                       for i, c in enumerate(calls) for at in range(0, len(c["function"]["arguments"]), 8)]
        sent = 0
        try:
            for sent, piece in enumerate(pieces):
                if sent and response.piece_delay:
                    await asyncio.sleep(response.piece_delay)
                if await request.is_disconnected():
                    return
                last = sent == len(pieces) - 1
                finish = choice["finish_reason"] if last else None
                delta = {"tool_calls": [piece]} if calls else {"content": piece}
                chunk = ({"id": "cmpl-stream", "object": "text_completion", "model": "scripted",
                          "choices": [{"index": 0, "text": piece, "finish_reason": finish}]} if raw else
                         {"id": "chatcmpl-stream", "object": "chat.completion.chunk", "model": "scripted",
                          "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            sent = len(pieces)
            yield "data: [DONE]\n\n"
        finally:  # cancelled by Starlette when the client goes away, or returned above
            if sent < len(pieces):
                self.abandoned.append(len(pieces) - sent)
                self.abandoned_at.append(time.time())

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


VOCABULARY = ("малина солнце почва полив куст побег ягода корень лист мульча азот калий фосфор весна лето "
              "осень обрезка подкормка сорт урожай шпалера тень ветер торф перегной компост").split()


def varied_answer(seed: int, paragraphs: int, sentences: int, words: int) -> str:
    """A long answer of numbered paragraphs of random sentences: one sentence said hundreds of
    times would be a degenerate draft (nodes/answering/answer_check.py), so the words vary."""
    import random

    pick = random.Random(seed).choice
    return "\n\n".join(
        f"{n}. " + " ".join(" ".join([pick(VOCABULARY).capitalize()] + [pick(VOCABULARY) for _ in range(words - 1)]) + "."
                            for _ in range(sentences))
        for n in range(paragraphs))
