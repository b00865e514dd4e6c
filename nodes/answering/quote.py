"""Which sentences of the retrieved fragments to quote: the passage that answers the question.

A small local model often says the right thing imprecisely while the fragment it was shown holds it word
for word, so a local answer ends with a short quote from the fragment that backs it, and a draft that fails
the checks is replaced by quotes alone (nodes/answering/answer_check.py). Each way of choosing is a named
entry of `SELECTORS`. The first evidence is lexical: the content lemmas of the question and of the draft
(nodes/retrieval/lexical.py). Words miss what a user says differently from the manual, so the `meaning`
selector re-orders the best few sentences by embedding similarity to the question, each read as it would
be quoted.
Figures: bench/README.md, «Which passage to quote» (bench.quote_eval).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from nodes.retrieval.lexical import Weights, sentences, term_set, words

MIN_SENTENCE_CHARS = 15
# An answer with its quote stays within this (a long draft leaves the quote less room, never
# less than MIN_QUOTE_CHARS): one screen of a phone, about.
MAX_QUOTED_ANSWER_CHARS = 1200
MIN_QUOTE_CHARS = 200
MIN_SECOND_QUOTE_CHARS = 120  # a second quote cut shorter than this is left out
QUOTE_LEAD = "Из документа:"
NEAREST_LEAD = "Прямого ответа в документах не нашёл. Ближе всего к вопросу вот это:"
NEAREST_ONLY = "Ближе всего к вопросу вот это:"  # the nearest passages' label, after a lead saying why


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
    term: str = ""  # the definition-list term it describes («-k, --apropos»): its words count as its own
    lead: str = ""  # the description's words before it on its line


@dataclass(frozen=True)
class Choice:
    """How a selector picks: its scores, then how much around the best sentences it quotes."""

    rank_step: float = 0.0  # subtracted per rank below the first fragment: retrieval's order as a prior
    answer_weight: float = 0.0  # weight of the draft answer's lemmas beside the question's
    following: int = 1  # sentences quoted after the best one, when they fit
    max_chars: int = 450  # all quotes together
    each_chars: int | None = None  # one quote (None: max_chars)
    second_ratio: float = 0.8  # a second fragment is quoted when its best sentence scores this share of the best
    meaning_weight: float = 0.0  # weight of the embedding similarity of a sentence (as it would be quoted)
    meaning_pool: int = 8  # how many of the lexically best sentences are re-ordered by meaning
    beside_answer: int = 1  # quotes shown under a model's answer (an extractive answer shows all)


# How alike a question and each text are (cosine of their embeddings); handed in so tests and
# benches can swap the model.
Similarity = Callable[[str, Sequence[str]], Sequence[float]]


def embedded_similarity(question: str, texts: Sequence[str]) -> list[float]:
    """Cosine of the question's query embedding and each text's document embedding (the store's model;
    a turn chooses twice from the same sentences, so their vectors come from its memory)."""
    from nodes.embedding.embedder import get_embedder

    embedder = get_embedder()
    query = embedder.recall_query(question)
    return [float(vector @ query) for vector in embedder.recall_documents(texts)]


@dataclass(frozen=True)
class Quoted:
    """An answer with its quote, and the fragments quoted (for the source block)."""

    text: str
    used: list[int]
    quoted: bool = False  # a quote follows the answer (else `used` names what the answer already says)


def split(fragments: Sequence[str]) -> list[list[Sentence]]:
    """Each fragment's sentences with their content lemmas."""
    found = []
    for n, text in enumerate(fragments, 1):
        row = []
        for i, span in enumerate(sentences(text)):
            term, lead = definition_term(text, span.start)
            terms = term_set(span.text) | term_set(term) if term else term_set(span.text)
            row.append(Sentence(n, i, span.text, terms, term, lead))
        found.append(row)
    return found


