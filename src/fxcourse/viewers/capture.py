"""capture: run a function under Dynamo with a recording backend and show what it saw.

The recording backend keeps every fx graph Dynamo hands to the backend and the guards
Dynamo exported, then passes the graph on to the real backend (``"eager"`` by default), so
the call returns the real result. Graph breaks come from Dynamo's own graph-break log
(the ``graph_breaks`` logging artifact, what ``TORCH_LOGS=graph_breaks`` prints), so a
break with no tensor op before it (a forward hook, an unsupported first statement, a
break inside an inlined helper) is counted too; ``torch._dynamo.explain`` misses those.

The caller's objects are left as they were: the function runs on copies of the tensors
passed in, and a module's buffers and attributes (the train/eval flag, values cached on a
first call) are put back after each call.

>>> from fxcourse import zoo
>>> model, args = zoo.example("mlp")
>>> cap = capture(model, *args)
>>> cap.graph_count, cap.break_count, cap.op_count
(1, 0, 3)
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
from typing import Any, Callable

import torch

from .._caller_state import fresh, process_kept, untouched
from ._dynamo_log import LoggedBreak, Recording, describe_skip, recording
from .._lang import only
from .._render import Table, Viewable, esc, table_style
from .._text import first_line, fold, one_line_error, quiet, scrub
from ..errors import FxCourseError, describe, need_flag

__all__ = ["Capture", "CapturedGraph", "GraphBreak", "Recompile", "capture"]

_OPS_NOTE = ("ops: call_function nodes, counted as torch._dynamo.explain counts them "
             "(method calls such as y.sum() are call_method nodes)",
             "算子数：call_function 节点，与 torch._dynamo.explain 的计数方式相同"
             "（y.sum() 这样的方法调用是 call_method 节点）")
_STYLE = table_style("fxcourse-capture-table", {})
GUARD_LINES = 120  # guards shown by default in HTML; to_html(full=True) shows all
CODE_LINES = 120  # lines of each graph's code shown by default; full=True shows all
_FULL = ("to_text(full=True) or to_html(full=True) shows all",
         "to_text(full=True) 或 to_html(full=True) 显示全部")
_NO_CHECKS = ("no check of its own: the GLOBAL_STATE guard covers it",
              "本身不做检查：由 GLOBAL_STATE 守卫负责")
_BRANCH = ("Data-dependent branching: a Python if or while on a tensor value",
           "数据相关的分支：Python 的 if 或 while 取决于张量的值")
_COLUMNS = (("graph", "计算图"), ("call", "第几次调用"), ("ops", "算子数"), ("op names", "算子"),
            ("ends with", "结束于"))
_ENDED = {"graph break": "图中断", "return": "返回"}


@dataclasses.dataclass
class CapturedGraph:
    """One fx graph Dynamo handed to the backend."""

    index: int
    gm: torch.fx.GraphModule
    example_inputs: list[Any]
    call: int = 1  # 1 for the capture, 2 for the first call_again, ...
    ended_by: str = "return"  # "graph break" or "return"

    @property
    def code(self) -> str:
        """The graph's Python code (``gm.code``) with file paths cut to basenames."""
        lines = [line.rstrip() for line in scrub(self.gm.code).splitlines()]
        return "\n".join(lines).strip("\n") + "\n"

    @property
    def ops(self) -> list[str]:
        """Names of the ``call_function`` targets: the ops ``explain`` counts."""
        return [_op_name(n.target) for n in self.gm.graph.nodes if n.op == "call_function"]


@dataclasses.dataclass
class GraphBreak:
    """Where and why Dynamo split the function (one entry of Dynamo's graph-break log)."""

    reason: str
    location: str  # "file.py:LINE"
    function: str
    line: str  # the user's source line
    explanation: str = ""
    effect: str = ""  # set when Dynamo could not resume and ran the rest of the frame eagerly
    repeat_of: int = 0  # 1-based number of the earlier break this one repeats (0: none)
    frame: str = ""  # the function whose graph this break split, when it is not ``function``
    split_at: str = ""  # where that function's graph was split: "file.py:LINE: source"
    callee: str = ""  # the function called there, which Dynamo was inlining


