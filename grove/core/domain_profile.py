"""A deployment's domain profile: the cultures a consultation knows, as data.

The seeds hard-code berry crops in Python; here they live in a YAML file
(`prompts/domains/<name>.yaml`), so a deployment for another domain changes a
file, not code. The profile answers three questions the consultation flow asks:
which labels exist, which case a label falls in (unclear / general / specific),
and what a variety answer such as «НСД» maps to.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field

from grove.core.settings import get_settings
from prompts import TEMPLATES

Case = Literal["unclear", "general", "specific"]


class Crop(BaseModel):
    stems: list[str] = Field(description="lower-case word stems that name the crop in a question")
    general: str | None = Field(default=None, description="the 'общая' label of a crop with varieties")
    question: str | None = Field(default=None, description="the variety question asked for `general`")
    varieties: dict[str, list[str]] = Field(
        default_factory=dict, description="specific label → stems of the user's answer that mean it"
    )


class DomainProfile(BaseModel):
    name: str
    role: str
    category: str
    unclear: list[str]
    fallback_subcategory: str
    crops: dict[str, Crop]
    ask_culture_again: str
    ask_culture: str | None = Field(
        default=None, description="the first clarifying question when the culture is unclear (else ask_culture_again)"
    )
    domain_stems: list[str] = Field(
        default_factory=list,
        description="stems of the domain's words: a question with none of them, no crop and nothing "
                    "retrieved is off-domain, and its answer is never queued for moderation",
    )
    off_domain_reply: str = Field(
        default="", description="the polite refusal to a question outside the domain (empty: no refusal)")
    intents: dict[str, list[str]] = Field(
        default_factory=dict, description="what a question asks about (подкормка, полив, …) → words naming it")
    followup_openers: list[str] = Field(
        default_factory=list, description="first words of an elliptical follow-up («а», «и», «ещё»)")
    followup_words: list[str] = Field(
        default_factory=list, description="words of a follow-up that asks no topic of its own (время, часто, …)")
    small_talk: list[str] = Field(
        default_factory=list, description="greetings and thanks: never taken for an off-domain question")

    @property
    def culture_question(self) -> str:
        """What to ask when a question names no crop and nothing in the library answers it."""
        return self.ask_culture or self.ask_culture_again

    @property
    def labels(self) -> list[str]:
        """Every label the classifier may answer, in a stable order (seed 000's list)."""
        labels: list[str | None] = []  # a crop's general label may be unset
        for name, crop in self.crops.items():
            labels += [*crop.varieties, crop.general] if crop.varieties else [name]
        return [label for label in labels if label] + self.unclear

    def case_of(self, culture: str) -> Case:
        if culture in self.unclear or culture not in self.labels:
            return "unclear"
        if any(crop.general == culture for crop in self.crops.values()):
            return "general"
        return "specific"

    def crop_of(self, culture: str | None) -> str | None:
        if not culture:
            return None
        for name, crop in self.crops.items():
            if culture == name or culture == crop.general or culture in crop.varieties:
                return name
        return None

    def general_subcategory(self, culture: str | None) -> str | None:
        """`get_general_subcategory` of seed 002: малина ремонтантная → малина общая, голубика → голубика."""
        crop = self.crop_of(culture)
        if crop is None:
            return culture
        return self.crops[crop].general or culture

    def family(self, culture: str | None) -> list[str]:
        """Every label of the culture's crop (its name, general culture, varieties); for an
        unclear label, the unclear labels. Tier 1 may fall back within it, never beyond."""
        crop = self.crop_of(culture)
        if crop is None:
            return list(self.unclear) if culture in self.unclear else ([culture] if culture else [])
        entry = self.crops[crop]
        return list(dict.fromkeys(label for label in (crop, entry.general, *entry.varieties) if label))

    def variety_question(self, culture: str) -> str:
        crop = self.crops[self.crop_of(culture) or ""]
        return crop.question or self.ask_culture_again

    def map_variety(self, culture: str, answer: str) -> str | None:
        """Seed 000's rules: «ремонтант»/«НСД» → ремонтантная, «летн»/«обычн»/… → летняя; else None."""
        crop = self.crops.get(self.crop_of(culture) or "")
        if crop is None:
            return None
        lowered = answer.lower()
        for label, stems in crop.varieties.items():
            if any(stem in lowered for stem in stems):
                return label
        return None

    def crops_named(self, text: str) -> list[str]:
        """Crops whose stems occur in the text, in profile order."""
        lowered = text.lower().replace("ё", "е")
        return [name for name, crop in self.crops.items() if any(s in lowered for s in crop.stems)]

    def in_domain(self, text: str, culture: str | None = None) -> bool:
        """The moderation queue's domain gate: a crop is known or named, or a domain word occurs."""
        if self.crop_of(culture) is not None or self.crops_named(text):
            return True
        lowered = text.lower().replace("ё", "е")
        return any(stem in lowered for stem in self.domain_stems)

    def keyword_culture(self, text: str) -> str:
        """The deterministic classifier: one crop named → its label (variety if stated), else unclear."""
        named = self.crops_named(text)
        if len(named) != 1:
            return self.unclear[0]
        crop = self.crops[named[0]]
        if not crop.varieties:
            return named[0]
        return self.map_variety(named[0], text) or crop.general or named[0]

    def normalise(self, answer: str) -> str | None:
        """The label a model's answer names (case, quotes and punctuation ignored), or None."""
        cleaned = answer.strip().strip("«»\"'.!` \n").lower().replace("ё", "е")
        by_key = {label.lower().replace("ё", "е"): label for label in self.labels}
        if cleaned in by_key:
            return by_key[cleaned]
        contained = [label for key, label in by_key.items() if key in cleaned]
        return max(contained, key=len) if contained else None


@cache
def load_profile(name: str) -> DomainProfile:
    """A profile by name (`prompts/domains/<name>.yaml`) or by path to a YAML file."""
    path = Path(name).expanduser()
    if not path.suffix:
        path = TEMPLATES / "domains" / f"{name}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"domain profile {name!r} not found (looked for {path})")
    return DomainProfile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def active_profile() -> DomainProfile | None:
    """The profile named in settings, or None: then chat stays the plain chat flow."""
    name = get_settings().domain_profile
    return load_profile(name) if name else None
