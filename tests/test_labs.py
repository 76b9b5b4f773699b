"""labs build / check / reset, on a temporary project."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fxcourse import FxCourseError
from fxcourse import labs
from fxcourse.cli import main

REPO = Path(__file__).resolve().parents[1]

SOLUTION = '''def add_one(x):
    """Return x + 1."""
    ### BEGIN SOLUTION
    return x + 1
    ### END SOLUTION
'''


def _project(tmp_path: Path) -> Path:
    (tmp_path / "solutions").mkdir()
    nb = new_notebook(cells=[
        new_markdown_cell("# Lab 98", metadata={"tags": ["lang-en"]}),
        new_markdown_cell("# 实验 98", metadata={"tags": ["lang-zh"]}),
        new_code_cell(SOLUTION),
        new_code_cell("try:\n    add_one(1)\nexcept NotImplementedError:\n    print('stub')\nelse:\n    print('solved')"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(nb, tmp_path / "solutions" / "lab98_demo.ipynb")
    return tmp_path


def test_strip_keeps_indentation_and_clears_outputs():
    nb = new_notebook(cells=[new_code_cell(SOLUTION)])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="old")]
    nb.cells[0].execution_count = 3
    lab = labs.strip_solutions(nb)
    assert lab.cells[0].source == 'def add_one(x):\n    """Return x + 1."""\n    ' + labs.STUB + "\n"
    assert lab.cells[0].outputs == [] and lab.cells[0].execution_count is None
    assert "return x + 1" in nb.cells[0].source  # the solution itself is untouched


def test_unbalanced_markers_are_a_clear_error():
    nb = new_notebook(cells=[new_code_cell("### BEGIN SOLUTION\nx = 1\n")])
    with pytest.raises(FxCourseError, match="unmatched solution marker"):
        labs.strip_solutions(nb)


def test_build_executes_the_lab_and_detects_sync(tmp_path):
    root = _project(tmp_path)
    assert labs.out_of_date(root) == ["labs/lab98_demo.ipynb is missing"]
    (report,) = labs.build(root)
    assert report.action == "built" and report.backup is None
    lab = nbformat.read(root / "labs" / "lab98_demo.ipynb", as_version=4)
    assert lab.cells[3].outputs[0]["text"] == "stub\n"  # executed: the stub's feedback is stored
    assert lab.cells[3].execution_count == 2
    assert labs.out_of_date(root) == []
    assert labs.build(root)[0].action == "up to date"
    # the solution changes: labs/ is now out of date
    sol = nbformat.read(root / "solutions" / "lab98_demo.ipynb", as_version=4)
    sol.cells[2].source = sol.cells[2].source.replace("x + 1", "1 + x")
    sol.cells.append(new_code_cell("print('new cell')"))
    nbformat.write(sol, root / "solutions" / "lab98_demo.ipynb")
    assert labs.out_of_date(root) == ["labs/lab98_demo.ipynb differs from solutions/lab98_demo.ipynb"]


def test_rebuild_and_reset_back_up_an_edited_lab(tmp_path):
    root = _project(tmp_path)
    labs.build(root)
    lab_path = root / "labs" / "lab98_demo.ipynb"
    lab = nbformat.read(lab_path, as_version=4)
    lab.cells[2].source = "def add_one(x):\n    return x + 1  # my answer\n"
    nbformat.write(lab, lab_path)
    assert "has no build record" in labs.out_of_date(root)[0] or "differs" in labs.out_of_date(root)[0]

    report = labs.reset("lab98", root)
    assert report.backup is not None and report.backup.parent == root / "labs" / ".backups"
    assert "# my answer" in report.backup.read_text(encoding="utf-8")
    assert "# my answer" not in lab_path.read_text(encoding="utf-8")
    assert str(report.backup) in str(report)
    # resetting a pristine lab makes no backup
    assert labs.reset("lab98_demo", root).backup is None

    lab = nbformat.read(lab_path, as_version=4)
    lab.cells[2].source += "\n# second edit\n"
    nbformat.write(lab, lab_path)
    report = labs.build(root, force=True)[0]
    assert report.backup is not None and "# second edit" in report.backup.read_text(encoding="utf-8")


def test_reset_unknown_lab_is_a_clear_error(tmp_path):
    root = _project(tmp_path)
    with pytest.raises(FxCourseError, match="lab98_demo"):
        labs.reset("lab42", root)


def test_cli_reports_fxcourse_errors_without_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(_project(tmp_path))
    assert main(["labs", "reset", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fxcourse: labs: got 'nope'") and "Traceback" not in err


def test_repository_labs_are_in_sync_with_solutions():
    """labs/ must be what `fxcourse labs build` writes from solutions/."""
    assert labs.out_of_date(REPO) == []
    assert sorted(p.name for p in (REPO / "labs").glob("*.ipynb")) == \
        sorted(p.name for p in (REPO / "solutions").glob("*.ipynb"))


def test_every_exercise_in_the_repository_is_checked():
    """Each solution region is followed by a check("labNN.k", ...) cell."""
    for path in sorted((REPO / "solutions").glob("lab*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        regions = sum(src.count(labs.BEGIN) for src in code)
        checks = sum(src.count(f'check("{path.stem[:5]}.') for src in code)
        assert regions >= 2 and checks == regions, path.name