# A definition list's term on a line of its own: a command-line option or several («-k, --apropos»,
# «-C файл, --config-file=файл»), or a variable or directive in capitals with its arguments
# («MANPAGER, PAGER», «MINCATWIDTH ширина»); never a sentence (no end punctuation) nor a running head.
_WORD = r"(?:\[[^\]]*\]|,(?=\S)|[^\s,])*"  # an option's or argument's characters: «[,...]» and «тег,шаблон» too
_OPTION = rf"-{{1,2}}[\w?]{_WORD}(?:\s[^\s,-]{_WORD})?"
_NAME = rf"\$?[A-Z][A-Z0-9_]{{2,}}(?![(\w])(?:\s[^\s,(]{_WORD}){{0,4}}"
_TERM_LINE = re.compile(rf"(?:{_OPTION}(?:,\s*{_OPTION})*|{_NAME}(?:,\s*{_NAME})*)(?<![.!?;:])")
# A menu path with its keys, the term of a handbook's command list: «Вид → Разделить окно → Разделить окно по
# вертикали (Ctrl+()» on one line, what it does on the next (sets AG, AH: the description quoted alone,
# without the key the question asked for).
_MENU_LINE = re.compile(r"[^\s→.!?][^→\n]{0,40}(?:\s→\s[^→\n]{1,60})+(?<![!?;:,])(?<![^.]\.)")  # «...» may end it
MAX_TERM_CHARS = 80
_SENTENCE_END = (".", "!", "?", ":", ";", ")", "»")
MAX_DESCRIPTION_LINES = 2  # paragraphs of one description above the quoted sentence's own
MAX_LEAD_CHARS = 240  # a description's sentences before the quoted one, shown whole up to this


def definition_term(text: str, start: int) -> tuple[str, str]:
    """The term the sentence at `start` describes when it stands in a definition list — a term line
    (an option, a variable) is the line before its paragraph line, or before one or two paragraph
    lines above it that end as sentences do — and the description's words before it; ("", "")
    elsewhere. A man page's or a manual's option list reads «-k, --apropos» and, on the next line,
    what it does: the description alone neither matches a question that names the option nor tells
    the user which option it is (set K, man-db: the answer's passage shown without its option)."""
    line_start = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    own = text[line_start:end if end >= 0 else len(text)].strip()
    top = line_start
    for above_own in range(1 + MAX_DESCRIPTION_LINES):
        if above_own and not own.endswith(_SENTENCE_END):
            return "", ""  # a heading under a description is not its paragraph
        if top == 0:
            return "", ""
        above = text.rfind("\n", 0, top - 1) + 1
        line = text[above:top - 1].strip()
        if len(line) <= MAX_TERM_CHARS and (_TERM_LINE.fullmatch(line) or _MENU_LINE.fullmatch(line)):
            return line, " ".join(text[top:start].split())  # one line: a quote is shown as one
        if not line.endswith(_SENTENCE_END):
            return "", ""  # a heading, a table row: not a description's paragraph
        top = above
    return "", ""


def headed(sentence: Sentence) -> str:
    """A described sentence's quote begins with its term and the description up to it (or «…» when
    that is long); other sentences begin as they are."""
    if not sentence.term:
        return ""
    if not sentence.lead:
        return f"{sentence.term}: "
    return f"{sentence.term}: " + (f"{sentence.lead} " if len(sentence.lead) <= MAX_LEAD_CHARS else "… ")


_LATIN_WORD = re.compile(r"[a-z]{3,}[.,;:!?)»]*", re.IGNORECASE)  # a word standing alone, as prose writes it
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_LETTER = re.compile(r"[^\W\d_]")


