"""After start, what a first turn waits for is loaded in the background (grove/app/warm.py)."""

from __future__ import annotations

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
