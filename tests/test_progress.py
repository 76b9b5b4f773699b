"""fxcourse progress: verdicts read from the saved lab notebooks and this kernel's checks."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from fxcourse import FxCourseError, _lang, check, checks
from fxcourse.tooling.progress import progress, statuses_in
from fxcourse.tooling.cli import main

REPO = Path(__file__).resolve().parents[1]


def _stub(*args):
    raise NotImplementedError("replace this line with your code / 把这一行换成你的代码")


def _wrong(gm):
    return {}


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course folder holding lab00 with 00.1 passed, 00.2 wrong and 00.3 never run."""
    monkeypatch.delenv("FXCOURSE_LANG", raising=False)
    _lang.set_language(None)
    monkeypatch.setattr(checks, "_SESSION", {})
    from collections import Counter

    def right(gm):
        return dict(Counter(n.op for n in gm.graph.nodes))

    passed, wrong = check("lab00.1", right), check("lab00.2", _wrong)
    assert passed.passed and wrong.status == "wrong"
    checks._SESSION.clear()  # what the file says, not this process
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# lab 00"),
        nbformat.v4.new_code_cell("check('lab00.1', count)", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/plain": passed.to_text(), "text/html": passed.to_html()})]),
        nbformat.v4.new_code_cell("check('lab00.2', capture)", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/plain": wrong.to_text(), "text/html": wrong.to_html()})]),
        nbformat.v4.new_code_cell("check('lab00.3', Gate)"),
    ])
    (tmp_path / "labs").mkdir()
    nbformat.write(nb, tmp_path / "labs" / "lab00_warmup.ipynb")
    shutil.copy(REPO / "labs" / "lab01_trace.ipynb", tmp_path / "labs")
    return tmp_path


def test_verdicts_come_from_the_saved_notebooks(course):
    assert statuses_in(course / "labs" / "lab00_warmup.ipynb") == {"lab00.1": "passed", "lab00.2": "wrong"}
    report = progress(course)
    states = {t.task: t.status for t in report.tasks}
    assert states["lab00.1"] == "passed" and states["lab00.2"] == "wrong" and states["lab00.3"] == "not run"
    assert all(states[t] == "not_implemented" for t in states if t.startswith("lab01"))  # the pristine lab
    assert report.passed == 1 and len(states) == 3 + 4
    assert report.to_text().splitlines()[0] == "1 of 7 tasks pass in 2 labs / 2 个实验共 7 道练习，已通过 1 道"
    assert progress(course / "labs" / "..", lab="lab00").passed == 1  # from inside, one lab


def test_this_kernels_checks_are_newer_than_the_file(course):
    check("lab00.1", _stub)
    assert {t.task: t.status for t in progress(course, lab="lab00").tasks}["lab00.1"] == "not_implemented"


