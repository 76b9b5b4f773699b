"""compare_capture: one model, six ways to turn it into a graph, side by side.

The attempts run in the order the course tells the story: ``torch.jit.trace``,
``torch.jit.script``, ``torch.fx.symbolic_trace``, Dynamo with ``fullgraph=True``, Dynamo
with ``fullgraph=False``, and ``torch.export.export``. Each row says whether it worked, a
one-line reason, how many graphs, graph breaks and ops it produced, whether it matches
eager on the example input *and* on a second input, and how long it took.

The ``dynamo fullgraph=False`` row is :func:`fxcourse.capture` itself, so the two always
agree on graphs and breaks. ``torch.export.export`` runs in its default mode, non-strict
since PyTorch 2.7: that is what a learner gets when they call it. Everything runs in the
caller's grad mode, on copies of the inputs, and a module's buffers and attributes
(train/eval flag included) are put back after every attempt. TorchScript can crash the
interpreter on code it does not expect; its two rows are tried in a child process first,
and a crash there is that row's failure.

``paths=`` adds the ways a model is compiled and deployed after capture (the capstone's
matrix): ``torch.compile inductor``, ``export + AOTInductor`` (compiled ahead of time into a
package, loaded back) and ``export + IREE`` (lowered to MLIR's linalg-on-tensors with
torch-mlir, compiled for the CPU with IREE). ``latency=True`` also times every path that
matches eager, and eager itself, in balanced orders (``_latency.fair_latency``).

Warnings (TorchScript's deprecation warning, the ``TracerWarning`` that gives away a
baked-in branch) and log lines are recorded on the row instead of being printed.

>>> from fxcourse import zoo
>>> model, args = zoo.example("mlp")
>>> table = compare_capture(model, *args)
>>> [row.worked for row in table.rows]
[True, True, True, True, True, True]
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .capture import _capture, _Recorder, _unwrap_compiled
from .._caller_state import fresh, process_kept, untouched
from ._compare_check import difference, flip
from ._contained import crash_of
from ._latency import Latency, fair_latency
from .._lang import only
from .._render import Table, Viewable, esc, table_style
from .._text import first_line, is_torchscript_deprecation, one_line_error, quiet
from ..errors import FxCourseError, describe, need_flag

__all__ = ["Attempt", "Comparison", "compare_capture"]

METHODS = ("torch.jit.trace", "torch.jit.script", "torch.fx.symbolic_trace",
           "dynamo fullgraph=True", "dynamo fullgraph=False", "torch.export.export")
#: compiled and deployed paths, after capture (``paths=``)
COMPILED = ("torch.compile inductor", "export + AOTInductor", "export + IREE")
PATHS = METHODS + COMPILED
_OPS_NOTE = ("ops: operation nodes in each system's own graph "
             "(fx call_* nodes, TorchScript aten:: nodes, ATen calls for export)",
             "算子数：各系统自己计算图中的运算节点（fx 的 call_* 节点、TorchScript 的 aten:: 节点、"
             "export 的 ATen 调用）")
_IREE_OPS = ("; MLIR operations of the linalg-on-tensors module for IREE",
             "；IREE 一行是 linalg-on-tensors 模块中的 MLIR 操作")
_STYLE = table_style("fxcourse-compare-table", {"failed": "color:#b71c1c"})
_LIMITATION = ("a Dynamo limitation: the model runs eagerly, Dynamo fails on it",
               "Dynamo 的局限：模型在 eager 下能运行，Dynamo 却失败")
# column headers, English then 中文
_COLUMNS = (("capture", "捕获方式"), ("works", "成功"), ("graphs", "计算图"), ("breaks", "图中断"),
            ("ops", "算子数"), ("matches eager", "与 eager 一致"), ("seconds", "秒"))
_LATENCY_COLUMNS = (("ms per call", "每次调用（毫秒）"), ("speed-up", "加速比"))
_BRANCH = ("Data-dependent branching", "数据相关的分支")  # how a data-dependent branch is named
_SECOND = ("on the second input", "第二个输入")  # how a mismatch on the second input is said
# HTML marks status with a sign as well as a colour: untrusted notebooks lose the styles
_MARK = {True: "✓ ", False: "✗ "}


@dataclass
class Attempt:
    """One row: how one capture system fared on the model."""

    method: str
    worked: bool
    reason: str  # one line: the error, or what the success means
    graphs: int | None = None
    ops: int | None = None
    matches: bool | None = None  # equal to eager on the example and the second input
    seconds: float = 0.0  # capture time; left out of to_text() unless timings=True
    note: str = ""  # a short hint drawn from warnings or the error
    warnings: list[str] = field(default_factory=list)  # everything recorded, one line each
    breaks: int | None = None  # graph breaks (Dynamo rows only)
    latency: Latency | None = None  # steady-state time per call (latency=True, rows that match)


class NoSuchPath(FxCourseError, KeyError):
    """A path the table has no row for; a KeyError too, so ``except KeyError`` works as on a dict."""

    __str__ = Exception.__str__  # the message, not KeyError's quoted repr of it


class NotIterable(FxCourseError, TypeError):
    """``for row in table``: a table is read by path name, its rows are ``table.rows``."""


class Comparison(Viewable):
    """The rows of :func:`compare_capture`, as data, text or HTML."""

    def __init__(self, name: str, inputs: str, second: str, rows: list[Attempt],
                 eager: Latency | None = None) -> None:
        self.name = name
        self.inputs = inputs
        self.second = second
        self.rows = rows
        self.eager = eager  # eager's own latency when latency=True

    def speedup(self, method: str) -> float | None:
        """Eager's median time over this path's (above 1: faster than eager); None untimed."""
        row = self._row(method, "Comparison.speedup", "table.speedup(row.method)")
        if self.eager is None or row.latency is None:
            return None
        return self.eager.median / row.latency.median

    def __getitem__(self, method: str) -> Attempt:
        return self._row(method, "Comparison[...]", "table[row.method]")

    def __contains__(self, method: object) -> bool:
        """``"torch.jit.trace" in table``: whether a row of that path is in the table."""
        return any(row.method == method for row in self.rows)

    def __iter__(self) -> Any:
        """``for row in table`` is refused with a pointer to ``table.rows`` (rows are read by name,
        ``table[method]``, so Python would otherwise try ``table[0]``)."""
        raise NotIterable(got="for ... in table (a Comparison)", accepted="for row in table.rows",
                          fix="loop over table.rows", where="Comparison",
                          zh="Comparison：表格本身不能迭代；请改为遍历 table.rows（for row in table.rows）。")

    def _row(self, method: str, where: str, call: str) -> Attempt:
        """The row named ``method``; ``where`` and ``call`` name the learner's call in an error."""
        for row in self.rows:
            if row.method == method:
                return row
        if isinstance(method, Attempt):  # a row where its name belongs
            raise FxCourseError(got=f"a row (Attempt) of {method.method!r}", accepted="a method's name",
                                fix=f"pass the row's name: {call}", where=where,
                                zh=f"{where}：传入的是一行（Attempt，{method.method!r}），而不是名字；"
                                   f"请传入它的名字：{call}。")
        if not isinstance(method, str):  # table[0]: a position where a name belongs
            raise NoSuchPath(got=repr(method), accepted="a path's name", fix=f"table.rows[{method!r}] is a row by position",
                             where=where, zh=f"{where}：收到 {method!r}，需要路径名；按位置取行请用 table.rows[{method!r}]。")
        if method == "eager":  # the baseline is not a row
            raise NoSuchPath(got="'eager'", accepted="a path's name; eager is the baseline, not a row",
                             fix="eager's time is table.eager", where=where,
                             zh=f"{where}：'eager' 是基准，不是表中的一行；它的用时在 table.eager 中。")
        if not self.rows:  # e.g. read while list.sort() runs on the rows: the list is empty meanwhile
            raise NoSuchPath(got=repr(method), accepted="a row's method; rows look empty while sorted in place",
                             fix="sort a new list: sorted(table.rows, key=...)",
                             where=where,
                             zh=f"{where}：表中现在没有任何行，找不到 {method!r}（原地排序时，表的行看起来是空的）。"
                                "请用 sorted(table.rows, key=...) 生成一个新列表。")
        raise NoSuchPath(got=repr(method), accepted=f"one of {', '.join(r.method for r in self.rows)}",
                         fix="a table may hold only some paths: loop over table.rows", where=where,
                         zh=f"{where}：没有名为 {method!r} 的路径；请用其中之一："
                            f"{'、'.join(r.method for r in self.rows)}。表格可能只包含部分路径：请遍历 table.rows。")

    def _table(self, timings: bool, marks: bool = False) -> Table:
        """The table; with ``marks``, yes/no cells carry ✓ / ✗ (for HTML without styles)."""
        heads = list(_COLUMNS[:6]) + ([_COLUMNS[6]] if timings else [])
        timed = timings and self.eager is not None
        heads += list(_LATENCY_COLUMNS) if timed else []
        cols = [en for en, _ in heads]
        labels = [only(en, zh) for en, zh in heads]
        rows = []
        for r in self.rows:
            cells = [r.method, _yes(r.worked, marks), _num(r.graphs), _num(r.breaks), _num(r.ops),
                     _yes(r.matches, marks)]
            cells += [f"{r.seconds:.3f}"] if timings else []
            if timed:
                ratio = self.speedup(r.method)
                cells += [r.latency.ms() if r.latency else "-", f"{ratio:.2f}×" if ratio else "-"]
            rows.append(cells)
        return Table(cols, rows, row_classes=["ok" if r.worked else "failed" for r in self.rows],
                     css_class="fxcourse-compare-table", labels=labels)

    def _headline(self) -> str:
        return only(f"compare_capture: {self.name} on {self.inputs}; second input: {self.second}",
                    f"compare_capture：{self.name}，输入 {self.inputs}；第二个输入：{self.second}")

    def _ops_note(self) -> str:
        en, zh = _OPS_NOTE
        if any(r.method == "export + IREE" for r in self.rows):
            en, zh = en + _IREE_OPS[0], zh + _IREE_OPS[1]
        return only(en, zh)

    def _timing_line(self) -> str:
        """How the latency columns were measured (shown with timings=True)."""
        e = self.eager
        if e is None:
            return ""
        return only(f"latency: median ± half the IQR over {e.rounds} rounds, each in another order "
                    f"(every path runs right after every other equally often), {_plural(e.threads, 'thread')}, "
                    f"no grad; eager: {e.ms()} ms",
                    f"延迟：共 {e.rounds} 轮，每轮顺序不同（每条路径紧跟在其他每条路径之后的次数相同），"
                    f"取中位数 ± 四分位距的一半；{e.threads} 个线程，不记录梯度；eager：{e.ms()} 毫秒")

    def to_text(self, timings: bool = False, width: int = 110) -> str:
        """Table, then one reason line (and a note) per row. Timings only when asked (110 columns:
        the 中文 headers with timings, every path's name in full)."""
        out = [self._headline(), "", self._table(timings).to_text(width=width), self._ops_note()]
        if timings and self.eager is not None:
            out.append(self._timing_line())
        out += ["", only("why:", "原因：")]
        note = only("note: ", "提示：")
        for r in self.rows:
            out.append(f"  {r.method}: {r.reason}")
            if r.note:
                out.append(f"      {note}{r.note}")
        return "\n".join(out) + "\n"

    def to_html(self, timings: bool = False) -> str:
        """The same as :meth:`to_text`, as HTML; the works and matches-eager cells carry
        ✓ / ✗, so a failure reads as one where the notebook's styles are stripped."""
        note = only("note: ", "提示：")
        items = "".join(f"<li><b>{esc(r.method)}</b>: {esc(r.reason)}"
                        + (f"<br><small>{esc(note)}{esc(r.note)}</small>" if r.note else "") + "</li>"
                        for r in self.rows)
        return (f'<div class="fxcourse-compare"><p><b>{esc(self._headline())}</b></p>'
                f"{self._table(timings, marks=True).to_html(style=_STYLE)}"
                f"<p><small>{esc(self._ops_note())}"
                + (f"<br>{esc(self._timing_line())}" if timings and self.eager is not None else "")
                + "</small></p>"
                f"<ul>{items}</ul></div>")


