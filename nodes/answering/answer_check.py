"""What the user gets instead of a bad draft: degenerate drafts caught, citations checked.

A small local model now and then writes an answer no user accepts (a bare «[4]», a repeated paragraph,
English, the question echoed back). Such a draft is not shown: the user gets the fragment sentences that
best match the question, quoted with their source, or without fragments an honest «не нашёл». A draft
that passes has its citations checked: each `[n]` is kept when fragment n's words back its sentence, moved
to the fragment that backs it best, or dropped; an answer without any `[n]` gets only the sources its
sentences are backed by. Every check is a named entry of `CHECKS`, so adding one is adding a function.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from itertools import pairwise

from grove.core.observe import task
from pydantic import BaseModel, Field

from nodes.answering.dialogue_guards import similarity
from nodes.retrieval.lexical import Weights, sentences, share_found, term, term_set, words
from nodes.answering.quote import NEAREST_LEAD, Similarity, nearest_meaning, passages_text, select_quote

CITATION = re.compile(r"(\s?)\[(\d{1,2})\]")
_LETTER = re.compile(r"[^\W\d_]")
_CYRILLIC_LETTER = re.compile(r"[а-яё]", re.IGNORECASE)
_LATIN_LETTER = re.compile(r"[a-z]", re.IGNORECASE)
# Scripts a Russian answer never contains; Qwen models drift into Chinese under pressure.
_FOREIGN_SCRIPT = re.compile(r"[\u0600-\u06ff\u0900-\u097f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")

# A sentence is backed by a fragment holding this share of its content lemmas.
MIN_SUPPORT = 0.4
# A cited fragment this close to the best-supporting one (lemmas weighted by rarity among the
# fragments, so words every fragment has do not decide) keeps its citation.
SUPPORT_MARGIN = 0.15
# A sentence without a citation names a source only when it has this many content lemmas.
MIN_UNCITED_TERMS = 3
# An answer without citations names at most this many sources.
MAX_UNCITED_SOURCES = 2
# Below this share of its content words found in the question and fragments, a draft is off topic.
MIN_TOPIC_SHARE = 0.3
# Without fragments only a long draft sharing no word with the question is called off topic.
OFF_TOPIC_MIN_WORDS = 25

EXTRACT_LEAD = "В ваших документах об этом сказано так:"
NOT_FOUND = ("Не нашёл ответа на этот вопрос в ваших документах, а уверенно ответить сам не могу. "
             "Попробуйте переформулировать вопрос.")
CANNOT_ANSWER = ("Не могу уверенно ответить на этот вопрос. Попробуйте переформулировать его; если ответ "
                 "есть в ваших документах, загрузите их в режиме «База».")


MIN_CLAIMED_TERMS = 2
"""`_unfounded`: this many of the question's terms stated by the draft and held by no fragment
(`GROVE_LOCAL_UNFOUNDED_TERMS`)."""


@dataclass
class Draft:
    """A model's answer with what it should be about."""

    text: str
    question: str
    fragments: list[str] = field(default_factory=list)
    max_chars: int | None = None
    strict: bool = False  # also check that its commands, names and numbers come from the fragments (`_invents`)
    claimed_terms: int = MIN_CLAIMED_TERMS  # `_unfounded`'s count of the question's terms no fragment holds
    answered: bool | None = None  # the model's judgment that the fragments answer (None: `covers` decides)
    sure: bool = False  # the judgment at the odds the model drafts from in the near band (`_unfounded`)

    @property
    def body(self) -> str:
        """The words without citation markers."""
        return CITATION.sub("", self.text).strip()


def _empty(draft: Draft) -> bool:
    """No words, and no number of the fragments' that the question lacks: «550.» under a passage that
    computes 550 from the question's 500, 510 and 50 is an answer (set AH, AH010), «[1]» or «—» is not."""
    return not _LETTER.search(draft.body) and not copies_tokens(draft.body, draft.question, draft.fragments)


def _bare_citations(draft: Draft) -> bool:
    """«[4]» and little else: markers with at most two words around them."""
    return bool(CITATION.search(draft.text)) and len(words(draft.body)) <= 2


def _repetition(draft: Draft) -> bool:
    """A loop: a sentence said three times (a long one twice), few distinct word 4-grams, a stuck word."""
    said: dict[str, int] = {}
    for span in sentences(draft.body):
        key = " ".join(words(span.text))
        size = len(key.split())
        if size >= 4:
            said[key] = said.get(key, 0) + 1
            if said[key] >= 3 or (size >= 8 and said[key] >= 2):
                return True
    tokens = words(draft.body)
    grams = list(zip(tokens, tokens[1:], tokens[2:], tokens[3:]))
    if len(tokens) >= 40 and len(set(grams)) < 0.6 * len(grams):
        return True
    run = 1
    for previous, current in pairwise(tokens):
        run = run + 1 if current == previous else 1
        if run >= 5:
            return True
    return False


