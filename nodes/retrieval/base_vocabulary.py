"""The things a question names that the user's base never mentions.

A question the documents do not answer is most often about something they never name (a format, a tool, a
feature), while its nearest fragments stay close: distance alone does not tell it apart, whether the base
holds the thing's name does. Nouns and Latin tokens are looked up (a verb or adjective is usually the user's
own wording) in the full-text vectors of the user's active chunks, then in the text for a Latin word, by
its root's start for a Russian noun, and as the Latin name it may spell by sound («калзиум»: Kalzium,
nodes/retrieval/latin_spelling.py). `everyday` marks a common word, a weaker sign, by its frequency in
general Russian (wordfreq's Zipf scale); the gate weighs it (nodes/retrieval/search_gate.py).
Figures: bench/README.md, «Does the base answer the question?» (bench.answerability).
"""

from __future__ import annotations

import re

from grove.core.observe import task
from grove.store.db import transaction
from nodes.retrieval.latin_spelling import latin_pattern
from nodes.retrieval.lexical import part_of_speech, term

_TOKEN = re.compile(r"[0-9a-zа-яё]+(?:[.+_-][0-9a-zа-яё]+)*", re.IGNORECASE)
_CYRILLIC = re.compile(r"[а-яё]", re.IGNORECASE)
_LATIN = re.compile(r"[a-z]", re.IGNORECASE)
# English words that name nothing (Postgres drops most of them from its `russian` vectors anyway).
_ENGLISH_STOP = frozenset("a an and are as at be by for from in is it of on or the to with".split())

_FOUND = """
select w.word, numnode(w.query) = 0 or exists (  -- a word the configuration drops names nothing
    select 1 from document_chunks c
     where c.owner_id = %(owner)s and c.is_active
       and (case when w.latin then c.fts_simple else c.fts_russian end) @@ w.query) as found
  from (select word, latin, case when latin then plainto_tsquery('simple', word)
                          else plainto_tsquery('russian', word) end as query
          from unnest(%(words)s::text[], %(latin)s::boolean[]) as listed(word, latin)) w
"""

# A Latin word as a whole word of the text: bounded by the start, the end or a non-word character.
_IN_TEXT = r"""
select w.word from unnest(%(words)s::text[]) as w(word)
 where exists (select 1 from document_chunks c
                where c.owner_id = %(owner)s and c.is_active
                  and c.chunk_text ~* ('(^|[^[:alnum:]_])' || regexp_replace(w.word, '([.+])', '\\\1', 'g')
                                       || '($|[^[:alnum:]_])'))
"""


# A Russian noun the vectors miss, looked for once more by the start of its root among the words as
# written (the `simple` vectors, a prefix query on their GIN index).
_BY_ROOT = """
select w.word from unnest(%(words)s::text[], %(roots)s::text[]) as w(word, root)
 where exists (select 1 from document_chunks c
                where c.owner_id = %(owner)s and c.is_active
                  and c.fts_simple @@ to_tsquery('simple', w.root || ':*'))
"""
# A Russian word the vectors miss that spells a Latin word of the text by sound («калзиум»: Kalzium).
_AS_LATIN = """
select w.word from unnest(%(words)s::text[], %(patterns)s::text[]) as w(word, pattern)
 where exists (select 1 from document_chunks c
                where c.owner_id = %(owner)s and c.is_active and c.chunk_text ~* w.pattern)
"""
ROOT_LETTERS = 4  # the shortest root start looked up: «тонга», «анута», «деся», a clipped «комп»


def root_start(word: str) -> str | None:
    """The start of a Russian noun's root, for finding the words the documents derive from it: its
    lemma's stem less a derivational suffix's three letters, at least ROOT_LETTERS long («тонганцев» →
    «тонга», as in «Тонга», «тонганских»; «десяток» → «десят», as in «десятки»); None for a short stem."""
    stem = term(word)
    if stem is None or not _CYRILLIC.search(stem) or len(stem) < ROOT_LETTERS:
        return None
    return stem[:max(ROOT_LETTERS, len(stem) - 3)]


def everyday(word: str, zipf: float) -> bool:
    """A single Russian word at least as frequent in general Russian as `zipf` on wordfreq's scale
    (Latin tokens and compounds never are: they name formats, tools, features)."""
    if "-" in word or not _CYRILLIC.search(word) or _LATIN.search(word):
        return False
    from wordfreq import zipf_frequency  # its word list loads on first use (≈ 0.8 s; grove/app/warm.py)

    return zipf_frequency(word.lower(), "ru") >= zipf


def _noun(word: str) -> bool:
    return bool(term(word)) and part_of_speech(word) == "NOUN"