def compare_capture(model: Callable[..., Any], *args: Any,
                    second_args: tuple[Any, ...] | None = None, paths: Any = None,
                    latency: bool = False, threads: int = 1, rounds: int | None = None) -> Comparison:
    """Try six capture systems on ``model(*args)``; one :class:`Attempt` per system.

    ``paths`` picks the rows: None is the six capture systems, ``"all"`` adds the compiled
    paths (``COMPILED``), or a list of names from ``PATHS``. With ``latency=True`` everything runs
    under ``torch.no_grad()`` (captures and compiles too, so that what is timed is what was
    checked), and every row that matches eager is timed, and eager with it, on ``threads`` threads, in rounds whose
    orders come from a balanced design (``rounds``: default one full design); ``to_text(timings=True)`` shows milliseconds and speed-up over eager.

    Introduced in course/00_overview.ipynb. ``second_args`` defaults to ``args`` with every
    floating-point tensor sign-flipped, inside lists, tuples and dicts too: same shapes,
    other values, and for ``zoo`` "gate" the data-dependent ``if`` takes the other branch,
    which is what exposes a trace that baked one branch in. Dynamo is reset before each
    attempt and after the last. What the caller passed is left as it was.

    >>> from fxcourse import zoo
    >>> model, args = zoo.example("gate")
    >>> table = compare_capture(model, *args)
    >>> table["torch.jit.trace"].matches, table["torch.jit.script"].matches
    (False, True)
    """
    if model is None or not callable(model):
        raise FxCourseError(got=describe(model), accepted="an nn.Module or a function of tensors",
                            fix="pass the model itself, e.g. compare_capture(model, x)",
                            where="compare_capture",
                            zh=f"compare_capture：收到 {describe(model)}，它不能调用；需要 nn.Module 或以张量为"
                               f"参数的函数。修复：传入模型本身，例如 compare_capture(model, x)。")
    model = _unwrap_compiled(model)
    chosen = _paths(paths)
    need_flag(latency, "latency", "compare_capture", "pass latency=True or leave it out",
              "传 latency=True，或者不传")
    for name, value, low in (("threads", threads, 1), ("rounds", 1 if rounds is None else rounds, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise FxCourseError(got=f"{name}={describe(value)}", accepted="a whole number ≥ 1",
                                fix=f"pass e.g. {name}=1" if name == "threads" else f"pass e.g. {name}=7",
                                where="compare_capture",
                                zh=f"compare_capture：{name}={describe(value)} 不可用；需要 ≥ 1 的整数。")
    if second_args is None:
        second, flipped = flip(args)
        second_label = (only(f"example input with {_plural(flipped, 'floating-point tensor')} sign-flipped",
                             f"示例输入，其中 {flipped} 个浮点张量取反")
                        if flipped else only("the example input again (it holds no floating-point tensor to change)",
                                             "仍是示例输入（其中没有可以改变的浮点张量）"))
    elif isinstance(second_args, (tuple, list)):
        second, second_label = tuple(second_args), only("given", "由调用者给出")
    elif isinstance(second_args, torch.Tensor):
        second, second_label = (second_args,), only("given", "由调用者给出")
    else:
        raise FxCourseError(got=f"second_args={describe(second_args)}",
                            accepted="None, a tensor, or a tuple of arguments like args",
                            fix="pass second_args=(x2,) or leave it out", where="compare_capture",
                            zh=f"compare_capture：second_args={describe(second_args)} 不可用；需要 None、"
                               f"一个张量，或像 args 那样的参数元组。修复：传 second_args=(x2,)，或者不传。")
    # timed rows run without gradients (fair_latency): with latency=True every row is also captured and
    # compiled without them, so the code timed is the code that was checked, not a recompile for grad mode
    grad = torch.no_grad() if latency else contextlib.nullcontext()
    with process_kept(), grad:  # eager and every method draw from one stream, put back at the end
        try:
            with untouched(model), quiet(stderr=False):
                expected = (model(*fresh(args)), model(*fresh(second)))
        except Exception as exc:
            raise FxCourseError(got=f"{_name(model)} raising {one_line_error(exc)}",
                                accepted="a model that runs eagerly on both inputs",
                                fix="check model(*args) and model(*second_args) run before comparing",
                                where="compare_capture",
                                zh=f"compare_capture：{_name(model)} 在 eager 下就报错：{one_line_error(exc)}；"
                                   f"模型必须能在两个输入上直接运行。修复：比较之前先确认 model(*args) 和 "
                                   f"model(*second_args) 都能运行。") from exc
        attempts = [_attempt(m, model, args, second, expected) for m in chosen]
        eager = None
        if latency:
            with untouched(model), quiet(stderr=True):
                eager = _time(model, args, attempts, threads, rounds)
    torch._dynamo.reset()
    branch = any(_says_branch(row.reason) for row, _, _ in attempts)
    rows = []
    for row, error, _ in attempts:
        row.note = _note(row, error, branch)
        rows.append(row)
    return Comparison(_name(model), _shapes(args), second_label, rows, eager)


def _paths(paths: Any) -> tuple[str, ...]:
    """The rows asked for: None (the six capture systems), "all", or names from PATHS."""
    if paths is None:
        return METHODS
    if paths == "all":
        return PATHS
    names = [paths] if isinstance(paths, str) else paths
    if (isinstance(names, (list, tuple)) and names and all(isinstance(n, str) for n in names)
            and set(names) <= set(PATHS) and len(set(names)) == len(names)):
        return tuple(names)
    raise FxCourseError(got=f"paths={describe(paths)}",
                        accepted=f"None, \"all\", or a list of distinct names from: {', '.join(PATHS)}",
                        fix='pass e.g. paths=["torch.jit.script", "torch.compile inductor"]',
                        where="compare_capture",
                        zh=f"compare_capture：paths={describe(paths)} 不可用；需要 None、\"all\"，"
                           f"或由下列名字组成、互不重复的列表：{'、'.join(PATHS)}。")


def _time(model: Any, args: tuple[Any, ...], attempts: list[Any], threads: int,
          rounds: int | None) -> Latency:
    """Time eager and every row that matched eager, in balanced orders; fills row.latency."""
    inputs = fresh(args)
    runners: dict[str, Callable[[], Any]] = {"eager": lambda: model(*inputs)}
    for row, _, runner in attempts:
        if row.matches and runner is not None:
            runners[row.method] = (lambda r=runner: r(*inputs))
    # a runner that ran when it was checked can fail now, after the later rows' captures: Dynamo, reset
    # for a later row that skipped the model's frame (a model with no ops), leaves a fullgraph=True
    # wrapper with no compiled frame. Such a row stays untimed and says why
    untimed: dict[str, BaseException] = {}
    with torch.no_grad():
        for _ in range(2):  # twice round: a runner can break once another has run after it
            for name in [n for n in runners if n != "eager"]:
                try:
                    runners[name]()
                except Exception as exc:
                    untimed[name] = exc
                    del runners[name]
    measured = fair_latency(runners, rounds=rounds, threads=threads)
    for row, _, _ in attempts:
        row.latency = measured.get(row.method)
        if row.method in untimed:
            row.reason += only(f" (not timed: running it again failed: {_crisp(untimed[row.method])})",
                               f"（未计时：再次运行时出错：{_crisp(untimed[row.method])}）")
    return measured["eager"]


def _attempt(method: str, model: Any, args: tuple[Any, ...], second: tuple[Any, ...],
             expected: tuple[Any, Any]) -> tuple[Attempt, BaseException | None, Any]:
    """Run one capture system in isolation; never lets an exception out. Returns the row,
    the error (if capture failed) and the runner (None if it failed)."""
    torch._dynamo.reset()
    error: BaseException | None = None
    row: Attempt | None = None
    runner: Any = None
    start = time.perf_counter()
    with untouched(model), quiet(stderr=True) as notes:  # export prints partial graphs to stderr
        crash = crash_of(lambda: _CAPTURE[method](model, args)[0](*fresh(args))) if method in _FRAGILE else ""
        if crash:
            row = Attempt(method, False, only(f"{method} {crash}; compare_capture ran it in a child "
                                              "process first, so only that process was lost",
                                              f"{method} {crash}；compare_capture 先在子进程中运行它，"
                                              "所以只丢掉了那个进程"))
        else:
            try:
                runner, graphs, breaks, ops, summary = _CAPTURE[method](model, args)
            except Exception as exc:
                error = exc
    seconds = time.perf_counter() - start
    if row is None and error is None:
        with untouched(model), quiet(stderr=True) as checking:
            try:
                row = _check(method, runner, graphs, breaks, ops, summary, args, second, expected)
            except Exception as exc:  # comparing odd outputs: report, never raise
                row = Attempt(method, True, only("captured, but checking it failed: ", "捕获成功，但检查它时出错：")
                              + one_line_error(exc), graphs, ops, breaks=breaks)
        notes.extend(checking)
    if row is None:
        row = Attempt(method, False, _failed(method, error))
    row.seconds = seconds
    row.warnings = list(dict.fromkeys(notes))
    if method == "torch.jit.trace" and row.matches is False and any(s in row.reason for s in _SECOND):
        row.reason = f"{_baked(row.warnings)}{only(': ', '：')}{row.reason}"
    return row, error, (runner if row.worked else None)


def _check(method: str, runner: Callable[..., Any], graphs: int, breaks: int | None, ops: int,
           summary: str, args: tuple[Any, ...], second: tuple[Any, ...],
           expected: tuple[Any, Any]) -> Attempt:
    try:
        diffs = [difference(runner(*fresh(args)), expected[0]), difference(runner(*fresh(second)), expected[1])]
    except Exception as exc:
        return Attempt(method, True, only("captured, but running it failed: ", "捕获成功，但运行它时出错：")
                       + one_line_error(exc), graphs, ops, False, breaks=breaks)
    if diffs[0]:
        return Attempt(method, True, only(f"outputs differ from eager on the example input ({diffs[0]})",
                                          f"在示例输入上，输出与 eager 不同（{diffs[0]}）"),
                       graphs, ops, False, breaks=breaks)
    if diffs[1]:
        return Attempt(method, True, only(f"outputs differ from eager {_SECOND[0]} ({diffs[1]})",
                                          f"在{_SECOND[1]}上，输出与 eager 不同（{diffs[1]}）"),
                       graphs, ops, False, breaks=breaks)
    return Attempt(method, True, summary, graphs, ops, True, breaks=breaks)


def _failed(method: str, error: BaseException | None) -> str:
    """The row's reason when capture failed; Dynamo's own failures are called that."""
    cause = error.__cause__ if isinstance(error, FxCourseError) and error.__cause__ else error
    text = _crisp(cause) if cause is not None else only("failed", "失败")
    if method.startswith("dynamo") and cause is not None and not _is_graph_break(cause):
        return f"{only(*_LIMITATION)}{only(': ', '：')}{text}"
    return text


def _says_branch(text: str) -> bool:
    """Whether a reason names a data-dependent branch (in either language)."""
    return any(words in text for words in _BRANCH)


def _is_graph_break(exc: BaseException) -> bool:
    """Unsupported and UserError are what Dynamo turns into graph breaks without fullgraph."""
    from torch._dynamo.exc import Unsupported, UserError

    return isinstance(exc, (Unsupported, UserError))


def _baked(notes: list[str]) -> str:
    """What a trace that runs but answers differently froze, told by its TracerWarning."""
    tracer = " ".join(n for n in notes if n.startswith("TracerWarning"))
    if "Python boolean" in tracer:
        return only("the trace baked in one branch", "trace 把一个分支固化进了计算图")
    if tracer:
        return only("the trace baked in a value from the example input", "trace 把示例输入中的一个值固化进了计算图")
    return only("the trace recorded only the path the example input took", "trace 只记录了示例输入走过的路径")


def _crisp(exc: BaseException) -> str:
    """``Type: first sentence``: the message's first line, cut at its first full stop."""
    line = one_line_error(exc)
    head, dot, _ = line.partition(". ")
    return head if dot else line


def _note(row: Attempt, error: BaseException | None, branch: bool) -> str:
    """Hints that apply to this row; the torch.cond hint only when Dynamo saw a data-dependent branch."""
    notes = []
    tracer = [w for w in row.warnings if w.startswith("TracerWarning")]
    if tracer:
        notes.append(tracer[0].split(". ")[0].rstrip("."))
    # recorded as "Category: text"; recognised by the text (its category changed in 2.14)
    if any(is_torchscript_deprecation(w.partition(": ")[2]) for w in row.warnings):
        notes.append(only("TorchScript is deprecated: use torch.compile or torch.export",
                          "TorchScript 已被弃用：请改用 torch.compile 或 torch.export"))
    text = f"{type(error).__name__} {error}" if error is not None else ""
    if branch and ("data-dependent" in text.lower() or _says_branch(row.reason)
                   or "control flow" in text):
        notes.append(only("the branch depends on tensor values: express it with torch.cond",
                          "分支取决于张量的值：请用 torch.cond 表达"))
    if row.method == "dynamo fullgraph=True" and error is not None:
        notes.append(only("fullgraph=True turns a graph break into an error", "fullgraph=True 把图中断变成了错误")
                     if _is_graph_break(error)
                     else only("Dynamo's own error: the model itself runs", "这是 Dynamo 自己的错误：模型本身能运行"))
    return only("; ", "；").join(notes)


# -- the six capture systems: each returns (runner, graphs, breaks, ops, summary) or raises ---------
Captured = tuple[Any, int, "int | None", int, str]


def _trace(model: Any, args: tuple[Any, ...]) -> Captured:
    traced = torch.jit.trace(model, fresh(args))
    return traced, 1, None, _ts_ops(traced), only("recorded the ops that ran on the example input", "记录了示例输入实际执行的算子")


def _script(model: Any, args: tuple[Any, ...]) -> Captured:
    scripted = torch.jit.script(model)
    return scripted, 1, None, _ts_ops(scripted), only("compiled from the Python source, control flow included",
                                                          "由 Python 源码编译而来，包括控制流")


def _symbolic(model: Any, args: tuple[Any, ...]) -> Captured:
    gm = torch.fx.symbolic_trace(model)
    return gm, 1, None, _fx_ops(gm), only("traced with proxy values", "用代理值（Proxy）符号追踪")


def _fullgraph(model: Any, args: tuple[Any, ...]) -> Captured:
    rec = _Recorder(_eager)
    compiled = torch.compile(model, backend=rec, fullgraph=True)
    compiled(*fresh(args))
    graphs = len(rec.graphs)
    return compiled, graphs, 0, sum(_fx_ops(g.gm) for g in rec.graphs), _summary(graphs, [], "")


def _dynamo(model: Any, args: tuple[Any, ...], backend: Callable[..., Any] | None = None,
            name: str = "eager") -> Captured:
    cap = _capture(model, args, {}, backend or _eager, name)
    first = [g for g in cap.graphs if g.call == 1]
    return (cap._compiled, cap.graph_count, cap.break_count, sum(_fx_ops(g.gm) for g in first),
            _summary(cap.graph_count, cap.breaks, cap.skip_reason))


def _exported(model: Any, args: tuple[Any, ...]) -> tuple[Any, int]:
    """torch.export's program of the model (a function wrapped as a module) and its ATen calls;
    export's own failure is the row's reason, as it is."""
    module = model if isinstance(model, torch.nn.Module) else _AsModule(model)
    program = torch.export.export(module, fresh(args))
    return program, sum(1 for n in program.graph.nodes if n.op == "call_function")


def _export(model: Any, args: tuple[Any, ...]) -> Captured:
    program, ops = _exported(model, args)
    return program.module(), 1, None, ops, only("one graph of ATen ops", "一个由 ATen 算子组成的计算图")


def _inductor(model: Any, args: tuple[Any, ...]) -> Captured:
    from .capture import _lookup

    return _dynamo(model, args, *_lookup("inductor"))


def _aoti(model: Any, args: tuple[Any, ...]) -> Captured:
    """Export, compile ahead of time into a package in a temporary folder, load it back."""
    import tempfile
    from pathlib import Path

    from torch._inductor import aoti_compile_and_package, aoti_load_package

    program, ops = _exported(model, args)
    with tempfile.TemporaryDirectory() as folder:  # the loaded library stays mapped after removal
        path = aoti_compile_and_package(program, package_path=str(Path(folder) / "model.pt2"))
        loaded = aoti_load_package(path)
    return loaded, 1, None, ops, only("one exported graph, compiled ahead of time into a .pt2 package "
                                      "and loaded back", "一个导出的计算图，提前编译成 .pt2 包后再加载回来")


def _iree(model: Any, args: tuple[Any, ...]) -> Captured:
    """Lower to linalg-on-tensors with torch-mlir (the lowering viewer), compile it for the
    CPU with IREE, and run it through IREE's runtime on the calling thread (local-sync;
    tensors go through NumPy)."""
    import iree.compiler as ireec
    import iree.runtime as ireert

    from .lowering import lowering

    program, _ = _exported(model, args)
    stage = lowering(program, stages=("torch", "linalg-on-tensors")).stage("linalg-on-tensors")
    vmfb = ireec.compile_str(stage.text, target_backends=["llvm-cpu"],
                             extra_args=["--iree-llvmcpu-target-cpu=host"])
    compiled = ireert.load_vm_flatbuffer(vmfb, driver="local-sync")  # runs on the calling thread

    def run(*inputs: Any) -> Any:
        out = compiled.main(*[a.numpy() if isinstance(a, torch.Tensor) else a for a in inputs])
        outs = out if isinstance(out, (tuple, list)) else (out,)
        result = tuple(torch.from_numpy(_host(o)) for o in outs)
        return result[0] if len(result) == 1 else result

    return run, 1, None, sum(stage.ops.values()), only(
        "lowered to linalg-on-tensors by torch-mlir, compiled for this CPU by IREE",
        "由 torch-mlir 下降到 linalg-on-tensors，再由 IREE 编译到本机 CPU")


def _host(value: Any) -> Any:
    import numpy as np

    return np.array(value.to_host() if hasattr(value, "to_host") else value)


_CAPTURE: dict[str, Callable[[Any, tuple[Any, ...]], Captured]] = {
    "torch.jit.trace": _trace, "torch.jit.script": _script, "torch.fx.symbolic_trace": _symbolic,
    "dynamo fullgraph=True": _fullgraph, "dynamo fullgraph=False": _dynamo,
    "torch.export.export": _export, "torch.compile inductor": _inductor,
    "export + AOTInductor": _aoti, "export + IREE": _iree,
}
_FRAGILE = ("torch.jit.trace", "torch.jit.script")  # tried in a child process first


def _summary(graphs: int, breaks: list[Any], skip: str) -> str:
    """What a Dynamo row captured, said from its counts."""
    if breaks:
        b = breaks[0]
        first = "" if len(breaks) == 1 else "; the first: "
        return only(f"{_plural(graphs, 'graph')}, {_plural(len(breaks), 'graph break')}{first or ': '}"
                    f"{b.reason} ({b.location})",
                    f"{graphs} 个计算图，{len(breaks)} 处图中断{'；第一处' if len(breaks) > 1 else ''}："
                    f"{b.reason}（{b.location}）")
    if graphs == 1:
        return only("one graph, no graph breaks", "一个计算图，没有图中断")
    if graphs == 0:
        return skip or only("no graph: Dynamo found no tensor operation to capture",
                            "没有计算图：Dynamo 没有找到可以捕获的张量运算")
    return only(f"{graphs} graphs from separate frames, no graph breaks",
                f"{graphs} 个计算图，来自不同的帧，没有图中断")


class _AsModule(torch.nn.Module):
    """torch.export wants an nn.Module: wrap a plain function."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


def _eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward


def _fx_ops(gm: torch.fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op.startswith("call_"))


def _ts_ops(module: Any) -> int:
    """aten:: nodes in a TorchScript graph, submodules inlined, inside if/loop blocks too."""
    graph = getattr(module, "inlined_graph", None) or module.graph

    def count(block: Any) -> int:
        return sum(node.kind().startswith("aten::") + sum(count(b) for b in node.blocks())
                   for node in block.nodes())
    return count(graph)


def _shapes(args: tuple[Any, ...]) -> str:
    parts = [f"tensor{tuple(a.shape)}" if isinstance(a, torch.Tensor) else first_line(repr(a), 40)
             for a in args]
    return ", ".join(parts) or only("no arguments", "没有参数")


def _name(model: Any) -> str:
    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__qualname__", None) or type(model).__name__


def _yes(value: bool | None, mark: bool = False) -> str:
    """``yes``/``no`` (``是``/``否`` in 中文); with ``mark``, led by ✓ / ✗."""
    if value is None:
        return "-"
    word = only("yes", "是") if value else only("no", "否")
    return _MARK[bool(value)] + word if mark else word


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"