@dataclasses.dataclass
class Recompile:
    """One recompilation: the call that triggered it and every guard that failed.

    ``failures`` has one line per failed guard, prefixed by the cache entry it belongs to
    (``"0/1: tensor 'x' size mismatch ..."``): first the guard Dynamo reported for each
    entry (Dynamo stops at an entry's first failing guard), then the entry's other
    failing guards, found by checking each of its guards. ``reason`` is all of them,
    joined with ``"; "``.
    """

    call: int
    function: str
    reason: str
    failures: list[str] = dataclasses.field(default_factory=list)


class _Recorder:
    """The recording backend plus the two Dynamo hooks (guard export, guard failure)."""

    def __init__(self, backend: Callable[..., Any]) -> None:
        self.backend = backend
        self.call = 1
        self.graphs: list[CapturedGraph] = []
        self.guards: list[Any] = []  # torch._guards.Guard, first call
        self.failures: list[Recompile] = []
        self.log = Recording()

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        reason = getattr(gm, "compile_subgraph_reason", None)
        broke = bool(getattr(reason, "graph_break", False))
        self.graphs.append(CapturedGraph(len(self.graphs), gm, example_inputs, self.call,
                                         "graph break" if broke else "return"))
        return self.backend(gm, example_inputs)

    def export_guards(self, guards: Any) -> None:
        if self.call == 1:
            self.guards.extend(guards)  # copy now: Dynamo clears the set afterwards

    def guard_failed(self, failure: Any) -> None:
        """Dynamo calls this once per failed cache entry; entries of one recompile are grouped."""
        text = _tidy(str(failure.reason))
        entry = text.split(":", 1)[0]
        name = failure.orig_code.co_name
        last = self.failures[-1] if self.failures else None
        if (last is None or last.call != self.call or last.function != name
                or any(f.split(":", 1)[0] == entry for f in last.failures)):
            last = Recompile(self.call, name, "")
            self.failures.append(last)
        last.failures.append(text)
        last.failures += [f"{entry}: {more}" for more in _more_failures(text)]
        last.reason = "; ".join(re.sub(r"^\s*\d+/\d+: ", "", f) for f in last.failures)


def _tidy(reason: str) -> str:
    """``0/1: n == 2``: Dynamo's reason without the source comment it appends."""
    return first_line(reason.split("  #", 1)[0], limit=300)


def _more_failures(first: str) -> list[str]:
    """The entry's other failing guards, beyond the first one Dynamo reported.

    Dynamo calls guard_fail_fn from the function that holds the entry's guard manager
    and the frame's locals; read them from there (nothing more is said if that moved).
    """
    import sys

    from ._dynamo_cache import failed_guards

    caller = sys._getframe(2)
    for _ in range(4):
        if caller is None:
            return []
        names = caller.f_locals
        if "guard_manager" in names and "f_locals" in names:
            break
        caller = caller.f_back
    else:
        return []
    said = first.split(": ", 1)[-1]
    more = []
    for line in failed_guards(names["guard_manager"], names["f_locals"]):
        tensor = re.match(r"tensor '[^']*'", line)
        if line == said or (tensor is not None and said.startswith(tensor.group(0))):
            continue
        more.append(line)
    return more


