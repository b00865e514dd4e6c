"""The berry profile as data, culture detection with its fallback, and the moderation gate."""

from __future__ import annotations

import pytest

from grove.core.settings import get_settings

from nodes.answering.consultation_prompt import is_clarification_question, system_prompt
from nodes.answering.detect_culture import detect
from grove.core.domain_profile import DomainProfile, load_profile
from nodes.store.moderation import NotAnAdmin, approve, enqueue
from nodes.retrieval.unified_retrieve import Snippet
from tests.support.scripted_llm import ScriptedLLM, error, text


@pytest.fixture
def berries() -> DomainProfile:
    return load_profile("berries")


def test_labels_are_the_seeds_list(berries: DomainProfile) -> None:
    assert set(berries.labels) == {
        "клубника летняя", "клубника ремонтантная", "клубника общая", "малина летняя",
        "малина ремонтантная", "малина общая", "голубика", "смородина", "жимолость", "крыжовник",
        "ежевика", "общая информация", "не определено"}


@pytest.mark.parametrize(("culture", "case"), [
    ("не определено", "unclear"), ("общая информация", "unclear"), ("что-то иное", "unclear"),
    ("клубника общая", "general"), ("малина общая", "general"),
    ("малина ремонтантная", "specific"), ("голубика", "specific")])
def test_cases_of_seed_000(berries: DomainProfile, culture: str, case: str) -> None:
    assert berries.case_of(culture) == case


@pytest.mark.parametrize(("specific", "general"), [
    ("малина ремонтантная", "малина общая"), ("малина летняя", "малина общая"),
    ("клубника летняя", "клубника общая"), ("клубника общая", "клубника общая"),
    ("голубика", "голубика"), ("общая информация", "общая информация")])
def test_general_subcategory_of_seed_002(berries: DomainProfile, specific: str, general: str) -> None:
    assert berries.general_subcategory(specific) == general


@pytest.mark.parametrize(("general", "answer", "expected"), [
    ("клубника общая", "Ремонтантная", "клубника ремонтантная"),
    ("клубника общая", "у меня НСД", "клубника ремонтантная"),
    ("клубника общая", "Летняя", "клубника летняя"),
    ("клубника общая", "июньская", "клубника летняя"),
    ("малина общая", "обычная", "малина летняя"),
    ("малина общая", "традиционная, старый сорт", "малина летняя"),
    ("малина общая", "не знаю", None)])
def test_variety_answers_map_by_the_seeds_rules(berries: DomainProfile, general: str, answer: str,
                                                expected: str | None) -> None:
    assert berries.map_variety(general, answer) == expected


@pytest.mark.parametrize(("question", "culture"), [
    ("Как правильно подкармливать?", "не определено"),
    ("Как правильно подкармливать? Про малину", "малина общая"),
    ("Когда обрезать клубнику?", "клубника общая"),
    ("Как ухаживать за голубикой?", "голубика"),
    ("Как подкормить малину ремонтантную?", "малина ремонтантная"),
    ("Что лучше: ежевика или малина?", "не определено")])
def test_keyword_fallback_classifies_the_seed_questions(berries: DomainProfile, question: str,
                                                        culture: str) -> None:
    assert berries.keyword_culture(question) == culture


def test_the_model_classifies_and_off_list_answers_fall_back(berries: DomainProfile, env) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLM([text("«Малина ремонтантная.»"), text("помидор"), error(400), text("общая информация"),
                      text("не определено")]) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_LLM_MODEL="scripted")
        by_model = detect("Чем подкормить мою малину, она плодоносит дважды?", berries, get_settings())
        off_list = detect("Когда обрезать клубнику?", berries, get_settings())
        failed = detect("Как ухаживать за голубикой?", berries, get_settings())
        overruled = detect("Как правильно посадить голубику?", berries, get_settings())
        unclear = detect("Чем подкормить кусты весной?", berries, get_settings())
    assert (overruled.culture, overruled.by) == ("голубика", "keywords")  # the named crop wins
    assert (unclear.culture, unclear.by) == ("не определено", "llm")
    assert (by_model.culture, by_model.by) == ("малина ремонтантная", "llm")
    assert (off_list.culture, off_list.by, off_list.raw) == ("клубника общая", "keywords", "помидор")
    assert (failed.culture, failed.by) == ("голубика", "keywords")
    prompt = llm.requests[0]["messages"][0]["content"]
    assert all(f"- {label}" in prompt for label in berries.labels)


