"""Query analyzer (seed 004): simple / analytical / iterative / diagnostic.

Cheap markers first: a question with none of them is simple and costs no extra
model call (most chat turns). A question with a marker is classified by the
LLM; if the model fails or answers off the list, the marker's kind stands.
"""

from __future__ import annotations

import re
from typing import Literal

from grove.core.observe import task
from grove.core.runs import run_logger
from pydantic import BaseModel

import prompts
from grove.core.settings import Settings
from nodes.answering.llm import ChatModel, LLMError, complete

QueryKind = Literal["simple", "analytical", "iterative", "diagnostic"]
KINDS: tuple[str, ...] = ("simple", "analytical", "iterative", "diagnostic")

MARKERS: list[tuple[QueryKind, re.Pattern[str]]] = [
    ("analytical", re.compile(r"сравни|сопостав|проанализир|анализ\w* |обзор|что говорят|все мои документ|"
                              r"во всех документ|по всем документ|обобщ|в чём разниц|чем отлича", re.IGNORECASE)),
    ("iterative", re.compile(r"найди все|все упоминани|все места|каждое упоминани|перечисли все", re.IGNORECASE)),
    ("diagnostic", re.compile(r"почему .*(не |падает|ошибк)|в чём причин|найди причин|диагност", re.IGNORECASE)),
]


class QueryAnalysis(BaseModel):
    kind: QueryKind
    by: Literal["markers", "llm"]


def marker_kind(question: str) -> QueryKind:
    for kind, pattern in MARKERS:
        if pattern.search(question):
            return kind
    return "simple"


def analyze(question: str, settings: Settings) -> QueryAnalysis:
    guess = marker_kind(question)
    if guess == "simple":
        return QueryAnalysis(kind="simple", by="markers")
    messages = [{"role": "system", "content": prompts.load("query_kind.md")},
                {"role": "user", "content": question}]
    try:
        answer = complete(messages, ChatModel(settings), max_tokens=8, temperature=0.0).content.strip().lower()
    except LLMError:
        return QueryAnalysis(kind=guess, by="markers")
    word = re.sub(r"[^a-z]", "", answer.split()[0]) if answer.split() else ""
    if word in KINDS:
        return QueryAnalysis(kind=word, by="llm")  # type: ignore[arg-type]
    return QueryAnalysis(kind=guess, by="markers")


@task(name="analyze-query")
def analyze_query(question: str, settings: Settings) -> QueryAnalysis:
    result = analyze(question, settings)
    run_logger().info("query kind %s (by %s)", result.kind, result.by)
    return result