class Capture(Viewable):
    """What Dynamo captured from one call: graphs, breaks, guards, recompilations."""

    def __init__(self, fn: Any, compiled: Callable[..., Any], recorder: _Recorder,
                 backend_name: str, result: Any, notes: list[str]) -> None:
        self.fn = fn
        self.result = result
        self.notes = notes  # warnings and log lines recorded instead of printed
        self.backend_name = backend_name
        self._compiled = compiled
        self._rec = recorder
        self._calls = 1

    # -- data -------------------------------------------------------------------------
    @property
    def graphs(self) -> list[CapturedGraph]:
        """Every graph, in compile order (``.call`` says which call compiled it)."""
        return list(self._rec.graphs)

    @property
    def breaks(self) -> list[GraphBreak]:
        """Every graph break Dynamo logged during the first call, in order.

        A break inside a function Dynamo was inlining is taken twice (or once per enclosing
        frame): first in the caller, whose graph is split at the call, then again when the
        callee runs as a frame of its own. Dynamo logs each with the same user stack; the
        later ones carry ``repeat_of``, and each says which function's graph it split.
        """
        return _with_repeats([b for b in self._rec.log.breaks if b.call == 1])

    @property
    def guards(self) -> list[str]:
        """The first call's guard requests, one line each (``source: KIND``).

        Requests that install no check of their own (``GRAD_MODE``,
        ``DETERMINISTIC_ALGORITHMS``: the ``GLOBAL_STATE`` guard checks them) are marked.
        """
        lines = [_guard_line(g) for g in self._rec.guards]
        return list(dict.fromkeys(lines))

    @property
    def recompiles(self) -> list[Recompile]:
        """One record per recompilation triggered by :meth:`call_again`."""
        return list(self._rec.failures)

    @property
    def graph_count(self) -> int:
        """Graphs compiled by the first call (``explain``'s ``graph_count``)."""
        return sum(1 for g in self._rec.graphs if g.call == 1)

    @property
    def break_count(self) -> int:
        """Graph breaks Dynamo took during the first call (its graph-break log's count)."""
        return len(self.breaks)

    @property
    def op_count(self) -> int:
        """``call_function`` nodes in the first call's graphs (``explain``'s ``op_count``)."""
        return sum(len(g.ops) for g in self._rec.graphs if g.call == 1)

    @property
    def skip_reason(self) -> str:
        """Why Dynamo made no graph and took no break ("" when it made one)."""
        if self.graph_count or self.break_count:
            return ""
        code = getattr(getattr(self.fn, "forward", self.fn), "__code__", None)
        return describe_skip(self._rec.log.skips, code, _name(self.fn))

    @property
    def transformed_code(self) -> list[tuple[str, Any]]:
        """``(function name, code object)`` for each cache entry Dynamo holds now."""
        from ._dynamo_cache import target_function, walk

        frames = walk(target_function(self.fn, "Capture.transformed_code"))
        return [(f.name, entry.code) for f in frames for entry in f.entries]

    def call_again(self, *args: Any, **kwargs: Any) -> Capture:
        """Call the compiled function again (no reset); record recompilations.

        Returns this capture, with ``.result`` set to the new output.
        """
        self._calls += 1
        self._rec.call = self._rec.log.call = self._calls
        self.result = _run(self._compiled, self.fn, args, kwargs, self.notes, self._rec, self.backend_name)
        return self

    # -- views ------------------------------------------------------------------------
    def _headline(self) -> str:
        calls = f", {self._calls} calls" if self._calls > 1 else ""
        guards = self.guards
        covered = sum(1 for g in guards if any(words in g for words in _NO_CHECKS))
        extra = f" (+{covered} covered by the global-state guard)" if covered else ""
        return only(f"capture of {_name(self.fn)} (backend {self.backend_name}{calls}): "
                    f"{_plural(self.graph_count, 'graph')}, {_plural(self.break_count, 'graph break')}, "
                    f"{_plural(self.op_count, 'op')}, {_plural(len(guards) - covered, 'guard')}{extra}",
                    f"capture {_name(self.fn)}（后端 {self.backend_name}"
                    f"{f'，调用 {self._calls} 次' if self._calls > 1 else ''}）：{self.graph_count} 个计算图，"
                    f"{self.break_count} 处图中断，{self.op_count} 个算子，{len(guards) - covered} 个守卫"
                    f"{f'（另有 {covered} 个由全局状态守卫负责）' if covered else ''}")

    def _table(self) -> Table:
        rows = [[str(g.index), str(g.call), str(len(g.ops)), " ".join(g.ops) or "-",
                 only(g.ended_by, _ENDED.get(g.ended_by, g.ended_by))]
                for g in self._rec.graphs]
        return Table([en for en, _ in _COLUMNS], rows, css_class="fxcourse-capture-table",
                     labels=[only(en, zh) for en, zh in _COLUMNS])

    def to_text(self, width: int = 100, full: bool = False) -> str:
        """Summary, breaks, recompilations, then each graph's code.

        Long graphs show their first ``CODE_LINES`` lines; ``full=True`` shows everything.
        """
        out = [self._headline(), ""]
        if self.skip_reason:
            out += [self.skip_reason, ""]
        if self.breaks:
            out.append(only("graph breaks:", "图中断："))
            for i, b in enumerate(self.breaks, 1):
                out.append(only(f"  {i}. {b.location} in {b.function}: {b.line}",
                                f"  {i}. {b.location}，{b.function} 中：{b.line}"))
                if b.repeat_of:
                    out.append(f"     {_repeat_note(b)}")
                else:
                    out.append(f"     {b.reason}")
                for more in (b.effect,) if b.repeat_of else (b.explanation, _inlined_note(b), b.effect):
                    if more:
                        out.append(f"     {more}")
            out.append("")
        if self._rec.graphs:
            out += [self._table().to_text(width=width), only(*_OPS_NOTE), ""]
        if self.recompiles:
            out.append(only("recompilations:", "重新编译："))
            for r in self.recompiles:
                out.append(only(f"  call {r.call}: {r.function}:", f"  第 {r.call} 次调用：{r.function}：")
                           + ("" if len(r.failures) > 1 else f" {r.reason}"))
                if len(r.failures) > 1:
                    out += [f"    - {f}" for f in r.failures]
            out.append("")
        for g in self._rec.graphs:
            title = only(f"graph {g.index}", f"计算图 {g.index}")
            out += [title, "-" * (len(title) + sum(1 for ch in title if ord(ch) > 0x2e80)),
                    *self._code_lines(g, full), ""]
        return "\n".join(out).rstrip("\n") + "\n"

    def _code_lines(self, g: CapturedGraph, full: bool) -> list[str]:
        return fold(g.code.rstrip("\n").splitlines(), None if full else CODE_LINES, only(*_FULL))

    def to_html(self, full: bool = False) -> str:
        """The same as :meth:`to_text`, as HTML, guards in a collapsed block.

        By default the guards are summarised by kind and the first ``GUARD_LINES`` listed,
        and long graphs show their first ``CODE_LINES`` lines; ``full=True`` shows all.
        """
        parts = ['<div class="fxcourse-capture">', f"<p><b>{esc(self._headline())}</b></p>"]
        if self.skip_reason:
            parts.append(f"<p>{esc(self.skip_reason)}</p>")
        if self.breaks:
            in_, colon = only(" in ", "，"), only(": ", " 中：")
            items = "".join(
                f"<li><code>{esc(b.location)}</code>{in_}<code>{esc(b.function)}</code>{colon}"
                f"<code>{esc(b.line)}</code><br>{esc(_repeat_note(b) if b.repeat_of else b.reason)}"
                + "".join(f"<br><small>{esc(m)}</small>"
                          for m in ((b.effect,) if b.repeat_of else (b.explanation, _inlined_note(b), b.effect))
                          if m) + "</li>"
                for b in self.breaks)
            parts.append(f"<p>{only('graph breaks:', '图中断：')}</p><ol>{items}</ol>")
        if self._rec.graphs:
            parts.append(self._table().to_html(style=_STYLE) + f"<p><small>{esc(only(*_OPS_NOTE))}</small></p>")
        if self.recompiles:
            items = "".join(only(f"<li>call {r.call}: ", f"<li>第 {r.call} 次调用：")
                            + f"<code>{esc(r.function)}</code>{only(': ', '：')}{esc(r.reason)}</li>"
                            for r in self.recompiles)
            parts.append(f"<p>{only('recompilations:', '重新编译：')}</p><ul>{items}</ul>")
        guards = self.guards
        if guards:
            shown = fold(guards, None if full else GUARD_LINES, only(*_FULL))
            summary = only(f"{len(guards)} guard requests ({esc(_kinds(guards))})",
                           f"{len(guards)} 个守卫请求（{esc(_kinds(guards))}）")
            parts.append(f"<details><summary>{summary}</summary>"
                         f"<pre>{esc(chr(10).join(shown))}</pre></details>")
        for g in self._rec.graphs:
            code = "\n".join(self._code_lines(g, full))
            title = only(f"graph {g.index}", f"计算图 {g.index}")
            parts.append(f"<details><summary>{title}</summary><pre>{esc(code)}</pre></details>")
        parts.append("</div>")
        return "".join(parts)


