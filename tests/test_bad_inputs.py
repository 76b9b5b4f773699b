"""What a learner really feeds the `fxcourse` command: broken, empty, misencoded, read-only
notebooks, the wrong folder, a file where a folder belongs. Each case must end in a one-line
bilingual message naming the problem and a non-zero exit status, print no traceback, and lose
no file (every file's bytes are still somewhere in the folder afterwards: in place, or kept
in a backups/ folder)."""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fxcourse.tooling import labs
from small_course import KERNELSPEC, small_course
from fxcourse.tooling.cli import main



def _notebook(**metadata) -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_markdown_cell("# Notes", metadata={"tags": ["lang-en"]}),
        new_markdown_cell("# 笔记", metadata={"tags": ["lang-zh"]}),
        new_code_cell("open('ran.txt', 'w').write('ran')"),  # shows whether it was executed
    ], metadata={"kernelspec": KERNELSPEC, **metadata})


_GOOD = nbformat.writes(_notebook()).encode() + b"\n"  # once: new cells get random ids


def _good_bytes() -> bytes:
    return _GOOD


# What a learner's editor, a crash or a wrong click leaves in a .ipynb file.
BROKEN = {
    "not JSON": (b"print('hello')\n", r"is not valid JSON \(line 1, column 1"),
    "empty": (b"", r"is empty \(0 bytes\)"),
    "JSON, not a notebook": (b'{"name": "lab00", "answers": [1, 2]}', r"is JSON but not a notebook"),
    "a JSON list": (b"[]", r"is JSON but not a notebook \(a JSON list"),
    "cut short": (None, r"is not valid JSON \(line \d+, column \d+"),
    "not UTF-8": (None, r"is not UTF-8 text \(byte 0x[0-9a-f]{2} at offset \d+\)"),
    "cells not a list": (b'{"cells": {}, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
                         r"is not a valid notebook"),
}


def _broken_bytes(kind: str) -> bytes:
    data = BROKEN[kind][0]
    if kind == "cut short":
        return _good_bytes()[:-30]
    if kind == "not UTF-8":  # saved as GBK by an editor on a Chinese Windows
        return _good_bytes().decode().encode("gbk")
    return data


_course = small_course


@dataclass
class Case:
    """``setup(tmp_path)`` makes the files and returns (argv, folder to run in)."""

    setup: Callable[[Path], tuple[list[str], Path]]
    code: int
    message: str  # a regex that one whole output line must match
    stream: str = "err"
    not_run: bool = False  # the notebook must not have been executed


def _file(tmp: Path, data: bytes, name: str = "notes.ipynb", mode: int | None = None) -> Path:
    path = tmp / name
    path.write_bytes(data)
    if mode is not None:
        path.chmod(mode)
    return path


def _nb_run_broken(kind: str) -> Case:
    def setup(tmp):
        return ["nb", "run", str(_file(tmp, _broken_bytes(kind)))], tmp
    return Case(setup, 2, rf"fxcourse: nb run: got \S+notes\.ipynb, which {BROKEN[kind][1]}.* / nb run：.*")


def _i18n_check_broken(kind: str) -> Case:
    def setup(tmp):
        _file(tmp, _good_bytes(), "good.ipynb")
        return ["i18n", "check", str(_file(tmp, _broken_bytes(kind)).parent)], tmp
    return Case(setup, 1, rf"\S+notes\.ipynb: {BROKEN[kind][1]}.* / .*", stream="out")


def _i18n_export_broken(kind: str) -> Case:
    def setup(tmp):
        (tmp / "course").mkdir()
        _file(tmp / "course", _good_bytes(), "00_a.ipynb")
        _file(tmp / "course", _broken_bytes(kind), "notes.ipynb")
        return ["i18n", "export", "--lang", "zh", str(tmp / "out"), str(tmp / "course")], tmp
    return Case(setup, 2, rf"fxcourse: i18n export: got \S+notes\.ipynb, which {BROKEN[kind][1]}.* / .*")


