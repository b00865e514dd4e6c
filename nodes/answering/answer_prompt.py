"""The one answer template (seed 003 §3.2): every answer in chat and consultation is built here.

`prompts/answer.md` is filled with variables (role, situation, rules, tool rules, mode, data, context
signals, recent replies not to repeat, retrieved facts); there are no per-intent templates. The order is
the prefix cache's: what every request shares (role, rules) comes first, what differs per user or turn
after, so the local server reuses the rules across turns and users. The rules come in two styles (`styles`
in answer_parts.yaml): `full` for capable models, `short` for the small local model, which follows a short
prompt and drifts in a long one.
Figures: bench/README.md, «Prompt tokens the local model reads» and «Offline answers end to end».
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

import prompts
from nodes.answering.context_signals import Signal

TEMPLATE = "answer.md"
Style = Literal["full", "short", "exact"]


@cache
def parts() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(prompts.load("answer_parts.yaml"))
    return loaded


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
    style: Style = "full"


def _lines(values: list[str], bullet: str = "- ") -> str:
    return "\n".join(f"{bullet}{v}" for v in values) if values else parts()["nothing"]


def signal_text(signal: Signal) -> str:
    note: str = parts()["signals"].get(signal.name, signal.name)
    return note.format(detail=signal.detail) if "{detail}" in note else note


def mode_text(style: Style, mode: str) -> str:
    """The mode line: the style's own wording when it has one, else the shared one."""
    p = parts()
    line: str = p["styles"][style].get("modes", {}).get(mode) or p["modes"][mode]
    return line


def render(context: AnswerContext) -> str:
    p = parts()
    style = p["styles"][context.style]
    situation = "\n".join(context.situation)
    quoted = [f"«{r[:300]}»" for r in context.do_not_repeat]
    rules = style["rules"].format(tool_rules=p["tool_rules"] if context.tools else "")
    turn_context = ""
    if style["turn_context_when"] == "always" or context.signals:
        turn_context = style["turn_context"].format(
            collected_data="; ".join(context.collected) or p["nothing"],
            missing_data="; ".join(context.missing) or p["nothing"],
            context_signals=_lines([signal_text(s) for s in context.signals]),
            do_not_repeat_responses=_lines(quoted))
    return prompts.load(TEMPLATE).format(
        role=context.role,
        situation=f"\n{situation}\n" if situation else "",
        rules=rules,
        mode_instruction=mode_text(context.style, context.mode),
        turn_context=turn_context,
        retrieved_facts=context.facts,
    ).rstrip() + "\n"
