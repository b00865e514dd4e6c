"""Rerank stages: reorder the ~30 first-stage candidates and keep the best 10.

One vector per chunk blurs exact terms (a package name, a command, an inflected Russian word), so a second
look at the candidates can pay off. Each stage is a module here defining `RERANKER`, a class meeting
`Reranker` with a `name` and a constructor without arguments; the package finds them, so adding a stage is
one module and its test. Any other name is a CrossEncoder (`cross_encoder.py`); a name that is neither is
refused (`check_reranker`). `DEFAULT_OFFLINE_RERANKER` is "bm25-fusion", which won on natural questions
over real manuals; late interaction never won and stays in the bench. No stage holds database code.
Figures: bench/README.md, «Retrieval defaults on the product's sets» and «Rerank stages on the Debian set».
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from grove.core.plugins import discover

from nodes.retrieval.rerankers.base import DEFAULT_TOP_K, Candidate, Ranked, Reranker, take
from nodes.retrieval.rerankers.cross_encoder import CrossEncoderReranker

# The offline default: the stage with the best mean MRR@10 over the sets of bench/retrieval_eval.py.
DEFAULT_OFFLINE_RERANKER = "bm25-fusion"


def _discover() -> dict[str, Callable[[], Reranker]]:
    """Every module here that defines `RERANKER`, by the stage's name."""
    stages = discover(__name__, __path__, "RERANKER", lambda _: True, lambda stage: str(stage.name))
    return {stage.name: stage for stage in stages}


RERANKERS: dict[str, Callable[[], Reranker]] = _discover()
RERANKER_NAMES: tuple[str, ...] = tuple(sorted(RERANKERS))


def check_reranker(name: str) -> str:
    """The stage `name` means: a registered one, "default", "" (none), a CrossEncoder hub id
    (`org/model`) or a folder. Anything else is a typo, said at once rather than looked up on
    the hub at the first question (ValueError)."""
    key = name.strip() or "none"
    if key.lower() == "default":
        return DEFAULT_OFFLINE_RERANKER
    if key.lower() in RERANKERS or "/" in key or Path(key).expanduser().is_dir():
        return key
    raise ValueError(f"unknown reranker {name!r}: one of {', '.join(RERANKER_NAMES)}, 'default', "
                     "a CrossEncoder hub id (org/model) or a folder")


def get_reranker(name: str, *, device: str = "cpu") -> Reranker:
    """A stage by name (see `check_reranker`)."""
    key = check_reranker(name)
    stage = RERANKERS.get(key.lower())
    return stage() if stage is not None else CrossEncoderReranker(key, device=device)


__all__ = ["DEFAULT_OFFLINE_RERANKER", "DEFAULT_TOP_K", "RERANKERS", "RERANKER_NAMES", "Candidate",
           "CrossEncoderReranker", "Ranked", "Reranker", "check_reranker", "get_reranker", "take"]
