"""bytecode: a function's bytecode before Dynamo, and what Dynamo made of it after.

Before ``torch.compile`` has run, :func:`bytecode` shows the function's source next to its
bytecode (``dis``). Once a compiled call has happened, it also shows, for every cache
entry Dynamo keeps, the guards, the transformed bytecode and depyf's decompiled Python of
it, and the same for each resume function Dynamo generated at a graph break. Where depyf
cannot decompile something, that section keeps the ``dis`` output and says why.

Generated names carry process-wide counters and uuids (``__compiled_fn_15_<uuid>``); they
are renumbered in order of appearance so the output is the same on every run.

>>> def f(x):
...     return x + 1
>>> "BINARY_OP" in bytecode(f).to_text()
True
"""
from __future__ import annotations

import dis
import inspect
import io
import os
import re
import sys
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from ._depyf import decompile
from .._lang import only
from ._dynamo_cache import guard_lines, target_function, walk
from .._text import Renumber, fold, one_line_error, scrub
from .._render import Viewable, esc

__all__ = ["Bytecode", "Section", "bytecode"]

_PY = f"Python {sys.version_info.major}.{sys.version_info.minor}"
GUARD_LINES = 120  # guards per section shown by default; full=True shows all
CODE_LINES = 200  # lines of each Python or bytecode view shown by default
_FULL = ("to_text(full=True) or to_html(full=True) shows all",
         "to_text(full=True) 或 to_html(full=True) 显示全部")
# view titles, English then 中文
_TITLES = {"source": "源码", "bytecode": "字节码", "decompiled by depyf": "depyf 反编译结果",
           "transformed bytecode": "变换后的字节码"}
_STYLE = ("display:flex;gap:1em;align-items:flex-start", "flex:1;min-width:0",
          "overflow:auto;font-size:85%;margin:0")


@dataclass
class Section:
    """Two views of one code object, side by side in HTML (``left`` is Python)."""

    title: str
    left_title: str
    left: str
    right_title: str
    right: str
    guards: list[str] = field(default_factory=list)
    note: str = ""  # one line: why a Python view is missing (depyf failed, no source)


class Bytecode(Viewable):
    """The sections :func:`bytecode` found, rendered as text or HTML."""

    def __init__(self, name: str, location: str, sections: list[Section], entries: list[int]) -> None:
        self.name = name
        self.location = location
        self.sections = sections
        self.entries = entries  # cache entries per frame: the function's, then each resume function's

    @property
    def compiled(self) -> bool:
        """Whether Dynamo holds any compiled version of the function."""
        return bool(self.entries and self.entries[0])

    @property
    def headline(self) -> str:
        where = f"{self.name} ({self.location}), {_PY}"
        if only("en", "zh") == "zh":
            head = f"{self.name}（{self.location}，{_PY}）的字节码"
            if not self.compiled:
                return f"{head}：还没有编译；调用一次 torch.compile(f) 后可以看到 Dynamo 的版本"
            text = f"{head}：{self.entries[0]} 个缓存条目"
            if len(self.entries) > 1:
                text += f"；{len(self.entries) - 1} 个恢复函数，共 {sum(self.entries[1:])} 个缓存条目"
            return text
        if not self.compiled:
            return (f"bytecode of {where}: not compiled yet; call torch.compile(f) once "
                    "to see Dynamo's version")
        text = f"bytecode of {where}: {_count(self.entries[0], 'cache entry', 'cache entries')}"
        if len(self.entries) > 1:
            text += (f"; {_count(len(self.entries) - 1, 'resume function')} with "
                     f"{_count(sum(self.entries[1:]), 'cache entry', 'cache entries')}")
        return text

    def to_text(self, full: bool = False) -> str:
        """Each section as titled blocks: guards, Python, bytecode.

        By default a section shows its first ``GUARD_LINES`` guards (after a count by
        kind) and the first ``CODE_LINES`` lines of each view; ``full=True`` shows all.
        """
        out = [self.headline]
        colon = only(": ", "：")
        for s in self.sections:
            title = _title(s.title)
            if s.guards:
                out += ["", f"== {title}{colon}{only('guards', '守卫')} ({len(s.guards)}{_kinds(s.guards, full)}) ==",
                        *_fold(s.guards, GUARD_LINES, full)]
            out += ["", f"== {title}{colon}{_view(s.left_title)} ==",
                    *_fold(s.left.rstrip("\n").split("\n"), CODE_LINES, full)]
            out += ["", f"== {title}{colon}{_view(s.right_title)} ==",
                    *_fold(s.right.rstrip("\n").split("\n"), CODE_LINES, full)]
        return "\n".join(line.rstrip() for line in "\n".join(out).splitlines()) + "\n"

    def to_html(self, full: bool = False) -> str:
        """Sections with Python and bytecode side by side; guards collapsed. Folded like
        :meth:`to_text`; ``full=True`` shows all."""
        row, col, pre = _STYLE
        parts = ['<div class="fxcourse-bytecode">', f"<p><b>{esc(self.headline)}</b></p>"]
        for s in self.sections:
            parts.append(f"<h4>{esc(_title(s.title))}</h4>")
            if s.guards:
                shown = _fold(s.guards, GUARD_LINES, full)
                parts.append(f"<details><summary>{len(s.guards)}{only(' guards', ' 个守卫')}"
                             f"{esc(_kinds(s.guards, full))}</summary>"
                             f'<pre style="{pre}">{esc(chr(10).join(shown))}</pre></details>')
            parts.append(f'<div style="{row}">')
            for title, body in ((s.left_title, s.left), (s.right_title, s.right)):
                shown = "\n".join(_fold(body.rstrip("\n").split("\n"), CODE_LINES, full))
                parts.append(f'<div style="{col}"><div><i>{esc(_view(title))}</i></div>'
                             f'<pre style="{pre}">{esc(shown)}</pre></div>')
            parts.append("</div>")
        parts.append("</div>")
        return "".join(parts)


