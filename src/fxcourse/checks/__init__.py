"""Lab checkers: ``check(task_id, answer)`` returns a bilingual result and never raises.

Each lab has a module here (``lab00.py`` …) that registers its tasks with :func:`task`.
A task's checker calls the learner's answer on inputs the learner has not seen and raises
:class:`Wrong` with what it tried, what it expected and what it got; everything else
(a stub's ``NotImplementedError``, any other exception) is turned into a result here.

Introduced in labs/lab00_warmup.ipynb.

>>> from fxcourse import check
>>> def stub(gm):
...     raise NotImplementedError
>>> print(check("lab00.1", stub).to_text().splitlines()[0])
[lab00.1] not yet implemented: replace the `raise NotImplementedError(...)` line with your code, then run this cell again.
"""
from __future__ import annotations

import importlib
import pkgutil
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from .._render import Viewable, esc
from .._text import one_line_error, scrub

__all__ = ["check", "CheckResult", "Wrong", "task", "task_ids"]

STATUSES = ("passed", "not_implemented", "wrong", "raised", "unknown_task")


class Wrong(Exception):
    """Raised by a checker when the answer is wrong; carries what a learner needs to see."""

    def __init__(self, en: str, zh: str, *, tried: str = "", expected: str = "", got: str = "") -> None:
        super().__init__(en)
        self.en, self.zh = en, zh
        self.tried, self.expected, self.got = tried, expected, got


@dataclass(frozen=True)
class Task:
    id: str
    title_en: str
    title_zh: str
    checker: Callable[[Any], None]


_TASKS: dict[str, Task] = {}


def task(task_id: str, title_en: str, title_zh: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register ``checker`` as the checker of ``task_id``."""

    def register(checker: Callable[[Any], None]) -> Callable[[Any], None]:
        _TASKS[task_id] = Task(task_id, title_en, title_zh, checker)
        return checker

    return register


def _load_all() -> None:
    """Import every ``checks/labNN.py`` module; each registers its tasks on import."""
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("lab"):
            importlib.import_module(f"{__name__}.{info.name}")


def task_ids() -> list[str]:
    """Every task a lab can check.

    >>> "lab00.1" in task_ids()
    True
    """
    _load_all()
    return sorted(_TASKS)


_HEAD = {
    "passed": ("passed", "通过"),
    "not_implemented": ("not yet implemented", "尚未完成"),
    "wrong": ("not right yet", "还不正确"),
    "raised": ("your code raised an exception", "你的代码抛出了异常"),
    "unknown_task": ("unknown task", "未知的练习编号"),
}
_COLOUR = {"passed": "#2e7d32", "not_implemented": "#1565c0", "wrong": "#c62828", "raised": "#c62828",
           "unknown_task": "#6d4c41"}
_ICON = {"passed": "✅", "not_implemented": "✏️", "wrong": "❌", "raised": "💥", "unknown_task": "❓"}


def _clean(text: str, limit: int = 300) -> str:
    """Drop memory addresses and directory paths and cut long values, so feedback is the
    same on every run.

    >>> _clean("<built-in method relu of type object at 0x7f00aa00aa00>")
    '<built-in method relu of type object>'
    """
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class CheckResult(Viewable):
    """What :func:`check` found. ``bool(result)`` is True only when the task passed."""

    task: str
    status: str
    en: str
    zh: str
    title_en: str = ""
    title_zh: str = ""
    tried: str = ""
    expected: str = ""
    got: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __bool__(self) -> bool:
        return self.passed

    def _details(self) -> list[tuple[str, str, str]]:
        rows = [("input tried", "尝试的输入", self.tried), ("expected", "期望", self.expected),
                ("got", "实际得到", self.got)]
        return [(en, zh, _clean(v)) for en, zh, v in rows if v]

    def to_text(self) -> str:
        head_en, head_zh = _HEAD[self.status]
        lines = [f"[{self.task}] {head_en}: {self.en}", f"[{self.task}] {head_zh}：{self.zh}"]
        for en, zh, value in self._details():
            lines.append(f"  {en} / {zh}: {value}")
        return "\n".join(lines)

    def to_html(self) -> str:
        head_en, head_zh = _HEAD[self.status]
        title = f" — {esc(self.title_en)} / {esc(self.title_zh)}" if self.title_en else ""
        details = "".join(
            f"<tr><th>{esc(en)} / {esc(zh)}</th><td><code>{esc(v)}</code></td></tr>"
            for en, zh, v in self._details()
        )
        table = f'<table class="fxcourse-check-details">{details}</table>' if details else ""
        return (
            f'<div class="fxcourse-check fxcourse-check-{self.status}" data-task="{esc(self.task)}" '
            f'style="border-left:4px solid {_COLOUR[self.status]};padding:4px 10px;margin:2px 0">'
            f"<div><b>{_ICON[self.status]} {esc(self.task)}{title}</b></div>"
            f'<div lang="en"><b>{esc(head_en)}</b>: {esc(self.en)}</div>'
            f'<div lang="zh"><b>{esc(head_zh)}</b>：{esc(self.zh)}</div>{table}</div>'
        )

    def __repr__(self) -> str:
        return f"CheckResult(task={self.task!r}, status={self.status!r})"


def _short_exception(exc: BaseException) -> str:
    """``TypeError: message (in fn, line N)`` — the learner's own innermost frame if any."""
    text = one_line_error(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if "fxcourse" not in f.filename and "site-packages" not in f.filename]
    if own:
        text += f" (in {own[-1].name}, line {own[-1].lineno})"
    return text


def check(task_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` for lab task ``task_id``; never raises.

    Returns a :class:`CheckResult` that notebooks display in both languages.
    """
    _load_all()
    spec = _TASKS.get(task_id)
    if spec is None:
        known = ", ".join(sorted(_TASKS))
        return CheckResult(
            str(task_id), "unknown_task",
            f"{task_id!r} is not a task id; known ids: {known}. Check the spelling in check(...).",
            f"{task_id!r} 不是练习编号；已有编号：{known}。请检查 check(...) 中的拼写。",
        )
    titles = {"title_en": spec.title_en, "title_zh": spec.title_zh}
    try:
        spec.checker(answer)
    except NotImplementedError:
        return CheckResult(
            task_id, "not_implemented",
            "replace the `raise NotImplementedError(...)` line with your code, then run this cell again.",
            "把 `raise NotImplementedError(...)` 这一行换成你的代码，然后重新运行本单元。",
            **titles,
        )
    except Wrong as wrong:
        return CheckResult(task_id, "wrong", wrong.en, wrong.zh, tried=wrong.tried,
                           expected=wrong.expected, got=wrong.got, **titles)
    except Exception as exc:  # the learner's code raised: report it, don't re-raise
        short = _short_exception(exc)
        return CheckResult(
            task_id, "raised",
            f"{short}. Read the message, fix the code, and run the cell again.",
            f"{short}。阅读报错信息，修改代码后重新运行本单元。",
            **titles,
        )
    return CheckResult(task_id, "passed", "well done.", "做得好。", **titles)