def capture(fn_or_module: Callable[..., Any], *args: Any, dynamic: bool | None = None,
            backend: str | Callable[..., Any] = "eager", **kwargs: Any) -> Capture:
    """Reset Dynamo, compile ``fn_or_module`` with a recording backend, call it once.

    Introduced in course/06_dynamo_bytecode.ipynb. ``graph_count`` and ``op_count`` mean
    what they mean in ``torch._dynamo.explain``; ``breaks`` is every break in Dynamo's own
    graph-break log. ``backend`` is a backend name or a compiler function; ``dynamic`` is
    passed to Dynamo. Dynamo is reset before the call, not after, so
    :meth:`Capture.call_again` and ``bytecode(fn)`` can look at its cache. The function
    runs on copies of the tensors given, and a module's state is put back afterwards.
    An error raised by ``fn`` comes back as :class:`FxCourseError` naming it; so does a
    failure of Dynamo itself or of the backend, said as such.

    >>> from fxcourse import zoo
    >>> model, args = zoo.example("gate")
    >>> cap = capture(model, *args)
    >>> cap.graph_count, cap.break_count, cap.breaks[0].line
    (2, 1, 'if y.sum() > 0:  # the branch depends on the values in x')
    """
    if fn_or_module is None or not callable(fn_or_module):
        raise FxCourseError(got=describe(fn_or_module), accepted="a function or an nn.Module",
                            fix="pass the function itself, e.g. capture(f, x)", where="capture",
                            zh=f"capture：收到 {describe(fn_or_module)}，它不能调用；需要函数或 nn.Module。"
                               f"修复：传入函数本身，例如 capture(f, x)。")
    need_flag(dynamic, "dynamic", "capture", "leave dynamic=None to let Dynamo decide", "保留 dynamic=None，让 Dynamo 自己决定",
              none_ok=True)
    inner, backend_name = _lookup(backend)
    return _capture(_unwrap_compiled(fn_or_module), args, kwargs, inner, backend_name, dynamic)