def bytecode(fn: Callable[..., Any]) -> Bytecode:
    """Source and bytecode of ``fn``; after a compiled call, Dynamo's versions too.

    Introduced in course/06_dynamo_bytecode.ipynb. Accepts a function, a method, an
    ``nn.Module`` (its ``forward``) or what ``torch.compile`` returned for one of them.

    >>> import torch
    >>> from fxcourse import zoo
    >>> torch._dynamo.reset()
    >>> model, args = zoo.example("mlp")
    >>> bytecode(model).compiled
    False
    >>> _ = torch.compile(model, backend="eager")(*args)
    >>> view = bytecode(model)
    >>> view.compiled, view.sections[1].title, view.sections[1].left_title
    (True, 'MLP.forward, cache entry 0', 'decompiled by depyf')
    """
    func = target_function(fn, "bytecode")
    renumber = Renumber()
    location = f"{os.path.basename(func.__code__.co_filename)}:{func.__code__.co_firstlineno}"
    sections = [Section(func.__qualname__, "source", _source(func), "bytecode", _dis(func.__code__))]
    frames = walk(func)
    for i, frame in enumerate(frames):
        if i > 0:  # a resume function: Dynamo wrote it, so depyf is the only Python view
            left, note = _python(frame.code)
            sections.append(Section(f"resume function {frame.name} ({frame.global_name})",
                                    "decompiled by depyf", left, "bytecode", _dis(frame.code), note=note))
        for k, entry in enumerate(frame.entries):
            left, note = _python(entry.code)
            sections.append(Section(f"{func.__qualname__ if i == 0 else frame.name}, cache entry {k}",
                                    "decompiled by depyf", left, "transformed bytecode",
                                    _dis(entry.code), guards=guard_lines(entry.guard_manager), note=note))
    for s in sections:  # one pass in display order, so numbering follows the reader
        s.guards = [renumber(g) for g in s.guards]
        s.left, s.right = renumber(s.left), renumber(s.right)
        s.title = renumber(s.title)
    return Bytecode(func.__qualname__, location, sections, [len(f.entries) for f in frames])


def _source(func: types.FunctionType) -> str:
    try:
        return textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        return only(f"(source not available: {one_line_error(exc)})\n", f"（没有源码：{one_line_error(exc)}）\n")


def _dis(code: types.CodeType) -> str:
    buf = io.StringIO()
    dis.dis(code, file=buf)
    return scrub(buf.getvalue())


def _python(code: types.CodeType) -> tuple[str, str]:
    """depyf's Python for ``code``, or one line saying why not and where to look."""
    source, reason = decompile(code)
    if source is not None:
        return scrub(source), ""
    note = reason + only("; read the bytecode instead", "；请改读字节码")
    return f"# {note}\n", note


def _fold(lines: list[str], limit: int, full: bool) -> list[str]:
    return fold(lines, None if full else limit, only(*_FULL))


def _view(title: str) -> str:
    """A view's title (source, bytecode, ...) in the reader's language."""
    return only(title, _TITLES.get(title, title))


_SECTION = re.compile(r"^resume function (\S+) \((.*)\)$|^(.*), cache entry (\d+)$")


def _title(title: str) -> str:
    """A section's title in the reader's language (the data keeps the English one).

    >>> import os; os.environ["FXCOURSE_LANG"] = "zh"
    >>> _title("f, cache entry 0"), _title("resume function __resume_at_20_0 (__resume_at_20_0)")
    ('f，缓存条目 0', '恢复函数 __resume_at_20_0（__resume_at_20_0）')
    >>> del os.environ["FXCOURSE_LANG"]
    """
    m = _SECTION.match(title)
    if m is None or only("en", "zh") == "en":
        return title
    if m.group(1) is not None:
        return f"恢复函数 {m.group(1)}（{m.group(2)}）"
    return f"{m.group(3)}，缓存条目 {m.group(4)}"


def _kinds(guards: list[str], full: bool) -> str:
    """``: 4 TENSOR_MATCH, 2 TYPE_MATCH``: guard lines (``KIND: check``) counted by kind,
    when the list is folded ("" otherwise)."""
    if full or len(guards) <= GUARD_LINES:
        return ""
    counts: dict[str, int] = {}
    for g in guards:
        kind = g.split(":", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return ": " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one}" if n == 1 else f"{n} {many or one + 's'}"
