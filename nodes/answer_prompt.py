"""The one answer template (seed 003 §3.2): every answer in chat and consultation is built here.

`prompts/answer.md` is filled with variables — role and situation, language and
address instructions, the tool rules when a tool is offered, the step's mode,
collected and missing data, the turn's context signals, the bot's recent replies
not to repeat, and the retrieved facts. There are no per-intent templates; what
differs between turns is only the values.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml
from pydantic import BaseModel, Field

import prompts
from nodes.context_signals import Signal

TEMPLATE = "answer.md"


@cache
def parts() -> dict[str, Any]:
    return yaml.safe_load(prompts.load("answer_parts.yaml"))


class AnswerContext(BaseModel):
    role: str
    mode: str = Field(description="a key of `modes` in answer_parts.yaml")
    situation: list[str] = Field(default_factory=list)
    tools: bool = False
    collected: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    signals: list[Signal] = Field(default_factory=list)
    do_not_repeat: list[str] = Field(default_factory=list)
    facts: str = ""


def _lines(values: list[str], bullet: str = "- ") -> str:
    return "\n".join(f"{bullet}{v}" for v in values) if values else parts()["nothing"]


def signal_text(signal: Signal) -> str:
    note = parts()["signals"].get(signal.name, signal.name)
    return note.format(detail=signal.detail) if "{detail}" in note else note


def render(context: AnswerContext) -> str:
    p = parts()
    situation = "\n".join(context.situation)
    quoted = [f"«{r[:300]}»" for r in context.do_not_repeat]
    return prompts.load(TEMPLATE).format(
        role=context.role,
        situation=f"\n{situation}\n" if situation else "",
        language_instruction=p["language_instruction"],
        address_instruction=p["address_instruction"],
        tool_rules=p["tool_rules"] if context.tools else "",
        mode_instruction=p["modes"][context.mode],
        collected_data="; ".join(context.collected) or p["nothing"],
        missing_data="; ".join(context.missing) or p["nothing"],
        context_signals=_lines([signal_text(s) for s in context.signals]),
        do_not_repeat_responses=_lines(quoted),
        retrieved_facts=context.facts,
    ).rstrip() + "\n"