def _kernel(name: str) -> Case:
    def setup(tmp):
        nb = _notebook()
        nb.metadata.kernelspec = {"name": name, "display_name": name, "language": "julia"}
        nbformat.write(nb, tmp / "notes.ipynb")
        return ["nb", "run", str(tmp / "notes.ipynb")], tmp
    return Case(setup, 2, rf"fxcourse: nb run: got \S+notes\.ipynb, which names the kernel '{name}' "
                          r"\(not installed here\); expected a notebook whose kernel is installed \(.*python3.*"
                          r"Change Kernel.* / nb run：.*没有安装.*", not_run=True)


def _labs_in(folder: str, *argv: str) -> Callable[[Path], tuple[list[str], Path]]:
    def setup(tmp):
        (tmp / folder).mkdir(parents=True, exist_ok=True)
        return ["labs", *argv], tmp / folder
    return setup


def _broken_lab(kind: str, *argv: str) -> Callable[[Path], tuple[list[str], Path]]:
    def setup(tmp):
        root = _course(tmp / "fxcourse")
        (root / "labs" / "lab98_demo.ipynb").write_bytes(_broken_bytes(kind))
        return ["labs", *argv], root / "labs"  # learners often run it from inside labs/
    return setup


def _broken_solution(tmp):
    root = _course(tmp / "fxcourse", built=False)
    (root / "solutions" / "lab98_demo.ipynb").write_bytes(_broken_bytes("cut short"))
    return ["labs", "build"], root


def _export_into(target: str) -> Callable[[Path], tuple[list[str], Path]]:
    def setup(tmp):
        root = _course(tmp / "fxcourse")
        (tmp / "workshop" / "labs").mkdir(parents=True)
        _file(tmp / "workshop" / "labs", _good_bytes(), "lab98_demo.ipynb")
        out = {"the course": root, "a file": tmp / "notes.txt", "under a file": tmp / "notes.txt" / "zh"}[target]
        (tmp / "notes.txt").write_text("my notes")
        return ["i18n", "export", "--lang", "zh", str(out), str(tmp / "workshop" / "labs")], tmp
    return setup


def _export_target_is_a_folder(tmp):
    (tmp / "course").mkdir()
    _file(tmp / "course", _good_bytes(), "00_a.ipynb")
    (tmp / "out" / "course" / "00_a.ipynb").mkdir(parents=True)
    return ["i18n", "export", "--lang", "zh", str(tmp / "out"), str(tmp / "course")], tmp


def _argv(*argv: str) -> Callable[[Path], tuple[list[str], Path]]:
    return lambda tmp: (list(argv), tmp)


NOT_A_COURSE = r"fxcourse: labs: got the folder \S+, which is not inside the course.*expected the course folder " \
               r"\(the one holding labs/ and solutions/\).* / labs：.*不在课程目录中.*"
USAGE = r"fxcourse.*: error: {} / 错误：{}"