def foreign(text: str) -> bool:
    """A sentence of another language's prose (a manual's untranslated paragraph): five Latin words
    or more and under a quarter of its letters Cyrillic. A Russian question is not answered by a
    quote the user may not read. A line of code is not prose and stays: its words are short, or parts
    of a path or an option («$ sudo trust anchor /home/user/Downloads/certificate.crt», set BK's answer
    to whether the command works on Debian, which the quote then left out)."""
    letters = len(_LETTER.findall(text))
    prose = sum(1 for token in text.split() if _LATIN_WORD.fullmatch(token))
    return prose >= 5 and len(_CYRILLIC.findall(text)) < 0.25 * max(letters, 1)


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _candidates(question: str, per_fragment: list[list[Sentence]]) -> tuple[set[tuple[int, int]], list[Sentence]]:
    """The sentences a quote may begin with, and the term lines (the sentence before a description's
    first: quoted with their description, and where the next one begins, a quote ends)."""
    term_lines = {(s.fragment, s.index - 1) for found in per_fragment for s in found if s.term and not s.lead}
    candidates = [s for found in per_fragment for s in found
                  if len(s.text) >= MIN_SENTENCE_CHARS and (s.fragment, s.index) not in term_lines]
    if _CYRILLIC.search(question):  # another language's prose only when nothing else is there
        candidates = [s for s in candidates if not foreign(s.text)] or candidates
    return term_lines, candidates


def _window(sentence: Sentence, per_fragment: list[list[Sentence]], before: int = 1, after: int = 1) -> str:
    """A sentence read with its neighbours (and its heading), as its meaning is embedded."""
    around = per_fragment[sentence.fragment - 1][max(0, sentence.index - before):sentence.index + 1 + after]
    return headed(sentence) + " ".join(n.text for n in around)


def _as_quoted(sentence: Sentence, per_fragment: list[list[Sentence]], how: Choice) -> str:
    """A sentence read as its quote would run: its heading, itself and the sentences quoted after it.

    Read with the sentence before it too, a sentence right after the answer carried the answer's
    meaning while its quote left the answer out («Сделайте это, переместив…» quoted for «Этот параметр
    позволяет настроить Яркость…»): over the 483 development searches of BC–CB, fact and cited
    78 % → 83 % (bench/README.md, «Which passage to quote»)."""
    return _window(sentence, per_fragment, before=0, after=how.following)


def _lexical_scores(question: str, candidates: list[Sentence], answer: str | None,
                    how: Choice) -> dict[tuple[int, int], float]:
    """Each candidate's share of the question's weighted terms (and of the answer's own, when the
    selector weighs them), less retrieval's rank prior."""
    weights = Weights([s.terms for s in candidates])
    asked = term_set(question)
    said = term_set(answer) - asked if answer and how.answer_weight else frozenset()

    def lexical(sentence: Sentence) -> float:
        value = weights.coverage(asked, sentence.terms) - how.rank_step * (sentence.fragment - 1)
        if said:
            value += how.answer_weight * weights.coverage(said, sentence.terms)
        return value

    return {(s.fragment, s.index): lexical(s) for s in candidates}


def _meaning_pool(candidates: list[Sentence], scores: dict[tuple[int, int], float], how: Choice) -> list[Sentence]:
    """The lexically best sentences a selector reads by meaning."""
    return sorted(candidates, key=lambda s: (-scores[s.fragment, s.index], s.fragment, s.index))[:how.meaning_pool]


def nearest_meaning(question: str, fragments: Sequence[str], similarity: Similarity | None = None) -> float:
    """How near in meaning the fragments come to the question: the largest embedding similarity of
    the question to the lexically best sentences of the `meaning` selector, each read with the
    sentences on either side (the texts `covers`' threshold was measured on); 0 with none."""
    how = SELECTORS["meaning"]
    per_fragment = split(fragments)
    _, candidates = _candidates(question, per_fragment)
    if not candidates:
        return 0.0
    pool = _meaning_pool(candidates, _lexical_scores(question, candidates, None, how), how)
    windows = [_window(s, per_fragment) for s in pool]
    return max(float(v) for v in (similarity or embedded_similarity)(question, windows))


