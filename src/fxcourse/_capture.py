"""capture: run a function under Dynamo with a recording backend and show what it saw.

The recording backend does what ``torch._dynamo.explain`` does (and costs the same):
it keeps every fx graph Dynamo hands to the backend, why each graph ended (a graph break
or the return), and the guards Dynamo exported. It then passes the graph on to the real
backend (``"eager"`` by default), so the call returns the real result.

>>> from fxcourse import zoo
>>> model, args = zoo.example("mlp")
>>> cap = capture(model, *args)
>>> cap.graph_count, cap.break_count, cap.op_count
(1, 0, 3)
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable

import torch

from ._text import first_line, one_line_error, quiet, scrub
from ._render import Table, Viewable, esc, table_style
from .errors import FxCourseError, describe

__all__ = ["Capture", "CapturedGraph", "GraphBreak", "Recompile", "capture"]

_OPS_NOTE = ("ops: call_function nodes, counted as torch._dynamo.explain counts them "
             "(method calls such as y.sum() are call_method nodes)")


_STYLE = table_style("fxcourse-capture-table", {})


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
    """Where and why Dynamo split the function."""

    reason: str
    location: str  # "file.py:LINE"
    function: str
    line: str  # the user's source line
    explanation: str = ""


@dataclasses.dataclass
class Recompile:
    """A guard that failed on a later call, so Dynamo compiled the frame again."""

    call: int
    function: str
    reason: str


class _Recorder:
    """The recording backend plus the two Dynamo hooks (guard export, guard failure)."""

    def __init__(self, backend: Callable[..., Any]) -> None:
        self.backend = backend
        self.call = 1
        self.graphs: list[CapturedGraph] = []
        self.reasons: list[Any] = []  # GraphCompileReason of first-call graphs that broke
        self.guards: list[Any] = []  # torch._guards.Guard, first call
        self.failures: list[Recompile] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        reason = getattr(gm, "compile_subgraph_reason", None)
        broke = bool(getattr(reason, "graph_break", False))
        self.graphs.append(CapturedGraph(len(self.graphs), gm, example_inputs, self.call,
                                         "graph break" if broke else "return"))
        if broke and self.call == 1:
            self.reasons.append(reason)
        return self.backend(gm, example_inputs)

    def export_guards(self, guards: Any) -> None:
        if self.call == 1:
            self.guards.extend(guards)  # copy now: Dynamo clears the set afterwards

    def guard_failed(self, failure: Any) -> None:
        reason = re.sub(r"^\s*\d+/\d+: ", "", str(failure.reason))  # drop the compile id
        self.failures.append(Recompile(self.call, failure.orig_code.co_name, first_line(reason)))


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
        """The graph breaks of the first call, as ``explain`` lists them."""
        return [_graph_break(r) for r in self._rec.reasons]

    @property
    def guards(self) -> list[str]:
        """The first call's guards, one readable line each (``source: KIND``)."""
        lines = [_guard_line(g) for g in self._rec.guards]
        return list(dict.fromkeys(lines))

    @property
    def recompiles(self) -> list[Recompile]:
        """Frames compiled again by :meth:`call_again`, with the guard that failed."""
        return list(self._rec.failures)

    @property
    def graph_count(self) -> int:
        """Graphs compiled by the first call (``explain``'s ``graph_count``)."""
        return sum(1 for g in self._rec.graphs if g.call == 1)

    @property
    def break_count(self) -> int:
        """``graph_count - 1``, as ``explain`` counts breaks (0 when there is no graph)."""
        return max(self.graph_count - 1, 0)

    @property
    def op_count(self) -> int:
        """``call_function`` nodes in the first call's graphs (``explain``'s ``op_count``)."""
        return sum(len(g.ops) for g in self._rec.graphs if g.call == 1)

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
        self._rec.call = self._calls
        self.result = _run(self._compiled, self.fn, args, kwargs, self.notes)
        return self

    # -- views ------------------------------------------------------------------------
    def _headline(self) -> str:
        calls = f", {self._calls} calls" if self._calls > 1 else ""
        return (f"capture of {_name(self.fn)} (backend {self.backend_name}{calls}): "
                f"{_plural(self.graph_count, 'graph')}, {_plural(self.break_count, 'graph break')}, "
                f"{_plural(self.op_count, 'op')}, {_plural(len(self.guards), 'guard')}")

    def _table(self) -> Table:
        rows = [[str(g.index), str(g.call), str(len(g.ops)), " ".join(g.ops) or "-", g.ended_by]
                for g in self._rec.graphs]
        return Table(["graph", "call", "ops", "op names", "ends with"], rows, css_class="fxcourse-capture-table")

    def to_text(self, width: int = 100) -> str:
        """Summary, breaks, recompilations, then each graph's code."""
        out = [self._headline(), ""]
        if self.breaks:
            out.append("graph breaks:")
            for i, b in enumerate(self.breaks, 1):
                out.append(f"  {i}. {b.location} in {b.function}: {b.line}")
                out.append(f"     {b.reason}")
                if b.explanation:
                    out.append(f"     {b.explanation}")
            out.append("")
        if self._rec.graphs:
            out += [self._table().to_text(width=width), _OPS_NOTE, ""]
        if self.recompiles:
            out.append("recompilations:")
            out += [f"  call {r.call}: {r.function}: {r.reason}" for r in self.recompiles]
            out.append("")
        for g in self._rec.graphs:
            title = f"graph {g.index}"
            out += [title, "-" * len(title), g.code]
        return "\n".join(out).rstrip("\n") + "\n"

    def to_html(self) -> str:
        """The same as :meth:`to_text`, as HTML (guards listed in a collapsed block)."""
        parts = ['<div class="fxcourse-capture">', f"<p><b>{esc(self._headline())}</b></p>"]
        if self.breaks:
            items = "".join(
                f"<li><code>{esc(b.location)}</code> in <code>{esc(b.function)}</code>: "
                f"<code>{esc(b.line)}</code><br>{esc(b.reason)}"
                + (f"<br><small>{esc(b.explanation)}</small>" if b.explanation else "") + "</li>"
                for b in self.breaks)
            parts.append(f"<p>graph breaks:</p><ol>{items}</ol>")
        if self._rec.graphs:
            parts.append(self._table().to_html(style=_STYLE) + f"<p><small>{esc(_OPS_NOTE)}</small></p>")
        if self.recompiles:
            items = "".join(f"<li>call {r.call}: <code>{esc(r.function)}</code>: {esc(r.reason)}</li>"
                            for r in self.recompiles)
            parts.append(f"<p>recompilations:</p><ul>{items}</ul>")
        if self.guards:
            parts.append(f"<details><summary>{len(self.guards)} guards</summary><pre>"
                         f"{esc(chr(10).join(self.guards))}</pre></details>")
        for g in self._rec.graphs:
            parts.append(f"<details><summary>graph {g.index}</summary><pre>{esc(g.code)}</pre></details>")
        parts.append("</div>")
        return "".join(parts)


