"""After start, what a first turn waits for is loaded in the background (grove/app/warm.py)."""

from __future__ import annotations

from grove.core.settings import get_settings
import pytest

pytestmark = [pytest.mark.models]


def test_warm_up_loads_the_vocabulary_the_morphology_and_the_query_embedder() -> None:
    from grove.app.warm import warm_up
    from nodes.answering import token_budget
    from nodes.embedding import embedder
    from nodes.retrieval import lexical

    embedder.reset_embedder()
    token_budget._vocabulary.cache_clear()
    lexical._morph.cache_clear()
    warm_up()
    assert token_budget._vocabulary.cache_info().currsize == 1
    assert lexical._morph.cache_info().currsize == 1
    assert embedder._instance is not None


def test_loading_the_vocabulary_leaves_stdout_to_the_console() -> None:
    """The warm-up runs beside the console: loading the vocabulary must not point stdout at
    /dev/null meanwhile (llama-cpp-python does so with verbose=False), or replies vanish."""
    import sys
    import threading

    from nodes.answering import token_budget

    token_budget._vocabulary.cache_clear()
    token_budget._count.cache_clear()
    console = sys.stdout
    swapped: list[object] = []
    loading = threading.Thread(target=token_budget.count_tokens, args=("прогрев",))
    loading.start()
    while loading.is_alive():
        if sys.stdout is not console:
            swapped.append(sys.stdout)
    loading.join()
    assert token_budget._vocabulary.cache_info().currsize == 1
    assert swapped == []


def test_a_stopping_process_ends_the_warm_up_between_steps_and_waits_for_the_step_in_flight() -> None:
    """Ctrl-C while the warm-up loads: the step loading native code finishes (an ONNX session or the
    vocabulary half-built when the interpreter finalises aborts the process), no further step starts."""
    import threading

    from grove.app import warm
    from grove.core import shutdown
    from nodes.answering import token_budget
    from nodes.retrieval import lexical

    token_budget._vocabulary.cache_clear()
    token_budget._count.cache_clear()
    lexical._morph.cache_clear()
    loading = threading.Event()
    original = token_budget._vocabulary

    def slow_vocabulary(path: str) -> object:
        loading.set()
        shutdown.request()  # the stop comes while the first step is loading
        return original(path)

    token_budget._vocabulary = slow_vocabulary  # type: ignore[assignment]
    try:
        thread = warm.start()
        assert loading.wait(60)
        warm.settle(thread, timeout=120)
        assert not thread.is_alive()
        assert lexical._morph.cache_info().currsize == 0  # the morphology step never started
    finally:
        token_budget._vocabulary = original  # type: ignore[assignment]
        shutdown.reset()


def test_the_local_model_is_timed_at_start_on_the_answers_own_beginning(env) -> None:  # type: ignore[no-untyped-def]
    """The first answer's limits follow the speed measured at start, not the settings' guess, and
    the probe's prompt is the beginning every local answer's prompt has (the server's cache keeps it)."""
    from nodes.answering.chat_prompt import local_system_prompt
    from grove.app import warm
    from nodes.answering import model_speed
    from nodes.answering.turn_policy import prepare_turn
    from nodes.retrieval.retrieve import Fragment
    from tests.support.scripted_llm import ScriptedLLM, text, trickle

    days = "понедельник, вторник, среда, четверг, пятница, суббота, воскресенье, и снова понедельник, вторник"
    with ScriptedLLM(default=trickle(0.05, text(days))) as server:
        env(GROVE_LOCAL_LLM_URL=server.base_url, GROVE_LOCAL_TOKENS_PER_S="0.5")  # a guess far off
        model_speed.forget()
        warm.model_speed()
        [request] = server.requests
    speed = model_speed.local_speed()
    assert speed.measured == 1 and 2.0 < speed.tokens_per_s < 40.0  # a piece every 0.05 s, measured
    probe = request["messages"][0]["content"].rstrip()
    fragment = Fragment(chunk_id=1, document_id=1, text="Малину подкармливают весной.", source_type="pdf",
                        source_identifier="малина.pdf", distance=0.2)
    answer = local_system_prompt(prepare_turn("Как подкормить малину?", [], get_settings()), [fragment],
                                 get_settings().local_prompt_style)
    assert len(probe) > 200 and answer.startswith(probe) and fragment.text not in probe


def test_without_a_local_server_nothing_is_timed(env) -> None:  # type: ignore[no-untyped-def]
    from grove.app import warm
    from nodes.answering import model_speed
    from tests.support.ports import free_port

    env(GROVE_LOCAL_LLM_URL=f"http://127.0.0.1:{free_port()}/v1")
    model_speed.forget()
    warm.model_speed()
    assert model_speed.local_speed().measured == 0