def test_a_crop_the_question_does_not_name_is_not_believed(berries: DomainProfile, env) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLM([text("малина общая"), text("голубика"), text("клубника ремонтантная")]) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_LLM_MODEL="scripted")
        invented = detect("Чем опрыскивать кусты весной?", berries, get_settings())
        other = detect("Когда обрезать малину?", berries, get_settings())
        confirmed = detect("Какую клубнику НСД сажать?", berries, get_settings())
    assert (invented.culture, invented.by) == ("не определено", "keywords")
    assert (other.culture, other.by) == ("малина общая", "keywords")  # named: малина, not голубика
    assert (confirmed.culture, confirmed.by) == ("клубника ремонтантная", "llm")


def test_family_and_domain_gate_of_the_profile(berries: DomainProfile) -> None:
    assert berries.family("малина ремонтантная") == ["малина", "малина общая", "малина ремонтантная",
                                                     "малина летняя"]
    assert berries.family("ежевика") == ["ежевика"]
    assert berries.family("общая информация") == ["не определено", "общая информация"]
    assert berries.crop_of(None) is None  # a crop without varieties has general=None: not a match
    assert not berries.in_domain("Как настроить роутер?")
    assert berries.in_domain("Чем опрыскивать кусты весной?")
    assert berries.in_domain("Что с ней делать?", "голубика")  # a follow-up in a crop's topic


def test_ingest_refuses_a_culture_the_profile_does_not_know(env) -> None:  # type: ignore[no-untyped-def]
    from grove.app.ingest_cli import check_culture

    env(GROVE_DOMAIN_PROFILE="berries")
    refusal = check_culture("малина ремонтная")
    assert refusal is not None and "«малина ремонтная» не найдена" in refusal and "малина ремонтантная" in refusal
    assert check_culture("малина ремонтантная") is None
    assert check_culture(None) is None


def test_clarification_test_of_seed_000() -> None:
    assert is_clarification_question("О какой культуре речь?")
    assert is_clarification_question("Уточните сорт, пожалуйста.")
    assert not is_clarification_question("Подкармливайте весной азотом.")
    assert not is_clarification_question("Почему? " + "Длинный ответ. " * 40)


def test_prompt_numbers_fragments_with_tier_and_type(berries: DomainProfile) -> None:
    snippets = [Snippet(source_type="qa", priority_level=1, content="Q&A ответ", distance=0.2, id=1),
                Snippet(source_type="document", priority_level=2, content="Текст документа", distance=0.5,
                        id=2)]
    prompt = system_prompt(berries, "малина ремонтантная", "общая консультация", "grounded", snippets)
    assert "Ты — профессиональный агроном" in prompt
    assert "### Фрагмент 1 [УРОВЕНЬ 1] [qa]\nQ&A ответ" in prompt
    assert "### Фрагмент 2 [УРОВЕНЬ 2] [document]\nТекст документа" in prompt
    assert "Текущая культура: малина ремонтантная" in prompt
    assert "ничего не найдено" in system_prompt(berries, "ежевика", "x", "grounded", [])


def test_only_admins_write_to_the_knowledge_base(store: str, user_id: int, env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_ADMIN_IDS="[42]")
    item = enqueue.fn(user_id, None, "вопрос", "ответ", "голубика", "общая консультация")
    with pytest.raises(NotAnAdmin):
        approve.fn(item, user_id, get_settings().admin_ids)
    import psycopg

    with psycopg.connect(store) as conn:
        assert conn.execute("select status from moderation_queue where id = %s", (item,)).fetchone()[0] == "pending"
        assert conn.execute("select count(*) from knowledge_base where moderation_id = %s",
                            (item,)).fetchone()[0] == 0