def capture(fn_or_module: Callable[..., Any], *args: Any, dynamic: bool | None = None,
            backend: str | Callable[..., Any] = "eager", **kwargs: Any) -> Capture:
    """Reset Dynamo, compile ``fn_or_module`` with a recording backend, call it once.

    Introduced in course/06_dynamo_bytecode.ipynb. ``graph_count``, ``break_count`` and
    ``op_count`` mean what they mean in ``torch._dynamo.explain``. ``backend`` is a backend
    name or a compiler function; ``dynamic`` is passed to Dynamo. Dynamo is reset before
    the call, not after, so :meth:`Capture.call_again` and ``bytecode(fn)`` can look at
    its cache. An error raised by ``fn`` comes back as :class:`FxCourseError` naming it.

    >>> from fxcourse import zoo
    >>> model, args = zoo.example("gate")
    >>> cap = capture(model, *args)
    >>> cap.graph_count, cap.break_count, cap.breaks[0].location
    (2, 1, 'zoo.py:49')
    """
    if fn_or_module is None or not callable(fn_or_module):
        raise FxCourseError(got=describe(fn_or_module), accepted="a function or an nn.Module",
                            fix="pass the function itself, e.g. capture(f, x)", where="capture")
    if dynamic not in (None, True, False):
        raise FxCourseError(got=f"dynamic={dynamic!r}", accepted="None, True or False",
                            fix="leave dynamic=None to let Dynamo decide", where="capture")
    fn = _unwrap_compiled(fn_or_module)
    inner, backend_name = _lookup(backend)
    import torch._dynamo

    torch._dynamo.reset()
    rec = _Recorder(inner)
    compiled = torch._dynamo.optimize(rec, nopython=False, dynamic=dynamic,
                                      guard_export_fn=rec.export_guards,
                                      guard_fail_fn=rec.guard_failed)(fn)
    notes: list[str] = []
    result = _run(compiled, fn, args, kwargs, notes)
    return Capture(fn, compiled, rec, backend_name, result, notes)