CASES = {
    **{f"nb run: {kind}": _nb_run_broken(kind) for kind in BROKEN},
    **{f"i18n check: {kind}": _i18n_check_broken(kind) for kind in BROKEN},
    **{f"i18n export: source {kind}": _i18n_export_broken(kind)
       for kind in ("not JSON", "empty", "JSON, not a notebook", "not UTF-8")},
    "nb run: read-only": Case(lambda t: (["nb", "run", str(_file(t, _good_bytes(), mode=0o444))], t), 2,
                              r"fxcourse: nb run: got \S+notes\.ipynb, which is read-only .*chmod u\+w.* / .*只读.*",
                              not_run=True),
    "nb run: unreadable": Case(lambda t: (["nb", "run", str(_file(t, _good_bytes(), mode=0o200))], t), 2,
                               r"fxcourse: nb run: got \S+notes\.ipynb, which cannot be read .* / .*无法读取.*",
                               not_run=True),
    "i18n check: unreadable": Case(lambda t: (["i18n", "check", str(_file(t, _good_bytes(), mode=0o200))], t), 1,
                                   r"\S+notes\.ipynb: cannot be read .* / .*无法读取.*", stream="out"),
    "nb run: kernel not installed": _kernel("julia-1.10"),
    "nb run: kernel of another machine's env": _kernel("conda-env-torch-py"),
    "nb run: a typo in the path": Case(lambda t: (["nb", "run", str(t / "lab00_warmpu.ipynb")], t), 2,
                                       r"fxcourse: nb run: got \S+lab00_warmpu\.ipynb; expected a \.ipynb file.* / .*"),
    "nb run: a .py file": Case(lambda t: (["nb", "run", str(_file(t, b"x = 1\n", "solve.py"))], t), 2,
                               r"fxcourse: nb run: got \S+solve\.py; expected a \.ipynb file.* / .*"),
    "nb run: a folder with no notebooks": Case(lambda t: (["nb", "run", str(t)], t), 2,
                                               r"fxcourse: nb run: got \S+, which holds no notebooks.* / .*"),
    "i18n export: OUT is the course": Case(_export_into("the course"), 2,
                                           r"fxcourse: i18n export: got an output folder that would overwrite "
                                           r"\S+labs/lab98_demo\.ipynb.* / .*"),
    "i18n export: OUT is a file": Case(_export_into("a file"), 2,
                                       r"fxcourse: i18n export: got OUT \S+notes\.txt, where \S+notes\.txt is a "
                                       r"file, not a folder.* / .*是文件，不是文件夹.*"),
    "i18n export: OUT under a file": Case(_export_into("under a file"), 2,
                                          r"fxcourse: i18n export: got OUT \S+zh, where \S+notes\.txt is a file.* / .*"),
    "i18n export: target is a folder": Case(_export_target_is_a_folder, 2,
                                            r"fxcourse: i18n export: got OUT \S+, where \S+00_a\.ipynb is a folder.* / .*"),
    "labs check: empty folder": Case(_labs_in("somewhere", "check"), 2, NOT_A_COURSE),
    "labs build: empty folder": Case(_labs_in("somewhere", "build"), 2, NOT_A_COURSE),
    "labs reset: empty folder": Case(_labs_in("somewhere", "reset", "lab00"), 2, NOT_A_COURSE),
    "labs check: home folder with a labs/ but no solutions/": Case(_labs_in("labs", "check"), 2, NOT_A_COURSE),
    **{f"labs check: lab {kind}": Case(_broken_lab(kind, "check"), 1,
                                       rf"labs/lab98_demo\.ipynb {BROKEN[kind][1]}.*run `fxcourse labs reset "
                                       r"lab98_demo` to restore it \(the broken file is kept in backups/\) / .*",
                                       stream="out")
       for kind in ("cut short", "empty", "not UTF-8")},
    "labs check: lab is JSON but not a notebook": Case(_broken_lab("JSON, not a notebook", "check"), 1,
                                                       r"labs/lab98_demo\.ipynb is JSON but not a notebook.*labs reset.*",
                                                       stream="out"),
    "labs reset: unknown lab": Case(lambda t: (["labs", "reset", "lab42"], _course(t / "c")), 2,
                                    r"fxcourse: labs: got 'lab42'; expected one of lab98_demo.* / .*"),
    "labs build: broken solution": Case(_broken_solution, 2,
                                        r"fxcourse: labs: got \S+solutions/lab98_demo\.ipynb, which is not valid JSON.*"
                                        r"git checkout -- .* / .*"),
    "argparse: export without OUT": Case(_argv("i18n", "export", "--lang", "zh"), 2,
                                         USAGE.format("the following arguments are required: out", "缺少必需的参数：out")),
    "argparse: export --lang fr": Case(_argv("i18n", "export", "--lang", "fr", "out"), 2,
                                       USAGE.format(r"argument --lang: invalid choice: 'fr'.*", r"参数 --lang 的值 'fr' 无效.*")),
    "argparse: reset without a name": Case(_argv("labs", "reset"), 2,
                                           USAGE.format("the following arguments are required: name", "缺少必需的参数：name")),
    "argparse: unknown command": Case(_argv("lab", "reset"), 2, USAGE.format(r"argument \S+: invalid choice: 'lab'.*",
                                                                            r"参数 \S+ 的值 'lab' 无效.*")),
    "argparse: unknown option": Case(_argv("labs", "build", "--froce"), 2,
                                     USAGE.format("unrecognized arguments: --froce", "无法识别的参数：--froce")),
}