# Set phrases whose nouns name nothing: «по умолчанию», «на самом деле», «с первого раза», «по ходу»…, and
# their spoken forms and the spoken words that stand for a question word: «по дефолту», «ни фига», «что за
# зверь», «в чём дело», «скока»; and spoken function words the tagger reads as nouns: «тока» (только, not
# the current's genitive: sets BZ, CD), «када», «плиз», «норм», «кароче», «мб».
_SET_PHRASES = re.compile(
    r"(?<![\w-])(?:по\s+умолчанию|на\s+самом\s+деле|на\s+деле|со?\s+(?:первого|второго|третьего|одного)\s+раза"
    r"|по\s+ходу|на\s+ходу|в\s+пределах|в\s+случае|на\s+всякий\s+случай|с\s+помощью|при\s+помощи|в\s+течение"
    r"|в\s+виде|в\s+качестве|в\s+том\s+числе|по\s+мере|по\s+крайней\s+мере|в\s+целом|в\s+итоге|в\s+общем"
    r"|в\s+основном|в\s+первую\s+очередь|в\s+конце\s+концов|по\s+дефолту|ни\s+фига|в\s+ч[её]м\s+дело"
    r"|за\s+(?:дела|штука|штуковина|зверь)|с\s+чистого\s+листа|скока|скоко"
    r"|тока|токо|када|плиз|плз|пжлст|норм|нормас|кароче|чтоль|ч[её]т|мб|кста|спс)(?![\w-])", re.IGNORECASE)


def named_things(question: str) -> list[str]:
    """The question's words that name a thing, as written: Russian nouns and Latin tokens (not
    numbers, not English function words), each once; a hyphenated compound that names a thing
    (`fig-001.mps`, «Docker-контейнер») comes first, then its parts that do. A noun of a set phrase
    (`_SET_PHRASES`: «по умолчанию», «с первого раза») names nothing: a manual that never writes
    «умолчание» still answers «какой шрифт по умолчанию»."""
    found: list[str] = []
    for token in _TOKEN.findall(_SET_PHRASES.sub(" ", question)):
        parts = [p for p in token.split("-") if _names(p)] if "-" in token else []
        for word in ([token] if parts or ("-" not in token and _names(token)) else []) + parts:
            if word.lower() not in {w.lower() for w in found}:
                found.append(word)
    return found


def _names(word: str) -> bool:
    """A Russian noun, or a Latin token that is not a number or an English function word."""
    if _CYRILLIC.search(word):
        return _noun(word)
    return bool(_LATIN.search(word)) and len(word) > 1 and word.lower() not in _ENGLISH_STOP


@task(name="unknown-things")
def unknown_things(question: str, owner_id: int) -> list[str]:
    """The things the question names (as written) that no active chunk of this user's base contains;
    a compound the base holds whole makes its parts known too."""
    words = named_things(question)
    if not words:
        return []
    latin = [not _CYRILLIC.search(w) for w in words]
    with transaction() as conn:
        rows = conn.execute(_FOUND, {"owner": owner_id, "words": [w.lower() for w in words],
                                     "latin": latin}).fetchall()
        missing = {r["word"] for r in rows if not r["found"]}
        unparsed = sorted(w for w in missing if not _CYRILLIC.search(w))  # perhaps inside a path
        if unparsed:
            missing -= {r["word"] for r in conn.execute(_IN_TEXT, {"owner": owner_id, "words": unparsed})}
        rooted = {w: root for w in sorted(missing) if "-" not in w and (root := root_start(w))}
        if rooted:  # a derived word («тонганцев») of one the documents use («тонганских», «Тонга»)
            missing -= {r["word"] for r in conn.execute(_BY_ROOT, {"owner": owner_id, "words": list(rooted),
                                                                   "roots": list(rooted.values())})}
        spelled = {w: pattern for w in sorted(missing) if (pattern := latin_pattern(w))}
        if spelled:  # the user's Cyrillic spelling of a name the documents print in Latin letters
            missing -= {r["word"] for r in conn.execute(_AS_LATIN, {"owner": owner_id, "words": list(spelled),
                                                                    "patterns": list(spelled.values())})}
    compounds = [w for w in words if "-" in w]
    held = {part.lower() for w in compounds if w.lower() not in missing for part in w.split("-")}
    named = {part.lower() for w in compounds for part in w.split("-") if _names(part)}

    def absent(word: str) -> bool:
        if word.lower() not in missing or word.lower() in held:
            return False  # the base has it, alone or inside a compound it holds whole
        if "-" in word:  # a compound missing whole is said by its missing parts, if it has named ones
            return not any(part.lower() in named for part in word.split("-"))
        return True

    return [w for w in words if absent(w)]