def _not_russian(draft: Draft) -> bool:
    """Another script, or mostly Latin words that neither the question nor the fragments use."""
    if _FOREIGN_SCRIPT.search(draft.body):
        return True
    known = set(words(draft.question)) | {w for f in draft.fragments for w in words(f)}
    cyrillic = len(_CYRILLIC_LETTER.findall(draft.body))
    latin = sum(len(_LATIN_LETTER.findall(w)) for w in words(draft.body) if w not in known)
    return latin > 20 and cyrillic < latin


def _off_topic(draft: Draft) -> bool:
    """Nothing in the question or the fragments supports it."""
    answer = term_set(draft.body)
    question = term_set(draft.question)
    if draft.fragments:
        context = question.union(*(term_set(f) for f in draft.fragments))
        return len(answer) >= 4 and share_found(answer, context) < MIN_TOPIC_SHARE
    return bool(question) and len(words(draft.body)) >= OFF_TOPIC_MIN_WORDS and not answer & question


def _echo(draft: Draft) -> bool:
    """The question said back."""
    return similarity(draft.body, draft.question) >= 0.9


_REFUSAL = re.compile(r"(?:об этом|этого|ответа)\s+(?:не\s+сказано|нет)|не\s+(?:нашёл|нашел|найден)|"
                      r"нет\s+(?:информации|сведений|данных)", re.IGNORECASE)
# A fragment sentence holding this weighted share of the question's terms covers it (`covers`): a refusal
# is overruled only then, and an extractive answer is said to answer only then.
# 0.4: above nine in ten of the questions the development sets' documents do not answer (their best
# shown sentence holds 0.00–0.47, p90 0.38: bench/answerability.py, `sentence`, texlive-dev and
# gimp-dev), while the answerable ones passing it went from 45 of 120 at 0.5 to 69 — and the small
# model refused over the answering passage in 13 of 60 answers (issue 37).
REFUSAL_OVERRULE_COVERAGE = 0.4


def is_refusal(text: str) -> bool:
    """A short «в документах об этом не сказано» (a long answer that mentions it in passing is not one)."""
    return len(words(CITATION.sub("", text))) <= 30 and bool(_REFUSAL.search(text))


def coverage(question: str, fragments: Sequence[str], shown: Sequence[str] | None = None) -> float:
    """The largest weighted share of the question's terms that one sentence holds: a sentence of
    `shown` (the passages the user reads; None: every sentence of the fragments), its terms weighted by
    rarity among the fragments' sentences (0 when the question or the fragments have no terms)."""
    wanted = term_set(question)
    found = [term_set(span.text) for f in fragments for span in sentences(f)]
    said = found if shown is None else [term_set(span.text) for text in shown for span in sentences(text)]
    if not wanted or not found or not said:
        return 0.0
    weights = Weights(found)
    return max(weights.coverage(wanted, terms) for terms in said)


# A question put in other words than its passage's: a sentence holding at least this share of its
# weighted terms covers it too when a passage comes this near in meaning (`nearest_meaning`, the cosine
# of the question's and the passage's embeddings). Chosen with bench/covers.py over the 14 sets'
# retrieved fragments: answerable questions covered 0.59 → 0.72, unanswerable ones 0.125 → 0.138.
MEANING_FLOOR_COVERAGE = 0.2
MEANING_OVERRULE = 0.65


OWN_WORDING_COVERAGE = 0.5
"""`covers` with this share of words: the question's words the base lacks are the user's own wording.
Over the development probes whose questions name a word the base lacks (bench.covers, `--unknown`):
answerable 84 of 180 covered, unanswerable 5 of 152 (at `REFUSAL_OVERRULE_COVERAGE`: 111 and 19)."""


def covers(question: str, fragments: Sequence[str], shown: Sequence[str] | None = None,
           similarity: Similarity | None = None, *, words: float | None = None) -> bool:
    """A sentence (of `shown`, or of the fragments) plainly matches the question: it holds
    REFUSAL_OVERRULE_COVERAGE of the question's weighted terms, or MEANING_FLOOR_COVERAGE of them while a
    passage of the fragments is MEANING_OVERRULE near it in meaning (`words` replaces the first share).
    The one test of whether passages answer: for overruling a refusal, for the lead above an
    extractive answer, and (stricter) for words of the question the base lacks.

    Why meaning too: a user's words are often not the document's («убрать из повторения один день»
    over «в поле Исключения можно указать отдельные дни»), and the small model then refuses over the
    very passage that answers (sets Q and R: 7 of 40 answerable questions, which words alone did not
    cover; bench/README.md, "A question in other words").
    """
    lexical = coverage(question, fragments, shown)
    if lexical >= (REFUSAL_OVERRULE_COVERAGE if words is None else words):
        return True
    return lexical >= MEANING_FLOOR_COVERAGE and nearest_meaning(question, fragments, similarity) >= MEANING_OVERRULE


