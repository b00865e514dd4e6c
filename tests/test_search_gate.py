"""The local model's search gate and the search query (nodes/retrieval/search_gate.py): its pure parts only.

The fragments are made by hand with the distances a search would give; `has_documents`
(which asks the database) is not called here.
"""

from __future__ import annotations

from grove.core.settings import get_settings
import pytest

from nodes.store.chat_history import ChatMessage
from nodes.retrieval.retrieve import Fragment
from nodes.retrieval.search_gate import (
    BLEND_WEIGHT,
    GATE_SCORES,
    best_distance,
    best_overlap,
    blend,
    decide,
    model_query,
    plausible_query,
    search_query,
)

SPRING = "Чем подкормить малину весной?"


def fragment(text: str, distance: float) -> Fragment:
    return Fragment(chunk_id=1, document_id=1, text=text, source_type="pdf", source_identifier="малина.pdf",
                    page=1, distance=distance)


SUMMER = fragment("Летом малине нужен калий и фосфор.", 0.30)  # nearer, shares one word of three
SPRING_FEED = fragment("Ремонтантную малину весной подкармливают азотом.", 0.45)  # farther, shares two
FOUND = [SUMMER, SPRING_FEED]


def test_the_scores_of_a_search() -> None:
    assert best_distance(SPRING, FOUND) == 0.30
    assert best_overlap(SPRING, FOUND) == pytest.approx(2 / 3)  # «малину», «весной»; not «подкормить»
    assert best_overlap(SPRING, [SUMMER]) == pytest.approx(1 / 3)
    # each fragment's distance lowered by its share of the question's words: 0.30 − 1/3 w vs 0.45 − 2/3 w
    assert blend(SPRING, FOUND) == pytest.approx(min(0.30 - BLEND_WEIGHT / 3, 0.45 - BLEND_WEIGHT * 2 / 3))
    assert blend(SPRING, [fragment("Голубику поливают кислой водой.", 0.2)]) == 0.2  # no shared word: no bonus


def test_which_side_of_the_threshold_passes() -> None:
    assert set(GATE_SCORES) == {"distance", "overlap", "blend"}
    assert not GATE_SCORES["distance"].higher_passes and not GATE_SCORES["blend"].higher_passes
    assert GATE_SCORES["overlap"].higher_passes


@pytest.mark.parametrize(("score", "threshold", "passed"), [
    ("distance", 0.30, True),  # the threshold itself passes
    ("distance", 0.29, False),
    ("overlap", 2 / 3, True),
    ("overlap", 0.7, False),
    ("blend", 0.25, True),
    ("blend", 0.2, False),
])
def test_the_gate_passes_on_its_score(score: str, threshold: float, passed: bool) -> None:
    decision = decide(SPRING, "подкормка малины", FOUND, settings=get_settings(), score_name=score, threshold=threshold)
    assert decision.passed is passed and decision.query == "подкормка малины"
    assert decision.score == pytest.approx(GATE_SCORES[score].score(SPRING, FOUND))
    assert decision.fragments == FOUND  # kept either way, for the decision's record


@pytest.mark.parametrize(("score", "threshold", "near", "passed", "in_band"), [
    ("distance", 0.30, 0.40, True, False),  # passed is never near
    ("distance", 0.25, 0.30, False, True),  # past the threshold, within the edge (the edge itself counts)
    ("distance", 0.25, 0.29, False, False),  # past both: shut
    ("distance", 0.25, 0.25, False, False),  # the edge at the threshold: no band
    ("overlap", 0.7, 0.6, False, True),  # a score where higher passes: the band lies below
    ("overlap", 0.7, 0.8, False, False),  # an edge on the wrong side turns the band off
])
def test_the_near_band_lies_between_the_threshold_and_its_edge(
        score: str, threshold: float, near: float, passed: bool, in_band: bool) -> None:
    decision = decide(SPRING, SPRING, FOUND, settings=get_settings(), score_name=score, threshold=threshold, near=near)
    assert decision.passed is passed and decision.near is in_band


def test_nothing_found_never_passes() -> None:
    decision = decide(SPRING, SPRING, [], settings=get_settings(), score_name="overlap", threshold=0.0, near=0.0)
    assert not decision.passed and not decision.near and decision.score is None and decision.fragments == []


def test_the_gate_reads_its_settings_when_not_told(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_SEARCH_GATE_SCORE="overlap", GROVE_SEARCH_GATE_THRESHOLD="0.5")
    decision = decide(SPRING, SPRING, FOUND, settings=get_settings())
    assert decision.passed and decision.score == pytest.approx(2 / 3)
    env(GROVE_SEARCH_GATE_THRESHOLD="0.8")
    assert not decide(SPRING, SPRING, FOUND, settings=get_settings()).passed
    env(GROVE_SEARCH_GATE_SCORE="distance", GROVE_SEARCH_GATE_THRESHOLD="0.2", GROVE_SEARCH_GATE_NEAR="0.35")
    assert decide(SPRING, SPRING, FOUND, settings=get_settings()).near  # best distance 0.30


@pytest.mark.parametrize("query", [
    "SELECT * FROM documents WHERE owner_id = 1",
    "select chunk_text from document_chunks where text like '%малина%'",
    "def feed(): return 'азот'",
    "малина {подкормка}",
    "<b>подкормка малины</b>",
    "подкормка == азот",
    "",
    "   ",
    "и в на",  # no content word
    "raspberry feeding in spring",  # English for a Russian question
    None,
    42,
])
def test_junk_queries_are_not_plausible(query: object) -> None:
    assert not plausible_query(query, SPRING)  # type: ignore[arg-type]
    assert model_query(query, SPRING) == SPRING


