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

import contextlib
import importlib
import io
import os
import pkgutil
import signal
import sysconfig
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..errors import FxCourseError
from .._lang import Bilingual, current, pick, text
from .._render import Viewable, esc
from .._text import first_line, one_line_error, scrub

__all__ = ["check", "hint", "CheckResult", "HintResult", "Wrong", "task", "task_ids"]

#: Seconds an answer may take before :func:`check` reports it as too slow.
TIME_LIMIT_S = 60.0
#: Characters of what an answer printed that a result shows.
PRINTED_LIMIT = 2000

STATUSES = ("passed", "not_implemented", "wrong", "raised", "too_slow", "unknown_task")


class Wrong(Exception):
    """Raised by a checker when the answer is wrong; carries what a learner needs to see."""

    def __init__(self, en: str, zh: str, *, tried: Bilingual = "", expected: Bilingual = "",
                 got: Bilingual = "") -> None:
        """``tried``/``expected``/``got`` are a plain string when the value reads the same in
        every language (a repr, a number, code) and an ``(English, 中文)`` pair when it is words."""
        super().__init__(en)
        self.en, self.zh = en, zh
        self.tried, self.expected, self.got = tried, expected, got


@contextlib.contextmanager
def trying(tried: Bilingual) -> Iterator[None]:
    """Run the learner's code on the input ``tried`` describes: if it raises, the result of the
    check names that input, so a learner sees which of many calls broke."""
    try:
        yield
    except Exception as exc:
        with contextlib.suppress(Exception):  # an exception that takes no attribute is still reported
            exc._fxcourse_tried = tried  # type: ignore[attr-defined]
        raise


@dataclass(frozen=True)
class Task:
    id: str
    title_en: str
    title_zh: str
    checker: Callable[[Any], None]
    hints: tuple[tuple[str, str], ...] = ()
    time_limit: float | None = None


_TASKS: dict[str, Task] = {}
#: The last verdict of each task checked in this process (``fxcourse.progress`` reads it).
_SESSION: dict[str, str] = {}