def _snapshot(folder: Path) -> dict[Path, bytes]:
    out = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | stat.S_IRUSR)
            out[path] = path.read_bytes()
            path.chmod(mode)
    return out


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input(case: Case, tmp_path, monkeypatch, capfd):
    argv, cwd = case.setup(tmp_path)
    monkeypatch.chdir(cwd)
    before = _snapshot(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse exits
        code = exc.code
    out, err = capfd.readouterr()
    assert code == case.code, out + err
    assert "Traceback" not in out + err
    shown = out if case.stream == "out" else err
    assert any(re.fullmatch(case.message, line) for line in shown.splitlines()), shown
    if case.stream == "err" and not err.startswith("usage:"):
        assert len(err.strip().splitlines()) == 1 and not out, err  # one line, English / 中文
    after = _snapshot(tmp_path)
    kept = set(after.values())
    lost = [p for p, data in before.items() if data not in kept]
    assert not lost, f"lost: {lost}"
    if case.not_run:
        assert not list(tmp_path.rglob("ran.txt")), "the notebook was executed"


def test_matrix_size():
    """The issue asks for the count in the closing note; keep it from shrinking unnoticed."""
    assert len(CASES) >= 45, len(CASES)


# -- the learner's work survives, and the command is quiet ------------------------------------

def test_reset_from_inside_labs_keeps_a_broken_lab_and_restores_a_working_one(tmp_path, monkeypatch, capfd):
    root = _course(tmp_path / "fxcourse")
    lab = root / "labs" / "lab98_demo.ipynb"
    broken = lab.read_bytes()[:-25]
    lab.write_bytes(broken)
    monkeypatch.chdir(root / "labs")
    assert main(["labs", "reset", "lab98"]) == 0
    out, err = capfd.readouterr()
    (kept,) = (root / "backups").iterdir()
    assert kept.read_bytes() == broken
    assert f"kept as backups/{kept.name}" in out and "JupyterLab's file browser" in out and "backups/ 文件夹" in out
    assert nbformat.read(lab, as_version=4).cells[3].outputs[0]["text"] == "checked\n"
    assert "without encryption" not in out + err and "Traceback" not in out + err
    assert main(["labs", "check"]) == 0


def test_build_from_inside_labs_finds_the_course_above(tmp_path, monkeypatch, capfd):
    root = _course(tmp_path / "fxcourse")
    monkeypatch.chdir(root / "labs")
    assert main(["labs", "build"]) == 0
    assert capfd.readouterr().out == "lab98_demo: up to date\n"
    assert not (root / "labs" / "labs").exists()


def test_export_twice_keeps_the_edited_copy(tmp_path, monkeypatch, capfd):
    (tmp_path / "course").mkdir()
    _file(tmp_path / "course", _good_bytes(), "00_a.ipynb")
    monkeypatch.chdir(tmp_path)
    assert main(["i18n", "export", "--lang", "en", "out", "course"]) == 0
    exported = tmp_path / "out" / "course" / "00_a.ipynb"
    exported.write_text(exported.read_text(encoding="utf-8").replace("Notes", "My notes"), encoding="utf-8")
    edited = exported.read_bytes()
    capfd.readouterr()
    assert main(["i18n", "export", "--lang", "en", "out", "course"]) == 0
    out = capfd.readouterr().out
    (backup,) = (tmp_path / "out" / "backups" / "course").iterdir()
    assert backup.read_bytes() == edited and f"saved to out/backups/course/{backup.name}" in out


def test_nb_run_is_quiet_and_merges_streams(tmp_path, capfd):
    """ipykernel's plain-TCP warning is gone, and printed text is one output per stream run."""
    path = tmp_path / "chunks.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(
        "import sys, time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)\n"
        "print('oops', file=sys.stderr, flush=True)\nprint('done')")], metadata={"kernelspec": KERNELSPEC}), path)
    assert main(["nb", "run", str(path)]) == 0
    out, err = capfd.readouterr()
    assert "without encryption" not in out + err and "Warning" not in err, err
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert [(o.name, o.text) for o in outputs] == [("stdout", "0\n1\n2\n"), ("stderr", "oops\n"),
                                                   ("stdout", "done\n")]


