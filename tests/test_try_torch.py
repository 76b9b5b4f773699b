"""scripts/try-torch.sh: its arguments, and the report it prints (fxcourse.tooling.trytorch), tried on a
small notebook whose stored outputs no longer match: one cell drifts, one raises."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from fxcourse.tooling.trytorch import Outcome, classify, read, summary

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("args", [[], ["abc"], ["2.15.0..."], ["2.15.0+"], ["9.9.9.9.9"], ["2.15.0", ""],
                                  ["2.15.0", "0.29.2", "extra"], ["--", "2.15.0"]])
def test_bad_arguments_stop_before_anything_is_built(args, tmp_path):
    before = set((ROOT / ".venv-try").glob("*")) if (ROOT / ".venv-try").exists() else set()
    run = subprocess.run(["bash", "scripts/try-torch.sh", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "usage: bash scripts/try-torch.sh VERSION" in run.stderr, run.stderr
    after = set((ROOT / ".venv-try").glob("*")) if (ROOT / ".venv-try").exists() else set()
    assert after == before


def _notebook(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [("print('same')", "same\n"), ("print('new text')", "old text\n"), ("print(1)", "1\n"),
             ("raise KeyError('it')", None)]
    for i, (source, stored) in enumerate(cells, start=1):
        cell = nbformat.v4.new_code_cell(source, execution_count=i)
        if stored is not None:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=stored)]
        nb.cells.append(cell)
    nbformat.write(nb, path)


@pytest.mark.slow
def test_the_plugin_sorts_drift_from_exceptions(tmp_path):
    _notebook(tmp_path / "drifting.ipynb")
    (tmp_path / "test_claim.py").write_text("def test_holds():\n    assert True\n\n"
                                            "def test_broken():\n    assert 1 == 2, 'a claim that no longer holds'\n")
    (tmp_path / "test_gone.py").write_text("import torch.no_such_module_in_this_release\n")
    report = tmp_path / "report.jsonl"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "fxcourse.tooling.trytorch", "--try-torch-report", str(report),
                          "--nbval", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--continue-on-collection-errors",
                          "drifting.ipynb", "test_claim.py", "test_gone.py"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    outcomes = {o.nodeid: classify(o) for o in read(report)}
    assert outcomes == {"drifting.ipynb::Cell 0": "passed", "drifting.ipynb::Cell 1": "output drift",
                        "drifting.ipynb::Cell 2": "passed", "drifting.ipynb::Cell 3": "exception",
                        "test_claim.py::test_holds": "passed", "test_claim.py::test_broken": "test",
                        "test_gone.py": "collection error"}
    text = summary(read(report))
    assert "notebooks: 1, cells: 4 (2 passed, 1 output drift, 1 exception)" in text
    assert "drifting.ipynb cell 3: KeyError: 'it'" in text
    assert "test_claim.py::test_broken: AssertionError: a claim that no longer holds" in text
    assert "collection errors: 1 (nothing in these ran)" in text and "test_gone.py: ModuleNotFoundError" in text


def test_a_failed_phase_decides_the_item(tmp_path):
    report = tmp_path / "r.jsonl"
    report.write_text('{"nodeid": "t.py::a", "outcome": "passed", "text": ""}\n'
                      '{"nodeid": "t.py::a", "outcome": "failed", "text": "E   teardown failed"}\n'
                      '{"nodeid": "t.py::a", "outcome": "passed", "text": ""}\n')
    assert read(report) == [Outcome("t.py::a", "failed", "E   teardown failed")]
