"""When the local model answers from the user's documents, and what is searched.

A small model cannot decide when to search (offered the tool, it skipped plain questions; forced to call
it, it wrote SQL), so for the local model the code decides: a user with documents has the question
searched (a very short follow-up with the question it follows), and the fragments reach the model only
when the search found something close enough — the **gate**, whose score and threshold are settings
calibrated on the project's Russian sets. Remote models decide for themselves; their query is still checked
(`plausible_query`), and SQL, code or an empty string is replaced by the user's question.
Figures: bench/README.md, «The local model's search gate» (bench.search_gate).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grove.core.observe import task
from pydantic import BaseModel

from grove.store.db import transaction
from grove.core.settings import Settings
from nodes.store.chat_history import ChatMessage
from nodes.retrieval.base_vocabulary import everyday
from nodes.retrieval.lexical import share_found, term_set
from nodes.retrieval.retrieve import Fragment


@dataclass(frozen=True)
class GateScore:
    """A way to score a search's result; `higher_passes` says which side of the threshold passes."""

    score: Callable[[str, Sequence[Fragment]], float]
    higher_passes: bool
    about: str


def best_distance(question: str, fragments: Sequence[Fragment]) -> float:
    """The nearest fragment's cosine distance to the query."""
    return min(f.distance for f in fragments)


def best_overlap(question: str, fragments: Sequence[Fragment]) -> float:
    """The largest share of the question's content lemmas that one fragment holds."""
    wanted = term_set(question)
    return max(share_found(wanted, term_set(f.text)) for f in fragments)


# The overlap is worth this much distance in `blend` (bench/search_gate.py measured the weight).
BLEND_WEIGHT = 0.25


def blend(question: str, fragments: Sequence[Fragment]) -> float:
    """Cosine distance, lowered for a fragment that also shares the question's words."""
    return min(f.distance - BLEND_WEIGHT * share_found(term_set(question), term_set(f.text)) for f in fragments)


GATE_SCORES: dict[str, GateScore] = {
    "distance": GateScore(best_distance, False, "best cosine distance ≤ threshold"),
    "overlap": GateScore(best_overlap, True, "best share of question lemmas in one fragment ≥ threshold"),
    "blend": GateScore(blend, False, f"min over fragments of distance − {BLEND_WEIGHT} × lemma share ≤ threshold"),
}


class GateDecision(BaseModel):
    query: str
    score: float | None = None
    passed: bool = False
    near: bool = False  # not passed, but within the near band: the nearest passages are shown, no model answer
    fragments: list[Fragment] = []
    unknown: list[str] = []  # things the question names that the base never mentions (they shut the gate)
    synonyms: list[str] = []  # words the base lacks taken as the user's for the passages' own (nodes/retrieval/synonyms.py)


def decide(question: str, query: str, fragments: list[Fragment], *, settings: Settings, score_name: str | None = None,
           threshold: float | None = None, near: float | None = None,
           unknown: list[str] | None = None) -> GateDecision:
    """Score the search's result; the fragments pass to the model when the score clears the threshold
    and the question names nothing the base never mentions (`unknown`,
    nodes/retrieval/base_vocabulary.py), and are `near` when they do not pass but clear the near
    band's edge.

    A question about a thing the documents never name is not answered by them however close its
    fragments are («Как установить TeX Live через Homebrew?» lies next to the installation
    chapter): a small model given those fragments answered such questions from its own
    knowledge, or presented the nearest passage as the answer. The user gets the passages
    nearest to it, said to be only the nearest, and the thing named as absent.

    The two mistakes cost differently. A question the documents answer, shut out, is answered by a
    small model from general knowledge — wrongly, with no source. A question they do not answer,
    let through as near, gets the passages nearest to it, said to be only the nearest: honest, and
    the user sees at once what the base holds. So between the threshold (the balance of the two
    error rates) and the near edge (below which no small talk or general question was seen on any
    store) the passages are shown without a model answer (bench/search_gate.py).

    An everyday word the base lacks («партия», «кусок») does not shut the gate when one fragment
    holds most of the question's other words: the user said in their own words what the passage
    says in the manual's. Over the 12 development sets of bench/answerability.py this opened 7 of
    the 49 answerable questions the unknown things shut, and none of the 140 silent ones."""
    gate = GATE_SCORES[score_name or settings.search_gate_score]
    limit = settings.search_gate_threshold if threshold is None else threshold
    edge = settings.search_gate_near if near is None else near
    if not fragments:
        return GateDecision(query=query)
    value = gate.score(question, fragments)

    def clears(bound: float) -> bool:
        return value >= bound if gate.higher_passes else value <= bound

    absent = list(unknown or [])
    if absent and best_overlap(question, fragments) >= settings.search_gate_everyday_overlap:
        absent = [w for w in absent if not everyday(w, settings.search_gate_everyday_zipf)]
    passed = clears(limit) and not absent
    return GateDecision(query=query, score=value, passed=passed, near=not passed and clears(edge),
                        fragments=fragments, unknown=absent)


@task(name="user-has-documents", retries=2, retry_delay_seconds=1)
def has_documents(owner_id: int) -> bool:
    """Whether the user has anything indexed (no search, no gate, no source block otherwise)."""
    with transaction() as conn:
        row = conn.execute("select exists (select 1 from document_chunks where owner_id = %s and is_active)"
                           " as found", (owner_id,)).fetchone()
    return row is not None and bool(row["found"])


_FOLLOWUP_START = re.compile(r"^\W*(а|и|ну|но|тогда|а если|а как|а что)\b", re.IGNORECASE)


def search_query(question: str, history: Sequence[ChatMessage], followup_words: int) -> str:
    """The question; a very short follow-up («А на Windows?», at most `followup_words`, the settings'
    `search_followup_words`) together with the question before it."""
    previous = next((m.content for m in reversed(history) if m.role == "user"), None)
    short = len(question.split()) <= followup_words
    asks = "?" in question or bool(_FOLLOWUP_START.search(question))
    if previous and short and asks:
        return f"{previous} {question}"
    return question


_SQL = re.compile(r"\b(select|insert|update|delete|drop|create|alter)\b.+\b(from|into|set|table|where)\b",
                  re.IGNORECASE | re.DOTALL)
_CODE = re.compile(r"[{};]|==|=>|\(\)|</?\w+>|^\s*(def|import|function|class)\b", re.MULTILINE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)


def plausible_query(query: str | None, question: str) -> bool:
    """A search a person would type: words, not SQL or code; Russian when the question is."""
    if not isinstance(query, str) or len(term_set(query)) == 0:
        return False
    if _SQL.search(query) or _CODE.search(query):
        return False
    return not (_CYRILLIC.search(question) and not _CYRILLIC.search(query))


def model_query(query: object, question: str) -> str:
    """The model's query when it is a plausible search, otherwise the user's question."""
    return query if isinstance(query, str) and plausible_query(query, question) else question
