"""A missing model or speech package skips a test on a laptop but fails it in CI."""

from __future__ import annotations

import pytest

from tests.support.prerequisites import require


def test_missing_prerequisite_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    require(None)  # present: nothing happens
    with pytest.raises(pytest.fail.Exception, match="prerequisite missing in CI: no model"):
        require("no model")


def test_missing_prerequisite_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no model"):
        require("no model")