def _refused(draft: Draft) -> bool:
    """«В ваших документах об этом не сказано» while a fragment sentence plainly matches the question.

    Seen with the local model in bench/answer_eval: the right fragment was in the prompt (the
    search gate had passed it) and the model still said the documents do not say. A short
    refusal with such a fragment shown is replaced by the quote; when no sentence covers the
    question, the refusal stands (it may be true).
    """
    return bool(draft.fragments) and is_refusal(draft.body) and answering(draft.question, draft.fragments,
                                                                          answered=draft.answered)


def answering(question: str, fragments: Sequence[str], shown: Sequence[str] | None = None, *,
              answered: bool | None = None) -> bool:
    """Whether the fragments answer the question: the model's judgment when there is one
    (nodes/answering/answer_judge.py), else `covers`."""
    return covers(question, fragments, shown) if answered is None else answered


# The user's message judged instead of answered: «Ваше сообщение содержит несколько ошибок и не
# соответствует правилам. Пожалуйста, исправьте его» (a local answer read in issue 37), «…содержит
# несколько ошибок и недоразумений. Вот исправленный вариант:» and the question rewritten (sets F).
_SCOLDING = re.compile(
    r"ваш\w*\s+(?:сообщени|вопрос|запрос|задани)\w*\s+(?:\w+\s+){0,3}?"
    r"(?:содержит\s+(?:\w+\s+){0,2}?ошиб(?:к|ок)|не\s+соответству|наруша|некоррект|неправил|неверн|непонят"
    r"|не\s+(?:совсем\s+|вполне\s+)?(?:корректн|правильн|понятн))"
    r"|пожалуйста,?\s+исправьте\s+(?:его|ваше|свое|своё|сообщение|вопрос)"
    r"|вот\s+исправленн\w*\s+(?:вариант|текст|версия)(?:\s+ваш\w*\s+\w+)?\s*:",
    re.IGNORECASE)


def _scolds(draft: Draft) -> bool:
    """The draft tells the user off (their message «содержит ошибки», «не соответствует правилам»)
    instead of answering: a user asked a question, and is never scolded for it."""
    return bool(_SCOLDING.search(draft.body))


# A technical token: a Latin word (a command, a function, a key, a format) or a number of two digits
# and more, with its dots, underscores and brackets («instead.ticks()», «git», «1000»).
_TECHNICAL = re.compile(r"(?<![\w.])(?:[a-z][a-z0-9+#]*(?:[.:_-][a-z0-9+#]+)*(?:\(\))?|\d+(?:[.,]\d+)+|\d{2,})"
                        r"(?![a-z0-9])", re.IGNORECASE)
_PLAIN_LATIN = frozenset("a an and are as at be by for from in is it of on or the to with".split())


def technical_tokens(text: str) -> list[str]:
    """The draft's technical tokens (Latin words, numbers of two digits or more), lower-cased."""
    found = [m.group(0).lower().rstrip(".:_-") for m in _TECHNICAL.finditer(CITATION.sub(" ", text))]
    return [t for t in found if t and t not in _PLAIN_LATIN and not (t.isalpha() and len(t) < 2)]


def _invents(draft: Draft) -> bool:
    """A command, a name or a number that neither the question nor any shown fragment has.

    The fragment holds the manual's `timer:set(1000)`; the model wrote a busy loop on
    `instead.ticks()`, or `git commit` to close a bug where the manual says `Closes: #nnnnn`
    (issue 37). A small model's own knowledge shows in exactly such tokens, and the user would
    run them: the draft is replaced by the fragments' own words.
    """
    if not draft.strict or not draft.fragments:
        return False
    return bool(unknown_tokens(technical_tokens(draft.body), [draft.question, *draft.fragments]))


def unknown_tokens(tokens: Sequence[str], texts: Sequence[str]) -> list[str]:
    """The technical tokens none of the texts holds (as a token, a word or a substring)."""
    known = " ".join(texts).lower()
    known_tokens = set(technical_tokens(known)) | set(words(known))
    return [t for t in tokens if t not in known_tokens and t not in known]


def copies_tokens(text: str, question: str, fragments: Sequence[str]) -> bool:
    """The text carries technical tokens the question lacks, and every one is the fragments' own:
    «…с помощью команды `Ctrl+Shift+S`» over «Сохранить вывод в файле... (Ctrl+Shift+S)» states the
    passage's fact in the model's framing words (set AG, AG009), which no lemma overlap counts."""
    tokens = unknown_tokens(technical_tokens(text), [question])
    return bool(tokens) and not unknown_tokens(tokens, fragments)


_NEGATION = re.compile(r"(?<![\w-])(?:не|ни|нельзя|нет)(?![\w-])((?:\s+[\w-]+){1,3})", re.IGNORECASE)
_ANY_NEGATION = re.compile(r"(?<![\w-])(?:не|ни|нельзя|нет|без)(?![\w-])", re.IGNORECASE)
# A draft sentence is compared with the fragment sentence that holds this share of its weighted terms.
NEGATION_ALIGNMENT = 0.5


