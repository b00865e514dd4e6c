"""Detectors that add context signals to a turn's blackboard (seed 003 §3.1).

A detector notices something about the message — a greeting, a question about
the user's documents, a request for the source, a complaint — and adds a
signal. Signals are shown to the model in the answer template as information;
they never choose the action or the wording.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from nodes.retrieval.search_indicators import base_indicators

GREETING = re.compile(r"^\W*(привет|здравствуй|здравствуйте|добрый (день|вечер|утро)|доброе утро|"
                      r"доброго времени|hello|hi)\b", re.IGNORECASE)
ASKS_SOURCE = re.compile(r"источник|откуда (это|информаци|вы это|ты это|данные)|где (это )?написано|"
                         r"на что (вы )?опира|ссылк[ау] на", re.IGNORECASE)
COMPLAINT = re.compile(r"\bне то\b|неправильн|неверн|не помогл|не помога|ты не понял|вы не поняли|"
                       r"ерунд|\bбред\b|не работает|не согласен|не согласна|не так\b|ошиба", re.IGNORECASE)


# A message that asks for something: a question mark, a question word first, or a request.
ASKS = re.compile(r"\?|^\W*(как|что|чем|где|когда|куда|откуда|почему|зачем|сколько|какой|какая|какое|какие|каким"
                  r"|какую|каков\w*|кто|чей|ли|можно|нужно|есть ли|расскажи\w*|объясни\w*|подскажи\w*|покажи\w*"
                  r"|опиши\w*|назови\w*|дай\w*)\b", re.IGNORECASE)


def asks(message: str) -> bool:
    """The message asks for something (a question or a request), not only greets or remarks."""
    return bool(ASKS.search(message))


class Signal(BaseModel):
    """One entry of the per-turn blackboard: a name (for metrics) and an optional detail."""

    name: str
    detail: str = ""


def detect_signals(message: str) -> list[Signal]:
    """What the detectors see in the user's message."""
    signals: list[Signal] = []
    if GREETING.search(message):
        signals.append(Signal(name="greeting"))
    indicators = base_indicators(message)
    if indicators:
        signals.append(Signal(name="asks_document", detail=", ".join(indicators[:3])))
    if ASKS_SOURCE.search(message):
        signals.append(Signal(name="asks_source"))
    if COMPLAINT.search(message):
        signals.append(Signal(name="complaint"))
    return signals
