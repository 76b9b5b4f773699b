"""What a torch release would change in the course: the report behind ``scripts/try-torch.sh``.

The script builds a side environment with another torch, runs the strict notebook tests and the
claim tests in it with this module loaded as a pytest plugin (``-p fxcourse.tooling.trytorch``), and then
prints :func:`summary` of what the plugin wrote. Every failed item is sorted into one kind:

- ``output drift``: a notebook cell ran but its output is not the stored one (nbval's
  "Cell outputs differ"): re-read the cell and its prose, then re-execute;
- ``exception``: a cell raised where it did not before, or timed out: a real break;
- ``test``: a claim or unit test failed: a statement of the course no longer holds;
- ``collection error``: a test file or notebook could not even be collected (an import that
  fails on the new torch): everything in it is missing from the counts.

Run by hand: ``python -m fxcourse.tooling.trytorch REPORT.jsonl`` prints the summary again.
"""
from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

__all__ = ["Outcome", "classify", "read", "summary"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL = re.compile(r"^(?P<file>[^:]+\.ipynb)::Cell (?P<cell>\d+)$")


@dataclass(frozen=True)
class Outcome:
    """One collected item: its pytest node id, whether it passed, and the failure text."""

    nodeid: str
    outcome: str  # passed, failed, skipped, or error (could not be collected)
    text: str = ""


def classify(outcome: Outcome) -> str:
    """``passed``, ``skipped``, ``output drift``, ``exception``, ``test`` or ``collection error``.

    >>> classify(Outcome("course/07_x.ipynb::Cell 12", "failed", "Cell 12: Cell outputs differ"))
    'output drift'
    >>> classify(Outcome("course/07_x.ipynb::Cell 3", "failed", "Cell execution caused an exception"))
    'exception'
    >>> classify(Outcome("tests/test_a.py::test_b", "failed", "AssertionError"))
    'test'
    """
    if outcome.outcome == "error":
        return "collection error"
    if outcome.outcome != "failed":
        return outcome.outcome
    if not _CELL.match(outcome.nodeid):
        return "test"
    return "output drift" if "Cell outputs differ" in outcome.text else "exception"


def _error_line(text: str) -> str:
    """The error in one line: pytest's first ``E`` line (the exception and its message), or the
    ``Name: message`` line that ends a notebook cell's traceback."""
    lines = [line.strip() for line in _ANSI.sub("", text).splitlines() if line.strip()]
    for line in lines:
        if line.startswith("E "):
            return line[2:].strip()[:160]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Unsupported|Interrupt|Exit)\b", line):
            return line[:160]
    return (lines[-1] if lines else "")[:160]


def read(path: str | Path) -> list[Outcome]:
    """The outcomes the plugin wrote, one JSON object a line."""
    outcomes: dict[str, Outcome] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            known = outcomes.get(row["nodeid"])
            if known is None or known.outcome != "failed":  # a failed phase decides the item
                outcomes[row["nodeid"]] = Outcome(row["nodeid"], row["outcome"], row.get("text", ""))
    return list(outcomes.values())


@dataclass
class _Notebook:
    passed: int = 0
    drift: list[int] = field(default_factory=list)
    exceptions: list[tuple[int, str]] = field(default_factory=list)


