"""The local model's measured speed and the limits it gives (nodes/answering/model_speed.py), and
a turn's deadline moved to fit them (grove/core/runs.py)."""

from __future__ import annotations


import pytest

from grove.core.runs import allow_at_least, deadline, time_left
from nodes.answering.model_speed import FLOOR, MARGIN, SLACK, ModelSpeed


def test_the_first_timed_answer_replaces_the_guess_and_later_ones_move_it() -> None:
    speed = ModelSpeed(prompt_per_s=40.0, tokens_per_s=5.0)
    speed.observe(prompt_tokens=1000, first_after=10.0, tokens=100, writing_for=20.0)
    assert (speed.prompt_per_s, speed.tokens_per_s) == (100.0, 5.0)
    speed.observe(prompt_tokens=1000, first_after=40.0, tokens=100, writing_for=50.0)  # a busy machine
    assert 25.0 < speed.prompt_per_s < 100.0 and 2.0 < speed.tokens_per_s < 5.0


def test_a_call_too_short_to_time_says_nothing() -> None:
    speed = ModelSpeed(prompt_per_s=40.0, tokens_per_s=5.0)
    speed.observe(prompt_tokens=5, first_after=0.01, tokens=2, writing_for=0.01)
    assert (speed.prompt_per_s, speed.tokens_per_s) == (40.0, 5.0)


@pytest.mark.parametrize(("prompt", "tokens", "cap"), [(3000, 320, 900.0), (200, 50, 900.0), (3000, 700, 120.0)])
def test_a_limit_is_what_the_call_needs_with_slack_between_the_floor_and_the_cap(prompt: int, tokens: int,
                                                                                 cap: float) -> None:
    speed = ModelSpeed(prompt_per_s=50.0, tokens_per_s=4.0)
    needs = prompt / 50.0 + tokens / 4.0
    assert speed.seconds_for(prompt, tokens) == pytest.approx(needs)
    assert speed.limit(prompt, tokens, cap) == pytest.approx(min(cap, max(FLOOR, SLACK * needs + MARGIN)))


def test_a_slower_machine_gets_a_longer_limit() -> None:
    idle, busy = ModelSpeed(95.0, 12.0), ModelSpeed(30.0, 4.0)
    assert busy.limit(2500, 320, 900.0) > idle.limit(2500, 320, 900.0) > FLOOR


def test_a_deadline_moved_later_is_seen_by_the_deadlines_around_it() -> None:
    with deadline(5.0):
        with deadline(3.0):
            allow_at_least(60.0)
            left = time_left()
            assert left is not None and 59.0 < left <= 60.0
        outer = time_left()
        assert outer is not None and 59.0 < outer <= 60.0  # the turn goes on past its first limit
        allow_at_least(1.0)  # never earlier
        again = time_left()
        assert again is not None and again > 58.0
    assert time_left() is None
    allow_at_least(10.0)  # no deadline: nothing to move
    assert time_left() is None


def test_a_deadline_moves_no_further_than_its_limit_however_many_calls_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan's steps each ask, one after another, for the time their prompt needs: the turn grows to
    `at_most` from its start, not by each call's need in turn."""
    clock = [1000.0]
    monkeypatch.setattr("grove.core.runs.time.monotonic", lambda: clock[0])
    with deadline(5.0, at_most=300.0):
        for _ in range(5):  # five calls of 100 s each, each asking for 120 s from its own start
            allow_at_least(120.0)
            clock[0] += 100.0
        left = time_left()
        assert left == 0.0  # 500 s in: the turn's 300 s are spent
        with deadline(3.0):  # an inner deadline keeps the outer one's limit
            allow_at_least(100.0)
            assert time_left() == 0.0
    clock[0] = 0.0
    with deadline(5.0, at_most=300.0):
        allow_at_least(120.0)
        assert time_left() == 120.0
        allow_at_least(1000.0)
        assert time_left() == 300.0
