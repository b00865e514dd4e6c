"""What a plan step sees of the steps before it (nodes/answering/step_context.py), counted in the model's tokens."""

from __future__ import annotations

from nodes.answering.step_context import StepResult, build_context, one_line
from nodes.answering.token_budget import count_tokens

LONG = " ".join(f"Голубику поливают кислой водой, наблюдение {i}." for i in range(200))
SHORT = "Малину поливают раз в неделю. Летом чаще."


def step(step_id: str, text: str = "", action: str = "search", skipped: bool = False) -> StepResult:
    return StepResult(step_id=step_id, action=action, text=text, skipped=skipped)


def test_a_skipped_or_blank_step_is_empty() -> None:
    assert step("s1", skipped=True, text="Малину поливают.").empty
    assert step("s1", text=" \n\t").empty
    assert not step("s1", text="Малину поливают.").empty


def test_one_line_is_the_first_sentence() -> None:
    assert one_line(step("s1", "Малину поливают раз в неделю. Летом чаще!")) == \
        "[s1, search, кратко] Малину поливают раз в неделю."
    assert one_line(step("c1", "  ", action="compare")) == "[c1, compare, кратко] нет данных"
    assert one_line(step("s2", "Голубика? Да.")) == "[s2, search, кратко] Голубика?"


def test_one_line_is_cut_to_240_characters() -> None:
    line = one_line(step("s1", "А" * 500))
    assert line == "[s1, search, кратко] " + "А" * 240


def test_a_long_result_does_not_crowd_out_a_short_one() -> None:
    materials = build_context(["s1", "s2"], [step("s1", LONG), step("s2", SHORT)], "selective", 150)
    assert f"[s2, search]\n{SHORT}" in materials  # the short result whole
    assert "наблюдение 0." in materials and "наблюдение 199." not in materials  # the long one cut to its share
    assert materials.index("[s1, search]") < materials.index("[s2, search]")  # in the order depended on
    assert count_tokens(materials) <= 150


def test_a_skipped_dependency_is_shown_as_no_data() -> None:
    materials = build_context(["s1", "s2"], [step("s1", SHORT), step("s2", skipped=True)], "selective", 300)
    assert materials == f"[s1, search]\n{SHORT}\n\n[s2, search]\nнет данных"


def test_dependencies_on_unknown_steps_give_nothing() -> None:
    assert build_context(["zz"], [step("s1", SHORT)], "selective", 300) == ""


def test_the_sliding_window_keeps_the_last_two_by_default() -> None:
    finished = [step(f"s{i}", f"Факт {i}. Детали {i}.") for i in range(1, 5)]
    assert build_context([], finished, "sliding", 300) == "[s3, search]\nФакт 3. Детали 3.\n\n[s4, search]\nФакт 4. Детали 4."


def test_hierarchical_context_puts_the_summaries_first() -> None:
    finished = [step(f"s{i}", f"Факт {i}. Детали {i}.") for i in range(1, 4)] + [step("c1", SHORT, "compare")]
    materials = build_context(["c1"], finished, "hierarchical", 300)
    assert materials == ("[s1, search, кратко] Факт 1.\n[s2, search, кратко] Факт 2.\n[s3, search, кратко] Факт 3."
                         f"\n\n[c1, compare]\n{SHORT}")