def test_a_query_a_person_would_type_is_kept() -> None:
    assert plausible_query("подкормка малины весной", SPRING)
    assert model_query("подкормка малины весной", SPRING) == "подкормка малины весной"
    assert plausible_query("nginx reverse proxy", "How to set up nginx as a proxy?")  # Latin for a Latin question
    assert plausible_query("настройка nginx proxy_pass", "Как настроить nginx?")


HISTORY = [ChatMessage(role="user", content=SPRING), ChatMessage(role="assistant", content="Азотом [1].")]


@pytest.mark.parametrize("follow_up", ["А летом?", "А летом", "Летом?", "и осенью", "Ну а осенью чем?"])
def test_a_short_follow_up_is_searched_with_the_question_before_it(follow_up: str) -> None:
    assert search_query(follow_up, HISTORY, get_settings().search_followup_words) == f"{SPRING} {follow_up}"


@pytest.mark.parametrize("question", ["Летом", "Спасибо", "Как подкормить малину летом калием и фосфором?"])
def test_a_question_that_stands_alone_is_searched_alone(question: str) -> None:
    assert search_query(question, HISTORY, get_settings().search_followup_words) == question


def test_the_question_before_is_the_users_not_the_bots() -> None:
    assert search_query("А летом?", [], get_settings().search_followup_words) == "А летом?"
    assert search_query("А летом?", [ChatMessage(role="assistant", content="Здравствуйте!")], get_settings().search_followup_words) == "А летом?"
    longer = [*HISTORY, ChatMessage(role="user", content="Когда обрезать малину?"),
              ChatMessage(role="assistant", content="Осенью.")]
    assert search_query("А голубику?", longer, get_settings().search_followup_words) == "Когда обрезать малину? А голубику?"


def test_how_short_a_follow_up_is_is_a_setting(env) -> None:  # type: ignore[no-untyped-def]
    follow_up = "А чем подкормить её летом?"
    assert search_query(follow_up, HISTORY, get_settings().search_followup_words) == follow_up  # five words: longer than the default four
    env(GROVE_SEARCH_FOLLOWUP_WORDS="5")
    assert search_query(follow_up, HISTORY, get_settings().search_followup_words) == f"{SPRING} {follow_up}"


def test_a_question_naming_what_the_base_never_mentions_does_not_pass() -> None:
    # close fragments, but the question asks about a thing no chunk holds: only the nearest passages
    decision = decide(SPRING, SPRING, FOUND, settings=get_settings(), score_name="distance", threshold=0.5, near=0.6, unknown=["голубика"])
    assert not decision.passed and decision.near and decision.unknown == ["голубика"]
    far = decide(SPRING, SPRING, FOUND, settings=get_settings(), score_name="distance", threshold=0.1, near=0.2, unknown=["голубика"])
    assert not far.passed and not far.near  # far from everything: the gate is simply shut
    assert decide(SPRING, SPRING, FOUND, settings=get_settings(), score_name="distance", threshold=0.5, near=0.6, unknown=[]).passed


def test_an_everyday_word_the_base_lacks_does_not_shut_the_gate_beside_a_passage_holding_the_question() -> None:
    # «кусок» is the user's word for what the manual calls a fragment; the passage holds the rest
    question = "Как вырезать кусок клипа на монтажном столе?"
    passage = fragment("Чтобы вырезать фрагмент клипа на монтажном столе, нажмите X.", 0.40)
    opened = decide(question, question, [passage], settings=get_settings(), score_name="distance", threshold=0.5, near=0.6, unknown=["кусок"])
    assert opened.passed and opened.unknown == []
    # a rare word is a thing the manual would have to name: still shut beside the same passage
    rare = decide(question, question, [passage], settings=get_settings(), score_name="distance", threshold=0.5, near=0.6, unknown=["макрос"])
    assert not rare.passed and rare.unknown == ["макрос"]
    # the everyday word, but no fragment holds most of the question: shut, and said so
    elsewhere = fragment("Клипы импортируются из папки проекта.", 0.40)
    alone = decide(question, question, [elsewhere], settings=get_settings(), score_name="distance", threshold=0.5, near=0.6, unknown=["кусок"])
    assert not alone.passed and alone.unknown == ["кусок"]


def test_how_common_an_everyday_word_is_and_how_much_the_passage_must_hold_are_settings(env) -> None:  # type: ignore[no-untyped-def]
    question = "Как вырезать кусок клипа на монтажном столе?"
    passage = fragment("Чтобы вырезать фрагмент клипа на монтажном столе, нажмите X.", 0.40)
    env(GROVE_SEARCH_GATE_EVERYDAY_ZIPF="6")  # only the very commonest words («и», «в») count as everyday
    assert not decide(question, question, [passage], settings=get_settings(), score_name="distance", threshold=0.5, near=0.6,
                      unknown=["кусок"]).passed
    env(GROVE_SEARCH_GATE_EVERYDAY_ZIPF="3.5", GROVE_SEARCH_GATE_EVERYDAY_OVERLAP="1.01")  # no passage ever holds enough
    assert not decide(question, question, [passage], settings=get_settings(), score_name="distance", threshold=0.5, near=0.6,
                      unknown=["кусок"]).passed
