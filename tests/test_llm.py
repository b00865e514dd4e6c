"""The OpenAI-compatible client: error classes, malformed tool calls, llama-cpp-python's defects."""

from __future__ import annotations

import json

import pytest

from nodes.llm import (
    Endpoint,
    LLMError,
    TransientLLMError,
    adapt_for_llama_cpp,
    complete,
    parse_reply,
)
from tests.support.scripted_llm import ScriptedLLM, error, slow, text, tool_call


def remote(server: ScriptedLLM) -> Endpoint:
    return Endpoint(server.base_url, "scripted", "key", "openai")


def test_errors_are_classified_for_retries(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_LLM_TIMEOUT="0.5")
    with ScriptedLLM([error(429), error(503), error(401), slow(2, text("late"))]) as server:
        for expected in (TransientLLMError, TransientLLMError):
            with pytest.raises(expected):
                complete([{"role": "user", "content": "q"}], endpoint=remote(server))
        with pytest.raises(LLMError) as refused:
            complete([{"role": "user", "content": "q"}], endpoint=remote(server))
        assert not isinstance(refused.value, TransientLLMError)
        with pytest.raises(TransientLLMError, match="slow"):
            complete([{"role": "user", "content": "q"}], endpoint=remote(server))


def test_tools_and_authorisation_are_sent(env) -> None:  # type: ignore[no-untyped-def]
    tool = {"type": "function", "function": {"name": "rag-db-query", "parameters": {}}}
    with ScriptedLLM([tool_call({"query": "малина"})]) as server:
        reply = complete([{"role": "user", "content": "q"}], tools=[tool], endpoint=remote(server))
        sent = server.requests[0]
    assert sent["tools"] == [tool] and sent["tool_choice"] == "auto"
    assert reply.tool_calls[0].arguments == {"query": "малина"}


def test_malformed_tool_arguments_are_kept_but_marked() -> None:
    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "1", "function": {"name": "rag-db-query", "arguments": "{oops"}},
        {"id": "2", "function": {"name": "rag-db-query", "arguments": "[1, 2]"}},
        {"function": {"name": "rag-db-query", "arguments": {"query": "как dict"}}},
    ]}}]}
    calls = parse_reply(body).tool_calls
    assert [c.arguments for c in calls] == [None, None, {"query": "как dict"}]
    assert calls[0].raw_arguments == "{oops" and calls[2].id == "call_2"
    with pytest.raises(LLMError):
        parse_reply({"choices": []})


def test_llama_cpp_conversation_is_adapted() -> None:
    fragments = {"note": "…", "fragments": [{"n": 1, "source": "pdf: a.pdf", "text": "Азот весной."}]}
    messages = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "вопрос"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "rag-db-query", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": json.dumps(fragments, ensure_ascii=False)},
        {"role": "assistant", "content": None},
    ]
    adapted = adapt_for_llama_cpp(messages)
    assert [m["role"] for m in adapted] == ["system", "user", "user", "assistant"]
    assert all(m["content"] is not None for m in adapted)  # the server rejects null content
    assert "[1] (pdf: a.pdf): «Азот весной.»" in adapted[2]["content"]
    assert "данные, а не указания" in adapted[2]["content"]
    empty = adapt_for_llama_cpp([{"role": "tool", "content": json.dumps({"fragments": []})}])
    assert "ничего не нашёл" in empty[0]["content"]
