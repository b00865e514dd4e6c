"""A local answer asked in two parts: the opening from the passages, the rest continuing it.

The scripted local server answers raw completions as llama.cpp does (cut at a stop string or the
token limit); what each request carried is checked: the opening's prompt, the rest's prompt
beginning with the opening's and ending with the opening itself, and what the draft showed.
"""

from __future__ import annotations

import pytest

from grove.core.settings import get_settings
from nodes.answering.llm import ChatModel, Decoding, Endpoint, LLMError, chatml, complete_text, llm_text_task
from nodes.answering.opening import TOKENS_PER_WORD, opened
from tests.support.scripted_llm import ScriptedLLM, text, trickle

RULES = "Ты — ассистент. Отвечай по фрагментам."
PASSAGES = "\nФрагменты:\n[2] (док.pdf) «Малину весной подкармливают азотом.»\n"
WHOLE = PASSAGES + "Те же фрагменты целиком:\n[1] (док.pdf) «Осенью срезают побеги.»\n[2] (док.pdf) «Малину весной " \
                   "подкармливают азотом: 15 г мочевины на метр.»\n"
QUESTION = {"role": "user", "content": "Чем подкормить малину весной?"}
FIRST = [{"role": "system", "content": RULES + PASSAGES}, QUESTION]
WHOLE_REQUEST = [{"role": "system", "content": RULES + WHOLE}, QUESTION]


@pytest.fixture
def server(env):  # type: ignore[no-untyped-def]
    with ScriptedLLM() as llm:
        env(GROVE_LOCAL_LLM_URL=llm.base_url, GROVE_LLM_RETRIES="0")
        yield llm


def shown_by(call):  # type: ignore[no-untyped-def]
    """What the draft handed to `call(show)` was shown."""
    seen: list[str] = []
    return call(seen.append), seen


def test_the_rest_continues_the_first_words_from_the_whole_fragments(server: ScriptedLLM) -> None:
    server.script(text("Весной малину подкармливают азотом [2]. Это важно для роста."),
                  trickle(0.01, text(" азотом: 15 г мочевины на метр [2].")))
    reply, seen = shown_by(lambda show: opened(FIRST, WHOLE_REQUEST, Decoding(max_tokens=120), words=3, ask=llm_text_task(get_settings()), show=show))
    opening_request, rest_request = server.requests
    assert opening_request["prompt"] == chatml(FIRST)  # one passage, not the fragments
    assert "целиком" not in opening_request["prompt"]
    assert opening_request["max_tokens"] == 3 * TOKENS_PER_WORD + 4 and opening_request["stream"] is True
    # The rest's prompt begins as the opening's did, up to the passage (the server's prefix cache
    # keeps it), then reads the fragments whole, and ends with the answer's first words.
    shared = chatml(FIRST).index(PASSAGES) + len(PASSAGES)
    assert rest_request["prompt"][:shared] == opening_request["prompt"][:shared]
    assert rest_request["prompt"] == chatml(WHOLE_REQUEST, prefill="Весной малину подкармливают")
    assert rest_request["prompt"].endswith("<|im_start|>assistant\nВесной малину подкармливают")
    assert rest_request["stop"] == ["<|im_end|>"]
    assert reply.content == "Весной малину подкармливают азотом: 15 г мочевины на метр [2]."
    # The draft showed the kept words at once (none of the words cut off), then the answer growing after them.
    assert seen[0] == "Весной малину подкармливают"
    assert all(s.startswith("Весной малину подкармливают") for s in seen) and seen[-1] == reply.content
    assert not any("Это важно" in s for s in seen)


def test_the_answers_token_limit_is_shared_by_its_two_parts(server: ScriptedLLM) -> None:
    server.script(text("Весной малину подкармливают азотом [2]."), text(" азотом."))
    opened(FIRST, WHOLE_REQUEST, Decoding(max_tokens=100), words=3, ask=llm_text_task(get_settings()))
    assert 85 <= server.requests[1]["max_tokens"] < 100


def test_the_opening_never_takes_the_models_last_word(server: ScriptedLLM) -> None:
    server.script(text("Азотом [2]."), text(" [2], весной."))
    reply = opened(FIRST, WHOLE_REQUEST, None, words=6, ask=llm_text_task(get_settings()))
    assert server.requests[1]["prompt"].endswith("assistant\nАзотом")  # the rest still has to be written
    assert reply.content == "Азотом [2], весной."


def test_a_refusing_opening_is_dropped_and_the_answer_asked_from_its_start(server: ScriptedLLM) -> None:
    server.script(text("В ваших документах об этом не сказано."), text("Весной азотом: 15 г мочевины [2]."))
    reply, seen = shown_by(lambda show: opened(FIRST, WHOLE_REQUEST, None, words=6, ask=llm_text_task(get_settings()), show=show))
    assert server.requests[1]["prompt"] == chatml(WHOLE_REQUEST)  # begun from nothing
    assert reply.content == "Весной азотом: 15 г мочевины [2]."
    assert not any("не сказано" in s or s.startswith("В ваших") for s in seen)


def test_the_raw_prompt_is_the_servers_template_unescaped_and_defused() -> None:
    prompt = chatml([{"role": "system", "content": "Нажмите <Ctrl>+\"S\" & <|im_end|>"},
                     {"role": "user", "content": "Как?"}], prefill="Наж")
    assert prompt == ("<|im_start|>system\nНажмите <Ctrl>+\"S\" & <im_end><|im_end|>\n"
                      "<|im_start|>user\nКак?<|im_end|>\n<|im_start|>assistant\nНаж")


def test_raw_completions_are_asked_of_the_local_model_only(env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LLMError, match="local model only"):
        complete_text("x", ChatModel(get_settings(), Endpoint("http://127.0.0.1:9/v1", "m", "key", "openai")))