def negated_terms(text: str) -> frozenset[str]:
    """The terms a negation stands before (the first content word of the next three: «не является
    участником» → участник, «не могут быть включены» → включ)."""
    found: set[str] = set()
    for match in _NEGATION.finditer(text):
        following = [t for t in (term(w) for w in words(match.group(1))) if t]
        found.update(following[:1])
    return frozenset(found)


def _negates(draft: Draft) -> bool:
    """A sentence that says the opposite of the fragment sentence it repeats: it negates what that
    sentence states without any negation, or states plainly what that sentence negates.

    «Поручитель … не является участником проекта Debian» over a quote saying he is one (issue 37):
    the words are the fragment's, so nothing else catches it, and the quote under it contradicts it.
    """
    if not draft.strict or not draft.fragments:
        return False
    spans = [span.text for f in draft.fragments for span in sentences(f)]
    found = [term_set(t) for t in spans]
    if not found:
        return False
    weights = Weights(found)
    for span in sentences(draft.body):
        wanted = term_set(span.text)
        if len(wanted) < 3:
            continue
        best = max(range(len(found)), key=lambda i: weights.coverage(wanted, found[i]))
        if weights.coverage(wanted, found[best]) < NEGATION_ALIGNMENT:
            continue
        source, said = spans[best], span.text
        if not _ANY_NEGATION.search(source) and negated_terms(said) & found[best]:
            return True
        if not _ANY_NEGATION.search(said) and negated_terms(source) & wanted:
            return True
    return False


# «Да» first: the small model's way of answering a yes-or-no question, right or not.
YES_FIRST = re.compile(r"^\W*да(?![\w-])", re.IGNORECASE)
# A negation that answers «нет» («не требует», «невозможно восстановить»); «без» only qualifies, as do
# a negated comparison and «что бы ни» (`_QUALIFIER`): «сажают осенью, но не позднее октября» says yes.
_NO = re.compile(r"(?<![\w-])(?:не|нет|ни|нельзя|невозможно|никак|необязательн\w*|незачем)(?![\w-])", re.IGNORECASE)
_QUALIFIER = re.compile(r"(?<![\w-])(?:не\s+(?:позднее|позже|раньше|ранее|более|менее|больше|меньше|только|реже|чаще)"
                        r"|бы\s+ни)(?![\w-])", re.IGNORECASE)


def _says_no(text: str) -> bool:
    """The text holds a negation that answers «нет», not one that only qualifies."""
    return bool(_NO.search(_QUALIFIER.sub(" ", text)))


def _contradicts(draft: Draft) -> bool:
    """«Да» with no negation over a passage whose sentence nearest the question negates: the model said
    yes where the documents say no.

    «Да, нужно передавать изменения…» over «добавление каталогов не требует передачи», «Да, можно
    вернуть удалённую диаграмму» over «будет невозможно восстановить удалённую информацию»: the
    1.5B model begins nearly every answer to a yes-or-no question with «Да» (33 drafts over the runs
    through set BX, none with «Нет»; 7 questions where the documents say no). The sentence of the
    passages that answer (`select_quote`) holding the most of the question's weighted terms negates
    for 4 of those 7 and under none of the other «Да» drafts (`bench.contradicts`). Checked for the
    local model only (`strict`).
    """
    if not draft.strict or not draft.fragments or not YES_FIRST.match(draft.body) or _says_no(draft.body):
        return False
    spans = [span.text for quote in select_quote(draft.question, draft.fragments) for span in sentences(quote.text)]
    found = [term_set(text) for text in spans]
    wanted = term_set(draft.question)
    if not wanted or not any(found):
        return False
    weights = Weights(found)
    nearest = max(range(len(spans)), key=lambda i: weights.coverage(wanted, found[i]))
    return _says_no(spans[nearest])


def _unbacked_yes(draft: Draft) -> bool:
    """«Да» that says little more than the question (at most one term of its own) where no fragment
    sentence holds REFUSAL_OVERRULE_COVERAGE of the question's weighted terms: a yes nothing says.

    «Да, Déjà Dup отправляет уведомление о завершении резервного копирования с ошибкой» (BMU07: the
    help never says so) is the question said back with a yes. Over the runs through set BX, of 33 «Да»
    drafts it flags 8 (`bench.contradicts`): BMU07, three where the documents say no (BH015, BO014,
    BW016), and four right yeses that say nothing the question does not (BC007, BG009, BX004, «Да,
    можно.» for BF019), whose fact was only in the quote; asked again from the passage, BG009's
    second wording names the arrow keys. Checked for the local model only (`strict`).
    """
    if not draft.strict or not draft.fragments or not YES_FIRST.match(draft.body):
        return False
    if len(term_set(draft.body) - term_set(draft.question)) > 1:
        return False
    return coverage(draft.question, draft.fragments) < REFUSAL_OVERRULE_COVERAGE


