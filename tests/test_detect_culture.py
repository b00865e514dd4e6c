"""nodes/answering/detect_culture.py with the packaged domain profile (prompts/domains/berries.yaml),
selected the way a deployment selects it: GROVE_DOMAIN_PROFILE.

(tests/test_domain_profile.py holds the model's answers off the list, the overruled «unclear» and
the crops the question does not name.)
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from grove.core.settings import get_settings

from grove.core.domain_profile import DomainProfile, active_profile, load_profile
from nodes.answering.detect_culture import CultureGuess, classifier_prompt, detect, detect_culture_name
from tests.support.scripted_llm import ScriptedLLM, text


@pytest.fixture
def berries(env) -> DomainProfile:  # type: ignore[no-untyped-def]
    env(GROVE_DOMAIN_PROFILE="berries")
    profile = active_profile()
    assert profile is not None and profile.name == "berries"
    return profile


def test_no_profile_named_means_no_consultation(env) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_DOMAIN_PROFILE="")
    assert active_profile() is None
    with pytest.raises(FileNotFoundError, match="domain profile 'orchids' not found"):
        load_profile("orchids")


@pytest.mark.parametrize(("question", "culture"), [
    ("Когда сажать клубнику?", "клубника общая"),                         # a crop with varieties, none named
    ("Чем подкормить ремонтантную малину?", "малина ремонтантная"),       # its variety named
    ("Какую землянику НСД выбрать?", "клубника ремонтантная"),            # another stem of the crop, a variety
    ("Обрезка летней малины после сбора", "малина летняя"),
    ("Почему желтеют листья у смородины?", "смородина"),                  # a crop without varieties
    ("Как размножить жимолость черенками?", "жимолость"),
    ("Чем опрыскать кусты от тли?", "не определено"),                     # no crop: unclear
    ("Что посадить рядом: крыжовник или ежевику?", "не определено"),      # two crops: unclear too
])
def test_keyword_detection_maps_the_question_to_its_culture(berries: DomainProfile, env, question: str,  # type: ignore[no-untyped-def]
                                                            culture: str) -> None:
    with ScriptedLLM() as llm:
        env(GROVE_CULTURE_DETECTION="keywords", GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url,
            GROVE_LLM_MODEL="scripted")
        guess = detect(question, berries, get_settings())
    assert guess == CultureGuess(culture=culture, by="keywords", raw="")
    assert llm.requests == []  # the keyword classifier never asks the model


def test_the_classifier_prompt_names_every_label_and_the_two_unclear_answers(berries: DomainProfile) -> None:
    prompt = classifier_prompt(berries)
    assert "{" not in prompt and "}" not in prompt  # every placeholder filled
    # The labels as one list, in the profile's order, right under the instruction to pick one.
    assert "без пояснений:\n" + "\n".join(f"- {label}" for label in berries.labels) + "\n\nПравила" in prompt
    assert "ответь «общая информация»" in prompt and "ответь «не определено»" in prompt


@pytest.mark.parametrize(("question", "said", "culture"), [
    ("Когда сажать клубнику летнюю?", "клубника летняя", "клубника летняя"),
    ("Как ухаживать за голубикой?", "Голубика", "голубика"),                       # case of the label restored
    ("Как ухаживать за ягодными кустами?", "общая информация", "общая информация"),  # the general «unclear»
    ("Что лучше: ежевика или малина?", "Ответ: не определено.", "не определено"),   # label inside a sentence
])
def test_the_models_label_is_taken_when_the_question_agrees(berries: DomainProfile, env, question: str,  # type: ignore[no-untyped-def]
                                                             said: str, culture: str) -> None:
    with ScriptedLLM([text(said)]) as llm:
        env(GROVE_LLM_API_KEY="k", GROVE_LLM_BASE_URL=llm.base_url, GROVE_LLM_MODEL="scripted")
        guess = detect(question, berries, get_settings())
    assert (guess.culture, guess.by, guess.raw) == (culture, "llm", said)
    [request] = llm.requests
    assert request["messages"][1] == {"role": "user", "content": question}
    assert (request["max_tokens"], request["temperature"]) == (24, 0.0)


def test_the_task_logs_its_guess(berries: DomainProfile, env, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    env(GROVE_CULTURE_DETECTION="keywords")
    with caplog.at_level(logging.INFO, logger="grove.run"):
        guess = detect_culture_name("Чем подкормить голубику?", berries, get_settings())
    assert guess.culture == "голубика"
    assert "culture 'голубика' by keywords" in caplog.text


PROFILE = """
name: vegetables
role: агроном-овощевод
category: общая консультация
unclear: [неизвестно, про овощи вообще]
fallback_subcategory: про овощи вообще
crops:
  томат:
    stems: [томат, помидор]
    general: томат общий
    varieties:
      томат детерминантный: [детерминант, низкоросл]
      томат индетерминантный: [индетерминант, высокоросл]
  огурец:
    stems: [огур]
ask_culture_again: "О каком овоще речь?"
"""


@pytest.mark.parametrize(("question", "culture"), [
    ("Как пасынковать высокорослые помидоры?", "томат индетерминантный"),
    ("Когда сеять томаты на рассаду?", "томат общий"),
    ("Почему горчат огурцы?", "огурец"),
    ("Когда подкормить малину?", "неизвестно"),  # not a crop of this profile: its own unclear label
])
def test_another_deployments_profile_is_its_own_list(tmp_path: Path, env, question: str, culture: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "vegetables.yaml"
    path.write_text(PROFILE, encoding="utf-8")
    env(GROVE_DOMAIN_PROFILE=str(path), GROVE_CULTURE_DETECTION="keywords")
    profile = active_profile()
    assert profile is not None and profile.name == "vegetables"
    assert detect(question, profile, get_settings()).culture == culture
