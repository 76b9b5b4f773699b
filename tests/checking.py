"""Helpers for the checker tests."""
from __future__ import annotations

from typing import Any

from fxcourse import check
from fxcourse.checks import CheckResult


def expect_wrong(task_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` and assert it was judged wrong, with feedback in both languages."""
    result = check(task_id, answer)
    assert result.status == "wrong", result.to_text()
    assert result.en and result.zh
    return result