# A question that asks which key or key combination does something («Каким сочетанием клавиш…»).
_ASKS_KEY = re.compile(r"(?<![\w-])как(?:ой|ая|ое|ие|им|ими|ую)\s+(?:[\w-]+\s+)?(?:клавиш|сочетани|комбинаци)",
                       re.IGNORECASE)
# A key as manuals name it: a combination («Shift+Ctrl+G»), a named key or a function key.
_KEY = re.compile(r"(?<![\w-])(?:(?:(?:Ctrl|Alt|Shift|Meta|Super)\s*\+\s*)+\w+|Ctrl|Alt|Shift|Meta|Super|Esc|Escape"
                  r"|Enter|Return|Tab|Home|End|PgUp|PgDn|Page\s*Up|Page\s*Down|Insert|Ins|Delete|Del|Backspace"
                  r"|Space|F\d{1,2}|Пробел\w*|Ввод)(?![\w-])", re.IGNORECASE)
# The question's words that ask for a key, not what it should do.
_KEY_WORDS = ("клавиша клавишей клавиши клавишу сочетание сочетанием сочетания комбинация комбинацией комбинации "
              "горячая горячей горячие нажать нажатие")


@cache
def _key_terms() -> frozenset[str]:
    return frozenset(term_set(_KEY_WORDS))


def named_keys(text: str) -> set[str]:
    """The keys a text names, lower-cased, a combination's parts in one order («ctrl+g+shift»)."""
    return {"+".join(sorted(re.split(r"\s*\+\s*", m.group(0).lower()))) for m in _KEY.finditer(text)}


def _misses_key(draft: Draft) -> bool:
    """Asked which key does something, the draft names no key that a fragment sentence gives beside one of
    the question's words.

    «Какой клавишей в gbrainy перейти к следующей задаче?» got «Нажмите кнопку OK.», «Какое сочетание
    клавиш в Tellico создаёт новую запись?» «Двойной щелчок по записи…», «…извлечь диск из привода?»
    «Ctrl+P», which no passage names, «Ctrl+G», which one names for another command (BRU05, BWU04, BPU07,
    BQU05: the documents name no such key). Over the runs of sets BC–BX (548 distinct drafts, 15 answering
    such a question) it flags 8: seven to silent questions and one that named a menu where the help gives
    a key (BT007); the right keys (F11, «Пробел», Shift+Ctrl+G) are the passages' own, beside the
    question's words. Checked for the local model only (`strict`).
    """
    if not draft.strict or not draft.fragments or not _ASKS_KEY.search(draft.question) or is_refusal(draft.body):
        return False
    named = named_keys(draft.body)
    asked = term_set(draft.question) - _key_terms()
    return not any(named_keys(span.text) & named and term_set(span.text) & asked
                   for fragment in draft.fragments for span in sentences(fragment))


# A local draft most of whose sentences no fragment backs is not the documents' answer.
MIN_BACKED_SHARE = 0.5


def _unsupported(draft: Draft) -> bool:
    """Most of the draft's sentences say what no fragment says: the model answered from its own knowledge.

    Steps to «запускаться при входе в систему» over a passage on opening files (issue 37's FU07): each
    word is ordinary, so `invents` finds nothing, but four of its five sentences are backed by no
    fragment (under MIN_SUPPORT of their lemmas, the question's own left out). Of the accepted drafts
    over sets E and F, those answering had 0.83–1.00 of their sentences backed, FU07 0.20; FU08, a
    fragment's sentence on another matter copied, 1.00 (no lexical test tells it apart). Checked for
    the local model only (`strict`).
    """
    if not draft.strict or not draft.fragments:
        return False
    asked = term_set(draft.question)
    found = [term_set(f) for f in draft.fragments]
    said = [(span.text, wanted) for span in sentences(draft.body) if len(wanted := term_set(span.text) - asked) >= 2]
    if not said:
        return False
    backed = sum(max(share_found(wanted, f) for f in found) >= MIN_SUPPORT
                 or copies_tokens(text, draft.question, draft.fragments) for text, wanted in said)
    return backed / len(said) < MIN_BACKED_SHARE


