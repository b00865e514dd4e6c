"""The one answer template (nodes/answering/answer_prompt.py) in every mode and style, without the model."""

from __future__ import annotations

import os

import pytest

from nodes.answering.answer_prompt import AnswerContext, Style, mode_text, render, signal_text
from nodes.answering.context_signals import Signal

STYLES: list[Style] = ["full", "short", "exact"]
MODES = ["chat", "documents", "general"]


def shared(a: str, b: str) -> str:
    return os.path.commonprefix([a, b])  # noqa: RUF071 - the character prefix is what is meant


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("mode", MODES)
def test_one_template_for_every_mode_and_style(style: Style, mode: str) -> None:
    prompt = render(AnswerContext(role="ассистент по базе знаний", mode=mode, style=style,
                                  facts="Фрагменты:\n[1] «Малину обрезают осенью.»\n"))
    assert prompt.startswith("Ты — ассистент по базе знаний.\n\nПравила:\n- ")
    assert "по-русски" in prompt.split("\n")[3]  # the first rule: answer in Russian
    assert f"- {mode_text(style, mode)}\n" in prompt
    assert prompt.index(mode_text(style, mode)) < prompt.index("[1] «Малину обрезают осенью.»")
    assert "{" not in prompt and "}" not in prompt  # every variable filled
    assert prompt.endswith("\n") and not prompt.endswith("\n\n")


def test_a_style_restates_a_mode_or_takes_the_shared_line() -> None:
    assert "«В ваших документах об этом не сказано»" in mode_text("short", "documents")
    assert "без изменений" in mode_text("exact", "documents")  # numbers and commands copied as written
    assert mode_text("full", "documents").startswith("Отвечай только на основе фрагментов")
    assert mode_text("short", "chat") == mode_text("full", "chat") == mode_text("exact", "chat")
    assert mode_text("short", "general") != mode_text("full", "general")


def test_the_full_style_always_shows_the_turn_context() -> None:
    prompt = render(AnswerContext(role="r", mode="chat"))
    assert "Известно о запросе: —\nЧего не хватает: —\n" in prompt
    assert prompt.rstrip().endswith("Недавние ответы, которые нельзя повторять:\n—")


@pytest.mark.parametrize("style", ["short", "exact"])
def test_a_short_style_shows_signals_only_when_there_are_some(style: Style) -> None:
    quiet = render(AnswerContext(role="r", mode="documents", style=style, do_not_repeat=["Прошлый ответ."]))
    assert "Учти:" not in quiet and "Прошлый ответ" not in quiet
    loud = render(AnswerContext(role="r", mode="documents", style=style, signals=[Signal(name="greeting")],
                                do_not_repeat=["Прошлый ответ."]))
    assert loud.endswith("\nУчти:\n- Пользователь здоровается.\n")
    assert "Прошлый ответ" not in loud  # no quoted past replies for the small model


def test_signals_are_rendered_with_their_detail() -> None:
    assert signal_text(Signal(name="asks_document", detail="file name")) == \
        "Пользователь спрашивает о своих документах или базе (file name)."
    assert signal_text(Signal(name="greeting", detail="ignored")) == "Пользователь здоровается."
    assert signal_text(Signal(name="new_detector")) == "new_detector"  # a signal without wording keeps its name
    prompt = render(AnswerContext(role="r", mode="chat", signals=[Signal(name="repetition"), Signal(name="complaint")]))
    repetition = "- Твой черновик почти дословно повторил прошлый ответ. Ответь иначе, по существу.\n"
    assert repetition + "- Пользователь недоволен прошлым ответом или возражает.\n" in prompt


def test_past_replies_are_quoted_cut_to_300_characters() -> None:
    long = "Малину обрезают осенью. " * 30
    prompt = render(AnswerContext(role="r", mode="chat", do_not_repeat=[long, "Второй ответ."]))
    assert f"- «{long[:300]}»\n- «Второй ответ.»" in prompt
    assert long[:301] not in prompt


@pytest.mark.parametrize("style", STYLES)
def test_tool_rules_sit_among_the_rules(style: Style) -> None:
    prompt = render(AnswerContext(role="r", mode="chat", style=style, tools=True))
    assert prompt.index("Правила:") < prompt.index("`rag-db-query`") < prompt.index(mode_text(style, "chat"))


@pytest.mark.parametrize("style", STYLES)
def test_what_every_turn_shares_comes_before_what_differs(style: Style) -> None:
    first = render(AnswerContext(
        role="агроном", mode="documents", style=style, situation=["Текущая культура: голубика"],
        collected=["культура: голубика"], signals=[Signal(name="greeting")], do_not_repeat=["Полейте."],
        facts="[1] «Голубику поливают кислой водой.»\n"))
    second = render(AnswerContext(
        role="агроном", mode="documents", style=style, situation=["Текущая культура: малина"],
        missing=["сорт"], signals=[Signal(name="complaint")], facts="[1] «Малину обрезают осенью.»\n"))
    common = shared(first, second)
    assert common.startswith("Ты — агроном.\n\nПравила:\n")
    assert f"- {mode_text(style, 'documents')}\n" in common  # role, rules and the mode line are shared
    assert "голубика" not in common and "малина" not in common
    # the per-turn parts in the cache's order: situation, facts, then the turn's signals
    assert first.index("Текущая культура") < first.index("Голубику поливают") < first.index("здоровается")