def _capture(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], backend: Callable[..., Any],
             backend_name: str, dynamic: bool | None = None) -> Capture:
    """capture() without the argument checks (compare_capture's Dynamo row uses it too)."""
    import torch._dynamo

    torch._dynamo.reset()
    rec = _Recorder(backend)
    with untouched(fn):  # wrapping a module marks it (_is_torch_compile = True) for later Dynamo runs
        compiled = torch._dynamo.optimize(rec, nopython=False, dynamic=dynamic,
                                          guard_export_fn=rec.export_guards,
                                          guard_fail_fn=rec.guard_failed)(fn)
    notes: list[str] = []
    result = _run(compiled, fn, args, kwargs, notes, rec, backend_name)
    return Capture(fn, compiled, rec, backend_name, result, notes)


def _run(compiled: Callable[..., Any], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
         notes: list[str], rec: _Recorder, backend_name: str) -> Any:
    try:
        with process_kept(), untouched(fn, args), quiet(stderr=False) as caught, recording(rec.log):
            result = compiled(*fresh(args), **fresh(kwargs))
    except Exception as exc:
        raise whose_error(exc, fn, args, kwargs, backend_name) from exc
    notes.extend(caught)
    return result


def whose_error(exc: Exception, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                backend_name: str, where: str = "capture") -> FxCourseError:
    """Say whose error it is: the backend's, Dynamo's, or the function's own (``where``: the
    helper that ran it, as the message names it; inductor_code and aot_graphs use it too)."""
    from torch._dynamo.exc import BackendCompilerFailed

    if isinstance(exc, BackendCompilerFailed):
        inner = getattr(exc, "inner_exception", None) or exc
        return FxCourseError(
            got=f"backend {backend_name} failing on a graph of {_name(fn)}: {one_line_error(inner)}",
            accepted="a backend that compiles every graph Dynamo hands it",
            fix=f"the error is the backend's, not the model's: fix or replace backend {backend_name}, "
                'or use backend="eager" to see the graphs without compiling them',
            where=where,
            zh=f"{where}：后端 {backend_name} 在编译 {_name(fn)} 的一个计算图时失败：{one_line_error(inner)}。"
               f"这是后端的错误，不是模型的错误：请修复或换掉后端 {backend_name}，"
               '或者用 backend="eager" 只查看计算图而不编译。')
    own = eager_error(fn, args, kwargs)
    if own is None:
        return FxCourseError(
            got=f"{_name(fn)}, which runs without torch.compile, but Dynamo fails on it with "
                f"{one_line_error(exc, limit=300)}",
            accepted="a function Dynamo can trace; this is a Dynamo limitation, not an error in the function",
            fix="keep the part Dynamo cannot trace out of the compiled region (torch.compiler.disable), "
                "or rewrite it (a TorchRuntimeError means an op failed on fake tensors: for a custom op, "
                "check that its fake kernel agrees with the real one)",
            where=where,
            zh=f"{where}：{_name(fn)} 不经 torch.compile 能运行，但 Dynamo 处理它时失败："
               f"{one_line_error(exc, limit=300)}。这是 Dynamo 的局限，不是函数的错误。修复：把 Dynamo "
               "无法追踪的部分移出编译区域（torch.compiler.disable），或者改写它"
               "（TorchRuntimeError 表示某个算子在伪张量上失败：如果是自定义算子，请检查它的 fake 内核与真实内核是否一致）。")
    return FxCourseError(
        got=f"{_name(fn)} raising {one_line_error(own)}",
        accepted="a function or nn.Module that runs on the arguments given",
        fix=f"call it without {where} first ({_name(fn)}(*args)) and fix that error",
        where=where,
        zh=f"{where}：{_name(fn)} 本身就报错：{one_line_error(own)}；需要能在给定参数上运行的函数或 "
           f"nn.Module。修复：先不用 {where} 直接调用它（{_name(fn)}(*args)），把这个错误改掉。")


