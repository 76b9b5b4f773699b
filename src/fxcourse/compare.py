"""compare_capture: one model, six ways to turn it into a graph, side by side.

The attempts run in the order the course tells the story: ``torch.jit.trace``,
``torch.jit.script``, ``torch.fx.symbolic_trace``, Dynamo with ``fullgraph=True``, Dynamo
with ``fullgraph=False``, and ``torch.export.export``. Each row says whether it worked, a
one-line reason, how many graphs and ops it produced, whether it matches eager on the
example input *and* on a second input, and how long it took.

``torch.export.export`` runs in its default mode, non-strict in PyTorch 2.13: that is what
a learner gets when they call it, and its failure on a data-dependent branch names the
guard it could not decide (strict mode would repeat Dynamo's fullgraph error, already in
the row above); the row's note then points at ``torch.cond``.

Warnings (``DeprecationWarning`` from TorchScript, the ``TracerWarning`` that gives away a
baked-in branch) and log lines are recorded on the row instead of being printed.

>>> from fxcourse import zoo
>>> model, args = zoo.example("mlp")
>>> table = compare_capture(model, *args)
>>> [row.worked for row in table.rows]
[True, True, True, True, True, True]
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ._text import first_line, one_line_error, quiet
from ._render import Table, Viewable, esc, table_style
from ._capture import _Recorder, _graph_break
from .errors import FxCourseError, describe

__all__ = ["Attempt", "Comparison", "compare_capture"]

METHODS = ("torch.jit.trace", "torch.jit.script", "torch.fx.symbolic_trace",
           "dynamo fullgraph=True", "dynamo fullgraph=False", "torch.export.export")
_OPS_NOTE = ("ops: operation nodes in each system's own graph "
             "(fx call_* nodes, TorchScript aten:: nodes, ATen calls for export)")


_STYLE = table_style("fxcourse-compare-table", {"failed": "color:#b71c1c"})


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


class Comparison(Viewable):
    """The rows of :func:`compare_capture`, as data, text or HTML."""

    def __init__(self, name: str, inputs: str, second: str, rows: list[Attempt]) -> None:
        self.name = name
        self.inputs = inputs
        self.second = second
        self.rows = rows

    def __getitem__(self, method: str) -> Attempt:
        for row in self.rows:
            if row.method == method:
                return row
        raise FxCourseError(got=repr(method), accepted=f"one of {', '.join(METHODS)}",
                            fix="index the comparison by a method name", where="Comparison[...]")

    def _table(self, timings: bool) -> Table:
        cols = ["capture", "works", "graphs", "ops", "matches eager"] + (["seconds"] if timings else [])
        rows = []
        for r in self.rows:
            cells = [r.method, _yes(r.worked), _num(r.graphs), _num(r.ops), _yes(r.matches)]
            rows.append(cells + ([f"{r.seconds:.3f}"] if timings else []))
        return Table(cols, rows, row_classes=["ok" if r.worked else "failed" for r in self.rows],
                     css_class="fxcourse-compare-table")

    def _headline(self) -> str:
        return f"compare_capture: {self.name} on {self.inputs}; second input: {self.second}"

    def to_text(self, timings: bool = False, width: int = 100) -> str:
        """Table, then one reason line (and a note) per row. Timings only when asked."""
        out = [self._headline(), "", self._table(timings).to_text(width=width), _OPS_NOTE, "", "why:"]
        for r in self.rows:
            out.append(f"  {r.method}: {r.reason}")
            if r.note:
                out.append(f"      note: {r.note}")
        return "\n".join(out) + "\n"

    def to_html(self, timings: bool = False) -> str:
        """The same as :meth:`to_text`, as HTML."""
        items = "".join(f"<li><b>{esc(r.method)}</b>: {esc(r.reason)}"
                        + (f"<br><small>note: {esc(r.note)}</small>" if r.note else "") + "</li>"
                        for r in self.rows)
        return (f'<div class="fxcourse-compare"><p><b>{esc(self._headline())}</b></p>'
                f"{self._table(timings).to_html(style=_STYLE)}<p><small>{esc(_OPS_NOTE)}</small></p>"
                f"<ul>{items}</ul></div>")


def compare_capture(model: Callable[..., Any], *args: Any,
                    second_args: tuple[Any, ...] | None = None) -> Comparison:
    """Try six capture systems on ``model(*args)``; one :class:`Attempt` per system.

    Introduced in course/00_overview.ipynb. ``second_args`` defaults to ``args`` with every
    floating-point tensor sign-flipped: same shapes, other values, and for ``zoo`` "gate"
    the data-dependent ``if`` takes the other branch, which is what exposes a trace that
    baked one branch in. Dynamo is reset before each attempt and after the last.

    >>> from fxcourse import zoo
    >>> model, args = zoo.example("gate")
    >>> table = compare_capture(model, *args)
    >>> table["torch.jit.trace"].matches, table["torch.jit.script"].matches
    (False, True)
    """
    if model is None or not callable(model):
        raise FxCourseError(got=describe(model), accepted="an nn.Module or a function of tensors",
                            fix="pass the model itself, e.g. compare_capture(model, x)",
                            where="compare_capture")
    if second_args is None:
        second, second_label = tuple(_flip(a) for a in args), "example input, sign-flipped"
    elif isinstance(second_args, (tuple, list)):
        second, second_label = tuple(second_args), "given"
    elif isinstance(second_args, torch.Tensor):
        second, second_label = (second_args,), "given"
    else:
        raise FxCourseError(got=f"second_args={describe(second_args)}",
                            accepted="None, a tensor, or a tuple of arguments like args",
                            fix="pass second_args=(x2,) or leave it out", where="compare_capture")
    try:
        with quiet(stderr=False), torch.no_grad():
            expected = (model(*args), model(*second))
    except Exception as exc:
        raise FxCourseError(got=f"{_name(model)} raising {one_line_error(exc)}",
                            accepted="a model that runs eagerly on both inputs",
                            fix="check model(*args) and model(*second_args) run before comparing",
                            where="compare_capture") from exc
    rows = [_attempt(m, model, args, second, expected) for m in METHODS]
    torch._dynamo.reset()
    return Comparison(_name(model), _shapes(args), second_label, rows)


def _attempt(method: str, model: Any, args: tuple[Any, ...], second: tuple[Any, ...],
             expected: tuple[Any, Any]) -> Attempt:
    """Run one capture system in isolation; never lets an exception out."""
    torch._dynamo.reset()
    rec = _Recorder(_eager)
    start = time.perf_counter()
    with quiet(stderr=True) as notes:  # export prints partial graphs to stderr
        try:
            with torch.no_grad():
                runner, graphs, ops = _CAPTURE[method](model, args, rec)
            seconds = time.perf_counter() - start
            error = None
        except Exception as exc:
            seconds, error = time.perf_counter() - start, exc
        if error is None:
            try:
                row = _check(method, runner, graphs, ops, args, second, expected, rec)
            except Exception as exc:  # comparing odd outputs: report, never raise
                row = Attempt(method, True, f"captured, but checking it failed: {one_line_error(exc)}",
                              graphs, ops)
    if error is not None:
        row = Attempt(method, False, _crisp(error))
    row.seconds = seconds
    row.warnings = list(dict.fromkeys(notes))
    if method == "torch.jit.trace" and row.matches is False and "second" in row.reason:
        row.reason = f"{_baked(row.warnings)}: {row.reason}"
    row.note = _note(row, error)
    return row


def _check(method: str, runner: Callable[..., Any], graphs: int, ops: int, args: tuple[Any, ...],
           second: tuple[Any, ...], expected: tuple[Any, Any], rec: _Recorder) -> Attempt:
    first_graphs = len(rec.graphs)
    try:
        with torch.no_grad():
            same = [_same(runner(*args), expected[0]), _same(runner(*second), expected[1])]
    except Exception as exc:
        return Attempt(method, True, f"captured, but running it failed: {one_line_error(exc)}",
                       graphs, ops, False)
    if method.startswith("dynamo"):
        graphs = first_graphs
        ops = sum(_fx_ops(g.gm) for g in rec.graphs[:first_graphs])
    if not same[0]:
        return Attempt(method, True, "outputs differ from eager on the example input", graphs, ops, False)
    if not same[1]:
        return Attempt(method, True, "outputs differ from eager on the second input", graphs, ops, False)
    reason = _SUCCESS[method]
    if rec.reasons:
        b = _graph_break(rec.reasons[0])
        reason = f"{_plural(len(rec.reasons), 'graph break')}: {b.reason} ({b.location})"
    return Attempt(method, True, reason, graphs, ops, True)


def _baked(notes: list[str]) -> str:
    """What a trace that runs but answers differently froze, told by its TracerWarning."""
    tracer = " ".join(n for n in notes if n.startswith("TracerWarning"))
    if "Python boolean" in tracer:
        return "the trace baked in one branch"
    if tracer:
        return "the trace baked in a value from the example input"
    return "the trace recorded only the path the example input took"


def _crisp(exc: BaseException) -> str:
    """``Type: first sentence``: the message's first line, cut at its first full stop."""
    line = one_line_error(exc)
    head, dot, _ = line.partition(". ")
    return head if dot else line