def task(task_id: str, title_en: str, title_zh: str, *, hints: Sequence[tuple[str, str]] = (),
         time_limit: float | None = None) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Register ``checker`` as the checker of ``task_id``.

    ``hints`` is the task's hint ladder, (English, 中文) pairs from a nudge to the concept and
    the lecture section that teaches it, never the code; :func:`hint` hands them out one at a
    time. ``time_limit`` overrides :data:`TIME_LIMIT_S` for tasks that compile.
    """

    def register(checker: Callable[[Any], None]) -> Callable[[Any], None]:
        _TASKS[task_id] = Task(task_id, title_en, title_zh, checker, tuple(hints), time_limit)
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
    "too_slow": ("too slow", "运行时间过长"),
    "unknown_task": ("unknown task", "未知的练习编号"),
}
_COLON = {"en": ": ", "zh": "："}
_COLOUR = {"passed": "#2e7d32", "not_implemented": "#1565c0", "wrong": "#c62828", "raised": "#c62828",
           "too_slow": "#c62828", "unknown_task": "#6d4c41"}
_ICON = {"passed": "✅", "not_implemented": "✏️", "wrong": "❌", "raised": "💥", "too_slow": "⏳",
         "unknown_task": "❓"}


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
    tried: Bilingual = ""
    expected: Bilingual = ""
    got: Bilingual = ""
    printed: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def __bool__(self) -> bool:
        return self.passed

    def _details(self) -> list[tuple[str, str]]:
        """(label, value) rows in the reader's language (see :mod:`fxcourse._lang`)."""
        # the input tried may list a whole made-up table: it gets room for it
        rows = [(("input tried", "尝试的输入"), self.tried, 700), (("expected", "期望"), self.expected, 300),
                (("got", "实际得到"), self.got, 300)]
        return [(text(label), _clean(text(v), limit)) for label, v, limit in rows if v]

    def _headlines(self) -> list[tuple[str, str, str]]:
        """(lang, head, sentence) for each language the reader reads."""
        head_en, head_zh = _HEAD[self.status]
        lang = current()
        out = []
        if lang in ("en", "both"):
            out.append(("en", head_en, self.en))
        if lang in ("zh", "both"):
            out.append(("zh", head_zh, self.zh))
        return out

    def to_text(self) -> str:
        lines = [f"[{self.task}] {head}{_COLON[lang]}{sentence}" for lang, head, sentence in self._headlines()]
        colon = "：" if current() == "zh" else ": "
        for label, value in self._details():
            lines.append(f"  {label}{colon}{value}")
        if self.printed:
            lines.append("  " + pick("your code printed", "你的代码输出了") + colon.rstrip())
            lines.extend("    " + line for line in self.printed.splitlines())
        return "\n".join(lines)

    def to_html(self) -> str:
        title = ""
        if self.title_en:
            title = " — " + esc(pick(self.title_en, self.title_zh or self.title_en))
        details = "".join(
            f"<tr><th>{esc(label)}</th><td><code>{esc(v)}</code></td></tr>" for label, v in self._details()
        )
        table = f'<table class="fxcourse-check-details">{details}</table>' if details else ""
        if self.printed:
            table += (f"<div>{esc(pick('your code printed:', '你的代码输出了：'))}</div>"
                      f'<pre class="fxcourse-check-printed">{esc(self.printed)}</pre>')
        heads = "".join(
            f'<div lang="{lang}"><b>{esc(head)}</b>{_COLON[lang]}{esc(sentence)}</div>'
            for lang, head, sentence in self._headlines()
        )
        return (
            f'<div class="fxcourse-check fxcourse-check-{self.status}" data-task="{esc(self.task)}" '
            f'style="border-left:4px solid {_COLOUR[self.status]};padding:4px 10px;margin:2px 0">'
            f"<div><b>{_ICON[self.status]} {esc(self.task)}{title}</b></div>{heads}{table}</div>"
        )

    def __repr__(self) -> str:
        return f"CheckResult(task={self.task!r}, status={self.status!r})"


def _short_exception(exc: BaseException) -> tuple[str, str]:
    """``TypeError: message (in fn, line N)`` — the learner's own innermost frame if any — and
    its 中文 (``…（位于 fn，第 N 行）``; the exception and its message stay as Python wrote them).

    An exception whose message itself cannot be turned into text is still described.
    """
    try:
        text = zh = one_line_error(exc)
        if isinstance(exc, FxCourseError):  # the course's own error carries each language: show each
            name = type(exc).__name__
            text, zh = f"{name}: {first_line(exc.en, 220)}", f"{name}: {first_line(exc.zh, 220)}"
    except Exception:
        name = type(exc).__name__
        text, zh = f"{name} (its message could not be shown)", f"{name}（其报错信息无法显示）"
    own = _own_frames(traceback.extract_tb(exc.__traceback__))
    if own:  # the place goes inside the sentence: "… is wrong (in f, line 3)", not "… is wrong. (in f, line 3)"
        text = text.rstrip().removesuffix("。").removesuffix(".") + f" (in {own[-1].name}, line {own[-1].lineno})"
        zh = zh.rstrip().removesuffix("。").removesuffix(".") + f"（位于 {own[-1].name}，第 {own[-1].lineno} 行）"
    return text, zh


def _ended(text: str, stop: str) -> str:
    """``text`` as a sentence: ``stop`` added unless it already ends with a full stop or mark."""
    return text if text.rstrip().endswith((".", "。", "!", "！", "?", "？")) else text + stop


_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PYTHON = sysconfig.get_paths()["stdlib"]