def summary(outcomes: Iterable[Outcome], title: str = "") -> str:
    """A per-notebook table of output drift and exceptions, then the failed tests.

    >>> print(summary([Outcome("labs/l.ipynb::Cell 1", "passed"),
    ...                Outcome("labs/l.ipynb::Cell 2", "failed", "Cell outputs differ"),
    ...                Outcome("labs/l.ipynb::Cell 5", "failed", "Cell execution caused an exception\\n"
    ...                        "KeyError: 'it'"),
    ...                Outcome("tests/test_x.py::test_y", "failed", "E   assert 1 == 2")]))
    notebooks: 1, cells: 3 (1 passed, 1 output drift, 1 exception)
    notebook      passed  drift  exception  code cells (nbval numbering) drifted / raising
    labs/l.ipynb       1      1          1  drift 2; raise 5
    exceptions:
      labs/l.ipynb cell 5: KeyError: 'it'
    tests: 1 (0 passed, 1 failed, 0 skipped)
      tests/test_x.py::test_y: assert 1 == 2
    """
    notebooks: dict[str, _Notebook] = defaultdict(_Notebook)
    tests = {"passed": 0, "failed": 0, "skipped": 0}
    failed_tests, uncollected = [], []
    for o in outcomes:
        m = _CELL.match(o.nodeid)
        kind = classify(o)
        if kind == "collection error":
            uncollected.append(f"  {o.nodeid or '(the session)'}: {_error_line(o.text)}")
            continue
        if m is None:
            tests["failed" if kind == "test" else kind] += 1
            if kind == "test":
                failed_tests.append(f"  {o.nodeid}: {_error_line(o.text)}")
            continue
        nb, cell = notebooks[m["file"]], int(m["cell"])
        if kind == "passed" or kind == "skipped":
            nb.passed += kind == "passed"
        elif kind == "output drift":
            nb.drift.append(cell)
        else:
            nb.exceptions.append((cell, _error_line(o.text)))
    lines = [title] if title else []
    if uncollected:
        lines.append(f"collection errors: {len(uncollected)} (nothing in these ran)")
        lines.extend(uncollected)
    cells = sum(nb.passed + len(nb.drift) + len(nb.exceptions) for nb in notebooks.values())
    drift = sum(len(nb.drift) for nb in notebooks.values())
    raised = sum(len(nb.exceptions) for nb in notebooks.values())
    lines.append(f"notebooks: {len(notebooks)}, cells: {cells} ({cells - drift - raised} passed, "
                 f"{drift} output drift, {raised} exception{'s' if raised != 1 else ''})")
    changed = {name: nb for name, nb in sorted(notebooks.items()) if nb.drift or nb.exceptions}
    if changed:
        width = max(len("notebook"), *(len(n) for n in changed))
        lines.append(f"{'notebook':<{width}}  passed  drift  exception  code cells (nbval numbering) drifted / raising")
        for name, nb in changed.items():
            where = "; ".join(part for part in (
                "drift " + ", ".join(map(str, nb.drift)) if nb.drift else "",
                "raise " + ", ".join(str(c) for c, _ in nb.exceptions) if nb.exceptions else "") if part)
            lines.append(f"{name:<{width}}  {nb.passed:>6}  {len(nb.drift):>5}  {len(nb.exceptions):>9}  {where}")
    if raised:
        lines.append("exceptions:")
        for name, nb in changed.items():
            lines.extend(f"  {name} cell {cell}: {error}" for cell, error in nb.exceptions)
    if sum(tests.values()):
        lines.append(f"tests: {sum(tests.values())} ({tests['passed']} passed, {tests['failed']} failed, "
                     f"{tests['skipped']} skipped)")
        lines.extend(failed_tests)
    return "\n".join(lines)


# --------------------------------------------------------------------------- the pytest plugin

def pytest_addoption(parser: Any) -> None:
    parser.addoption("--try-torch-report", default=None,
                     help="write each item's outcome (JSON lines) for fxcourse.tooling.trytorch.summary")


def _write(row: dict[str, str]) -> None:
    with open(pytest_runtest_logreport.path, "a", encoding="utf-8") as out:  # type: ignore[attr-defined]
        out.write(json.dumps(row) + "\n")


def pytest_collectreport(report: Any) -> None:
    if getattr(pytest_runtest_logreport, "path", None) is not None and report.failed:
        _write({"nodeid": report.nodeid, "outcome": "error", "text": report.longreprtext})


def pytest_runtest_logreport(report: Any) -> None:
    path = getattr(pytest_runtest_logreport, "path", None)
    if path is None:
        return
    if not (report.when == "call" or report.failed or report.skipped):
        return  # a setup or teardown that passed: the call's report says how the item went
    _write({"nodeid": report.nodeid, "outcome": report.outcome,
            "text": report.longreprtext if report.failed else ""})


def pytest_configure(config: Any) -> None:
    path = config.getoption("--try-torch-report", default=None)
    if path and not hasattr(config, "workerinput"):  # the controller writes; workers forward reports
        Path(path).write_text("", encoding="utf-8")
        pytest_runtest_logreport.path = path  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m fxcourse.tooling.trytorch REPORT.jsonl [TITLE]", file=sys.stderr)
        return 2
    print(summary(read(args[0]), args[1] if len(args) == 2 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
