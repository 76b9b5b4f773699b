"""Hygiene of the committed notebooks, and `fxcourse nb run` on a small notebook."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from fxcourse import FxCourseError
from fxcourse.tooling import nbrun

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for d in ("course", "labs", "solutions") for p in (REPO / d).glob("*.ipynb"))
LEAK = re.compile(r"(/root/|/home/[a-z]|/tmp/[A-Za-z0-9_]|site-packages/|/work/)")


def test_there_are_notebooks():
    assert any(p.parent.name == "course" for p in NOTEBOOKS)
    assert any(p.parent.name == "labs" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_notebook_is_executed_and_clean(path):
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    counts = []
    for i, cell in enumerate(nb.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        assert "nbval-skip" not in tags, f"cell {i} is skipped"
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"cell {i} was not executed"
        counts.append(cell.execution_count)
        text = json.dumps(cell.outputs)
        assert not LEAK.search(text), f"cell {i} output shows a machine path"
        assert not re.search(r" at 0x[0-9a-f]{6,}", text), f"cell {i} output shows an address"
    assert counts == list(range(1, len(counts) + 1)), "not executed top to bottom in one kernel"


def test_nb_run_executes_in_place_deterministically(tmp_path):
    path = tmp_path / "demo.ipynb"
    nb = new_notebook(cells=[new_code_cell("import os\nprint(os.environ['PYTHONHASHSEED'])"),
                             new_code_cell("hash('fxcourse')")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, path)
    nbrun.run(path)
    first = path.read_bytes()
    nbrun.run(path)
    assert path.read_bytes() == first
    done = nbformat.read(path, as_version=4)
    assert done.cells[0].outputs[0]["text"] == "0\n"
    assert [c.execution_count for c in done.cells] == [1, 2]
    assert all("execution" not in c.metadata for c in done.cells)


def test_nb_run_reports_a_failing_cell_clearly(tmp_path):
    path = tmp_path / "bad.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("1 / 0")]), path)
    with pytest.raises(FxCourseError, match="ZeroDivisionError"):
        nbrun.run(path)
    with pytest.raises(FxCourseError, match="existing .ipynb"):
        nbrun.run(tmp_path / "missing.ipynb")