def choose(question: str, fragments: Sequence[str], answer: str | None, how: Choice,
           similarity: Similarity | None = None) -> list[Quote]:
    """The best-scoring sentence and the ones after it, and a second fragment's best when it scores
    nearly as well; ties go to the higher-ranked fragment and the earlier sentence."""
    per_fragment = split(fragments)
    term_lines, candidates = _candidates(question, per_fragment)
    if not candidates:
        return []
    scores = _lexical_scores(question, candidates, answer, how)
    if how.meaning_weight:
        pool = _meaning_pool(candidates, scores, how)
        read = [_as_quoted(s, per_fragment, how) for s in pool]
        for sentence, alike in zip(pool, (similarity or embedded_similarity)(question, read), strict=True):
            scores[sentence.fragment, sentence.index] += how.meaning_weight * float(alike)
        candidates = pool

    def score(sentence: Sentence) -> float:
        return scores[sentence.fragment, sentence.index]

    scored = sorted(candidates, key=lambda s: (-score(s), s.fragment, s.index))
    best = score(scored[0])
    each = how.each_chars or how.max_chars
    quotes: list[Quote] = []
    total = 0
    for sentence in scored:
        value = score(sentence)
        if sentence.fragment in {q.fragment for q in quotes} or any(repeats(sentence.text, q.text) for q in quotes):
            continue  # overlapping chunks hold the same sentences: a second quote must bring something new
        if quotes and (len(quotes) >= 2 or value <= 0 or value < how.second_ratio * best):
            break
        if quotes and total + len(sentence.text) > how.max_chars:
            break
        head = headed(sentence)
        chosen = [head + clip(sentence.text, min(each, how.max_chars - total) - len(head))]
        for after in per_fragment[sentence.fragment - 1][sentence.index + 1:sentence.index + 1 + how.following]:
            length = sum(map(len, chosen)) + len(after.text)
            if (length > each or total + length > how.max_chars or any(repeats(after.text, q.text) for q in quotes)
                    or (foreign(after.text) and not foreign(sentence.text)) or (after.fragment, after.index) in term_lines):
                break
            chosen.append(after.text)
        quotes.append(Quote(sentence.fragment, " ".join(chosen)))
        total += sum(map(len, chosen))
    return quotes


SELECTORS: dict[str, Choice] = {
    # The first extractive fallback: question lemmas only, best sentence and the next.
    "best-sentence": Choice(),
    # Retrieval's order as a prior, two sentences after the best, a longer quote.
    "ranked": Choice(rank_step=0.05, following=2, max_chars=600),
    # The same, with the draft answer's own words pointing at the sentence it drew on.
    "answer-backed": Choice(rank_step=0.05, answer_weight=2.0, following=2, max_chars=600),
    # The same, the best eight re-ordered by meaning (the question's embedding against each sentence
    # read as it would be quoted), and the best passages of two fragments, three sentences after each.
    # Sixteen, weight 3 or 4, a second passage at 0.7–0.75: no better over three groups of questions
    # (bench/README.md, «Which passage to quote»).
    "meaning": Choice(rank_step=0.05, answer_weight=2.0, following=3, max_chars=1200, each_chars=600,
                      second_ratio=0.6, meaning_weight=2.0, meaning_pool=8, beside_answer=2),
}


def choice_of(selector: str | None = None) -> Choice:
    """A selector's settings by name; by default the configured one."""
    if selector is None:
        from grove.core.settings import get_settings

        selector = get_settings().quote_selector
    if selector not in SELECTORS:
        raise ValueError(f"unknown quote selector {selector!r}; known: {', '.join(SELECTORS)}")
    return SELECTORS[selector]


def select_quote(question: str, fragments: Sequence[str], answer: str | None = None,
                 selector: str | None = None, similarity: Similarity | None = None) -> list[Quote]:
    """The quotes a selector picks (none when there is nothing to quote); by default the configured one."""
    return choose(question, fragments, answer, choice_of(selector), similarity)


def said_as(text: str) -> str:
    """A sentence as its words alone, to see it again in other punctuation, spacing or case."""
    return " ".join(words(text))


def repeats(sentence: str, text: str) -> bool:
    """`text` holds this sentence word for word (sentences of four words and more; a short one
    like «Нажмите OK.» may well be said twice)."""
    return len(words(sentence)) >= 4 and f" {said_as(sentence)} " in f" {said_as(text)} "


