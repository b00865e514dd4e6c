"""A Russian word as the Latin names it may write: «калзиум» for Kalzium, «линуксе» for Linux.

A user types a program's or a format's name the way it sounds, in Cyrillic («зенити», «питон», «гимп»),
where the manual prints it in Latin letters. The base then lacks the word as written, and a question
naming the very program the documents are about was told «В ваших документах этого нет: «калзиум» в них не
встречается» (sets BC, BH, BI, BJ). `latin_pattern` spells the word's start every way the Latin
alphabet writes its sounds, as a Postgres regular expression, for base_vocabulary.py to look up.
"""

from __future__ import annotations

import re

from nodes.retrieval.lexical import in_dictionary

# Each Cyrillic letter's usual Latin spellings (two-letter sounds first); a letter not listed writes nothing.
# English -tion and -sion are heard «шн»: «конверсейшн» for Konversation, «нотификейшн» for notification.
_PAIRS = {"кс": "x|ks|cks|cs|kz", "кв": "qu|kv|kw", "дж": "j|g|dj|dzh", "ай": "ai|ay|i|ie|y",
          "ей": "ei|ey|ay|ai|a", "ой": "oi|oy", "ью": "u|ew|iu|yu", "шн": "tion|sion|shn|schn"}
_LETTERS = {"а": "a|u|o", "б": "b", "в": "v|w", "г": "g|gh|h", "д": "d", "е": "e|a|ye|ie", "ё": "yo|io|e|o",
            "ж": "zh|j|g|s", "з": "z|s", "и": "i|y|ee|e|ie", "й": "y|i|j", "к": "k|c|ck|q|ch",
            "л": "l", "м": "m", "н": "n", "о": "o|a|au", "п": "p", "р": "r", "с": "s|c|z", "т": "t|th",
            "у": "u|oo|ou|w", "ф": "f|ph", "х": "h|kh|ch|x", "ц": "ts|c|tz|z", "ч": "ch|tch|c",
            "ш": "sh|sch|ch", "щ": "sch|shch", "ъ": "", "ы": "y|i", "ь": "", "э": "e|a|ai", "ю": "yu|you|iu|u|eu",
            "я": "ya|ia|a"}
_ENDING = re.compile(r"(?:ами|ями|ов|ев|ах|ях|ом|ем|ой|ей|ам|ям|а|я|у|ю|е|ы|и|о)$")
_CYRILLIC_WORD = re.compile(r"[а-яё]+")
# The fewest letters of the word's start spelled: a name the dictionary does not hold from four («гимп»,
# «кмикс»), a Russian word from five: the sounds of a short one start English words («море»: more).
SHORTEST = 4
SHORTEST_RUSSIAN = 5


def latin_pattern(word: str) -> str | None:
    """A Postgres regular expression for a Latin word beginning as the Russian word's start sounds (its
    case ending dropped, a doubled Latin letter allowed anywhere), matched from a word's start; None
    for a word of other letters or one too short to tell («ком», «море»)."""
    word = word.lower()
    if not _CYRILLIC_WORD.fullmatch(word):
        return None
    shortest = SHORTEST_RUSSIAN if in_dictionary(word) else SHORTEST
    start = _ENDING.sub("", word)
    if len(start) < shortest:
        return None
    parts: list[str] = []
    at = 0
    while at < len(start):
        pair = start[at:at + 2]
        spelled = _PAIRS.get(pair) if len(pair) == 2 else None
        if spelled is None:
            spelled, at = _LETTERS[start[at]], at + 1
        else:
            at += 2
        if spelled:
            parts.append("(" + "|".join(f"{s}{s[-1]}?" for s in spelled.split("|")) + ")")
    return "(^|[^[:alnum:]_])" + "".join(parts)
