"""Helpers for the checker tests: the reference answers come from solutions/, and wrong answers
must be rejected with feedback in both languages."""
from __future__ import annotations

import functools
import linecache
import re
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import nbformat

from fxcourse import check
from fxcourse.checks import CheckResult

ROOT = Path(__file__).resolve().parents[1]
_CHECK_CALL = re.compile(r"^\s*(check|hint)\(", re.M)


def expect_wrong(task_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` and assert it was judged wrong, with feedback in both languages."""
    result = check(task_id, answer)
    assert result.status == "wrong", result.to_text()
    assert result.en and result.zh
    return result


def expect_passed(task_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` and assert it passed."""
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()
    return result


@functools.lru_cache(maxsize=None)
def _solution_namespace(lab: str) -> dict[str, Any]:
    (path,) = sorted((ROOT / "solutions").glob(f"{lab}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    # A real module, as a kernel's __main__ is: torch.export imports the module a class was defined in.
    module = types.ModuleType(f"solutions_{lab}")
    sys.modules[module.__name__] = module
    namespace: dict[str, Any] = module.__dict__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or _CHECK_CALL.search(cell.source):
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            # Each cell gets its own name in linecache, as in a kernel: torch.jit.script and
            # inspect.getsource read the source of functions the notebook defines.
            name = f"<{path.name} cell {index}>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)
            exec(compile(source, name, "exec"), namespace)  # noqa: S102 - our own notebook
    return namespace


def solution(lab: str, name: str) -> Any:
    """The object ``name`` defined by ``solutions/<lab>_*.ipynb``, whose cells are run once
    (cells calling ``check``/``hint`` are left out), e.g. ``solution("lab00", "count_by_opcode")``."""
    return _solution_namespace(lab)[name]


_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_LABELS = ("input tried", "expected", "got", "your code printed")


def expect_one_language(task_id: str, answer: Any, monkeypatch: Any, *, worded: bool = True) -> CheckResult:
    """Check a wrong ``answer`` read in one language at a time.

    With ``FXCOURSE_LANG=zh`` the text and HTML hold the 中文 headline and every worded detail in
    中文, and no English headline, label or worded detail; with ``FXCOURSE_LANG=en`` they hold no
    CJK character at all. Unless ``worded`` is False (a task whose details are all code, reprs
    and values), the answer must give at least one worded detail (an (en, zh) pair), so the test
    shows the details follow the switch, not only the headline.
    """
    import html

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    result = expect_wrong(task_id, answer)
    pairs = [v for v in (result.tried, result.expected, result.got) if isinstance(v, tuple)]
    assert pairs or not worded, f"{task_id}: no worded detail in this wrong answer's result: {result.to_text()}"
    for shown in (result.to_text(), html.unescape(result.to_html())):
        assert "还不正确" in shown and "not right yet" not in shown and result.en not in shown, shown
        for label in _LABELS:
            assert f"  {label}:" not in shown and f"<th>{label}</th>" not in shown, shown
        for en, zh in pairs:
            assert zh[:60] in shown and en[:60] not in shown, shown
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    for shown in (result.to_text(), html.unescape(result.to_html())):
        assert not _CJK.search(shown), shown
        assert "not right yet" in shown and all(en[:60] in shown for en, _ in pairs), shown
    return result