def _run(compiled: Callable[..., Any], fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
         notes: list[str]) -> Any:
    try:
        with quiet(stderr=False) as caught:
            result = compiled(*args, **kwargs)
    except Exception as exc:
        raise FxCourseError(
            got=f"{_name(fn)} raising {one_line_error(exc)}",
            accepted="a function or nn.Module that runs on the arguments given",
            fix=f"call it without capture first ({_name(fn)}(*args)) and fix that error",
            where="capture",
        ) from exc
    notes.extend(caught)
    return result


def _lookup(backend: Any) -> tuple[Callable[..., Any], str]:
    from torch._dynamo.backends.registry import list_backends, lookup_backend

    if callable(backend):
        return backend, getattr(backend, "__name__", type(backend).__name__)
    try:
        return lookup_backend(backend), repr(backend).replace("'", '"')
    except Exception:
        raise FxCourseError(got=f"backend={describe(backend)}",
                            accepted=f"a compiler function or one of {', '.join(list_backends(exclude_tags=()))}",
                            fix='use backend="eager" to see the graphs without compiling them',
                            where="capture") from None


def _unwrap_compiled(obj: Any) -> Any:
    """What torch.compile wrapped, so that capture starts from the user's own callable."""
    for _ in range(10):
        inner = getattr(obj, "_torchdynamo_orig_callable", None)
        if inner is None and isinstance(obj, torch.nn.Module):
            inner = getattr(obj, "_orig_mod", None)
        if inner is None:
            return obj
        obj = inner
    return obj


def _graph_break(reason: Any) -> GraphBreak:
    text = str(getattr(reason, "reason", reason))
    head = first_line(text)
    if head.startswith("generic_jump"):
        head = "Data-dependent branching: a Python if or while on a tensor value"
    explanation = next((first_line(line.strip()[len("Explanation:"):]) for line in text.splitlines()
                        if line.strip().startswith("Explanation:")), "")
    stack = getattr(reason, "user_stack", None) or []
    if not stack:
        return GraphBreak(head, "?", "?", "", explanation)
    frame = stack[-1]
    return GraphBreak(head, f"{os.path.basename(frame.filename)}:{frame.lineno}", frame.name,
                      (frame.line or "").strip(), explanation)


def _guard_line(guard: Any) -> str:
    try:
        kind = guard.create_fn_name()
    except Exception:
        kind = "guard"
    return f"{guard.name}: {kind}" if guard.name else kind


def _op_name(target: Any) -> str:
    return getattr(target, "__name__", None) or scrub(str(target))


def _name(fn: Any) -> str:
    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