def _note(row: Attempt, error: BaseException | None) -> str:
    notes = []
    tracer = [w for w in row.warnings if w.startswith("TracerWarning")]
    if tracer:
        notes.append(tracer[0].split(". ")[0].rstrip("."))
    if any(w.startswith("DeprecationWarning") and "torch.jit" in w for w in row.warnings):
        notes.append("TorchScript is deprecated: use torch.compile or torch.export")
    text = f"{type(error).__name__} {error}" if error is not None else ""
    if "data-dependent" in text.lower() or "Data-dependent" in row.reason or "control flow" in text:
        notes.append("the branch depends on tensor values: express it with torch.cond")
    if row.method == "dynamo fullgraph=True" and error is not None:
        notes.append("fullgraph=True turns a graph break into an error")
    return "; ".join(notes)


# -- the six capture systems: each returns (runner, graphs, ops) or raises ------------------
def _trace(model: Any, args: tuple[Any, ...], rec: _Recorder) -> tuple[Any, int, int]:
    traced = torch.jit.trace(model, args)
    return traced, 1, _ts_ops(traced)


def _script(model: Any, args: tuple[Any, ...], rec: _Recorder) -> tuple[Any, int, int]:
    scripted = torch.jit.script(model)
    return scripted, 1, _ts_ops(scripted)