def eager_error(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> BaseException | None:
    """What ``fn`` raises without Dynamo (None when it runs), its output kept out of sight."""
    try:
        with process_kept(), untouched(fn, args), quiet(stderr=True), contextlib.redirect_stdout(io.StringIO()):
            fn(*fresh(args), **fresh(kwargs))
        return None
    except Exception as exc:
        return exc


def _lookup(backend: Any) -> tuple[Callable[..., Any], str]:
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    if callable(backend):
        return backend, getattr(backend, "__name__", type(backend).__name__)
    try:
        if not isinstance(backend, str):  # lookup_backend hands back whatever is not a name
            raise TypeError(type(backend).__name__)
        return lookup_backend(backend), repr(backend).replace("'", '"')
    except Exception:
        raise FxCourseError(got=f"backend={describe(backend)}",
                            accepted=f"a compiler function or one of {', '.join(list_backends(exclude_tags=()))}",
                            fix='use backend="eager" to see the graphs without compiling them',
                            where="capture",
                            zh=f"capture：没有名为 {describe(backend)} 的后端；请传入编译函数，或用 "
                               f"{', '.join(list_backends(exclude_tags=()))} 之一。修复：用 "
                               'backend="eager" 只查看计算图而不编译。') from None


def _unwrap_compiled(obj: Any) -> Any:
    """What torch.compile wrapped, so that capture starts from the user's own callable."""
    for _ in range(10):
        inner = getattr(obj, "_orig_mod", None) if isinstance(obj, torch.nn.Module) else None
        if inner is None:
            inner = getattr(obj, "_torchdynamo_orig_callable", None)
        if inner is None:
            return obj
        obj = inner
    return obj


def _inlined_note(b: GraphBreak) -> str:
    """For a break met while Dynamo was inlining a call: whose graph it split, and where."""
    if not b.frame:
        return ""
    return only(f"met while Dynamo was inlining the call to {b.callee} in {b.frame}: {b.frame}'s graph is split "
                f"at that call ({b.split_at}), and {b.callee} then runs as a frame of its own",
                f"Dynamo 在 {b.frame} 中内联对 {b.callee} 的调用时遇到它：{b.frame} 的计算图在这次调用处被切开"
                f"（{b.split_at}），随后 {b.callee} 作为单独的帧运行")


def _repeat_note(b: GraphBreak) -> str:
    """The line that stands for a repeated break's reason."""
    where = b.frame or b.function
    if b.frame:
        return only(f"the same break as {b.repeat_of}, met again in {where}'s own frame: this time it splits "
                    f"{where}'s graph at the call to {b.callee} ({b.split_at})",
                    f"与第 {b.repeat_of} 处是同一个图中断，在 {where} 自己的帧中再次遇到：这一次切开的是 {where} 的计算图，"
                    f"位置是对 {b.callee} 的调用（{b.split_at}）")
    return only(f"the same break as {b.repeat_of}, met again in {where}'s own frame: this time it splits "
                f"{where}'s graph",
                f"与第 {b.repeat_of} 处是同一个图中断，在 {where} 自己的帧中再次遇到：这一次切开的是 {where} 的计算图")


def _with_repeats(logged: list[LoggedBreak]) -> list[GraphBreak]:
    """GraphBreaks, each repeat of one user stack (the same break met again in the callee's own
    frame) marked, and each naming the frame whose graph it split."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, b in enumerate(logged):
        if b.stack:
            groups.setdefault((b.reason, b.file, b.lineno, b.stack), []).append(i)
    out = [_graph_break(b) for b in logged]
    for members in groups.values():
        stack = logged[members[0]].stack
        frames = [f for f in stack if f[2] != "<module>"]
        for k, i in enumerate(members):
            if k:
                out[i].repeat_of = members[0] + 1
            depth = len(members) - k  # the k-th message splits the frame k levels above the break's own
            if 1 < depth <= len(frames):
                file, line, function, source = frames[-depth]
                out[i].frame, out[i].split_at = function, f"{os.path.basename(file)}:{line}: {source}"
                out[i].callee = frames[-depth + 1][2]
    return out


def _graph_break(b: LoggedBreak) -> GraphBreak:
    head = b.reason
    if head.startswith("Data-dependent branching") or head.startswith("generic_jump"):
        head = only(*_BRANCH)
    location = f"{os.path.basename(b.file)}:{b.lineno}" if b.file != "?" else "?"
    return GraphBreak(head, location, b.function, b.line, b.explanation, b.effect)


def _no_check_kinds() -> frozenset[str]:
    """Guard kinds whose builder method is empty in this torch (GRAD_MODE, ...)."""
    global _NO_CHECK_KINDS
    if _NO_CHECK_KINDS is None:
        try:
            from torch._dynamo.guards import GuardBuilder

            def empty(self: Any, guard: Any) -> None:
                pass
            _NO_CHECK_KINDS = frozenset(
                name for name in dir(GuardBuilder) if name.isupper()
                and getattr(getattr(GuardBuilder, name), "__code__", None) is not None
                and getattr(GuardBuilder, name).__code__.co_code == empty.__code__.co_code)
        except Exception:  # the builder moved: the kinds 2.13 and 2.14 leave empty
            _NO_CHECK_KINDS = frozenset({"GRAD_MODE", "DETERMINISTIC_ALGORITHMS", "FSDP_TRAINING_STATE"})
    return _NO_CHECK_KINDS


_NO_CHECK_KINDS: frozenset[str] | None = None


def _guard_line(guard: Any) -> str:
    try:
        kind = guard.create_fn_name()
    except Exception:
        kind = "guard"
    line = f"{guard.name}: {kind}" if guard.name else kind
    return f"{line} ({only(*_NO_CHECKS)})" if kind in _no_check_kinds() else line


def _kinds(guards: list[str]) -> str:
    """``12 TENSOR_MATCH, 3 TYPE_MATCH, ...``: guard requests counted by kind."""
    counts: dict[str, int] = {}
    for g in guards:
        kind = g.split(" (", 1)[0].rsplit(": ", 1)[-1]
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _op_name(target: Any) -> str:
    return getattr(target, "__name__", None) or scrub(str(target))


def _name(fn: Any) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
