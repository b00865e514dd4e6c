"""Word-level evidence (nodes/retrieval/lexical.py): Russian content words as terms, shares and rarity weights."""

from __future__ import annotations

import pytest

from nodes.retrieval.lexical import Weights, sentences, share_found, term, term_set, terms, words


@pytest.mark.parametrize("forms", [
    ["малина", "малину", "малины", "малиной", "малине"],
    ["поливать", "поливают", "поливала", "поливаем"],
    ["часто", "частый", "частая", "частые"],  # the adverb and the adjective a paraphrase swaps
    ["редко", "редкий", "редкими"],
    ["Голубика", "ГОЛУБИКУ", "голубикой"],
])
def test_inflected_forms_are_one_term(forms: list[str]) -> None:
    found = {term(f) for f in forms}
    assert len(found) == 1 and None not in found


def test_different_words_stay_different() -> None:
    assert len({term("малина"), term("голубика"), term("смородина"), term("ежевика")}) == 4


@pytest.mark.parametrize("word", [
    "в", "и", "на", "но",  # prepositions, conjunctions
    "он", "мы", "какой", "этот", "свой",  # pronouns, pronominal adjectives
    "кто", "где", "когда", "почему",  # question words
    "можно", "нужно",  # predicatives
    "быть", "является", "делать", "очень", "уже",  # frequent lemmas with no topic
    "ответ", "вопросы", "документе", "информации",  # words every answer and question has
])
def test_words_without_a_topic_are_no_term(word: str) -> None:
    assert term(word) is None


def test_latin_tokens_and_numbers_are_kept_as_written() -> None:
    assert term("SSH") == "ssh" and term("report.pdf") == "report.pdf" and term("n8n") == "n8n"
    assert term("15") == "15" and term("7") == "7"
    assert term("x") is None  # a lone Latin letter carries nothing


def test_yo_and_ye_are_one_letter() -> None:
    assert term("Ёлка") == term("елка") is not None
    assert term("зелёные") == term("зеленый") is not None


def test_terms_keep_order_and_repeats() -> None:
    found = terms("Малину поливают часто, а малину ремонтантную — реже.")
    assert found[0] == found[3] == term("малина") and found[1] == term("поливать")
    assert len(found) == 6
    assert term_set("Малину поливают часто, а малину ремонтантную — реже.") == frozenset(found)


def test_a_paraphrase_shares_the_questions_terms() -> None:
    question = term_set("Как часто поливать малину летом?")
    assert question == {term("часто"), term("поливать"), term("малина"), term("лето")}
    assert share_found(question, term_set("Малину поливают часто, особенно летом.")) == 1.0
    assert share_found(question, term_set("Голубику поливают кислой водой.")) == 0.25


def test_share_found_of_nothing_is_zero() -> None:
    assert share_found([], frozenset({"малин"})) == 0.0
    assert share_found(term_set("и в на"), frozenset({"малин"})) == 0.0


def test_words_are_lower_cased_tokens_without_lemmas() -> None:
    assert words("Малину, report.pdf и n8n-агент v1.2!") == ["малину", "report.pdf", "и", "n8n-агент", "v1.2"]
    assert words("…") == []


def test_a_rare_term_weighs_more_than_a_shared_one() -> None:
    fragments = [term_set("Малину подкармливают азотом."), term_set("Малину обрезают осенью."),
                 term_set("Малине нужен калий.")]
    weights = Weights(fragments)
    malina, nitrogen = term("малина"), term("азот")
    assert malina is not None and nitrogen is not None
    assert weights.weight(nitrogen) > weights.weight(malina)
    assert weights.weight("несуществующий") == weights.weight(nitrogen)  # unseen: as rare as the rarest
    wanted = {malina, nitrogen}
    assert weights.coverage(wanted, fragments[0]) == 1.0
    assert 0 < weights.coverage(wanted, fragments[1]) < 0.5 == share_found(wanted, fragments[1])
    assert weights.coverage(set(), fragments[0]) == 0.0


def test_words_no_fragment_has_support_none() -> None:
    fragments = [term_set("Малину подкармливают азотом."), term_set("Голубику поливают кислой водой.")]
    weights = Weights(fragments)
    sentence = term_set("Котлеты жарят с луком.")
    assert [weights.coverage(sentence, f) for f in fragments] == [0.0, 0.0]


def test_sentences_carry_their_offsets() -> None:
    text = "Малину обрезают осенью. Когда поливать? Раз в неделю!"
    spans = sentences(text)
    assert [s.text for s in spans] == ["Малину обрезают осенью.", "Когда поливать?", "Раз в неделю!"]
    assert all(text[s.start:s.end] == s.text for s in spans)
