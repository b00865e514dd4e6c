"""Plans (seed 004): validation, the token budget with the model's real tokens, the context manager."""

from __future__ import annotations

import pytest

from nodes.answering.plan import Plan, PlanError, Step, parse_plan, validate_plan
from nodes.answering.step_context import StepResult, build_context
from nodes.answering.token_budget import TokenBudgetManager, count_tokens, truncate_to_tokens

GOOD = """```json
{"steps": [
  {"id": "s1", "action": "search", "params": {"query": "полив голубики"}, "depends_on": []},
  {"id": "s2", "action": "search", "params": {"query": "полив малины"}},
  {"id": "c1", "action": "compare", "params": {"focus": "частота"}, "depends_on": ["s1", "s2"]},
  {"id": "final", "action": "synthesize", "depends_on": ["c1"]}
]}
```"""


def plan(*steps: tuple[str, str, list[str]]) -> Plan:
    return Plan(kind="analytical", steps=[Step(id=i, action=a, params={"query": "полив малины"}, depends_on=d)  # type: ignore[arg-type]
                                          for i, a, d in steps])


def test_a_good_plan_runs_in_layers() -> None:
    layers = validate_plan(parse_plan(GOOD, "analytical"), max_steps=8)
    assert [[s.id for s in layer] for layer in layers] == [["s1", "s2"], ["c1"], ["final"]]


@pytest.mark.parametrize(("bad", "reason"), [
    (plan(("a", "search", ["b"]), ("b", "compare", ["a"]), ("f", "synthesize", ["b"])), "cycle"),
    (plan(("a", "search", []), ("f", "synthesize", ["zzz"])), "unknown steps"),
    (plan(*[(f"s{i}", "search", []) for i in range(9)], ("f", "synthesize", ["s0"])), "at most 8"),
    (plan(("a", "search", []), ("b", "search", [])), "exactly one synthesize"),
    (plan(("a", "search", []), ("f", "synthesize", ["a"]), ("late", "summarize", ["f"])), "last step"),
    (plan(("a", "search", []), ("a", "search", []), ("f", "synthesize", ["a"])), "unique"),
    (plan(("c", "compare", []), ("f", "synthesize", ["c"])), "depends on nothing"),
])
def test_invalid_plans_are_rejected(bad: Plan, reason: str) -> None:
    with pytest.raises(PlanError, match=reason):
        validate_plan(bad, max_steps=8)


@pytest.mark.parametrize(("text", "reason"), [
    ('{"steps": [{"id": "a", "action": "delete_everything"}]}', "unknown action"),
    ("план: сначала поищу", "not a JSON object"),
    ('{"steps": [{"id": "a", "action": "search",}]}', "not valid JSON"),
    ('{"plan": []}', "no list of steps"),
])
def test_unparseable_plans_are_rejected(text: str, reason: str) -> None:
    with pytest.raises(PlanError, match=reason):
        parse_plan(text, "analytical")


def test_budget_follows_the_seeds_formula() -> None:
    budget = TokenBudgetManager(total_budget=4096, reserved_for_response=512)
    first = budget.allocate_for_step(1, 4, context_size=584)
    last = budget.allocate_for_step(4, 4, context_size=584)
    assert (first.rag, first.history, first.response) == (2625, 375, 512)  # 3000 × 0.875 / 0.125
    assert (last.rag, last.history) == (1500, 1500)
    assert budget.allocate_for_step(1, 1, context_size=10_000).rag == 0
    with pytest.raises(ValueError):
        TokenBudgetManager(100, 100)


def test_tokens_are_the_models_own() -> None:
    text = "Голубику поливают часто и понемногу."
    import llama_cpp

    from nodes.answering.token_budget import tokenizer_path

    reference = llama_cpp.Llama(model_path=tokenizer_path(), vocab_only=True, verbose=False)
    assert count_tokens(text) == len(reference.tokenize(text.encode(), add_bos=False, special=False))
    assert count_tokens("") == 0
    long = " ".join(f"Предложение номер {i} о поливе малины." for i in range(200))
    cut = truncate_to_tokens(long, 50)
    assert count_tokens(cut) <= 52 and cut.endswith("…") and long.startswith(cut[:-2].rstrip())


def test_context_strategies() -> None:
    results = [StepResult(step_id=f"s{i}", action="search", text=f"Первый факт шага {i}. Подробности шага {i}.")
               for i in range(1, 5)]
    selective = build_context(["s2"], results, "selective", 500)
    assert "шага 2" in selective and "шага 1" not in selective
    sliding = build_context(["s1"], results, "sliding", 500, window=2)
    assert "шага 3" in sliding and "шага 4" in sliding and "шага 1" not in sliding
    hierarchical = build_context(["s4"], results, "hierarchical", 500)
    assert "Подробности шага 4" in hierarchical  # the direct dependency in full
    assert "[s1, search, кратко] Первый факт шага 1." in hierarchical and "Подробности шага 1" not in hierarchical
    assert count_tokens(build_context(["s1", "s2", "s3", "s4"], results * 30, "selective", 40)) <= 42


def test_placeholder_queries_copied_from_the_prompt_are_rejected() -> None:
    copied = Plan(kind="iterative", steps=[Step(id="s1", action="search", params={"query": "<запрос 1>"}),
                                           Step(id="f", action="synthesize", depends_on=["s1"])])
    with pytest.raises(PlanError, match="no real query"):
        validate_plan(copied, max_steps=8)