def _unfounded(draft: Draft) -> bool:
    """The draft states what the question asks about, in the question's own terms that no fragment
    holds, while no fragment sentence covers the question (`covers`): it answers a question the
    documents do not answer, from the model's own knowledge or by bending a passage on another matter.

    «Включить тёмную тему оформления в KAlarm можно так: …» over the settings dialog's passage on
    starting at login; «В KTurtle можно поставить точку останова» over a passage on strings; «команда
    `turtle`» to run a program «из командной строки» (sets U and V: 4 of the 6 invented replies to
    silent questions in the development runs). Each sentence may copy a passage, so `_unsupported`
    passes them; what gives them away is the question's own terms («тёмн», «оформлен») said as fact
    where no passage has them. Over three development runs (sets S and T twice, U and V once) it flags
    4 of the 6 invented drafts to silent questions and no honest one, and 6 of 78 drafts to answerable
    questions, 3 of them judged right (one in the model's own words); bench/README.md, «A draft that
    states the question». Checked for the local model (`strict`).

    Not when the judgment is `sure` the fragments answer: a question in the user's words («рулить вторым
    компом», «в адресной строке») is answered in them, and the terms no fragment holds are the user's
    wording (sets AS–AV: 4 of the 6 such drafts judged 0.74–0.93 were right).
    """
    if not draft.strict or not draft.fragments or draft.sure:
        return False
    claimed = claimed_terms(draft.question, draft.body, draft.fragments)
    return len(claimed) >= draft.claimed_terms and not covers(draft.question, draft.fragments)


def claimed_terms(question: str, answer: str, fragments: Sequence[str]) -> frozenset[str]:
    """The question's terms the answer states and no fragment holds (`_unfounded`)."""
    held = frozenset().union(*(term_set(f) for f in fragments))
    return (term_set(question) & term_set(answer)) - held


def _too_long(draft: Draft) -> bool:
    return draft.max_chars is not None and len(draft.body) > draft.max_chars


CHECKS: dict[str, Callable[[Draft], bool]] = {
    "empty": _empty,
    "bare_citations": _bare_citations,
    "repetition": _repetition,
    "not_russian": _not_russian,
    "off_topic": _off_topic,
    "echo": _echo,
    "too_long": _too_long,
    "refused": _refused,
    "scolds": _scolds,
    "invents": _invents,
    "negates": _negates,
    "contradicts": _contradicts,
    "unbacked_yes": _unbacked_yes,
    "misses_key": _misses_key,
    "unsupported": _unsupported,
    "unfounded": _unfounded,
}


def degenerate(draft: Draft) -> list[str]:
    """Names of the checks the draft fails (empty: the draft can be shown)."""
    if _empty(draft):
        return ["empty"] + (["bare_citations"] if CITATION.search(draft.text) else [])
    return [name for name, check in CHECKS.items() if check(draft)]


# Checks a draft fails by saying what the passages do not (a command, a key, sentences or the question's
# terms no fragment holds, a yes no sentence gives; nothing of them at all): after such a draft the passages
# lead as the answer only at `vouched`. A loop, another language or an echo says nothing of the passages.
INVENTING_CHECKS = frozenset({"invents", "unsupported", "unfounded", "misses_key", "unbacked_yes", "off_topic"})

# Checks a draft fails by some of its sentences (a later one may fail alone); the others judge the whole
# draft (a refusal, a scolding, another language, an answer to a question the documents do not answer).
SENTENCE_CHECKS = frozenset({"invents", "unsupported", "too_long", "repetition", "negates"})

# Where a draft's steps begin: a code block or a list item at a line's start.
_STEPS = re.compile(r"^\s*(?:```|\d+[.)]\s|[-*•]\s)", re.MULTILINE)


def backed_lead(draft: Draft) -> str | None:
    """The draft's first sentences alone, when they pass every check and say more than the question
    repeats; None when no such lead comes before its steps (a list, a code block, «Вот как это сделать:»).

    A small model often says the fact first and then writes steps of its own: «…настроить переменные
    окружения $DEBEMAIL и $DEBFULLNAME в файле ~/.bashrc.» and then `nano`, `source ~/.bashrc` and an
    example address no passage has (set X, X013). The steps fail the checks, and the whole draft gave way
    to the bare quote, though its first sentence was the fact in the answer's own words. Only for a
    draft that failed `SENTENCE_CHECKS` (`check_answer`): a draft judged unfounded as a whole is not
    rescued by its first sentence (set V, V016: alone it passed, and said the opposite of the handbook).
    """
    steps = _STEPS.search(draft.text)
    head = draft.text[:steps.start()] if steps else draft.text
    spans = []
    for span in sentences(head):
        if span.text.rstrip().endswith(":"):
            break
        spans.append(span)
    asked = term_set(draft.question)
    for n in range(len(spans), 0, -1):
        lead = head[:spans[n - 1].end].strip()
        if not any(len(term_set(span.text) - asked) >= 2 for span in sentences(lead)):
            continue  # it only says the question again
        if not degenerate(replace(draft, text=lead)):
            return lead
    return None


def complete_sentences(text: str) -> str:
    """A draft cut by the token limit, without its unfinished last sentence."""
    spans = sentences(text)
    if len(spans) > 1 and not re.search(r"[.!?…»)\]]\s*$", spans[-1].text):
        return text[:spans[-2].end].rstrip()
    return text


# --------------------------------------------------------------------------- citations


