"""Bilingual parity, the lecture skeleton, and single-language export."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fxcourse import FxCourseError, i18n
from fxcourse.cli import main

REPO = Path(__file__).resolve().parents[1]


def en(text):
    return new_markdown_cell(text, metadata={"tags": ["lang-en"]})


def zh(text):
    return new_markdown_cell(text, metadata={"tags": ["lang-zh"]})


def _lecture(tmp_path, cells, name="00_demo.ipynb"):
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    path = folder / name
    nbformat.write(new_notebook(cells=cells), path)
    return path


GOOD = [en("# Title"), zh("# 标题"), new_code_cell("1 + 1"), en("## Part\ntext"), zh("## 部分\n正文"),
        en("## Summary"), zh("## 小结"), en("## Exercises"), zh("## 练习")]


def test_good_lecture_has_no_problems(tmp_path):
    assert i18n.check_notebook(_lecture(tmp_path, GOOD)) == []


@pytest.mark.parametrize("cells, message", [
    ([en("# T"), new_code_cell("x"), zh("# 标题")], "English cell has no 中文 twin"),
    ([zh("# 标题"), en("# T")], "中文 cell without an English cell"),
    ([new_markdown_cell("# untagged")], "without exactly one of the tags"),
    ([en("# T\n## A"), zh("# 标题")], "headings differ: English [#, ##] vs 中文 [#]"),
    ([en("# T\n### A"), zh("# 标题\n## A")], "headings differ"),
    ([en("# T"), zh("# 标题"), en("## Exercises"), zh("## 练习")], "must be Summary and Exercises"),
    ([en("Intro"), zh("介绍"), en("## Summary"), zh("## 小结"), en("## Exercises"), zh("## 练习")],
     "level-1 title"),
])
def test_each_problem_is_reported_with_its_cell(tmp_path, cells, message):
    problems = i18n.check_notebook(_lecture(tmp_path, cells))
    assert any(message in str(p) for p in problems), problems
    assert all(str(p).startswith(tmp_path.as_posix()) for p in problems)


def test_skeleton_is_only_required_of_lectures(tmp_path):
    (tmp_path / "labs").mkdir()
    path = tmp_path / "labs" / "lab00.ipynb"
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验")]), path)
    assert i18n.check_notebook(path) == []


def test_headings_ignore_code_fences():
    assert i18n.headings("```python\n# comment\n```\n### Real") == [(3, "Real")]


def test_export_keeps_one_language_with_code_and_outputs(tmp_path):
    path = _lecture(tmp_path, GOOD)
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    nb.cells[2].execution_count = 1
    nbformat.write(nb, path)
    (out,) = i18n.export([path], "zh", tmp_path / "zh")
    assert out.backup is None
    exported = nbformat.read(out.path, as_version=4)
    assert [c.source for c in exported.cells if c.cell_type == "markdown"] == ["# 标题", "## 部分\n正文", "## 小结", "## 练习"]
    assert exported.cells[1].outputs[0]["data"]["text/plain"] == "2"
    with pytest.raises(FxCourseError, match="'fr'"):
        i18n.export([path], "fr", tmp_path / "fr")
    with pytest.raises(FxCourseError, match="overwrite"):
        i18n.export([path], "en", tmp_path)


def test_export_never_loses_an_edited_copy(tmp_path):
    path = _lecture(tmp_path, GOOD)
    out = tmp_path / "build" / "zh"
    (first,) = i18n.export([path], "zh", out)
    assert i18n.export([path], "zh", out)[0].backup is None  # the same content: nothing to keep
    edited = first.path.read_text(encoding="utf-8").replace("正文", "我的笔记")
    first.path.write_text(edited, encoding="utf-8")
    (second,) = i18n.export([path], "zh", out)
    assert second.backup is not None and second.backup.read_text(encoding="utf-8") == edited
    assert second.backup.parent == out / "backups" / "course"
    assert "我的笔记" not in second.path.read_text(encoding="utf-8")
    assert str(second.backup) in str(second)


def test_export_into_the_course_own_folders_is_refused(tmp_path):
    """Writing OUT/labs/<lab> into a course would replace the learner's own lab."""
    course = tmp_path / "course_root"
    (course / "solutions").mkdir(parents=True)
    (course / "labs").mkdir()
    mine = course / "labs" / "lab00_demo.ipynb"
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验"), new_code_cell("answer = 42")]), mine)
    before = mine.read_bytes()
    other = tmp_path / "elsewhere" / "labs"
    other.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验")]), other / "lab00_demo.ipynb")
    with pytest.raises(FxCourseError, match="would overwrite .*lab00_demo.ipynb"):
        i18n.export([other], "zh", course)
    assert mine.read_bytes() == before


def test_cli_exit_status(tmp_path, capsys):
    good = _lecture(tmp_path, GOOD)
    assert main(["i18n", "check", str(good)]) == 0
    bad = _lecture(tmp_path, [en("# T")], name="01_bad.ipynb")
    assert main(["i18n", "check", str(bad)]) == 1
    assert "English cell has no 中文 twin" in capsys.readouterr().out


def test_repository_notebooks_are_bilingual():
    problems = i18n.check_paths([REPO / "course", REPO / "labs", REPO / "solutions"])
    assert problems == [], "\n".join(map(str, problems))
