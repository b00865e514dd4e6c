"""Detectors that add context signals to a turn's blackboard (seed 003 §3.1).

A detector notices something about the message — a greeting, a question about
the user's documents, a request for the source, a complaint — and adds a
signal. Signals are shown to the model in the answer template as information;
they never choose the action or the wording.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from nodes.retrieval.lexical import part_of_speech
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


# A question word and how many words after it an infinitive may stand.
_BEFORE_VERB = {"как": 4, "где": 2, "куда": 2, "что": 1, "чё": 1, "че": 1}
# Question words that ask when they end the message.
_LAST = (*_BEFORE_VERB, "когда")

# A question typed as users type in a chat, with no question mark and its question word inside or last
# («зум картинки на какую кнопку», «в каком формате она сохранится», «флешку в виртуалку прокинуть как»,
# «чё за дела», «по скока бит», «хроматическое число графа это что»), two choices («писать с 0x или
# просто цифрами»), or «ли» after its word («законно ли рипать диски»; not «вряд ли», «едва ли»): a word
# that only asks, anywhere, or a question word last; «как», «что», «где» inside only before an infinitive
# («как её убрать», «че делать»), as «как раз», «как надо», «что получилось» ask nothing; a question
# pronoun after a preposition (`_PREPOSITION_ASKS`).
ASKS_INSIDE = re.compile(r"(?<![\w-])(?:почему|зачем|сколько|скок\w*|откуда|как(?:ой|ая|ое|ие|ую|ом|им|ими|их|ого|ому|ов\w*)"
                         r"|(?:в\s+)?ч[её]м\s+дело|ч[её]\s+за|(?:"
                         rf"{'|'.join(_LAST)})\W*$|(?<=\w\s)или(?=\s+\w)|(?<=\w\s)(?<!вряд\s)(?<!едва\s)ли)(?![\w-])",
                         re.IGNORECASE)
# A question pronoun after a preposition asks («через что разделяются», «а это для чего», «от чего зависит»),
# not in a relative clause: «то, о чём я говорил» (nor in `_NOT_ASKING`'s set phrases).
_PREPOSITION_ASKS = re.compile(
    r"(?<![\w-])(?<!то\s)(?<!то,\s)(?:через|на|за|от|для|со?|об?|про|по|из|к|под|над|при|без|до"
    r"|во?)\s+(?:что|чего|чем|ч[её]м|чему|кого|кем|ком|кому)(?![\w-])", re.IGNORECASE)
_WORD_AFTER = re.compile(rf"(?<![\w-])({'|'.join(_BEFORE_VERB)})((?:[\s,]+[а-яё]+){{1,{max(_BEFORE_VERB.values())}}})",
                         re.IGNORECASE)


# Set phrases of question words that ask nothing: «не за что», «ни за что», «что к чему».
_NOT_ASKING = re.compile(r"(?<![\w-])(?:н[еи]\s+за\s+что|что\s+к\s+чему)(?![\w-])", re.IGNORECASE)


def asks(message: str) -> bool:
    """The message asks for something (a question or a request), not only greets or remarks."""
    message = _NOT_ASKING.sub(" ", message)
    if ASKS.search(message) or ASKS_INSIDE.search(message) or _PREPOSITION_ASKS.search(message):
        return True
    for match in _WORD_AFTER.finditer(message):
        following = re.findall(r"[а-яё]+", match.group(2), re.IGNORECASE)[:_BEFORE_VERB[match.group(1).lower()]]
        if any(part_of_speech(word) == "INFN" for word in following):
            return True
    return False


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
