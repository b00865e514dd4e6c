"""Word-level evidence between texts: which content words (lemmas) of one text another contains.

The answer checks ask whether a fragment backs a sentence of an answer, whether an answer concerns the
question, and which fragment sentences answer it. Embeddings would blur what matters there (a number, a
key, a command), and a small model's paraphrase keeps most of the source's words, so the evidence is
lexical: content words as pymorphy3 lemmas cut to their Snowball stems ("малину" and "малина" match;
function words carry no evidence), Latin tokens and numbers as written. Terms are weighted by rarity among
the texts compared (`Weights`): a word every fragment shares with the question says nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from typing import Any

from chunking.sentences import split_sentences
from chunking.spans import Span

_WORD = re.compile(r"[0-9a-zа-яё]+(?:[.+\-_][0-9a-zа-яё]+)*", re.IGNORECASE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
# Parts of speech and grammemes that carry no topic: prepositions, conjunctions, particles,
# interjections, pronouns, pronominal adjectives («какой», «этот», «свой»), question adverbs,
# predicatives («можно», «нужно»).
_NO_TOPIC_POS = frozenset({"PREP", "CONJ", "PRCL", "INTJ", "NPRO", "PRED"})
_NO_TOPIC_GRAMMEMES = frozenset({"Apro", "Ques"})
# Frequent lemmas that are content words to the tagger but not to a reader of answers.
_STOP_LEMMAS = frozenset(
    "быть мочь являться иметь стать делать сделать использовать позволять также очень например "
    "так вот тут там здесь сейчас потом затем ещё еще уже всегда "
    "ответ вопрос информация фрагмент документ пользователь".split()
)


@cache
def _morph() -> Any:  # pymorphy3.MorphAnalyzer, loaded once (≈ 0.2 s)
    import pymorphy3

    return pymorphy3.MorphAnalyzer(lang="ru")


@cache
def _stemmer() -> Any:  # snowballstemmer's Russian stemmer
    import snowballstemmer

    return snowballstemmer.stemmer("russian")


@lru_cache(maxsize=200_000)
def term(word: str) -> str | None:
    """A Russian content word as a term: its lemma's stem; None for a word that carries no topic.

    The lemma joins inflections («малину», «малина»); its Snowball stem then joins the adverb,
    adjective and noun a paraphrase swaps («часто» / «частый», «редко» / «редкий»).
    """
    word = word.lower().replace("ё", "е")
    if not _CYRILLIC.search(word):
        return word if len(word) > 1 or word.isdigit() else None
    parse = _morph().parse(word)[0]
    tag = parse.tag
    if tag.POS in _NO_TOPIC_POS or _NO_TOPIC_GRAMMEMES & set(tag.grammemes):
        return None
    normal = parse.normal_form.replace("ё", "е")
    if normal in _STOP_LEMMAS or len(normal) < 2:
        return None
    stem: str = _stemmer().stemWord(normal)
    return stem


def part_of_speech(word: str) -> str | None:
    """pymorphy3's part of speech of a Russian word's likeliest parse (NOUN, VERB, ADJF …)."""
    pos = _morph().parse(word.lower())[0].tag.POS
    return str(pos) if pos else None


def in_dictionary(word: str) -> bool:
    """Whether pymorphy3's Russian dictionary holds the word (not a guess from its ending)."""
    return bool(_morph().word_is_known(word.lower()))


def terms(text: str) -> list[str]:
    """Content terms of a text, in order, with repeats."""
    return [t for t in map(term, _WORD.findall(text)) if t]


def term_set(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def sentences(text: str) -> list[Span]:
    """Sentences with their offsets (razdel, paragraph- and list-aware)."""
    return split_sentences(text)


def words(text: str) -> list[str]:
    """Lower-cased word tokens, no lemmatising (for repetition and language checks)."""
    return [w.lower() for w in _WORD.findall(text)]


class Weights:
    """Inverse document frequency of terms over a few texts (the fragments shown to the model).

    A term no text contains gets the weight of the rarest term: it counts against every text
    equally, so a sentence full of words no fragment has is supported by none.
    """

    def __init__(self, texts: Sequence[frozenset[str]]) -> None:
        self.count = max(len(texts), 1)
        self.df: Counter[str] = Counter(t for text in texts for t in text)

    def weight(self, term: str) -> float:
        return math.log(1 + self.count / max(self.df.get(term, 0), 1))

    def coverage(self, wanted: Iterable[str], found: frozenset[str]) -> float:
        """Weighted share of `wanted` terms that `found` contains (0 when nothing is wanted)."""
        wanted = set(wanted)
        total = sum(self.weight(t) for t in wanted)
        if total == 0:
            return 0.0
        return sum(self.weight(t) for t in wanted if t in found) / total


def share_found(wanted: Iterable[str], found: frozenset[str]) -> float:
    """Unweighted share of `wanted` terms present in `found` (0 when nothing is wanted)."""
    wanted = set(wanted)
    return len(wanted & found) / len(wanted) if wanted else 0.0
