"""What a first turn would otherwise wait for, loaded in the background right after start."""

from __future__ import annotations

import logging
import time

from grove.core.settings import get_settings

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Load, right after start, what a first turn would otherwise wait for unexplained: the
    model's vocabulary (token counts fit every prompt), the Russian morphology (reranking, the
    answer check) and the query embedder. Failures are the first turn's to report."""
    from nodes.answering.token_budget import count_tokens
    from nodes.embedding.embedder import get_embedder
    from nodes.retrieval.lexical import sentences, terms

    began = time.monotonic()
    try:
        count_tokens("прогрев")
        terms("прогрев модели"), sentences("Прогрев. Модели.")
        if get_settings().embedding_model:
            get_embedder().embed_query("прогрев")
    except Exception as exc:  # noqa: BLE001 - only a head start
        log.info("warm-up stopped: %s", exc)
        return
    log.info("warm-up done in %.1f s", time.monotonic() - began)