class Citations(BaseModel):
    text: str = Field(description="the answer with its citation markers corrected")
    used: list[int] = Field(default_factory=list, description="1-based fragments backing it, in order")
    kept: int = 0
    moved: int = 0
    dropped: int = 0


def check_citations(answer: str, fragments: list[str]) -> Citations:
    """Each `[n]` checked against fragment n's text; without any, sources chosen by overlap."""
    result = Citations(text=answer)
    if not fragments:
        result.text = CITATION.sub("", answer).strip()
        return result
    found = [term_set(f) for f in fragments]
    weights = Weights(found)
    pieces: list[str] = []
    cursor = 0
    for span in sentences(answer):
        markers = list(CITATION.finditer(span.text))
        if not markers:
            continue
        wanted = term_set(CITATION.sub(" ", span.text))
        support = Support([share_found(wanted, f) for f in found], [weights.coverage(wanted, f) for f in found])
        jointly = _joint_support(wanted, [int(m.group(2)) for m in markers], found)
        chosen: list[int] = []
        parts: list[str] = []
        end = 0
        for match in markers:
            cited = int(match.group(2))
            number: int | None = cited
            if cited in jointly:
                result.kept += 1
            else:
                number = _judge_citation(cited, support, judged=len(wanted) >= 2, result=result)
            parts.append(span.text[end:match.start()])
            if number is not None and number not in chosen:
                chosen.append(number)
                parts.append(f"{match.group(1)}[{number}]")
            end = match.end()
        text = "".join(parts) + span.text[end:]
        if len(chosen) < len(markers):  # «см. [9].» without its marker is «см..»
            text = re.sub(r"(?<!\.)\.\.(?!\.)", ".", text)
        pieces += [answer[cursor:span.start], text]
        cursor = span.end
        result.used += [n for n in chosen if n not in result.used]
    pieces.append(answer[cursor:])
    if result.kept + result.moved + result.dropped == 0:
        result.used = sources_by_overlap(answer, fragments)
        return result
    result.text = "".join(pieces).strip()
    return result


@dataclass
class Support:
    """How well each fragment backs one sentence: its share of the sentence's lemmas, and weighted by rarity."""

    share: list[float]
    weighted: list[float]

    @property
    def best(self) -> int:
        """1-based number of the fragment that backs the sentence best (the higher-ranked on a tie)."""
        return max(range(len(self.weighted)), key=lambda i: (self.weighted[i], -i)) + 1

    def backs(self, number: int) -> bool:
        return self.share[number - 1] >= MIN_SUPPORT


def _joint_support(wanted: frozenset[str], cited: list[int], found: list[frozenset[str]]) -> set[int]:
    """Citations that back a sentence together («A [1], а B [2]»): kept when the cited fragments
    jointly hold MIN_SUPPORT of its terms and each holds at least half of that."""
    numbers = {n for n in cited if 1 <= n <= len(found)}
    if len(numbers) < 2 or len(wanted) < 2:
        return set()
    union = frozenset().union(*(found[n - 1] for n in numbers))
    if share_found(wanted, union) < MIN_SUPPORT:
        return set()
    return {n for n in numbers if share_found(wanted, found[n - 1]) >= MIN_SUPPORT / 2}


def _judge_citation(number: int, support: Support, *, judged: bool, result: Citations) -> int | None:
    """The fragment a citation should name: itself, the best-supporting one, or none (counted in `result`)."""
    if not 1 <= number <= len(support.share):
        result.dropped += 1
        return None
    best = support.best
    if not judged or (support.backs(number)
                      and support.weighted[number - 1] >= support.weighted[best - 1] - SUPPORT_MARGIN):
        result.kept += 1
        return number
    if support.backs(best):
        result.moved += 1
        return best
    result.dropped += 1
    return None


def sources_by_overlap(answer: str, fragments: list[str]) -> list[int]:
    """The fragments that back the answer's sentences best (at most MAX_UNCITED_SOURCES)."""
    found = [term_set(f) for f in fragments]
    weights = Weights(found)
    votes: dict[int, float] = {}
    for span in sentences(answer):
        wanted = term_set(span.text)
        if len(wanted) < MIN_UNCITED_TERMS:
            continue
        support = Support([share_found(wanted, f) for f in found], [weights.coverage(wanted, f) for f in found])
        best = support.best
        if support.backs(best):
            votes[best] = votes.get(best, 0.0) + support.share[best - 1]
    ranked = sorted(votes, key=lambda n: (-votes[n], n))
    return ranked[:MAX_UNCITED_SOURCES]


# --------------------------------------------------------------------------- fallback


class Extract(BaseModel):
    text: str
    used: list[int] = Field(default_factory=list)
    covers: bool = Field(default=False, description="the quoted passages answer the question (`answering`)")


