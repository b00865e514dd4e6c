"""`detect_culture_name` (seed 000): which of the profile's cultures a question is about.

The LLM classifies into the profile's list; an answer off the list, or no
answer at all, falls back to the deterministic keyword classifier, so a
consultation never stalls on the classifier. An "unclear" answer for a question
that names exactly one crop is overruled by that crop; a crop the question does not
name is not believed (the model asked about raspberries for «Чем опрыскивать кусты
весной?»): the culture then stays unclear and the user is asked.
"""

from __future__ import annotations

from typing import Literal

from grove.core.observe import task
from grove.core.runs import run_logger
from pydantic import BaseModel

import prompts
from grove.core.settings import Settings
from grove.core.domain_profile import DomainProfile
from nodes.answering.llm import ChatModel, LLMError, complete


class CultureGuess(BaseModel):
    culture: str
    by: Literal["llm", "keywords"]
    raw: str = ""


def classifier_prompt(profile: DomainProfile) -> str:
    return prompts.load("detect_culture.md").format(
        labels="\n".join(f"- {label}" for label in profile.labels),
        general_label=profile.unclear[-1], unknown_label=profile.unclear[0])


def detect(text: str, profile: DomainProfile, settings: Settings) -> CultureGuess:
    if settings.culture_detection == "keywords":
        return CultureGuess(culture=profile.keyword_culture(text), by="keywords")
    messages = [{"role": "system", "content": classifier_prompt(profile)},
                {"role": "user", "content": text}]
    try:
        reply = complete(messages, ChatModel(settings), max_tokens=24, temperature=0.0)
    except LLMError as exc:
        return CultureGuess(culture=profile.keyword_culture(text), by="keywords", raw=f"error: {exc}")
    label = profile.normalise(reply.content)
    named = profile.keyword_culture(text)
    if label is None:
        return CultureGuess(culture=named, by="keywords", raw=reply.content)
    if profile.case_of(label) == "unclear" and profile.case_of(named) != "unclear":
        # The question names one crop outright; a small model still says «общая информация»
        # (measured with the local 1.5B model), so the named crop wins.
        return CultureGuess(culture=named, by="keywords", raw=reply.content)
    crop = profile.crop_of(label)
    if crop is not None and crop not in profile.crops_named(text):
        # The profile's rules do not confirm the crop: it is the model's invention.
        return CultureGuess(culture=named, by="keywords", raw=reply.content)
    return CultureGuess(culture=label, by="llm", raw=reply.content)


@task(name="detect-culture-name")
def detect_culture_name(text: str, profile: DomainProfile, settings: Settings) -> CultureGuess:
    guess = detect(text, profile, settings)
    run_logger().info("culture %r by %s (model said %r)", guess.culture, guess.by, guess.raw[:80])
    return guess