def test_the_command_and_the_languages(course, monkeypatch, capsys):
    monkeypatch.chdir(course / "labs")
    assert main(["progress", "--lab", "lab00"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"lab00\.1\s+✓ passed", out) and re.search(r"lab00\.2\s+✗ not right yet", out)
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert main(["progress", str(course)]) == 0
    out = capsys.readouterr().out
    assert "已通过 1 道" in out and "尚未运行" in out and "passed" not in out and "not run" not in out
    html = progress(course).to_html()
    assert "<th>结果</th>" in html and "✗ 还不正确" in html


def test_a_folder_without_labs_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(FxCourseError, match="holds no labs/labNN_"):
        progress(tmp_path)
    assert main(["progress", str(tmp_path)]) == 2
    assert "fxcourse progress labs" in capsys.readouterr().err
    with pytest.raises(FxCourseError, match="'lab99'"):
        progress(REPO, lab="lab99")


def test_a_lab_not_saved_anywhere_yet_reads_this_kernels_checks(tmp_path, monkeypatch):
    """An export executes a lab before its file exists: the lab's own progress cell still works."""
    monkeypatch.setattr(checks, "_SESSION", {})
    check("lab00.2", _stub)
    report = progress(tmp_path, lab="lab00")
    assert [(t.task, t.status) for t in report.tasks] == [
        ("lab00.1", "not run"), ("lab00.2", "not_implemented"), ("lab00.3", "not run")]


def test_a_broken_notebook_reads_as_not_run(course):
    (course / "labs" / "lab00_warmup.ipynb").write_text("{ not json", encoding="utf-8")
    assert {t.status for t in progress(course, lab="lab00").tasks} == {"not run"}


@pytest.mark.parametrize("cells", [
    [{"cell_type": "code", "source": 3, "outputs": "x"}],
    [{"cell_type": "code", "source": "", "outputs": [{"output_type": "display_data", "data": 5}]}],
    [{"cell_type": "code", "source": "", "outputs": [{"output_type": "display_data", "data": {"text/html": 7}}]}],
    [{"cell_type": "code", "source": "", "outputs": [None, 3, "x"]}],
])
def test_malformed_cells_and_outputs_read_as_not_run(course, cells):
    """JSON that is a notebook in shape but not in its cells: no statuses, no exception."""
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (course / "labs" / "lab00_warmup.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    assert {t.status for t in progress(course, lab="lab00").tasks} == {"not run"}


# -- task names in the language the reader chose -------------------------------------------------

def _save_with(course, *outputs_html):
    """lab00 saved with these extra HTML outputs appended (a reader's later cells)."""
    path = course / "labs" / "lab00_warmup.ipynb"
    nb = nbformat.read(path, as_version=4)
    for html in outputs_html:
        nb.cells.append(nbformat.v4.new_code_cell("...", outputs=[nbformat.v4.new_output(
            "display_data", data={"text/plain": "", "text/html": html})]))
    nbformat.write(nb, path)
    return path


def _title(task_id):
    spec = checks._TASKS[task_id]
    return spec.title_en, spec.title_zh


def test_in_a_notebook_after_language_zh_progress_names_tasks_in_chinese(course):
    from fxcourse import language

    language("zh")
    try:
        out = progress(course, lab="lab00").to_text()
    finally:
        _lang.set_language(None)
    en, zh = _title("lab00.1")
    assert zh in out and en not in out and "尚未运行" in out and "not run" not in out


def test_the_command_line_follows_the_choice_saved_in_the_readers_notebook(course, monkeypatch, capsys):
    from fxcourse import language

    _save_with(course, language("zh")._repr_html_())
    _lang.set_language(None)  # a terminal: a new process, which made no choice of its own
    monkeypatch.chdir(course)
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    en, zh = _title("lab00.2")
    assert zh in out and "还不正确" in out and "已通过 1 道" in out
    assert en not in out and "not right yet" not in out and "tasks pass" not in out
    html = progress(course).to_html()
    assert "<th>结果</th>" in html and zh in html
    monkeypatch.setenv("FXCOURSE_LANG", "en")  # the environment, where set, still wins
    assert main(["progress"]) == 0
    out = capsys.readouterr().out
    assert en in out and zh not in out


def test_check_results_stored_in_chinese_only_count_as_the_choice(course, monkeypatch, capsys):
    _lang.set_language("zh")
    try:
        shown = check("lab00.3", _stub).to_html()
    finally:
        _lang.set_language(None)
    path = course / "labs" / "lab00_warmup.ipynb"
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # the reader's saved notebook: every result shown in 中文 only
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": shown})]
    nbformat.write(nb, path)
    from fxcourse.tooling.progress import language_in

    assert language_in(path) == "zh"
    assert language_in(REPO / "labs" / "lab01_trace.ipynb") is None  # the course's own copy: both languages
    monkeypatch.chdir(course)
    assert main(["progress", "--lab", "lab00"]) == 0
    out = capsys.readouterr().out
    assert _title("lab00.3")[1] in out and _title("lab00.3")[0] not in out