def unsaid(quote: Quote, answer: str) -> Quote | None:
    """The quote without the sentences the answer repeats word for word (None when nothing is left):
    a small model often copies a sentence, and the same sentence twice reads as a loop."""
    kept = [span.text for span in sentences(quote.text) if not repeats(span.text, answer)]
    return replace(quote, text=" ".join(kept)) if kept else None


def shortened(text: str, limit: int) -> str:
    """The text's whole sentences (a list's items are sentences too) up to `limit` characters; the text
    itself when it fits, its first words when not even one sentence does."""
    if len(text) <= limit:
        return text
    ends = [span.end for span in sentences(text) if span.end <= limit]
    return text[:ends[-1]].rstrip() if ends else clip(text, limit)


def passages_text(quotes: Sequence[Quote], lead: str = QUOTE_LEAD) -> str:
    """Quotes as the user reads them: the lead, then each passage in «», one a line."""
    return lead + "\n" + "\n".join(f"«{q.text}»" for q in quotes)


_PASSAGE_LINE = re.compile(r"^«.+»$", re.MULTILINE)


def folded(text: str) -> str:
    """The quoted passages of a reply (its lines that are one «…» passage) as Markdown quote lines,
    which the Telegram reply folds under the answer (nodes/telegram/html.py): the user reads the
    answer's own words first, the document's words a tap away."""
    return _PASSAGE_LINE.sub(lambda m: f"> {m.group(0)}", text)


def already_said(quote: Quote, answer: str) -> bool:
    """The answer holds most of the quote's words already (it is itself a quote of that passage)."""
    quoted, said = term_set(quote.text), term_set(answer)
    return bool(quoted) and len(quoted & said) >= 0.8 * len(quoted)


def with_quote(answer: str, question: str, fragments: Sequence[str], selector: str | None = None, *,
               refusal: bool = False, similarity: Similarity | None = None,
               chosen: Sequence[Quote] = (), nearest_lead: str = NEAREST_LEAD) -> Quoted:
    """The answer, then the passages of the fragments that back it, quoted; which fragments were quoted.

    The quote is the document's own words, so a user can see the fact even when a small
    model's sentence about it is vague — and see when the model got it wrong. A `refusal`
    («об этом не сказано») is not quoted under: the fragments passed the search gate, so the
    passages nearest the question are shown instead under `nearest_lead`, said to be the nearest,
    not the answer.
    Quotes already `chosen` (the passages the model was given) are shown instead of choosing.
    """
    how = choice_of(selector)
    quotes = list(chosen) or choose(question, fragments, None if refusal else answer, how, similarity)[:how.beside_answer]
    said: list[int] = []  # passages the answer already says: not shown again, but they back it
    if not refusal:
        if quotes:  # a long answer gives way, whole sentences at a time, so a quote still fits the screen
            answer = shortened(answer, MAX_QUOTED_ANSWER_CHARS - MIN_QUOTE_CHARS - len(f"\n\n{QUOTE_LEAD}\n«»"))
        rest = [(q, unsaid(q, answer)) for q in quotes]
        said = [q.fragment for q, left in rest if left is None or already_said(left, answer)]
        quotes = [left for _, left in rest if left is not None and not already_said(left, answer)]
    if not quotes:
        return Quoted(text=answer, used=said)
    lead = nearest_lead if refusal else f"{answer}\n\n{QUOTE_LEAD}"
    room = max(MIN_QUOTE_CHARS, MAX_QUOTED_ANSWER_CHARS - len(lead)) - len(quotes) * len("\n«» …")
    shown: list[Quote] = []
    for quote in quotes:
        if shown and room < MIN_SECOND_QUOTE_CHARS:
            break
        shown.append(replace(quote, text=clip(quote.text, room)))
        room -= len(shown[-1].text)
    used = [q.fragment for q in shown]
    return Quoted(text=passages_text(shown, lead), used=used + [n for n in said if n not in used], quoted=True)
