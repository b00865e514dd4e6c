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
    model's vocabulary (token counts fit every prompt), the Russian morphology (reranking, the
    answer check) and the query embedder. Failures are the first turn's to report; a stop
    ends it between steps."""
    from nodes.answering.token_budget import count_tokens
    from nodes.embedding.embedder import get_embedder
    from nodes.retrieval.lexical import sentences, terms

    def vocabulary() -> None:
        count_tokens("прогрев")

    def morphology() -> None:
        terms("прогрев модели"), sentences("Прогрев. Модели.")

    def embedder() -> None:
        get_embedder().embed_query("прогрев")

    began = time.monotonic()
    steps: list[Callable[[], None]] = [vocabulary, morphology]
    if get_settings().embedding_model:
        steps.append(embedder)
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


def start() -> threading.Thread:
    thread = threading.Thread(target=warm_up, name="warm-up", daemon=True)
    thread.start()
    return thread


def settle(thread: threading.Thread, timeout: float = SETTLE_SECONDS) -> None:
    """Before the process exits: let a warm-up that is still loading native code finish its step."""
    thread.join(timeout)
    if thread.is_alive():
        log.warning("warm-up still loading after %.0f s at exit", timeout)