def _own_frames(frames: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """Frames of the learner's code: not the course library, Python or an installed package."""
    return [f for f in frames if not f.filename.startswith((_LIBRARY, _PYTHON)) and "site-packages" not in f.filename]


def _is_stub(exc: NotImplementedError) -> bool:
    """The lab stub (or the learner's own ``raise NotImplementedError``), not one that torch
    raises for an operation it does not support."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = _own_frames(frames)
    if not own or frames[-1] is not own[-1]:
        return False
    line = (own[-1].line or "").strip()
    if line:
        return line.startswith("raise NotImplementedError")
    message = str(exc)
    return not message or "replace this line" in message


class _TooSlow(BaseException):
    """Raised into an answer that ran past its time limit (a BaseException, so the answer's own
    ``except Exception`` cannot swallow it)."""


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds`` (main thread on POSIX only; elsewhere no limit)."""
    usable = (seconds is not None and seconds > 0 and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Capped(io.StringIO):
    """Collects what an answer prints, keeping at most ``limit`` characters."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit, self.dropped = limit, 0

    def write(self, text: str) -> int:
        room = self.limit - self.tell()
        if room > 0:
            super().write(text[:room])
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def shown(self) -> str:
        text = scrub(self.getvalue())
        if self.dropped:
            text += "\n… " + pick(f"{self.dropped} more characters not shown", f"另有 {self.dropped} 个字符未显示")
        return text


def _unknown(task_id: Any) -> CheckResult:
    known = ", ".join(sorted(_TASKS))
    shown = scrub(repr(task_id))[:80]
    return CheckResult(
        shown, "unknown_task",
        f"{shown} is not a task id; known ids: {known}. Check the spelling in check(...).",
        f"{shown} 不是练习编号；已有编号：{known}。请检查 check(...) 中的拼写。",
    )


def _lookup(task_id: Any) -> Task | None:
    _load_all()
    return _TASKS.get(task_id) if isinstance(task_id, str) else None


def check(task_id: str, answer: Any) -> CheckResult:
    """Check ``answer`` for lab task ``task_id``; never raises (only Ctrl-C gets through).

    Returns a :class:`CheckResult` that notebooks display in both languages. The learner's
    process is left as it was (default dtype, grad mode, random-number states, …); an answer
    that runs longer than the task's time limit is stopped and reported as too slow; what the
    answer printed is shown, cut to :data:`PRINTED_LIMIT` characters.
    """
    from .._caller_state import process_kept  # imports torch: only when a task is checked

    spec = _lookup(task_id)
    if spec is None:
        return _unknown(task_id)
    titles = {"title_en": spec.title_en, "title_zh": spec.title_zh}
    limit = spec.time_limit if spec.time_limit is not None else TIME_LIMIT_S
    printed = _Capped(PRINTED_LIMIT)
    result: CheckResult
    try:
        with process_kept(), contextlib.redirect_stdout(printed), _time_limit(limit):
            spec.checker(answer)
    except KeyboardInterrupt:
        raise
    except _TooSlow:
        result = CheckResult(
            task_id, "too_slow",
            f"the check was stopped after {limit:g} s. Look for a loop that never ends or work repeated "
            "far more often than needed, then run the cell again.",
            f"检查在 {limit:g} 秒后被停止。请查找永不结束的循环或远超需要的重复计算，然后重新运行本单元。",
            **titles)
    except Wrong as wrong:
        result = CheckResult(task_id, "wrong", wrong.en, wrong.zh, tried=wrong.tried,
                             expected=wrong.expected, got=wrong.got, **titles)
    except NotImplementedError as exc:
        if _is_stub(exc):
            result = CheckResult(
                task_id, "not_implemented",
                "replace the `raise NotImplementedError(...)` line with your code, then run this cell again.",
                "把 `raise NotImplementedError(...)` 这一行换成你的代码，然后重新运行本单元。",
                **titles)
        else:
            result = _raised(task_id, exc, titles)
    except SystemExit as exc:
        result = CheckResult(
            task_id, "raised",
            f"your code called exit() / sys.exit({exc.code!r}); in a notebook, return a value instead.",
            f"你的代码调用了 exit() / sys.exit({exc.code!r})；在笔记本中请改为返回一个值。",
            **titles)
    except BaseException as exc:  # the learner's code raised: report it, don't re-raise
        result = _raised(task_id, exc, titles)
    else:
        result = CheckResult(task_id, "passed", "well done.", "做得好。", **titles)
    if printed.tell() or printed.dropped:
        result = CheckResult(**{**result.__dict__, "printed": printed.shown()})
    _SESSION[task_id] = result.status
    return result


def _raised(task_id: str, exc: BaseException, titles: dict[str, str]) -> CheckResult:
    short, short_zh = _short_exception(exc)
    return CheckResult(
        task_id, "raised",
        f"{_ended(short, '.')} Read the message, fix the code, and run the cell again.",
        f"{_ended(short_zh, '。')}请阅读报错信息，修改代码后重新运行本单元。",
        tried=getattr(exc, "_fxcourse_tried", ""),
        **titles,
    )


# -- hints -------------------------------------------------------------------------------------

_HINTS_GIVEN: dict[str, int] = {}


@dataclass(frozen=True)
class HintResult(Viewable):
    """One step of a task's hint ladder, in the reader's language (see :mod:`fxcourse._lang`)."""

    task: str
    level: int
    count: int
    en: str
    zh: str

    def _sentences(self) -> list[tuple[str, str]]:
        lang = current()
        return [(code, words) for code, words in (("en", self.en), ("zh", self.zh)) if lang in (code, "both")]

    def to_text(self) -> str:
        if not self.count:
            return "\n".join(f"[{self.task}] {words}" for _, words in self._sentences())
        head = f"[{self.task}] " + pick(f"hint {self.level}/{self.count}", f"提示 {self.level}/{self.count}")
        return head + "".join(f"\n  {words}" for _, words in self._sentences())

    def to_html(self) -> str:
        head = (pick(f"hint {self.level}/{self.count}", f"提示 {self.level}/{self.count}") if self.count
                else pick("no hint", "无提示"))
        body = "".join(f'<div lang="{code}">{esc(words)}</div>' for code, words in self._sentences())
        return (f'<div class="fxcourse-hint" data-task="{esc(self.task)}" '
                f'style="border-left:4px solid #f9a825;padding:4px 10px;margin:2px 0">'
                f"<div><b>💡 {esc(self.task)} — {esc(head)}</b></div>{body}</div>")

    def __repr__(self) -> str:
        return f"HintResult(task={self.task!r}, level={self.level})"


def hint(task_id: str, level: int | None = None) -> HintResult:
    """The next hint for ``task_id`` (or hint number ``level``, counted from 1); never raises.

    Hints go from a nudge to the concept and the lecture section that teaches it; none of
    them is the code. Each call without ``level`` moves one step up the ladder and stays on
    the last step.

    >>> from fxcourse import hint
    >>> print(hint("lab00.1", level=1).to_text().splitlines()[0])
    [lab00.1] hint 1/3 / 提示 1/3
    """
    spec = _lookup(task_id)
    if spec is None:
        unknown = _unknown(task_id)
        return HintResult(unknown.task, 0, 0, unknown.en, unknown.zh)
    if not spec.hints:
        return HintResult(task_id, 0, 0, "this task has no hints; reread its lecture section.",
                          "这道练习没有提示；请重读对应的讲义章节。")
    count = len(spec.hints)
    if level is None:
        level = min(_HINTS_GIVEN.get(task_id, 0) + 1, count)
    elif not isinstance(level, int) or isinstance(level, bool) or not 1 <= level <= count:
        return HintResult(task_id, 0, 0, f"level={level!r}: pass a whole number from 1 to {count}, or none "
                          "for the next hint.", f"level={level!r}：请传入 1 到 {count} 之间的整数，或不传以获得下一条提示。")
    _HINTS_GIVEN[task_id] = max(_HINTS_GIVEN.get(task_id, 0), level)
    en, zh = spec.hints[level - 1]
    return HintResult(task_id, level, count, en, zh)