def _symbolic(model: Any, args: tuple[Any, ...], rec: _Recorder) -> tuple[Any, int, int]:
    gm = torch.fx.symbolic_trace(model)
    return gm, 1, _fx_ops(gm)


def _dynamo(fullgraph: bool) -> Callable[..., tuple[Any, int, int]]:
    def run(model: Any, args: tuple[Any, ...], rec: _Recorder) -> tuple[Any, int, int]:
        compiled = torch.compile(model, backend=rec, fullgraph=fullgraph)
        compiled(*args)
        return compiled, len(rec.graphs), sum(_fx_ops(g.gm) for g in rec.graphs)
    return run


def _export(model: Any, args: tuple[Any, ...], rec: _Recorder) -> tuple[Any, int, int]:
    module = model if isinstance(model, torch.nn.Module) else _AsModule(model)
    program = torch.export.export(module, args)
    ops = sum(1 for n in program.graph.nodes if n.op == "call_function")
    return program.module(), 1, ops


_CAPTURE = {
    "torch.jit.trace": _trace, "torch.jit.script": _script, "torch.fx.symbolic_trace": _symbolic,
    "dynamo fullgraph=True": _dynamo(True), "dynamo fullgraph=False": _dynamo(False),
    "torch.export.export": _export,
}
_SUCCESS = {
    "torch.jit.trace": "recorded the ops that ran on the example input",
    "torch.jit.script": "compiled from the Python source, control flow included",
    "torch.fx.symbolic_trace": "traced with proxy values",
    "dynamo fullgraph=True": "one graph, no graph breaks",
    "dynamo fullgraph=False": "one graph, no graph breaks",
    "torch.export.export": "one graph of ATen ops",
}


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


def _same(got: Any, want: Any) -> bool:
    got_leaves, want_leaves = pytree.tree_leaves(got), pytree.tree_leaves(want)
    if len(got_leaves) != len(want_leaves):
        return False
    for a, b in zip(got_leaves, want_leaves):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
                return False
        elif a != b:
            return False
    return True


def _flip(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return -value
    return value


def _shapes(args: tuple[Any, ...]) -> str:
    parts = [f"tensor{tuple(a.shape)}" if isinstance(a, torch.Tensor) else first_line(repr(a), 40)
             for a in args]
    return ", ".join(parts) or "no arguments"


def _name(model: Any) -> str:
    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__qualname__", None) or type(model).__name__


def _yes(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
