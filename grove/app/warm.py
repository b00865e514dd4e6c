"""What a first turn would otherwise wait for, loaded in the background right after start."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from grove.core import shutdown
from grove.core.settings import get_settings

log = logging.getLogger(__name__)

SETTLE_SECONDS = 10.0
"""How long a stopping process waits for a warm-up still loading (an ONNX session or the vocabulary
being built when the interpreter finalises aborts the process: `terminate called without an
active exception`, exit -6)."""


def warm_up() -> None:
    """Load, right after start, what a first turn would otherwise wait for unexplained: the
    model's vocabulary (token counts fit every prompt), the Russian morphology and word
    frequencies (reranking, the answer check, the search gate), the query embedder, and the local
    model's speed. Failures are the first turn's to report; a stop ends it between steps."""
    from nodes.answering.token_budget import count_tokens
    from nodes.embedding.embedder import get_embedder
    from nodes.retrieval.base_vocabulary import everyday
    from nodes.retrieval.lexical import sentences, terms

    def vocabulary() -> None:
        count_tokens("прогрев")

    def morphology() -> None:
        terms("прогрев модели"), sentences("Прогрев. Модели.")
        everyday("прогрев", 0.0)  # the word frequencies the search gate reads

    def embedder() -> None:
        get_embedder().embed_query("прогрев")

    began = time.monotonic()
    steps: list[Callable[[], None]] = [vocabulary, morphology]
    if get_settings().embedding_model:
        steps.append(embedder)
    steps.append(model_speed)
    try:
        for step in steps:
            shutdown.check()
            step()
    except shutdown.Interrupted:
        return
    except Exception as exc:  # noqa: BLE001 - only a head start
        log.info("warm-up stopped: %s", exc)
        return
    log.info("warm-up done in %.1f s", time.monotonic() - began)


PROBE_QUESTION = "Перечисли дни недели через запятую."
PROBE_TOKENS = 16


def model_speed() -> None:
    """Time the local model once, so the first answer's limits follow this machine's speed and
    not the settings' guess (nodes/answering/model_speed.py).

    The probe is the answer template's shared beginning (its role and rules, which every local
    answer's prompt starts with) and a one-word question: the server's prefix cache then holds
    those tokens for the first real answer, so the probe's prompt is not read twice. Skipped
    with a remote model, or when the local server does not answer (it is the first turn's to
    report).
    """
    import httpx

    from nodes.answering.answer_prompt import AnswerContext, parts, render
    from nodes.answering.llm import ChatModel, complete
    from nodes.answering.model_speed import local_speed

    model = ChatModel(get_settings())
    endpoint = model.endpoint
    if not endpoint.is_local:
        return
    try:
        httpx.get(f"{endpoint.base_url}/models", timeout=2.0).raise_for_status()
    except httpx.HTTPError as exc:
        log.info("local model not timed at start (%s): its first answer uses the guessed speed", exc)
        return
    rules = render(AnswerContext(role=parts()["roles"]["chat"], mode="documents",
                                 style=model.settings.local_prompt_style))
    complete([{"role": "system", "content": rules}, {"role": "user", "content": PROBE_QUESTION}], model,
             max_tokens=PROBE_TOKENS, temperature=0.0)
    speed = local_speed()
    log.info("local model timed at start: reads %.0f tokens/s, writes %.1f tokens/s",
             speed.prompt_per_s, speed.tokens_per_s)


def start() -> threading.Thread:
    thread = threading.Thread(target=warm_up, name="warm-up", daemon=True)
    thread.start()
    return thread


def settle(thread: threading.Thread, timeout: float = SETTLE_SECONDS) -> None:
    """Before the process exits: let a warm-up that is still loading native code finish its step."""
    thread.join(timeout)
    if thread.is_alive():
        log.warning("warm-up still loading after %.0f s at exit", timeout)