def test_nb_run_checks_every_notebook_before_running_any(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = _file(tmp_path, _good_bytes(), "a_good.ipynb")
    _file(tmp_path, b"", "b_empty.ipynb")
    assert main(["nb", "run", str(good), str(tmp_path / "b_empty.ipynb")]) == 2
    assert not (tmp_path / "ran.txt").exists() and good.read_bytes() == _good_bytes()


# -- library errors follow the same bilingual convention ---------------------------------------

def _library_errors():
    import torch

    from fxcourse import graph_table, inductor_code, lowering, zoo
    from fxcourse.tooling import nbrun

    chain = torch.fx.symbolic_trace(lambda x: x + 1)
    yield "graph_table(None)", lambda tmp: graph_table(None)
    yield "max_rows=-1", lambda tmp: graph_table(chain, max_rows=-1)
    yield "max_rows='3'", lambda tmp: graph_table(chain, max_rows="3")
    yield "zoo.example typo", lambda tmp: zoo.example("resnet81")
    yield "labs outside the course", lambda tmp: labs.find_root(tmp)
    yield "read an empty notebook", lambda tmp: nbrun.read(_file(tmp, b""))
    yield "graph_table columns=3", lambda tmp: graph_table(chain, columns=3)
    yield "graph_table columns=[1]", lambda tmp: graph_table(chain, columns=[1])
    yield "graph_table columns=dict", lambda tmp: graph_table(chain, columns={"name": 1})
    yield "zoo.example list", lambda tmp: zoo.example(["mlp"])
    yield "zoo.example seed='a'", lambda tmp: zoo.example("mlp", seed="a")
    yield "zoo.example seed=True", lambda tmp: zoo.example("mlp", seed=True)
    yield "lowering stages=None", lambda tmp: lowering(torch.nn.ReLU(), torch.ones(2), stages=None)
    yield "lowering stages=[1]", lambda tmp: lowering(torch.nn.ReLU(), torch.ones(2), stages=[1])
    yield "inductor_code simdlen='x'", lambda tmp: inductor_code(lambda x: x + 1, torch.ones(2), simdlen="x")
    yield "inductor_code simdlen=-1", lambda tmp: inductor_code(lambda x: x + 1, torch.ones(2), simdlen=-1)


@pytest.mark.parametrize("call", [c for _, c in _library_errors()], ids=[n for n, _ in _library_errors()])
def test_library_errors_are_one_bilingual_line(call, tmp_path):
    from fxcourse import FxCourseError

    with pytest.raises(FxCourseError) as info:
        call(tmp_path)
    message = str(info.value)
    english, _, chinese = message.partition(" / ")
    assert "\n" not in message and "; expected " in english and " Fix: " in english
    assert re.search(r"[\u4e00-\u9fff]", chinese), message


def test_running_notebooks_leaves_no_kernel_behind(tmp_path):
    """nb run, labs build and i18n export run many notebooks in one process: each kernel is
    stopped when its notebook is done, not when the command ends."""
    import nbformat
    import psutil

    from fxcourse.tooling import nbrun

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}

    def kernels() -> int:
        return sum("ipykernel" in " ".join(child.cmdline()) for child in psutil.Process().children(recursive=True))

    before = kernels()
    for _ in range(2):
        assert nbrun.execute(nb, tmp_path).cells[0].outputs[0]["data"]["text/plain"] == "2"
    assert kernels() == before


# -- issue 26's "silently wrong" and "foreign" cases, each now a clear FxCourseError --------
def test_i18n_check_on_a_folder_without_notebooks_is_an_error(tmp_path, capsys):
    from fxcourse.tooling.cli import main

    assert main(["i18n", "check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds no notebooks" in err and "Traceback" not in err


def test_an_empty_language_is_not_a_choice():
    import fxcourse
    from fxcourse import FxCourseError

    for empty in ("", "  "):
        with pytest.raises(FxCourseError, match="expected 'en', 'zh' or 'both'"):
            fxcourse.language(empty)
    fxcourse.language(None)  # no argument still reports the language in force


def test_drawing_an_empty_graph_says_so():
    import torch

    import fxcourse
    from fxcourse import FxCourseError

    with pytest.raises(FxCourseError, match="no nodes"):
        fxcourse.draw(torch.fx.Graph())