def extractive_answer(question: str, fragments: list[str], lead: str = EXTRACT_LEAD,
                      nearest_lead: str = NEAREST_LEAD, answered: bool | None = None) -> Extract:
    """The fragment passages that best match the question, quoted (nodes/answering/quote.py); `used` lists
    their fragments in order.

    They are the nearest passages, not necessarily an answer: after a draft that invented, the
    question is often one the documents do not answer (issue 37: a silent question passed the gate,
    the model answered from its own knowledge, and unrelated passages were shown as «В ваших
    документах об этом сказано так:»). So `lead` opens them only when a quoted sentence covers the
    question (`answering`: the model's judgment `answered`, else `covers`, the test that overrules a
    refusal); otherwise `nearest_lead` says they are only the nearest.
    """
    quotes = select_quote(question, fragments)
    if not quotes:
        return Extract(text="")
    answers = answering(question, fragments, [q.text for q in quotes], answered=answered)
    return Extract(text=passages_text(quotes, lead if answers else nearest_lead), used=[q.fragment for q in quotes],
                   covers=answers)


# --------------------------------------------------------------------------- the node


class CheckedAnswer(BaseModel):
    text: str = Field(description="what to show above the source block")
    used: list[int] = Field(default_factory=list, description="1-based fragments for the source block")
    degenerate: list[str] = Field(default_factory=list, description="checks the model's draft failed")
    fallback: bool = False
    trimmed: bool = Field(default=False, description="the draft's first sentences alone (`backed_lead`): "
                                                     "what followed failed the checks (`degenerate`)")
    quoted: bool = Field(default=False, description="a quote of the passage backing the answer follows it")
    citations_moved: int = 0
    citations_dropped: int = 0

    @property
    def accepted(self) -> bool:
        """The model's own answer is shown (not a fallback)."""
        return not self.fallback


@task(name="check-answer")
def check_answer(draft: str, question: str, fragments: list[str], *, searched: bool = True,
                 max_chars: int | None = None, truncated: bool = False, lead: str = EXTRACT_LEAD,
                 nearest_lead: str = NEAREST_LEAD, no_answer: str | None = None,
                 strict: bool = False, claimed_terms: int = MIN_CLAIMED_TERMS,
                 answered: bool | None = None, vouched: bool | None = None, sure: bool = False) -> CheckedAnswer:
    """The draft as shown, or the fallback; the fragments (by number) that back what is shown.

    `fragments` are the texts the model was shown, in their numbering; `searched` says
    whether the user's documents were searched (it picks the honest no-answer text, unless
    `no_answer` gives one); `lead` opens an extractive answer whose passages cover the question,
    `nearest_lead` one whose passages are only the nearest (`extractive_answer`); `truncated` marks a draft cut
    by the token limit (its unfinished sentence goes); `strict` checks too that the draft's commands,
    names and numbers are the fragments' (a small local model's own knowledge shows in them), and keeps
    a failed draft's first sentences when they pass alone (`backed_lead`); `answered` is the model's
    judgment that the fragments answer (nodes/answering/answer_judge.py; None: `covers` decides);
    `vouched` replaces it for the lead of a failed draft's passages when the draft invented or said what
    the passages do not back (`INVENTING_CHECKS`): a sign they do not answer, so the caller may ask the
    judgment to be surer there. A loop, another language or an echo is no such sign, nor a refusal
    (the small model refuses over the very passage that answers, `_refused`): their passages keep
    `answered`; a yes where the passage says no (`_contradicts`) is a sign that they answer. `sure`: the
    judgment is at the near band's odds (`_unfounded`).
    """
    text = complete_sentences(draft) if truncated else draft
    written = Draft(text, question, fragments, max_chars, strict, claimed_terms, answered, sure)
    failed = degenerate(written)
    trimmable = bool(failed) and strict and set(failed) <= SENTENCE_CHECKS
    first = backed_lead(written) if trimmable else None
    if first is not None:
        citations = check_citations(first, fragments)
        return CheckedAnswer(text=citations.text, used=citations.used, degenerate=failed, trimmed=True,
                             citations_moved=citations.moved, citations_dropped=citations.dropped)
    if failed:
        # A yes where the passage says no: the passage answers, with its no (`_contradicts`). A draft that
        # said what the passages do not is a sign they do not answer: only the surer odds lead them so.
        inventing = vouched is not None and "refused" not in failed and bool(INVENTING_CHECKS.intersection(failed))
        answers = True if "contradicts" in failed else vouched if inventing else answered
        extract = extractive_answer(question, fragments, lead, nearest_lead, answers) if fragments else Extract(text="")
        if extract.text:
            return CheckedAnswer(text=extract.text, used=extract.used, degenerate=failed, fallback=True)
        text = no_answer or (NOT_FOUND if searched else CANNOT_ANSWER)
        return CheckedAnswer(text=text, degenerate=failed, fallback=True)
    citations = check_citations(text, fragments)
    return CheckedAnswer(text=citations.text, used=citations.used, citations_moved=citations.moved,
                         citations_dropped=citations.dropped)
