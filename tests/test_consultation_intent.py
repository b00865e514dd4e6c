"""The consultation's intent registry on the berry profile and the berry library's own documents
(issue 37, record 8): what a question asks, when a draft misses it, which passage replaces it,
which question is a follow-up, which is off-domain."""

from __future__ import annotations

import pytest

from grove.core.domain_profile import load_profile
from nodes.answering.consultation_intent import IntentRegistry
from tests.support.berries import berry_documents

PROFILE = load_profile("berries")
INTENTS = IntentRegistry.of(PROFILE)
LEAD = "В базе знаний по культуре об этом сказано так:"


def paragraphs(culture: str) -> list[str]:
    return [p for d in berry_documents() if d.culture == culture for p in d.paragraphs]


@pytest.mark.parametrize(("question", "intents"), [
    ("Как правильно подкармливать?", ["подкормка"]),
    ("Чем опрыскивать кусты весной?", ["защита"]),
    ("Какие болезни у малины ремонтантной?", ["защита"]),
    ("Когда обрезать клубнику ремонтантную?", ["обрезка"]),
    ("Как ухаживать за голубикой?", []),
])
def test_the_intents_a_question_asks(question: str, intents: list[str]) -> None:
    assert INTENTS.asked(question) == intents


def test_a_follow_up_asks_what_its_root_asked() -> None:
    assert INTENTS.asked("А в какое время лучше?", "Как подкормить малину ремонтантную?") == ["подкормка"]
    assert INTENTS.asked("А поливать как часто?", "Как подкормить голубику?") == ["полив"]


@pytest.mark.parametrize(("draft", "asked"), [
    # record 8: a watering passage for a feeding question, mulch for a spraying one
    (paragraphs("малина ремонтантная")[1], ["подкормка"]),
    ("Опрыскивать кусты весной лучше соломой, перегноем или корой.", ["защита"]),
    (paragraphs("общая информация")[1], ["защита"]),
])
def test_a_draft_about_another_intent_misses(draft: str, asked: list[str]) -> None:
    assert INTENTS.misses(draft, asked)


@pytest.mark.parametrize(("draft", "asked"), [
    (paragraphs("малина ремонтантная")[0], ["подкормка"]),
    (paragraphs("малина общая")[0], ["защита"]),
    ("Весной подкармливают азотом, после полива, чтобы не обжечь корни.", ["подкормка"]),
    ("Поливайте понемногу.", []),  # no intent asked: nothing to miss
    ("Голубике нужна кислая почва.", ["подкормка"]),  # no intent named: no evidence either way
])
def test_a_draft_on_the_asked_intent_passes(draft: str, asked: list[str]) -> None:
    assert not INTENTS.misses(draft, asked)


def test_the_replacing_passage_is_the_crops_own_on_the_intent() -> None:
    found = INTENTS.passage("Как правильно подкармливать? Про малину (Ремонтантная)", ["подкормка"],
                            paragraphs("малина ремонтантная"), LEAD)
    assert found is not None
    text, used = found
    assert text.startswith(LEAD) and "мочевины" in text and used == [1]
    assert "ведра воды" not in text  # the watering paragraph is never quoted for feeding


def test_the_passage_leaves_out_what_the_bot_already_said() -> None:
    feeding = paragraphs("малина ремонтантная")[0]
    first, *rest = feeding.split(". ")
    found = INTENTS.passage("Как подкормить малину ремонтантную? А в какое время лучше?", ["подкормка"],
                            paragraphs("малина ремонтантная"), LEAD, said=[first + "."])
    assert found is not None and first not in found[0] and rest[0][:30] in found[0]
    assert INTENTS.passage("Как подкормить?", ["подкормка"], paragraphs("малина ремонтантная"), LEAD,
                           said=[feeding]) is None


def test_no_passage_on_the_intent_is_none() -> None:
    assert INTENTS.passage("Как укрыть голубику?", ["укрытие"], paragraphs("голубика"), LEAD) is None


@pytest.mark.parametrize(("question", "elliptical"), [
    ("А в какое время лучше?", True),
    ("Как часто?", True),
    ("А поливать как часто?", True),
    ("Чем опрыскивать кусты весной?", False),
    ("Как правильно подкармливать?", False),
])
def test_only_an_elliptical_question_is_a_follow_up(question: str, elliptical: bool) -> None:
    assert INTENTS.elliptical(question) is elliptical


@pytest.mark.parametrize(("question", "off"), [
    ("Как настроить роутер?", True),
    ("Сколько стоит айфон?", True),
    ("Чем опрыскивать кусты весной?", False),
    ("Как правильно подкармливать?", False),
    ("Когда обрезать клубнику?", False),
    ("А в какое время лучше?", False),
    ("Спасибо!", False),
    ("Привет", False),
])
def test_off_domain_questions(question: str, off: bool) -> None:
    assert INTENTS.off_domain(PROFILE, question) is off


def test_a_profile_without_a_refusal_refuses_nothing() -> None:
    silent = PROFILE.model_copy(update={"off_domain_reply": ""})
    assert not IntentRegistry.of(silent).off_domain(silent, "Как настроить роутер?")
