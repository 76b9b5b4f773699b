"""labs build / check / reset, on a temporary project."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fxcourse import FxCourseError
from fxcourse.tooling import labs
from fxcourse.tooling.cli import main

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
    # backups/ sits beside labs/: JupyterLab's file browser shows it (it hides dot-folders)
    assert report.backup is not None and report.backup.parent == root / "backups"
    assert "# my answer" in report.backup.read_text(encoding="utf-8")
    assert "# my answer" not in lab_path.read_text(encoding="utf-8")
    assert f"saved to backups/{report.backup.name}" in str(report)
    assert "JupyterLab's file browser" in str(report) and "已备份到" in str(report)
    assert not (root / "labs" / ".backups").exists()
    # resetting a pristine lab makes no backup
    assert labs.reset("lab98_demo", root).backup is None

    lab = nbformat.read(lab_path, as_version=4)
    lab.cells[2].source += "\n# second edit\n"
    nbformat.write(lab, lab_path)
    report = labs.build(root, force=True)[0]
    assert report.backup is not None and "# second edit" in report.backup.read_text(encoding="utf-8")


def test_old_hidden_backups_are_left_alone(tmp_path):
    root = _project(tmp_path)
    labs.build(root)
    old = root / "labs" / ".backups" / "lab98_demo.20250101-000000.ipynb"
    old.parent.mkdir()
    old.write_text("an old backup", encoding="utf-8")
    lab_path = root / "labs" / "lab98_demo.ipynb"
    lab = nbformat.read(lab_path, as_version=4)
    lab.cells[2].source += "\n# edit\n"
    nbformat.write(lab, lab_path)
    report = labs.reset("lab98", root)
    assert report.backup.parent == root / "backups"
    assert old.read_text(encoding="utf-8") == "an old backup"
    assert [p.name for p in old.parent.iterdir()] == [old.name]


def test_a_broken_lab_is_named_kept_and_restored(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path)
    labs.build(root)
    lab_path = root / "labs" / "lab98_demo.ipynb"
    broken = lab_path.read_bytes()[:-40]  # a save cut short
    lab_path.write_bytes(broken)
    monkeypatch.chdir(root / "labs")  # from inside labs/, the course is found above
    assert main(["labs", "check"]) == 1
    out = capsys.readouterr().out
    assert "labs/lab98_demo.ipynb is not valid JSON (line" in out
    assert "fxcourse labs reset lab98_demo" in out and "Traceback" not in out
    assert main(["labs", "reset", "lab98"]) == 0
    out = capsys.readouterr().out
    (kept,) = (root / "backups").iterdir()
    assert kept.read_bytes() == broken and kept.name.endswith(".broken.txt")
    assert f"kept as backups/{kept.name}" in out and "replaced by a working lab" in out
    assert nbformat.read(lab_path, as_version=4).cells[3].outputs[0]["text"] == "stub\n"
    assert main(["labs", "check"]) == 0


def test_build_replaces_a_broken_lab_after_keeping_it(tmp_path):
    root = _project(tmp_path)
    (root / "labs").mkdir()
    lab_path = root / "labs" / "lab98_demo.ipynb"
    lab_path.write_text("", encoding="utf-8")  # an empty file where the lab should be
    (report,) = labs.build(root, execute=False)
    assert report.action == "built" and report.broken == "is empty (0 bytes)"
    assert report.backup.read_bytes() == b"" and labs.out_of_date(root) == []


def test_commands_outside_the_course_say_where_it_is_expected(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an empty folder
    for argv in (["labs", "check"], ["labs", "build"], ["labs", "reset", "lab00"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"got the folder {tmp_path}, which is not inside the course" in err
        assert "the course folder (the one holding labs/ and solutions/)" in err and "课程目录" in err
    assert list(tmp_path.iterdir()) == []  # no labs/ folder was created here
    with pytest.raises(FxCourseError, match="not inside the course"):
        labs.out_of_date(tmp_path)


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


def test_an_exported_lab_is_a_working_course(tmp_path, monkeypatch, capsys):
    """`i18n export --lang zh` of one lab (lab and solution, executed in 中文) gives a course
    where labs check/reset and i18n check work, and a lab regenerated there equals the export."""
    out = tmp_path / "zh"
    name = "lab00_warmup.ipynb"  # the quickest lab to run
    assert main(["i18n", "export", "--lang", "zh", str(out), str(REPO / "labs" / name),
                 str(REPO / "solutions" / name)]) == 0
    capsys.readouterr()
    lab_path = out / "labs" / name
    exported = nbformat.read(lab_path, as_version=4)
    assert exported.cells[0].source == 'import fxcourse; fxcourse.language("zh")'
    assert not [c for c in exported.cells if "lang-en" in c.metadata.get("tags", [])]
    feedback = [o.get("text") or o["data"]["text/plain"] for c in exported.cells
                if c.cell_type == "code" and c.source.startswith("check(") for o in c.outputs]
    assert len(feedback) == 3 and all(text.startswith(f"[lab00.{k}] 尚未完成：") for k, text in zip("123", feedback))
    assert not any("not yet implemented" in text for text in feedback)
    solved = nbformat.read(out / "solutions" / name, as_version=4)
    assert "not yet implemented" not in lab_path.parent.parent.joinpath("solutions", name).read_text(encoding="utf-8")
    assert solved.metadata.fxcourse_language == "zh"

    monkeypatch.chdir(out / "labs")
    monkeypatch.delenv("FXCOURSE_LANG", raising=False)
    assert main(["labs", "check"]) == 0
    assert main(["i18n", "check", str(out / "labs"), str(out / "solutions")]) == 0
    before = lab_path.read_bytes()
    assert main(["labs", "reset", "lab00"]) == 0  # runs in 中文 by itself: FXCOURSE_LANG is not set here
    assert "lab00_warmup: reset" in capsys.readouterr().out
    assert lab_path.read_bytes() == before  # regenerated from the exported solution: the same lab
    assert not (out / "backups").exists()
    assert main(["labs", "check"]) == 0


def test_labs_messages_follow_the_language(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path)
    monkeypatch.chdir(root)
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert main(["labs", "check"]) == 1
    out = capsys.readouterr().out
    assert out == "缺少 labs/lab98_demo.ipynb\n请运行 `fxcourse labs build`\n"
    assert str(labs.build(root, execute=False)[0]) == "lab98_demo: 已生成"
    lab_path = root / "labs" / "lab98_demo.ipynb"
    lab_path.write_text(lab_path.read_text(encoding="utf-8").replace("stub", "mine"), encoding="utf-8")
    report = str(labs.build(root, force=True, execute=False)[0])
    assert report.startswith("lab98_demo: 已生成；你修改过的版本已备份到 backups/") and "edited" not in report
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert main(["labs", "check"]) == 0
    assert capsys.readouterr().out == f"labs/ is up to date in {root}\n"


def _bundle(tmp_path):
    """A learners' bundle of one lecture and its lab: course/ and labs/, no solutions/."""
    for folder, name in (("course", "00_overview.ipynb"), ("labs", "lab00_warmup.ipynb")):
        (tmp_path / folder).mkdir()
        shutil.copy(REPO / folder / name, tmp_path / folder / name)
    return tmp_path


