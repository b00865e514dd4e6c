"""What a consultation question asks about, and whether a draft answers that — the profile's words as a registry.

The domain profile (`prompts/domains/<name>.yaml`) lists its intents (подкормка, полив, обрезка, …) with
the words that name each, the words of an elliptical follow-up, and small talk. `IntentRegistry` reads them
once as lexical terms (`nodes.retrieval.lexical`) and answers `asked` (the intents a question names),
`misses` (a draft where another intent's words outweigh the asked one's), `passage` (the fragments' own
sentences on the asked intent, which replace such a draft), `elliptical` (a follow-up continues the topic;
a new question naming no crop never inherits its crop) and `off_domain`. No per-crop or per-intent code:
a new intent or domain is a change to the profile's YAML.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from grove.core.domain_profile import DomainProfile
from nodes.answering.quote import Quote, passages_text, repeats, select_quote
from nodes.retrieval.lexical import sentences, term, terms

_FIRST_WORD = re.compile(r"[а-яёa-z]+", re.IGNORECASE)


def _terms_of(words: Sequence[str]) -> frozenset[str]:
    return frozenset(t for w in words for t in [term(w)] if t)


@dataclass(frozen=True)
class IntentRegistry:
    intents: dict[str, frozenset[str]]
    openers: frozenset[str]
    followup: frozenset[str]
    small_talk: frozenset[str]

    @classmethod
    def of(cls, profile: DomainProfile) -> IntentRegistry:
        """The profile's registry, built once per set of words."""
        return _registry(profile.name, tuple((k, tuple(v)) for k, v in profile.intents.items()),
                         tuple(profile.followup_openers), tuple(profile.followup_words), tuple(profile.small_talk))

    def hits(self, text: str) -> Counter[str]:
        """How many of the text's words name each intent (every occurrence counts)."""
        counted: Counter[str] = Counter()
        for t in terms(text):
            for name, vocabulary in self.intents.items():
                if t in vocabulary:
                    counted[name] += 1
        return counted

    def asked(self, question: str, root: str | None = None) -> list[str]:
        """The intents the question names; for a follow-up naming none, those of its root question."""
        named = list(self.hits(question))
        return named or (list(self.hits(root)) if root else [])

    def misses(self, draft: str, asked: Sequence[str]) -> bool:
        """The draft talks about another intent more than about the asked one(s)."""
        if not asked:
            return False
        counted = self.hits(draft)
        on_point = max((counted[name] for name in asked), default=0)
        elsewhere = max((n for name, n in counted.items() if name not in asked), default=0)
        return elsewhere > on_point

    def elliptical(self, question: str) -> bool:
        """A follow-up that leans on what was said before: it opens with «а», «и», «ещё» …, or it has
        no words of its own beyond time, frequency, amount and manner («Как часто?»)."""
        first = _FIRST_WORD.search(question)
        if first and first.group(0).lower() in self.openers:
            return True
        return all(t in self.followup for t in terms(question))

    def off_domain(self, profile: DomainProfile, question: str) -> bool:
        """No crop, no domain word, no intent, not a follow-up or small talk, and words of its own."""
        if not profile.off_domain_reply or profile.in_domain(question) or self.hits(question):
            return False
        own = [t for t in terms(question) if t not in self.followup and t not in self.small_talk]
        return bool(own) and not self.elliptical(question)

    def passage(self, question: str, asked: Sequence[str], fragments: Sequence[str], lead: str,
                said: Sequence[str] = ()) -> tuple[str, list[int]] | None:
        """The fragments' sentences on the asked intent (any sentence when none is asked) that the bot
        has not said yet, quoted under `lead` (the best passages for the question among them); and the
        fragments quoted, 1-based. None when no fragment has such a sentence."""
        vocabulary = frozenset().union(*(self.intents[name] for name in asked if name in self.intents))

        def fits(sentence: str) -> bool:
            on_intent = not asked or bool(vocabulary & set(terms(sentence)))
            return on_intent and not any(repeats(sentence, p) for p in said)

        kept = [" ".join(s.text for s in sentences(text) if fits(s.text)) for text in fragments]
        if not any(kept):
            return None
        quotes: list[Quote] = select_quote(question, kept) or [
            Quote(fragment=n, text=text) for n, text in enumerate(kept, 1) if text][:1]
        return passages_text(quotes, lead), [q.fragment for q in quotes]


@cache
def _registry(name: str, intents: tuple[tuple[str, tuple[str, ...]], ...], openers: tuple[str, ...],
              followup: tuple[str, ...], small_talk: tuple[str, ...]) -> IntentRegistry:
    return IntentRegistry(intents={intent: _terms_of(words) for intent, words in intents},
                          openers=frozenset(w.lower() for w in openers), followup=_terms_of(followup),
                          small_talk=_terms_of(small_talk))
