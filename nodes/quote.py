"""Which sentences of the retrieved fragments to quote: the passage that answers the question.

A small local model often says the right thing imprecisely, or the wrong thing fluently,
while the fragment it was shown holds the answer word for word. So a local answer ends with
a short quote from the fragment that backs it, and a draft that fails the answer checks is
replaced by quotes alone (nodes/answer_check.py). Choosing the quote is choosing sentences;
each way of choosing is a named entry of `SELECTORS`, measured by bench/quote_eval.py (does the
quote hold the answer, and is it taken from a fragment that does).

The evidence is lexical (nodes/lexical.py): the question's content lemmas, and when there is a
draft answer its lemmas too — a paraphrase keeps the rare words that matter (a command, a
number, a menu item), so the sentence the model drew on shares them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodes.lexical import Weights, sentences, term_set

MIN_SENTENCE_CHARS = 15
# An answer with its quote stays within this (a long draft leaves the quote less room, never
# less than MIN_QUOTE_CHARS): one screen of a phone, about.
MAX_QUOTED_ANSWER_CHARS = 1200
MIN_QUOTE_CHARS = 200
QUOTE_LEAD = "Из документа:"
NEAREST_LEAD = "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:"


@dataclass(frozen=True)
class Quote:
    """Sentences quoted from one fragment (1-based, in the numbering the model was shown)."""

    fragment: int
    text: str


@dataclass(frozen=True)
class Sentence:
    fragment: int
    index: int
    text: str
    terms: frozenset[str]


@dataclass(frozen=True)
class Choice:
    """How a selector picks: its scores, then how much around the best sentences it quotes."""

    rank_step: float = 0.0  # subtracted per rank below the first fragment: retrieval's order as a prior
    answer_weight: float = 0.0  # weight of the draft answer's lemmas beside the question's
    following: int = 1  # sentences quoted after the best one, when they fit
    max_chars: int = 450
    second_ratio: float = 0.8  # a second fragment is quoted when its best sentence scores this share of the best


@dataclass(frozen=True)
class Quoted:
    """An answer with its quote, and the fragments quoted (for the source block)."""

    text: str
    used: list[int]


Selector = Callable[[str, Sequence[str], str | None], list[Quote]]


def split(fragments: Sequence[str]) -> list[list[Sentence]]:
    """Each fragment's sentences with their content lemmas."""
    return [[Sentence(n, i, span.text, term_set(span.text)) for i, span in enumerate(sentences(text))]
            for n, text in enumerate(fragments, 1)]


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def choose(question: str, fragments: Sequence[str], answer: str | None, how: Choice) -> list[Quote]:
    """The best-scoring sentence and the ones after it, and a second fragment's best when it scores
    nearly as well; ties go to the higher-ranked fragment and the earlier sentence."""
    per_fragment = split(fragments)
    candidates = [s for found in per_fragment for s in found if len(s.text) >= MIN_SENTENCE_CHARS]
    if not candidates:
        return []
    weights = Weights([s.terms for s in candidates])
    asked = term_set(question)
    said = term_set(answer) - asked if answer and how.answer_weight else frozenset()

    def score(sentence: Sentence) -> float:
        value = weights.coverage(asked, sentence.terms) - how.rank_step * (sentence.fragment - 1)
        if said:
            value += how.answer_weight * weights.coverage(said, sentence.terms)
        return value

    scored = sorted(candidates, key=lambda s: (-score(s), s.fragment, s.index))
    best = score(scored[0])
    quotes: list[Quote] = []
    total = 0
    for sentence in scored:
        value = score(sentence)
        if quotes and (len(quotes) >= 2 or value <= 0 or value < how.second_ratio * best
                       or sentence.fragment in {q.fragment for q in quotes}):
            break
        if quotes and total + len(sentence.text) > how.max_chars:
            break
        chosen = [clip(sentence.text, how.max_chars)]
        for after in per_fragment[sentence.fragment - 1][sentence.index + 1:sentence.index + 1 + how.following]:
            if total + sum(map(len, chosen)) + len(after.text) > how.max_chars:
                break
            chosen.append(after.text)
        quotes.append(Quote(sentence.fragment, " ".join(chosen)))
        total += sum(map(len, chosen))
    return quotes


def selector(how: Choice) -> Selector:
    return lambda question, fragments, answer=None: choose(question, fragments, answer, how)


SELECTORS: dict[str, Selector] = {
    # The first extractive fallback: question lemmas only, best sentence and the next.
    "best-sentence": selector(Choice()),
    # Retrieval's order as a prior, two sentences after the best, a longer quote.
    "ranked": selector(Choice(rank_step=0.05, following=2, max_chars=600)),
    # The same, with the draft answer's own words pointing at the sentence it drew on.
    "answer-backed": selector(Choice(rank_step=0.05, answer_weight=2.0, following=2, max_chars=600)),
}


def select_quote(question: str, fragments: Sequence[str], answer: str | None = None,
                 selector: str | None = None) -> list[Quote]:
    """The quotes a selector picks (none when there is nothing to quote); by default the configured one."""
    if selector is None:
        from grove.settings import get_settings

        selector = get_settings().quote_selector
    if selector not in SELECTORS:
        raise ValueError(f"unknown quote selector {selector!r}; known: {', '.join(SELECTORS)}")
    return SELECTORS[selector](question, fragments, answer)


def already_said(quote: Quote, answer: str) -> bool:
    """The answer holds most of the quote's words already (it is itself a quote of that passage)."""
    quoted, said = term_set(quote.text), term_set(answer)
    return bool(quoted) and len(quoted & said) >= 0.8 * len(quoted)


def with_quote(answer: str, question: str, fragments: Sequence[str], selector: str | None = None, *,
               refusal: bool = False) -> Quoted:
    """The answer, then the passage of the fragments that backs it, quoted; which fragments were quoted.

    The quote is the document's own words, so a user can see the fact even when a small
    model's sentence about it is vague — and see when the model got it wrong. A `refusal`
    («об этом не сказано») is not quoted under: the fragments passed the search gate, so the
    passage nearest the question is shown instead, said to be the nearest, not the answer.
    """
    quotes = select_quote(question, fragments, None if refusal else answer, selector)[:1]  # one: stay short
    if not quotes or (not refusal and already_said(quotes[0], answer)):
        return Quoted(text=answer, used=[])
    lead = NEAREST_LEAD if refusal else f"{answer}\n\n{QUOTE_LEAD}"
    room = max(MIN_QUOTE_CHARS, MAX_QUOTED_ANSWER_CHARS - len(lead) - len("\n«» …"))
    return Quoted(text=f"{lead}\n«{clip(quotes[0].text, room)}»", used=[quotes[0].fragment])