def test_labs_check_in_a_learners_bundle_runs_each_lab(tmp_path, monkeypatch, capsys):
    bundle = _bundle(tmp_path)
    monkeypatch.chdir(bundle / "labs")
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert main(["labs", "check"]) == 0
    out = capsys.readouterr().out
    assert "1 labs open as built and run; their 3 checks say 'not yet implemented'" in out
    assert sorted(p.name for p in bundle.iterdir()) == ["course", "labs"]  # it ran on a copy


def test_i18n_check_without_paths_in_a_bundle_checks_what_it_holds(tmp_path, monkeypatch, capsys):
    """The course's default folders are course/, labs/ and solutions/; a bundle has no solutions/."""
    bundle = _bundle(tmp_path)
    monkeypatch.chdir(bundle)
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert main(["i18n", "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 notebooks, 0 problems"


def test_labs_check_in_a_bundle_names_an_edited_lab_and_a_missing_file(tmp_path, monkeypatch, capsys):
    bundle = _bundle(tmp_path)
    lab = bundle / "labs" / "lab00_warmup.ipynb"
    nb = nbformat.read(lab, as_version=4)
    stub = next(c for c in nb.cells if c.cell_type == "code" and "NotImplementedError" in c.source)
    stub.source = re.sub(r"raise NotImplementedError\([^\n]*\)", "return 0", stub.source)
    nbformat.write(nb, lab)
    course = bundle / "course" / "00_overview.ipynb"
    nb = nbformat.read(course, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("See `solutions/lab00_warmup.ipynb`."))
    nbformat.write(nb, course)
    monkeypatch.chdir(bundle)
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert main(["labs", "check"]) == 1
    out = capsys.readouterr().out
    assert "labs/lab00_warmup.ipynb was edited after it was built" in out
    assert "names solutions/lab00_warmup.ipynb, which the bundle does not hold" in out
    assert "gives lab00." in out and "not 'not yet implemented'" in out
