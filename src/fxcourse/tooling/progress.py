"""``fxcourse progress`` / ``fxcourse.progress()``: which tasks of which labs pass, read from your own lab notebooks.

Nothing is sent anywhere and nothing is written: the verdicts come from the check results
stored in the saved lab notebooks (what you saw when you last ran each ``check(...)`` cell and
saved), and, inside a notebook, from the checks this kernel has run since (they win, being newer).

Task names and verdicts follow the language the reader chose, as ``check()`` does: in a
notebook, ``fxcourse.language(...)``; on the command line, ``FXCOURSE_LANG``; and where neither
says (a terminal opened without it), the choice the reader's saved lab notebooks record (the
output of their last ``fxcourse.language(...)`` call, else the language their stored check
results are written in), from the notebook saved last.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .. import _lang
from .._lang import only, pick
from .._render import Viewable, esc
from ..errors import FxCourseError, describe

__all__ = ["Progress", "TaskState", "language_in", "progress", "statuses_in"]

_HTML = re.compile(r'class="fxcourse-check fxcourse-check-(\w+)" data-task="([^"]+)"')
_CHOICE = re.compile(r'class="fxcourse-language" data-lang="(en|zh|both)"')
_HEADS = re.compile(r'<div lang="(en|zh)"><b>')
_MARK = {"passed": "✓", "wrong": "✗", "raised": "✗", "too_slow": "✗", "not_implemented": "✏", "not run": "·"}
_WORDS = {
    "passed": ("passed", "通过"), "wrong": ("not right yet", "还不正确"), "raised": ("raised an exception", "抛出异常"),
    "too_slow": ("too slow", "运行时间过长"), "not_implemented": ("not yet implemented", "尚未完成"),
    "not run": ("not run yet", "尚未运行"),
}


@dataclass(frozen=True)
class TaskState:
    lab: str
    task: str
    title: tuple[str, str]
    status: str  # a CheckResult status, or "not run"

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _html_outputs(notebook: str | Path) -> Iterator[str]:
    """The text/html of each output of each code cell of ``notebook``, in order (none when the
    file cannot be read: progress is a view)."""
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        outputs = cell.get("outputs")
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            html = data.get("text/html", "") if isinstance(data, dict) else ""
            yield "".join(map(str, html)) if isinstance(html, list) else str(html)


def statuses_in(notebook: str | Path) -> dict[str, str]:
    """Task id → the status of the last check result stored in ``notebook`` (a .ipynb file).

    A notebook that cannot be read gives no statuses rather than an error: progress is a view.
    """
    found: dict[str, str] = {}
    for html in _html_outputs(notebook):
        for status, task in _HTML.findall(html):
            found[task] = status
    return found


def language_in(notebook: str | Path) -> str | None:
    """The language the reader chose in the saved ``notebook``: its last ``fxcourse.language()``
    output, else the one language its stored check results are written in (``en`` or ``zh``),
    else None (no choice recorded, or results in both languages)."""
    choice, heads = None, set()
    for html in _html_outputs(notebook):
        choice = ([c for c in _CHOICE.findall(html)] or [choice])[-1]
        if _HTML.search(html):
            heads |= set(_HEADS.findall(html))
    if choice is not None:
        return choice
    return heads.pop() if len(heads) == 1 else None


def _readers_choice(notebooks: list[Path]) -> str | None:
    """The language the reader chose, when neither ``fxcourse.language()`` in this process nor
    ``FXCOURSE_LANG`` says: the choice recorded in the lab notebook saved last, if any."""
    if _lang._chosen is not None or os.environ.get(_lang.ENV, "").strip():
        return None
    dated = []
    for nb in notebooks:
        try:
            dated.append((nb.stat().st_mtime, nb))
        except OSError:
            continue
    for _, nb in sorted(dated, key=lambda d: d[0], reverse=True):
        found = language_in(nb)
        if found is not None:
            return found
    return None


@contextlib.contextmanager
def _speaking(lang: str | None) -> Iterator[None]:
    """Everything inside reads in ``lang`` (None: the language in force)."""
    if lang is None:
        yield
        return
    before = _lang._chosen
    _lang.set_language(lang)
    try:
        yield
    finally:
        _lang._chosen = before


def _labs_folder(where: str | Path | None) -> Path:
    start = Path(where or ".").resolve()
    if start.is_dir() and any(start.glob("lab[0-9]*.ipynb")):
        return start
    for folder in (start, *start.parents):
        if (folder / "labs").is_dir() and any((folder / "labs").glob("lab[0-9]*.ipynb")):
            return folder / "labs"
    raise FxCourseError(got=f"the folder {start}, which holds no labs/labNN_*.ipynb", where="progress",
                        accepted="the course folder, its labs/ folder, or a folder inside the course",
                        fix="run it from the course folder, or pass the labs folder: fxcourse progress labs",
                        zh=f"progress：{start} 中没有 labs/labNN_*.ipynb；请在课程目录中运行，或传入 labs 文件夹："
                           "fxcourse progress labs。")


def _pad(words: str, width: int) -> str:
    """``words`` padded to ``width`` terminal columns (a 中文 character takes two)."""
    import unicodedata

    used = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in words)
    return words + " " * max(0, width - used)


@dataclass(frozen=True)
class Progress(Viewable):
    """Every task of every lab found, with its last verdict."""

    tasks: tuple[TaskState, ...]
    #: The language the reader chose in the saved notebooks, where nothing else says (see the
    #: module's docstring); None: the language in force when it is shown.
    lang: str | None = None

    @property
    def passed(self) -> int:
        return sum(t.passed for t in self.tasks)

    def summary(self) -> str:
        with _speaking(self.lang):
            return self._summary()

    def _summary(self) -> str:
        labs = sorted({t.lab for t in self.tasks})
        if len(labs) == 1:
            return pick(f"{labs[0]}: {self.passed} of {len(self.tasks)} tasks pass",
                        f"{labs[0]}：{len(self.tasks)} 道练习，已通过 {self.passed} 道")
        return pick(f"{self.passed} of {len(self.tasks)} tasks pass in {len(labs)} labs",
                    f"{len(labs)} 个实验共 {len(self.tasks)} 道练习，已通过 {self.passed} 道")

    def _rows(self) -> list[tuple[str, str, str, str]]:
        return [(t.task, _MARK[t.status], only(*_WORDS[t.status]), only(*t.title)) for t in self.tasks]

    def to_text(self) -> str:
        with _speaking(self.lang):
            return self._text()

    def _text(self) -> str:
        rows = self._rows()
        width = max((len(r[0]) for r in rows), default=4)
        lines = [self._summary()]
        lines += [f"  {task:<{width}}  {mark} {_pad(words, 20)} {title}" for task, mark, words, title in rows]
        return "\n".join(lines)

    def to_html(self) -> str:
        with _speaking(self.lang):
            return self._html()

    def _html(self) -> str:
        head = "".join(f"<th>{esc(only(en, zh))}</th>" for en, zh in
                       (("task", "练习"), ("verdict", "结果"), ("title", "题目")))
        body = "".join(f'<tr data-task="{esc(task)}"><td><code>{esc(task)}</code></td><td>{mark} {esc(words)}</td>'
                       f"<td>{esc(title)}</td></tr>" for task, mark, words, title in self._rows())
        return (f'<div class="fxcourse-progress"><div><b>{esc(self._summary())}</b></div>'
                f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")

    def __repr__(self) -> str:
        return f"Progress(passed={self.passed}, tasks={len(self.tasks)})"


def progress(where: str | Path | None = None, lab: str | None = None) -> Progress:
    """Which tasks pass: every lab notebook in the course's ``labs/`` (found from ``where``,
    default the current folder), or only ``lab`` (e.g. ``"lab03"``).

    In a notebook, the checks run in this kernel count too (they are newer than the file).
    """
    if where is not None and not isinstance(where, (str, Path)):
        raise FxCourseError(got=f"where={describe(where)}", where="progress",
                            accepted="a folder as a str or a pathlib.Path (the course, its labs/ or a folder inside it)",
                            fix='pass e.g. progress("labs"), or nothing for the current folder',
                            zh=f"progress：where={describe(where)} 不是路径；需要字符串或 pathlib.Path 表示的文件夹"
                               '（课程目录、labs/ 或课程内的文件夹）。修复：例如 progress("labs")，或不传参数表示当前目录。')
    if where is not None and not Path(where).exists():  # a typo would read as "nothing run yet"
        raise FxCourseError(got=f"the path {where}, which does not exist", where="progress",
                            accepted="the course folder, its labs/ folder, or a folder inside the course",
                            fix="check the spelling, or run it from the course folder with no path",
                            zh=f"progress：路径 {where} 不存在；需要课程目录、labs/ 或课程内的文件夹。"
                               "修复：检查拼写，或在课程目录中不带路径运行。")
    from .. import checks

    all_tasks = checks.task_ids()
    if lab is not None:
        known = sorted({t.split(".")[0] for t in all_tasks})
        if lab not in known:
            raise FxCourseError(got=repr(lab), accepted=f"one of {', '.join(known)}",
                                fix="pass a lab's number, e.g. 'lab03'", where="progress",
                                zh=f"progress：没有实验 {lab!r}；可选：{'、'.join(known)}。")
        try:
            folder: Path | None = _labs_folder(where)
        except FxCourseError:  # a lab running where no saved copy exists yet (an export being made)
            folder = None
        saved = sorted(folder.glob(f"{lab}_*.ipynb")) if folder is not None else []
        labs = [(lab, saved[0] if saved else None)]
    else:
        labs = [(nb.name.split("_")[0], nb) for nb in sorted(_labs_folder(where).glob("lab[0-9]*.ipynb"))]
    lang = _readers_choice([nb for _, nb in labs if nb is not None])
    states = []
    for name, nb in labs:
        stored = statuses_in(nb) if nb is not None else {}
        for task_id in (t for t in all_tasks if t.split(".")[0] == name):
            spec = checks._TASKS[task_id]
            status = checks._SESSION.get(task_id) or stored.get(task_id) or "not run"
            states.append(TaskState(name, task_id, (spec.title_en, spec.title_zh), status))
    return Progress(tuple(states), lang)
