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


def test_nb_run_keeps_the_version_it_replaces(tmp_path):
    (tmp_path / "course").mkdir()
    path = tmp_path / "course" / "mine.ipynb"
    nb = new_notebook(cells=[new_code_cell("print('hello')")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="what I ran on my GPU\n")]
    nb.cells[0].execution_count = 7
    nbformat.write(nb, path)
    mine = path.read_bytes()
    _, kept = nbrun.run(path)
    # the old outputs are not lost: a copy sits in the course's backups/ folder, under course/
    assert kept is not None and kept.parent == tmp_path / "backups" / "course", kept
    assert kept.read_bytes() == mine
    assert "hello" in path.read_text() and "my GPU" not in path.read_text()
    _, again = nbrun.run(path)  # the same bytes again: nothing new to keep
    assert again is None
    assert sorted(p.name for p in kept.parent.iterdir()) == [kept.name]


def test_slides_mark_keeps_an_instructors_own_slide_choices(tmp_path, capsys):
    from fxcourse.tooling import cli

    path = tmp_path / "talk.ipynb"
    nb = new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title"), new_code_cell("1")])
    nb.cells[1].metadata["slideshow"] = {"slide_type": "skip"}  # chosen by hand
    nbformat.write(nb, path)
    mine = path.read_bytes()
    assert cli.main(["slides", "mark", str(path)]) == 0
    copies = list((tmp_path / "backups").iterdir())
    assert [c.read_bytes() for c in copies] == [mine]
    assert copies[0].name in capsys.readouterr().out  # and the command says where it went
    assert nbformat.read(path, as_version=4).cells[1].metadata["slideshow"] != {"slide_type": "skip"}
