"""A bad-input matrix over the whole public surface: every name in ``fxcourse.__all__`` and
every ``fxcourse`` command, fed what a learner really passes (None, numbers where a tensor or
module belongs, strings, lists, dicts, empty things, NaN, negative, huge and boolean values,
misspelt keywords, wrong files), with right inputs as controls.

Each row is ``(name, label, run, expected)``; ``run(learner, tmp_path)`` makes the call and
returns what it returned. The harness puts each trial in one outcome class:

* ``ok``: a right result (a row's ``verify`` says what right is);
* ``refused``: a :class:`FxCourseError` whose message is one line, in the reader's language
  (both by default, so English `` / `` 中文), naming what was passed (``got``), what is accepted
  and how to fix it; for ``check``/``hint``, which document that they never raise, a result that
  is not a pass; for the command line, exit status 2 (or 1 for a check that found problems)
  and one error line on stderr, no traceback;
* and the classes no row may reach: ``foreign`` (another exception type, a traceback, exit 3),
  ``mutated`` (the learner's modules, tensors, ``.grad``, random-number states, grad mode or
  default dtype changed), ``lost`` (a file the user made overwritten or deleted without a
  backup) and ``silent`` (a wrong input accepted: a refusal row that returned a result, or a
  result that is wrong).

``test_every_public_name_has_rows`` fails when a public name or a command has no row.
"""
from __future__ import annotations

import collections
import contextlib
import io
import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import nbformat
import numpy as np
import pytest
import torch
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from torch import fx, nn

import fxcourse
from fxcourse import FxCourseError, zoo
from fxcourse._lang import set_language
from fxcourse.tooling import cli
from small_course import KERNELSPEC, small_course

CLASSES = ("ok", "refused", "foreign", "mutated", "lost", "silent")
FORBIDDEN = ("foreign", "mutated", "lost", "silent")
CJK = re.compile(r"[\u4e00-\u9fff]")
GENERIC_ZH = "输入不被接受：收到了什么见 got"  # FxCourseError's fallback when a raise passed no zh


# -- the learner's objects ---------------------------------------------------------------------

class Net(nn.Module):
    """A learner's model: BatchNorm in training mode (its running statistics move on every call)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))


def _relu_plus_one(x):
    return torch.relu(x) + 1


def _breaks(x):
    y = x.sin()
    print("a graph break")  # noqa: T201
    return y.cos()


def _raises(x):
    raise ValueError("the learner's own bug")


class Learner:
    """Everything a row may touch, snapshotted before the call and compared after it."""

    def __init__(self) -> None:
        torch.manual_seed(1234)
        self.model = Net().train()
        self.x = torch.randn(3, 4)
        self.xg = torch.randn(3, 4, requires_grad=True)
        self.xg.grad = torch.full((3, 4), 7.0)  # a gradient the learner already has
        self.gm = fx.symbolic_trace(_relu_plus_one)
        self.lin = nn.Linear(4, 3)
        self.x24, self.x35, self.x8 = torch.randn(2, 4), torch.randn(3, 5), torch.randn(8)
        self._snaps: list[tuple[Any, Any]] = []
        for obj in (self.model, self.x, self.xg, self.gm, self.lin, self.x24, self.x35, self.x8):
            self.keep(obj)

    def keep(self, obj: Any) -> Any:
        """Watch ``obj`` (a module or a tensor) from now on; returns it."""
        self._snaps.append((obj, _snapshot(obj)))
        return obj

    def changed(self) -> list[str]:
        return [f"{type(obj).__name__}: {what}" for obj, snap in self._snaps
                for what in _differences(snap, _snapshot(obj))]


def _snapshot(obj: Any) -> dict[str, Any]:
    if isinstance(obj, torch.Tensor):
        return {"value": obj.detach().clone(), "grad": None if obj.grad is None else obj.grad.clone(),
                "requires_grad": obj.requires_grad, "shape": tuple(obj.shape)}
    if isinstance(obj, nn.Module):
        return {"state": {k: v.detach().clone() for k, v in obj.state_dict(keep_vars=True).items()},
                "training": {n: m.training for n, m in obj.named_modules()},
                "grads": {n: None if p.grad is None else p.grad.clone() for n, p in obj.named_parameters()},
                "attrs": {n: sorted(vars(m)) for n, m in obj.named_modules()}}
    return {"repr": repr(obj)}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and a.dtype == b.dtype and torch.equal(a.nan_to_num(0.5), b.nan_to_num(0.5)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [key for key in before if not _same(before[key], after.get(key))]


def _process_state() -> dict[str, Any]:
    return {"torch_rng": torch.get_rng_state(), "python_rng": random.getstate(),
            "numpy_rng": np.random.get_state()[1].copy(), "grad_mode": torch.is_grad_enabled(),
            "default_dtype": torch.get_default_dtype()}


# -- rows ----------------------------------------------------------------------------------------

@dataclass
class Row:
    name: str  # a public name, or "cli:<command>"
    label: str
    run: Callable[[Learner, Path], Any]
    expected: str
    verify: Callable[[Any], bool] | None = None  # for ok rows: is the result right?
    lang: str = "both"
    mention: str | None = None  # a text the refusal must contain (it names what was passed)
    note: str = ""  # a known, documented exception to the rules

    @property
    def id(self) -> str:
        return f"{self.name} | {self.label}"


ROWS: list[Row] = []


def row(name: str, label: str, run: Callable[[Learner, Path], Any], expected: str, **kw: Any) -> None:
    assert expected in ("ok", "refused")
    plain = re.fullmatch(r"(\w+)=(\S+)", label)  # "max_nodes=-5": the refusal must show -5
    if expected == "refused" and plain and "mention" not in kw and not name.startswith("cli:"):
        kw["mention"] = plain.group(2).strip("'")
    ROWS.append(Row(name, label, run, expected, **kw))


def ok(name, label, run, verify=None, **kw):
    row(name, label, run, "ok", verify=verify, **kw)


def refused(name, label, run, **kw):
    row(name, label, run, "refused", **kw)


def text_of(result: Any) -> str:
    return result.to_text() if hasattr(result, "to_text") else str(result)


NAN = float("nan")
ODD = {"None": None, "int": 3, "str": "x", "list": [1, 2], "dict": {"a": 1}, "empty list": [],
       "float nan": NAN, "bool": True, "tensor": torch.ones(2)}


def _empty_graph_module() -> fx.GraphModule:
    g = fx.Graph()
    return fx.GraphModule(nn.Module(), g)


# graph_table / GraphTable -------------------------------------------------------------------------
G = fxcourse.graph_table
ok("graph_table", "fx.GraphModule", lambda L, t: G(L.gm), lambda r: "4 nodes" in text_of(r) and len(r) == 4)
ok("graph_table", "fx.Graph", lambda L, t: G(L.gm.graph), lambda r: "relu" in text_of(r))
ok("graph_table", "columns +users", lambda L, t: G(L.gm, columns=["+users"]), lambda r: "users" in text_of(r))
ok("graph_table", "columns as a str", lambda L, t: G(L.gm, columns="name"), lambda r: "relu" in text_of(r))
ok("graph_table", "max_rows=None", lambda L, t: G(L.gm, max_rows=None), lambda r: len(r) == 4)
ok("graph_table", "max_rows=1 folds", lambda L, t: G(L.gm, max_rows=1), lambda r: "4 nodes" in text_of(r))
ok("graph_table", "an empty fx.Graph says 0 nodes", lambda L, t: G(fx.Graph()), lambda r: "0 nodes" in text_of(r))
ok("graph_table", "a traced training model", lambda L, t: G(fx.symbolic_trace(L.model)), lambda r: "bn" in text_of(r))
ok("graph_table", "TorchScript function", lambda L, t: G(torch.jit.script(_relu_plus_one)),
   lambda r: "aten::relu" in text_of(r))
for _k, _v in ODD.items():
    refused("graph_table", f"obj {_k}", lambda L, t, v=_v: G(v))
refused("graph_table", "an untraced nn.Module", lambda L, t: G(L.model), mention="Net")
refused("graph_table", "a plain function", lambda L, t: G(_relu_plus_one), mention="_relu_plus_one")
refused("graph_table", "a list of graphs", lambda L, t: G([L.gm]))
refused("graph_table", "columns=5", lambda L, t: G(L.gm, columns=5))
refused("graph_table", "an unknown column", lambda L, t: G(L.gm, columns=["nope"]), mention="nope")
refused("graph_table", "a non-str column", lambda L, t: G(L.gm, columns=[1]))
refused("graph_table", "columns=[]", lambda L, t: G(L.gm, columns=[]))
refused("graph_table", "columns mixing +name and name", lambda L, t: G(L.gm, columns=["+users", "name"]), mention="+users")
refused("graph_table", "max_rows=0", lambda L, t: G(L.gm, max_rows=0))
refused("graph_table", "max_rows=-1", lambda L, t: G(L.gm, max_rows=-1))
refused("graph_table", "max_rows=True", lambda L, t: G(L.gm, max_rows=True))
refused("graph_table", "max_rows=2.5", lambda L, t: G(L.gm, max_rows=2.5))
refused("graph_table", "max_rows='10'", lambda L, t: G(L.gm, max_rows="10"))
refused("graph_table", "misspelt keyword colums=", lambda L, t: G(L.gm, colums=["name"]), mention="colums")
refused("graph_table", "no argument", lambda L, t: G())
refused("graph_table", "obj twice", lambda L, t: G(L.gm, obj=L.gm))
refused("graph_table", "in 中文", lambda L, t: G(None), lang="zh")
refused("graph_table", "in English", lambda L, t: G(None), lang="en")
refused("graph_table", "an unknown +column", lambda L, t: G(L.gm, columns=["+nope"]), mention="nope")
ok("graph_table", "an ExportedProgram", lambda L, t: G(torch.export.export(L.lin, (L.x24,))),
   lambda r: "input_kind" in text_of(r) and "parameter" in text_of(r))
ok("GraphTable", "is what graph_table returns; to_html", lambda L, t: G(L.gm),
   lambda r: isinstance(r, fxcourse.GraphTable) and "<table" in r.to_html())
refused("GraphTable", "to_text(max_rows=-3)", lambda L, t: G(L.gm).to_text(max_rows=-3))
ok("GraphTable", "to_text(max_rows=2)", lambda L, t: G(L.gm).to_text(max_rows=2), lambda r: "placeholder" in r)

# graph_diff / GraphDiff ---------------------------------------------------------------------------
D = fxcourse.graph_diff


def _retargeted(gm):
    import copy
    after = copy.deepcopy(gm)
    next(n for n in after.graph.nodes if n.name == "relu").target = torch.sigmoid
    after.recompile()
    return after


ok("graph_diff", "same graph", lambda L, t: D(L.gm, L.gm), lambda r: len(r.changed) == 0)
ok("graph_diff", "a retargeted node", lambda L, t: D(L.gm, _retargeted(L.gm)),
   lambda r: r.changed[0].kind == "retargeted")
ok("graph_diff", "context=0", lambda L, t: D(L.gm, _retargeted(L.gm), context=0), lambda r: "retargeted" in text_of(r))
ok("graph_diff", "two fx.Graphs", lambda L, t: D(L.gm.graph, _retargeted(L.gm).graph), lambda r: len(r.changed) == 1)
ok("graph_diff", "empty graphs say 0 nodes", lambda L, t: D(fx.Graph(), fx.Graph()), lambda r: "0 nodes" in text_of(r))
for _k, _v in ODD.items():
    refused("graph_diff", f"before {_k}", lambda L, t, v=_v: D(v, L.gm))
refused("graph_diff", "after None", lambda L, t: D(L.gm, None))
refused("graph_diff", "after an nn.Module", lambda L, t: D(L.gm, L.model))
refused("graph_diff", "TorchScript (fx only)", lambda L, t: D(torch.jit.script(_relu_plus_one), L.gm))
refused("graph_diff", "context=-1", lambda L, t: D(L.gm, L.gm, context=-1))
refused("graph_diff", "context='2'", lambda L, t: D(L.gm, L.gm, context="2"))
refused("graph_diff", "context=2.5", lambda L, t: D(L.gm, L.gm, context=2.5))
refused("graph_diff", "context=True", lambda L, t: D(L.gm, L.gm, context=True))
refused("graph_diff", "misspelt keyword contxt=", lambda L, t: D(L.gm, L.gm, contxt=1), mention="contxt")
refused("graph_diff", "four arguments by position", lambda L, t: D(L.gm, L.gm, 2, 3))
refused("graph_diff", "one argument", lambda L, t: D(L.gm))
ok("GraphDiff", "is what graph_diff returns; to_html", lambda L, t: D(L.gm, _retargeted(L.gm)),
   lambda r: isinstance(r, fxcourse.GraphDiff) and "sigmoid" in r.to_html())

# bytecode / Bytecode -----------------------------------------------------------------------------
B = fxcourse.bytecode
ok("bytecode", "a function", lambda L, t: B(_relu_plus_one), lambda r: "relu" in text_of(r))
ok("bytecode", "a lambda", lambda L, t: B(lambda x: x + 1), lambda r: isinstance(r, fxcourse.Bytecode))
ok("bytecode", "an nn.Module (its forward)", lambda L, t: B(L.model), lambda r: "forward" in text_of(r))
ok("bytecode", "a bound method", lambda L, t: B(L.model.forward), lambda r: "forward" in text_of(r))
ok("bytecode", "torch.compile of a function, not yet run", lambda L, t: B(torch.compile(_relu_plus_one)),
   lambda r: not r.compiled)
for _k, _v in ODD.items():
    refused("bytecode", f"fn {_k}", lambda L, t, v=_v: B(v))
refused("bytecode", "a builtin (len)", lambda L, t: B(len), mention="len")
refused("bytecode", "a tensor method", lambda L, t: B(L.x.sin))
refused("bytecode", "a class", lambda L, t: B(Net))
refused("bytecode", "the name of a function", lambda L, t: B("_relu_plus_one"), mention="_relu_plus_one")
refused("bytecode", "unknown keyword full=", lambda L, t: B(_relu_plus_one, full=True), mention="full")
refused("bytecode", "two functions", lambda L, t: B(_relu_plus_one, _breaks))
ok("Bytecode", "to_text(full=True) and to_html", lambda L, t: B(_relu_plus_one),
   lambda r: isinstance(r, fxcourse.Bytecode) and r.to_text(full=True) and "<" in r.to_html())

# capture / Capture (Dynamo with the eager backend: a few seconds each) ----------------------------
C = fxcourse.capture
ok("capture", "a training model (BatchNorm statistics kept)", lambda L, t: C(L.model, L.x),
   lambda r: r.graph_count == 1 and r.break_count == 0)
ok("capture", "a function with a graph break", lambda L, t: C(_breaks, L.x), lambda r: r.break_count >= 1)
ok("capture", "an input with .grad", lambda L, t: C(_relu_plus_one, L.xg), lambda r: r.graph_count == 1)
for _k, _v in {"None": None, "int": 3, "str": "f", "list": [1], "tensor": torch.ones(2)}.items():
    refused("capture", f"fn {_k}", lambda L, t, v=_v: C(v, L.x))
refused("capture", "dynamic='yes'", lambda L, t: C(_relu_plus_one, L.x, dynamic="yes"))
refused("capture", "dynamic=1", lambda L, t: C(_relu_plus_one, L.x, dynamic=1))
refused("inductor_code", "dynamic='yes'", lambda L, t: I(_relu_plus_one, L.x, dynamic="yes"))
refused("inductor_code", "dynamic=0", lambda L, t: I(_relu_plus_one, L.x, dynamic=0))
refused("capture", "backend='nope'", lambda L, t: C(_relu_plus_one, L.x, backend="nope"), mention="nope")
refused("capture", "backend=3", lambda L, t: C(_relu_plus_one, L.x, backend=3))
refused("capture", "backend=['eager']", lambda L, t: C(_relu_plus_one, L.x, backend=["eager"]))
refused("capture", "dynamic=[]", lambda L, t: C(_relu_plus_one, L.x, dynamic=[]))
ok("capture", "a NaN input", lambda L, t: C(_relu_plus_one, L.keep(torch.full((2,), NAN))), lambda r: r.graph_count == 1)
refused("capture", "the function's own error", lambda L, t: C(_raises, L.x), mention="learner's own bug")
refused("capture", "a wrong shape", lambda L, t: C(L.model, L.x35))
refused("capture", "a str instead of a tensor", lambda L, t: C(L.model, "x"))
refused("capture", "no inputs for a model that needs one", lambda L, t: C(L.model))
refused("capture", "no argument at all", lambda L, t: C())
def _in_place(x):
    x.add_(1)
    return x * 2


ok("capture", "a function that writes into its input (the input kept)", lambda L, t: C(_in_place, L.x),
   lambda r: r.graph_count == 1)
ok("capture", "one of its graphs shows in graph_table", lambda L, t: G(C(_relu_plus_one, L.x).graphs[0]),
   lambda r: "relu" in text_of(r))
refused("capture", "the whole capture in graph_table: told to pass cap.graphs[0]",
        lambda L, t: G(C(_breaks, L.x)), mention="graphs[0]")
ok("capture", "call_again with a new shape recompiles", lambda L, t: C(_relu_plus_one, L.x).call_again(L.x35),
   lambda r: len(r.recompiles) >= 1 or r.graph_count >= 2)
ok("capture", "dynamic=True", lambda L, t: C(_relu_plus_one, L.x, dynamic=True), lambda r: r.graph_count == 1)
ok("Capture", "is what capture returns; to_text(full=True), to_html", lambda L, t: C(_relu_plus_one, L.x),
   lambda r: isinstance(r, fxcourse.Capture) and "relu" in r.to_text(full=True) and "<" in r.to_html())
refused("Capture", "call_again with a str", lambda L, t: C(_relu_plus_one, L.x).call_again("x"))

# compare_capture / Comparison (heavy: six captures, TorchScript in a child process) --------------
M = fxcourse.compare_capture
ok("compare_capture", "a training model, left as it was", lambda L, t: M(L.model, L.x),
   lambda r: isinstance(r, fxcourse.Comparison) and len(r.rows) == 6 and r["dynamo fullgraph=False"].worked)
for _k, _v in {"None": None, "int": 3, "str": "model", "list": [1]}.items():
    refused("compare_capture", f"model {_k}", lambda L, t, v=_v: M(v, L.x))
refused("compare_capture", "second_args=5", lambda L, t: M(L.model, L.x, second_args=5))
refused("compare_capture", "second_args='x'", lambda L, t: M(L.model, L.x, second_args="x"))
refused("compare_capture", "a model raising on its input", lambda L, t: M(_raises, L.x), mention="learner's own bug")
refused("compare_capture", "a wrong shape", lambda L, t: M(L.model, L.x35))
refused("compare_capture", "misspelt second_arg=", lambda L, t: M(L.model, L.x, second_arg=(L.x,)), mention="second_arg")
for _k, _v in {"'jit'": "jit", "an empty list": [], "a repeated name": ["torch.jit.script"] * 2,
               "a number": 3, "a name and a typo": ["torch.jit.script", "torch.jit.scirpt"]}.items():
    refused("compare_capture", f"paths={_k}", lambda L, t, v=_v: M(L.model, L.x, paths=v))
for _k, _v in {"latency='yes'": {"latency": "yes"}, "threads=0": {"threads": 0},
               "threads=1.5": {"threads": 1.5}, "rounds=0": {"rounds": 0}, "rounds=True": {"rounds": True}}.items():
    refused("compare_capture", _k, lambda L, t, v=_v: M(L.model, L.x, **v))
ok("compare_capture", "a function that writes into its input (the input kept)", lambda L, t: M(_in_place, L.x),
   lambda r: len(r.rows) == 6)
refused("compare_capture", "second_args of another shape the model rejects",
        lambda L, t: M(L.model, L.x, second_args=(L.x35,)))
refused("Comparison", "table['nope']", lambda L, t: _COMPARISON(L)["nope"], mention="nope")
ok("Comparison", "table['torch.jit.trace'] and to_html", lambda L, t: _COMPARISON(L),
   lambda r: r["torch.jit.trace"].worked and "<table" in r.to_html())

_CACHE: dict[str, Any] = {}


def _COMPARISON(L: Learner) -> Any:
    if "comparison" not in _CACHE:
        with torch.random.fork_rng(devices=[]):  # the row's own model: its seeding is not the library's
            model, args = zoo.example("mlp")
        _CACHE["comparison"] = M(model, *args)
    return _CACHE["comparison"]


# draw / Drawing ------------------------------------------------------------------------------------
W = fxcourse.draw
ok("draw", "fx.GraphModule", lambda L, t: W(L.gm), lambda r: "digraph" in r.to_text() and "<svg" in r.to_svg())
ok("draw", "shapes=False", lambda L, t: W(L.gm, shapes=False), lambda r: "relu" in r.to_text())
ok("draw", "max_nodes=None", lambda L, t: W(fx.symbolic_trace(L.model), max_nodes=None), lambda r: "bn" in r.to_text())
ok("draw", "a graph_diff", lambda L, t: W(D(L.gm, _retargeted(L.gm))), lambda r: "sigmoid" in r.to_text())
for _k, _v in ODD.items():
    refused("draw", f"obj {_k}", lambda L, t, v=_v: W(v))
refused("draw", "an untraced nn.Module", lambda L, t: W(L.model))
refused("draw", "an empty graph", lambda L, t: W(_empty_graph_module()))
refused("draw", "max_nodes=0", lambda L, t: W(L.gm, max_nodes=0))
refused("draw", "max_nodes=-5", lambda L, t: W(L.gm, max_nodes=-5))
refused("draw", "max_nodes=True", lambda L, t: W(L.gm, max_nodes=True))
refused("draw", "max_nodes='300'", lambda L, t: W(L.gm, max_nodes="300"))
refused("draw", "focus=3", lambda L, t: W(L.gm, focus=3))
refused("draw", "shapes='no'", lambda L, t: W(L.gm, shapes="no"))
refused("draw", "misspelt max_node=", lambda L, t: W(L.gm, max_node=10), mention="max_node")
refused("draw", "max_nodes by position", lambda L, t: W(L.gm, 10))
refused("draw", "focus on a module the graph lacks", lambda L, t: W(fx.symbolic_trace(L.model), focus="nope"), mention="nope")
ok("draw", "a capture", lambda L, t: W(C(_breaks, L.x)), lambda r: "digraph" in r.to_text())
ok("Drawing", "is what draw returns; repr and to_html", lambda L, t: W(L.gm),
   lambda r: isinstance(r, fxcourse.Drawing) and "Drawing" in repr(r) and "<svg" in r.to_html())

# inductor_code / InductorCode and aot_graphs / AOTGraphs ------------------------------------------
I = fxcourse.inductor_code
A = fxcourse.aot_graphs
ok("inductor_code", "a small function (one compile)", lambda L, t: _INDUCTOR(L),
   lambda r: isinstance(r, fxcourse.InductorCode) and len(r.kernels) >= 1)
for _k, _v in {"None": None, "int": 3, "str": "f", "tensor": torch.ones(2)}.items():
    refused("inductor_code", f"fn {_k}", lambda L, t, v=_v: I(v, L.x))
refused("inductor_code", "options=5", lambda L, t: I(_relu_plus_one, L.x, options=5))
refused("inductor_code", "an unknown option", lambda L, t: I(_relu_plus_one, L.x, options={"no_such_option": 1}),
        mention="no_such_option")
refused("inductor_code", "simdlen=-1", lambda L, t: I(_relu_plus_one, L.x, simdlen=-1))
refused("inductor_code", "simdlen='wide'", lambda L, t: I(_relu_plus_one, L.x, simdlen="wide"))
refused("inductor_code", "simdlen=True", lambda L, t: I(_relu_plus_one, L.x, simdlen=True))
refused("inductor_code", "the function's own error", lambda L, t: I(_raises, L.x), mention="learner's own bug")
refused("inductor_code", "misspelt option=", lambda L, t: I(_relu_plus_one, L.x, option={}), mention="option")
refused("InductorCode", "kernel('nope')", lambda L, t: _INDUCTOR(L).kernel("nope"), mention="nope")
ok("InductorCode", "to_text(source=True) and to_html", lambda L, t: _INDUCTOR(L),
   lambda r: "def " in r.to_text(source=True) or "void" in r.to_text(source=True))


def _INDUCTOR(L: Learner) -> Any:
    if "inductor" not in _CACHE:
        _CACHE["inductor"] = I(_relu_plus_one, L.x8)
    return _CACHE["inductor"]


ok("aot_graphs", "an input that needs grad: forward and backward",
   lambda L, t: A(_relu_plus_one, L.xg), lambda r: r.backward is not None and "relu" in text_of(r))
ok("aot_graphs", "a training model", lambda L, t: A(L.model, L.xg), lambda r: r.forward is not None)
ok("aot_graphs", "partitioner='min_cut'", lambda L, t: A(_relu_plus_one, L.xg, partitioner="min_cut"),
   lambda r: isinstance(r, fxcourse.AOTGraphs))
for _k, _v in {"None": None, "int": 3, "str": "f", "dict": {}}.items():
    refused("aot_graphs", f"fn {_k}", lambda L, t, v=_v: A(v, L.x))
refused("aot_graphs", "partitioner='fast'", lambda L, t: A(_relu_plus_one, L.x, partitioner="fast"), mention="fast")
refused("aot_graphs", "partitioner=3", lambda L, t: A(_relu_plus_one, L.x, partitioner=3))
refused("aot_graphs", "partitioner=[] (unhashable)", lambda L, t: A(_relu_plus_one, L.x, partitioner=[]))
refused("aot_graphs", "decompositions as a list", lambda L, t: A(_relu_plus_one, L.x, decompositions=[1]))
ok("aot_graphs", "decompositions={}", lambda L, t: A(_relu_plus_one, L.xg, decompositions={}),
   lambda r: isinstance(r, fxcourse.AOTGraphs))
refused("aot_graphs", "an int instead of a tensor", lambda L, t: A(_relu_plus_one, 3))
refused("aot_graphs", "decompositions=5", lambda L, t: A(_relu_plus_one, L.x, decompositions=5))
refused("aot_graphs", "the function's own error", lambda L, t: A(_raises, L.x), mention="learner's own bug")
refused("aot_graphs", "a graph break", lambda L, t: A(_breaks, L.x))
refused("aot_graphs", "misspelt partition=", lambda L, t: A(_relu_plus_one, L.x, partition="default"),
        mention="partition")
ok("AOTGraphs", "ops() and to_html", lambda L, t: A(_relu_plus_one, L.xg),
   lambda r: isinstance(r, fxcourse.AOTGraphs) and "relu" in " ".join(r.ops(r.forward)) and "<" in r.to_html())

# lowering / Lowering (torch-mlir) -------------------------------------------------------------------
LO = fxcourse.lowering
ok("lowering", "nn.Linear to torch", lambda L, t: LO(L.lin, L.x24, stages=("torch",)),
   lambda r: r.stage("torch").dialects and "torch" in text_of(r))
refused("lowering", "model None", lambda L, t: LO(None, L.x))
refused("lowering", "a plain function", lambda L, t: LO(_relu_plus_one, L.x))
refused("lowering", "stages=None", lambda L, t: LO(L.lin, L.x, stages=None))
refused("lowering", "stages=[]", lambda L, t: LO(L.lin, L.x, stages=[]))
refused("lowering", "stages=['nope']", lambda L, t: LO(L.lin, L.x, stages=["nope"]), mention="nope")
refused("lowering", "stages='torch' (a str)", lambda L, t: LO(L.lin, L.x, stages="torch"))
refused("lowering", "stages=[3]", lambda L, t: LO(L.lin, L.x, stages=[3]))
refused("lowering", "strict='yes'", lambda L, t: LO(L.lin, L.x, stages=["torch"], strict="yes"))
refused("lowering", "dynamic_shapes=5", lambda L, t: LO(L.lin, L.x, stages=["torch"], dynamic_shapes=5))
ok("lowering", "an ExportedProgram alone", lambda L, t: LO(torch.export.export(L.lin, (L.x24,)), stages=["torch"]),
   lambda r: "torch" in r.dialects if hasattr(r, "dialects") else r.stage("torch").dialects)
refused("lowering", "an ExportedProgram with inputs it would ignore",
        lambda L, t: LO(torch.export.export(L.lin, (L.x24,)), L.x35, stages=["torch"]))
refused("lowering", "a wrong shape", lambda L, t: LO(L.lin, L.x35, stages=["torch"]))
refused("lowering", "misspelt stage=", lambda L, t: LO(L.lin, L.x, stage=["torch"]), mention="stage")
refused("Lowering", "stage('nope')",
        lambda L, t: LO(L.lin, L.x24, stages=("torch",)).stage("nope"), mention="nope")

# bar_plot / Plot ---------------------------------------------------------------------------------------
P = fxcourse.bar_plot
ok("bar_plot", "two bars", lambda L, t: P({"eager": 1.0, "compiled": 0.5}, title="time"),
   lambda r: "eager" in r.to_text() and "compiled" in r.to_text() and "0.5" in r.to_text())
ok("bar_plot", "series", lambda L, t: P({"a": {"x": 1, "y": 2}, "b": {"x": 3, "y": 4}}, title="t"),
   lambda r: isinstance(r, fxcourse.Plot))
ok("bar_plot", "a negative bar", lambda L, t: P({"a": -1.5, "b": 2}, title="t"), lambda r: "-1.5" in r.to_text())
ok("bar_plot", "log=True", lambda L, t: P({"a": 1, "b": 1000}, title="t", log=True), lambda r: isinstance(r, fxcourse.Plot))
ok("bar_plot", "a (English, 中文) title", lambda L, t: P({"a": 1}, title=("time", "时间")),
   lambda r: "time" in r.to_text())
ok("bar_plot", "a zero bar is labelled", lambda L, t: P({"a": 0, "b": 1}, title="t"), lambda r: isinstance(r, fxcourse.Plot))
for _k, _v in {"None": None, "int": 3, "str": "x", "list": [1, 2], "empty dict": {}, "tensor": torch.ones(2)}.items():
    refused("bar_plot", f"values {_k}", lambda L, t, v=_v: P(v, title="t"))
for _k, _v in {"None": None, "NaN": NAN, "inf": math.inf, "bool": True, "str": "1.2", "list": [1]}.items():
    refused("bar_plot", f"a value {_k}", lambda L, t, v=_v: P({"a": v}, title="t"))
refused("bar_plot", "an int beyond float's range", lambda L, t: P({"a": 10**400}, title="t"))
refused("bar_plot", "a tensor of three values", lambda L, t: P({"a": torch.ones(3)}, title="t"))
refused("bar_plot", "a complex value", lambda L, t: P({"a": 1j}, title="t"))
ok("bar_plot", "a 0-d tensor and a NumPy float", lambda L, t: P({"a": torch.tensor(1.5), "b": np.float32(2.5)}, title="t"),
   lambda r: "1.5" in r.to_text() and "2.5" in r.to_text())
refused("bar_plot", "an empty series dict", lambda L, t: P({"a": {}}, title="t"))
refused("bar_plot", "numbers mixed with groups", lambda L, t: P({"a": 1, "b": {"x": 1}}, title="t"))
refused("bar_plot", "log with a negative value", lambda L, t: P({"a": -1, "b": 2}, title="t", log=True))
refused("bar_plot", "log='yes'", lambda L, t: P({"a": 1}, title="t", log="yes"))
refused("bar_plot", "title=None", lambda L, t: P({"a": 1}, title=None))
refused("bar_plot", "title=3", lambda L, t: P({"a": 1}, title=3))
refused("bar_plot", "unit=['s']", lambda L, t: P({"a": 1}, title="t", unit=["s"]))
refused("bar_plot", "fmt='{:q}'", lambda L, t: P({"a": 1}, title="t", fmt="{:q}"))
refused("bar_plot", "series=3", lambda L, t: P({"a": {"x": 1}}, title="t", series=3))
refused("bar_plot", "no title", lambda L, t: P({"a": 1}), mention="title")
refused("bar_plot", "misspelt titel=", lambda L, t: P({"a": 1}, titel="t"), mention="titel")
ok("bar_plot", "a huge value", lambda L, t: P({"a": 1e12, "b": 1}, title="t"), lambda r: "1" in r.to_text())
ok("bar_plot", "a None label is shown as it is", lambda L, t: P({None: 1}, title="t"), lambda r: "None" in r.to_text())
ok("bar_plot", "an int label", lambda L, t: P({8: 1.0, 16: 2.0}, title="t"), lambda r: "16" in r.to_text())
ok("Plot", "to_html and to_png", lambda L, t: P({"a": 1}, title="t"),
   lambda r: "<img" in r.to_html() or "<svg" in r.to_html() and r.to_png().startswith(b"\x89PNG"))

# check / CheckResult and hint (documented: they never raise; a refusal is a result) --------------
K = fxcourse.check
H = fxcourse.hint


def _count_by_opcode(gm):
    return dict(collections.Counter(n.op for n in gm.graph.nodes))


def _rng_and_grad_mode_thief(gm):
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    torch.set_grad_enabled(False)
    torch.set_default_dtype(torch.float64)
    return _count_by_opcode(gm)


ok("check", "a right answer passes", lambda L, t: K("lab00.1", _count_by_opcode), lambda r: r.status == "passed")
ok("check", "a right answer that reseeds and turns grad off (process put back)",
   lambda L, t: K("lab00.1", _rng_and_grad_mode_thief), lambda r: r.status == "passed")
refused("check", "a wrong answer", lambda L, t: K("lab00.1", lambda gm: {"placeholder": 1}))
refused("check", "an answer that raises", lambda L, t: K("lab00.1", _raises))
refused("check", "answer None", lambda L, t: K("lab00.1", None))
refused("check", "answer 3", lambda L, t: K("lab00.1", 3))
refused("check", "answer a str", lambda L, t: K("lab00.1", "count_by_opcode"))
refused("check", "task None", lambda L, t: K(None, _count_by_opcode))
refused("check", "task 1", lambda L, t: K(1, _count_by_opcode))
refused("check", "an unknown task", lambda L, t: K("lab99.9", _count_by_opcode))
refused("check", "task ''", lambda L, t: K("", _count_by_opcode))
refused("check", "task as a list", lambda L, t: K(["lab00.1"], _count_by_opcode))
refused("check", "no answer", lambda L, t: K("lab00.1"), mention="answer")
ok("CheckResult", "is what check returns; to_html", lambda L, t: K("lab00.1", _count_by_opcode),
   lambda r: isinstance(r, fxcourse.CheckResult) and "<" in r.to_html())
ok("hint", "level 1", lambda L, t: H("lab00.1", level=1), lambda r: r.level == 1 and r.count >= 1)
ok("hint", "the next hint", lambda L, t: H("lab00.2"), lambda r: r.level >= 1)
for _k, _v in {"0": 0, "-1": -1, "99": 99, "True": True, "'1'": "1", "1.0": 1.0, "nan": NAN}.items():
    refused("hint", f"level={_k}", lambda L, t, v=_v: H("lab00.1", level=v))
for _k, _v in {"None": None, "int": 3, "unknown": "lab99.1", "list": ["lab00.1"]}.items():
    refused("hint", f"task {_k}", lambda L, t, v=_v: H(v))
refused("hint", "misspelt levle=", lambda L, t: H("lab00.1", levle=1), mention="levle")

# language -------------------------------------------------------------------------------------
LG = fxcourse.language
for _v in ("en", "zh", "both", "zh-CN", " English "):
    ok("language", repr(_v), lambda L, t, v=_v: LG(v), lambda r: r.lang in ("en", "zh", "both"))
ok("language", "no argument tells the language in force", lambda L, t: LG(), lambda r: r.lang == "both")
for _k, _v in {"'fr'": "fr", "''": "", "3": 3, "True": True, "['en']": ["en"], "b'en'": b"en"}.items():
    refused("language", _k, lambda L, t, v=_v: LG(v))
refused("language", "two languages", lambda L, t: LG("en", "zh"))

# pick ------------------------------------------------------------------------------------------
PK = fxcourse.pick
ok("pick", "two sentences", lambda L, t: PK("3 graphs", "3 个图"), lambda r: r == "3 graphs / 3 个图")
ok("pick", "sep=' | '", lambda L, t: PK("a", "甲", sep=" | "), lambda r: r == "a | 甲")
for _k, _v in {"None": None, "int": 3, "a pair": ("a", "甲"), "bytes": b"a"}.items():
    refused("pick", f"en {_k}", lambda L, t, v=_v: PK(v, "甲"))
    refused("pick", f"zh {_k}", lambda L, t, v=_v: PK("a", v))
refused("pick", "sep=None", lambda L, t: PK("a", "甲", sep=None))
refused("pick", "one sentence only", lambda L, t: PK("a"))
refused("pick", "misspelt spe=", lambda L, t: PK("a", "甲", spe="|"), mention="spe")

# progress / Progress -------------------------------------------------------------------------------


def _lab_course(tmp: Path) -> Path:
    (tmp / "labs").mkdir(parents=True, exist_ok=True)
    nb = new_notebook(cells=[new_markdown_cell("# Lab 00"), new_code_cell("check('lab00.1', f)")],
                      metadata={"kernelspec": KERNELSPEC})
    nbformat.write(nb, tmp / "labs" / "lab00_warmup.ipynb")
    return tmp


PR = fxcourse.progress
ok("progress", "a course folder", lambda L, t: PR(_lab_course(t)), lambda r: len(r.tasks) >= 3)
ok("progress", "its labs/ folder as a str", lambda L, t: PR(str(_lab_course(t) / "labs")), lambda r: len(r.tasks) >= 3)
ok("progress", "one lab", lambda L, t: PR(_lab_course(t), lab="lab00"),
   lambda r: {s.task for s in r.tasks} == {"lab00.1", "lab00.2", "lab00.3"})
refused("progress", "a folder with no labs", lambda L, t: PR(t))
refused("progress", "a path that does not exist", lambda L, t: PR(t / "lasb"), mention="lasb")
refused("progress", "where=3", lambda L, t: PR(3))
refused("progress", "where as a list", lambda L, t: PR([str(t)]), mention="list")
refused("progress", "where=3 with a lab", lambda L, t: PR(3, lab="lab00"))
refused("progress", "lab='lab99'", lambda L, t: PR(_lab_course(t), lab="lab99"), mention="lab99")
refused("progress", "lab=3", lambda L, t: PR(_lab_course(t), lab=3))
refused("progress", "lab=''", lambda L, t: PR(_lab_course(t), lab=""))
refused("progress", "misspelt labs=", lambda L, t: PR(_lab_course(t), labs="lab00"), mention="labs")
ok("Progress", "to_text and to_html", lambda L, t: PR(_lab_course(t)),
   lambda r: isinstance(r, fxcourse.Progress) and "lab00.1" in r.to_text() and "<table" in r.to_html())


# torch_logs, no_torchscript_warning, is_torchscript_deprecation --------------------------------------
def _logs(*names, **switches):
    torch._dynamo.reset()
    with fxcourse.torch_logs(*names, **switches) as records:
        if switches:  # as the lectures use it: torch.compile inside the block
            with contextlib.redirect_stdout(io.StringIO()):
                torch.compile(_breaks, backend="eager")(torch.ones(2))
    torch._dynamo.reset()
    return records


ok("torch_logs", "no argument", lambda L, t: _logs(), lambda r: isinstance(r, list))
ok("torch_logs", "graph_breaks=True records the break", lambda L, t: _logs(graph_breaks=True),
   lambda r: any("graph_breaks" in rec.name for rec in r))
ok("torch_logs", "a torch logger name", lambda L, t: _logs("torch._dynamo"), lambda r: isinstance(r, list))
refused("torch_logs", "a name that is not a torch logger", lambda L, t: _logs("dynamo"), mention="dynamo")
refused("torch_logs", "a name 3", lambda L, t: _logs(3))
refused("torch_logs", "a name None", lambda L, t: _logs(None))
refused("torch_logs", "an unknown switch", lambda L, t: _logs(graph_braeks=True), mention="graph_braeks")
refused("torch_logs", "graph_breaks='yes'", lambda L, t: _logs(graph_breaks="yes"))


def _no_ts_warning(*args):
    import warnings
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with fxcourse.no_torchscript_warning(*args):
            warnings.warn("`torch.jit.trace` is deprecated. Please switch to `torch.compile`.", FutureWarning)
            warnings.warn("other", UserWarning)
    return [str(w.message) for w in seen]


ok("no_torchscript_warning", "silences only that warning", lambda L, t: _no_ts_warning(), lambda r: r == ["other"])
refused("no_torchscript_warning", "an argument", lambda L, t: _no_ts_warning(3))
refused("no_torchscript_warning", "a keyword", lambda L, t: fxcourse.no_torchscript_warning(quiet=True),
        mention="quiet")
IS = fxcourse.is_torchscript_deprecation
ok("is_torchscript_deprecation", "its text", lambda L, t: IS("`torch.jit.script` is deprecated. Please switch"),
   lambda r: r is True)
ok("is_torchscript_deprecation", "a FutureWarning", lambda L, t: IS(FutureWarning("`torch.jit.trace` is deprecated.")),
   lambda r: r is True)
for _k, _v in {"None": None, "int": 3, "other text": "something else", "empty": "", "list": ["`torch.jit.trace` is deprecated"],
               "upper case": "`TORCH.JIT.TRACE` IS DEPRECATED"}.items():
    ok("is_torchscript_deprecation", f"{_k} is not it", lambda L, t, v=_v: IS(v), lambda r: r is False)
refused("is_torchscript_deprecation", "no argument", lambda L, t: IS())

# zoo -------------------------------------------------------------------------------------------------
def _example_keeps_rng(L: Learner, t: Path) -> Any:
    state = torch.get_rng_state()
    expected = torch.randn(3)
    torch.set_rng_state(state)
    model, args = zoo.example("mlp", seed=5)
    # asserted, not skipped: the learner's random stream goes on as if zoo.example had not run
    got = torch.randn(3)
    torch.set_rng_state(state)  # the row's own draws put back, so the harness sees only zoo.example
    assert torch.equal(got, expected), "zoo.example moved the global random stream"
    return model, args


ok("zoo", "example('mlp') leaves the global RNG alone", _example_keeps_rng,
   lambda r: isinstance(r[0], zoo.MLP) and not r[0].training)
for _n in ("mlp", "gate", "conv_bn_relu", "shared_conv", "clamp_linear", "item_break", "wrapped_split"):
    ok("zoo", f"example({_n!r}) runs on its inputs", lambda L, t, n=_n: (lambda m, a: m(*a))(*zoo.example(n)),
       lambda r: isinstance(r, torch.Tensor) or isinstance(r, tuple))
ok("zoo", "the same seed, the same model", lambda L, t: torch.equal(zoo.example("mlp", 3)[0].fc1.weight,
                                                                    zoo.example("mlp", 3)[0].fc1.weight),
   lambda r: r is True)
ok("zoo", "a negative seed", lambda L, t: zoo.example("mlp", seed=-1), lambda r: isinstance(r[0], zoo.MLP))
ok("zoo", "names()", lambda L, t: zoo.names(), lambda r: "mlp" in r and "resnet18" in r)
for _k, _v in {"None": None, "int": 3, "unknown": "mlpp", "list": ["mlp"], "empty": "", "upper": "MLP"}.items():
    refused("zoo", f"example name {_k}", lambda L, t, v=_v: zoo.example(v))
for _k, _v in {"str": "0", "bool": True, "float": 2.5, "None": None, "2**70": 2**70, "-2**64": -2**64}.items():
    refused("zoo", f"example seed {_k}", lambda L, t, v=_v: zoo.example("mlp", seed=v))
refused("zoo", "example misspelt sed=", lambda L, t: zoo.example("mlp", sed=1), mention="sed")
refused("zoo", "names(3)", lambda L, t: zoo.names(3))
ok("zoo", "pretend_trained changes a BatchNorm in place (documented)",
   lambda L, t: zoo.pretend_trained(zoo.example("conv_bn_relu")[0]), lambda r: float(r.bn.running_var.min()) >= 0.5)
refused("zoo", "pretend_trained(None)", lambda L, t: zoo.pretend_trained(None))
refused("zoo", "pretend_trained('mlp')", lambda L, t: zoo.pretend_trained("mlp"))
refused("zoo", "pretend_trained seed='x'",
        lambda L, t: zoo.pretend_trained(zoo.example("conv_bn_relu")[0], seed="x"))
refused("zoo", "resnet18(3)", lambda L, t: zoo.resnet18(3))


# -- the command line --------------------------------------------------------------------------------



def _notebook(source: str = "x = 1") -> nbformat.NotebookNode:
    return new_notebook(cells=[new_markdown_cell("# Notes", metadata={"tags": ["lang-en"]}),
                               new_markdown_cell("# 笔记", metadata={"tags": ["lang-zh"]}),
                               new_code_cell(source)], metadata={"kernelspec": KERNELSPEC})


def _course(tmp: Path, built: bool = True) -> Path:
    return small_course(tmp / "fxcourse", built=built)


def _edited_lab(tmp: Path) -> Path:
    root = _course(tmp)
    lab = root / "labs" / "lab98_demo.ipynb"
    nb = nbformat.read(lab, as_version=4)
    nb.cells.append(new_code_cell("my_own_work = 42"))
    nbformat.write(nb, lab)
    return root


@dataclass
class Cli:
    argv: list[str]
    cwd: Path


def cli_row(command: str, label: str, setup: Callable[[Path], Cli], expected: str, verify=None, **kw) -> None:
    row(f"cli:{command}", label, lambda L, t: setup(t), expected, verify=verify, **kw)


def _in(folder_of: Callable[[Path], Path], *argv: str) -> Callable[[Path], Cli]:
    return lambda t: Cli(list(argv), folder_of(t))


def _here(*argv: str) -> Callable[[Path], Cli]:
    return lambda t: Cli(list(argv), t)


def _with_notebooks(*argv: str, folder: str = "notes") -> Callable[[Path], Cli]:
    def setup(t: Path) -> Cli:
        (t / folder).mkdir(exist_ok=True)
        nbformat.write(_notebook("1 / 0" if folder == "failing" else "x = 1"), t / folder / "a.ipynb")
        return Cli([a.replace("{nb}", str(t / folder / "a.ipynb")).replace("{dir}", str(t / folder)) for a in argv], t)
    return setup


def _stdout_has(*words: str) -> Callable[[Any], bool]:
    return lambda r: all(w in r["out"] for w in words)


# top level
cli_row("fxcourse", "--help", _here("--help"), "ok", _stdout_has("doctor", "labs", "nb"))
cli_row("fxcourse", "no command", _here(), "refused")
cli_row("fxcourse", "an unknown command", _here("doctr"), "refused")
cli_row("fxcourse", "an unknown option", _here("--verbose", "doctor"), "refused")
cli_row("fxcourse", "in 中文", _here("doctr"), "refused", lang="zh")
# doctor
cli_row("doctor", "--help", _here("doctor", "--help"), "ok", _stdout_has("doctor"))
cli_row("doctor", "runs", _here("doctor"), "ok", lambda r: r["code"] in (0, 1) and "torch" in r["out"])
cli_row("doctor", "an extra argument", _here("doctor", "now"), "refused")
# labs
cli_row("labs", "--help", _here("labs", "--help"), "ok", _stdout_has("build", "reset"))
cli_row("labs", "no action", _here("labs"), "refused")
cli_row("labs", "an unknown action", _here("labs", "rebuild"), "refused")
cli_row("labs build", "--help", _here("labs", "build", "--help"), "ok", _stdout_has("--force"))
cli_row("labs build", "builds a course", _in(lambda t: _course(t, built=False), "labs", "build"), "ok",
        lambda r: r["code"] == 0 and "lab98" in r["out"])
cli_row("labs build", "--force keeps the learner's edited lab in backups/", _in(_edited_lab, "labs", "build", "--force"),
        "ok", lambda r: r["code"] == 0)
cli_row("labs build", "outside a course", _here("labs", "build"), "refused")
cli_row("labs build", "an unknown lab name", _in(lambda t: _course(t, built=False), "labs", "build", "lab97"), "refused")
cli_row("labs build", "--force=yes", _in(lambda t: _course(t, built=False), "labs", "build", "--force=yes"), "refused")
cli_row("labs check", "--help", _here("labs", "check", "--help"), "ok", _stdout_has("check"))
cli_row("labs check", "up to date", _in(_course, "labs", "check"), "ok", lambda r: r["code"] == 0)
cli_row("labs check", "out of date (exit 1)", _in(lambda t: _course(t, built=False), "labs", "check"), "ok",
        lambda r: r["code"] == 1 and "labs build" in r["out"])
cli_row("labs check", "outside a course", _here("labs", "check"), "refused")
cli_row("labs check", "an extra argument", _in(_course, "labs", "check", "lab98"), "refused")
cli_row("labs reset", "--help", _here("labs", "reset", "--help"), "ok", _stdout_has("lab00"))
cli_row("labs reset", "an edited lab is backed up", _in(_edited_lab, "labs", "reset", "lab98"), "ok",
        lambda r: r["code"] == 0)
cli_row("labs reset", "no name", _in(_course, "labs", "reset"), "refused")
cli_row("labs reset", "an unknown lab", _in(_course, "labs", "reset", "lab97"), "refused")
cli_row("labs reset", "a path instead of a name", _in(_course, "labs", "reset", "labs/lab98_demo.ipynb"), "ok",
        lambda r: r["code"] == 0)
cli_row("labs reset", "outside a course", _here("labs", "reset", "lab98"), "refused")
# progress
cli_row("progress", "--help", _here("progress", "--help"), "ok", _stdout_has("--lab"))
cli_row("progress", "a course", _in(_lab_course, "progress"), "ok", _stdout_has("lab00.1"))
cli_row("progress", "--lab lab00", _in(_lab_course, "progress", "--lab", "lab00"), "ok", _stdout_has("lab00.1"))
cli_row("progress", "outside a course", _here("progress"), "refused")
cli_row("progress", "a missing folder", _here("progress", "no/such/folder"), "refused")
cli_row("progress", "--lab lab99", _in(_lab_course, "progress", "--lab", "lab99"), "refused")
cli_row("progress", "--lab with no value", _in(_lab_course, "progress", "--lab"), "refused")
# grading
cli_row("grading", "--help", _here("grading", "--help"), "ok", _stdout_has("course"))
cli_row("grading", "no OUT", _in(_course, "grading"), "refused")
cli_row("grading", "OUT inside the course", _in(_course, "grading", "inside"), "refused")
cli_row("grading", "outside a course", _here("grading", "out"), "refused")
cli_row("grading", "OUT is a file", lambda t: (_course(t), (t / "notes.txt").write_text("mine"),
                                                Cli(["grading", str(t / "notes.txt")], t / "fxcourse"))[-1], "refused")
cli_row("grading", "an unknown lab", _in(_course, "grading", "../grading-out", "lab97"), "refused")
cli_row("grading", "a course exported", _in(_course, "grading", "../grading-out"), "ok", _stdout_has("nbgrader"))
# i18n
cli_row("i18n", "--help", _here("i18n", "--help"), "ok", _stdout_has("export"))
cli_row("i18n", "no action", _here("i18n"), "refused")
cli_row("i18n check", "--help", _here("i18n", "check", "--help"), "ok", _stdout_has("--only"))
cli_row("i18n check", "a paired notebook", _with_notebooks("i18n", "check", "{nb}"), "ok",
        lambda r: r["code"] == 0 and "0 problems" in r["out"])
cli_row("i18n check", "--only parity", _with_notebooks("i18n", "check", "--only", "parity", "{dir}"), "ok",
        lambda r: r["code"] == 0)
cli_row("i18n check", "--only spelling", _with_notebooks("i18n", "check", "--only", "spelling", "{dir}"), "refused")
cli_row("i18n check", "a folder with no notebooks", _here("i18n", "check", "."), "refused")
cli_row("i18n check", "a missing path", _here("i18n", "check", "no/such.ipynb"), "refused")
cli_row("i18n check", "a notebook that is not JSON: reported as a problem (exit 1)",
        lambda t: ((t / "bad.ipynb").write_text("print('hi')"), Cli(["i18n", "check", str(t / "bad.ipynb")], t))[-1],
        "ok", lambda r: r["code"] == 1 and "not valid JSON" in r["out"])
cli_row("i18n export", "--help", _here("i18n", "export", "--help"), "ok", _stdout_has("--lang"))
cli_row("i18n export", "zh, no execute", _with_notebooks("i18n", "export", "--lang", "zh", "--no-execute", "out", "{dir}"),
        "ok", lambda r: r["code"] == 0)
cli_row("i18n export", "no --lang", _with_notebooks("i18n", "export", "out", "{dir}"), "refused")
cli_row("i18n export", "--lang fr", _with_notebooks("i18n", "export", "--lang", "fr", "out", "{dir}"), "refused")
cli_row("i18n export", "no OUT", _here("i18n", "export", "--lang", "zh"), "refused")
cli_row("i18n export", "OUT over the source",
        _with_notebooks("i18n", "export", "--lang", "zh", "--no-execute", ".", "notes/a.ipynb"), "refused")
cli_row("i18n export", "OUT is a file",
        lambda t: ((t / "mine.txt").write_text("mine"),
                   _with_notebooks("i18n", "export", "--lang", "zh", "--no-execute", "mine.txt", "{dir}")(t))[-1],
        "refused")
cli_row("i18n export", "OUT already holds the learner's file of that name (backed up)",
        lambda t: ((t / "out" / "notes").mkdir(parents=True), (t / "out" / "notes" / "a.ipynb").write_text("my own notes"),
                   _with_notebooks("i18n", "export", "--lang", "zh", "--no-execute", "out", "{dir}")(t))[-1],
        "ok", _stdout_has("backups"))
cli_row("grading", "OUT already holds the learner's files (kept)",
        lambda t: (_course(t), (t / "grading-out").mkdir(), (t / "grading-out" / "mine.txt").write_text("mine"),
                   Cli(["grading", "../grading-out"], t / "fxcourse"))[-1], "ok", _stdout_has("nbgrader"))
cli_row("labs reset", "an empty name", _in(_course, "labs", "reset", ""), "refused")
cli_row("progress", "--lab ''", _in(_lab_course, "progress", "--lab", ""), "refused")
cli_row("progress", "a file instead of a folder",
        lambda t: ((t / "a.txt").write_text("x"), Cli(["progress", "a.txt"], t))[-1], "refused")
cli_row("i18n check", "the default folders missing here", _here("i18n", "check"), "refused")
cli_row("i18n check", "a .txt file", lambda t: ((t / "a.txt").write_text("x"), Cli(["i18n", "check", "a.txt"], t))[-1],
        "refused")
cli_row("i18n check", "a notebook with a 中文 name",
        lambda t: (nbformat.write(_notebook(), t / "笔记.ipynb"), Cli(["i18n", "check", "笔记.ipynb"], t))[-1], "ok",
        _stdout_has("0 problems"))
cli_row("i18n export", "the default folders missing here", _here("i18n", "export", "--lang", "zh", "out"), "refused")
cli_row("grading", "OUT ''", _in(_course, "grading", ""), "refused")
# slides
cli_row("slides", "--help", _here("slides", "--help"), "ok", _stdout_has("mark"))
cli_row("slides", "no action", _here("slides"), "refused")
cli_row("slides mark", "--help", _here("slides", "mark", "--help"), "ok", _stdout_has("course"))
cli_row("slides mark", "a notebook (its cells kept)", _with_notebooks("slides", "mark", "{dir}"), "ok",
        lambda r: r["code"] == 0)
cli_row("slides mark", "a missing path", _here("slides", "mark", "no/such.ipynb"), "refused")
cli_row("slides mark", "the default course/ missing", _here("slides", "mark"), "refused")
cli_row("slides mark", "a .txt file", lambda t: ((t / "a.txt").write_text("x"), Cli(["slides", "mark", "a.txt"], t))[-1],
        "refused")
cli_row("slides check", "--help", _here("slides", "check", "--help"), "ok", _stdout_has("course"))
cli_row("slides check", "an unmarked notebook (exit 1)", _with_notebooks("slides", "check", "{dir}"), "ok",
        lambda r: r["code"] == 1)
cli_row("slides check", "a missing path", _here("slides", "check", "no/such.ipynb"), "refused")
cli_row("slides check", "a notebook that is not JSON",
        lambda t: ((t / "bad.ipynb").write_text("{"), Cli(["slides", "check", str(t / "bad.ipynb")], t))[-1],
        "refused")
# nb run
cli_row("nb", "--help", _here("nb", "--help"), "ok", _stdout_has("run"))
cli_row("nb", "no action", _here("nb"), "refused")
cli_row("nb run", "--help", _here("nb", "run", "--help"), "ok", _stdout_has("notebooks"))
cli_row("nb run", "an option it does not have", _here("nb", "run", "--timeout", "3", "a.ipynb"), "refused")
cli_row("slides check", "the default course/ missing", _here("slides", "check"), "refused")
cli_row("nb run", "no path", _here("nb", "run"), "refused")
cli_row("nb run", "a missing notebook", _here("nb", "run", "lab00_warmpu.ipynb"), "refused")
cli_row("nb run", "a .py file", lambda t: ((t / "a.py").write_text("x = 1"), Cli(["nb", "run", str(t / "a.py")], t))[-1],
        "refused")
cli_row("nb run", "an empty folder", _here("nb", "run", "."), "refused")
cli_row("nb run", "an empty notebook file",
        lambda t: ((t / "e.ipynb").write_bytes(b""), Cli(["nb", "run", str(t / "e.ipynb")], t))[-1], "refused")
cli_row("nb run", "a notebook whose cell raises (cells kept)", _with_notebooks("nb", "run", "{nb}", folder="failing"),
        "refused")
cli_row("nb run", "a notebook (runs in a fresh kernel)", _with_notebooks("nb", "run", "{nb}"), "ok",
        lambda r: r["code"] == 0 and " s" in r["out"])


# -- every refusal again, for a reader of 中文 only and of English only -------------------------------
# (the rows that compile or run a kernel stay in both languages only, to keep the file fast)
_SLOW = ("own error", "own bug", "wrong shape", "raising", "graph break", "a str instead", "no inputs", "an int instead",
         "call_again", "the whole capture", "ExportedProgram with", "stage(", "kernel(", "table[", "rejects", "raises",
         "--lab", "a course", "OUT", "export", "build", "reset", "grading")
for _r in list(ROWS):
    if _r.expected == "refused" and _r.lang == "both" and not any(word in _r.label for word in _SLOW) \
            and _r.name not in ("cli:grading", "cli:labs build", "cli:labs reset", "cli:i18n export"):
        for _lang, _tag in (("zh", "中文"), ("en", "English")):
            ROWS.append(Row(_r.name, f"{_r.label} [{_tag}]", _r.run, "refused", _r.verify, _lang, _r.mention,
                            _r.note))


# -- the harness -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    cls: str
    detail: str = ""
    result: Any = None
    extra: list[str] = field(default_factory=list)


def _one_line_in_language(message: str, lang: str) -> str | None:
    """Why ``message`` is not a good refusal line in ``lang``, or None."""
    if "\n" in message.strip() or "Traceback" in message:
        return f"not one line: {message!r}"
    if lang == "zh":
        if not CJK.search(message) or re.search(r"\b(got|expected|Fix)\b", message):
            return f"not 中文 only: {message!r}"
    elif lang == "en":
        if CJK.search(message.replace("中文", "")) and " / " in message:
            return f"not English only: {message!r}"
    elif " / " not in message or not CJK.search(message):
        return f"not English / 中文: {message!r}"
    if GENERIC_ZH in message:
        return f"no 中文 sentence of its own: {message!r}"
    return None


def _classify_library(r: Row, learner: Learner, tmp: Path) -> Outcome:
    try:
        result = r.run(learner, tmp)
    except FxCourseError as exc:
        if r.expected == "ok":
            return Outcome("refused", str(exc))
        problem = _one_line_in_language(str(exc), r.lang)
        if problem is None and not (exc.got.strip() and exc.accepted.strip() and exc.fix.strip()):
            problem = f"a part is empty: got={exc.got!r} accepted={exc.accepted!r} fix={exc.fix!r}"
        if problem is None and r.mention and r.mention not in str(exc):
            problem = f"does not name {r.mention!r}: {exc}"
        return Outcome("foreign" if problem else "refused", problem or str(exc))
    except BaseException as exc:  # noqa: BLE001 - every other exception is what the matrix looks for
        if isinstance(exc, (KeyboardInterrupt, AssertionError)):
            raise
        return Outcome("foreign", f"{type(exc).__name__}: {exc}")
    status = getattr(result, "status", None)
    is_refusal_value = (isinstance(result, fxcourse.CheckResult) and status != "passed") or (
        type(result).__name__ == "HintResult" and result.count == 0)
    if is_refusal_value:  # check() and hint() never raise: they refuse with a result
        message = result.to_text()
        if r.lang == "both" and not CJK.search(message):
            return Outcome("foreign", f"refusal not in both languages: {message!r}")
        if r.mention and r.mention not in message:
            return Outcome("foreign", f"does not name {r.mention!r}: {message}")
        return Outcome("refused" if r.expected == "refused" else "silent", message, result)
    if r.expected == "refused":
        return Outcome("silent", f"accepted and returned {text_of(result)[:200]!r}", result)
    if r.verify is not None:
        try:
            right = r.verify(result)
        except Exception as exc:  # noqa: BLE001
            return Outcome("foreign", f"the result breaks when read: {type(exc).__name__}: {exc}", result)
        if not right:
            return Outcome("silent", f"a wrong result: {text_of(result)[:300]!r}", result)
    return Outcome("ok", "", result)


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _lost(before: dict[Path, bytes], root: Path) -> list[str]:
    """Files the user had whose bytes are nowhere now. A notebook rewritten in place counts
    unless the rewrite only filled in what was empty (a lab that had no outputs, executed): an
    output or a cell's metadata replaced (nb run, slides mark) must have been kept somewhere."""
    after = _files(root)
    present = set(after.values())
    lost = []
    for path, data in before.items():
        if data in present:
            continue
        if path in after and _only_filled_in(data, after[path]):
            continue
        lost.append(str(path.relative_to(root)))
    return lost


def _only_filled_in(old: bytes, new: bytes) -> bool:
    """The same cells, and every output list and metadata dict that ``old`` had filled is the same in ``new``."""
    try:
        old_cells, new_cells = json.loads(old)["cells"], json.loads(new)["cells"]
    except Exception:  # noqa: BLE001
        return False
    if len(old_cells) != len(new_cells):
        return False
    for a, b in zip(old_cells, new_cells):
        if "".join(a.get("source", "")) != "".join(b.get("source", "")):
            return False
        if any(a.get(key) and a.get(key) != b.get(key) for key in ("outputs", "metadata")):
            return False
    return True


def _classify_cli(r: Row, learner: Learner, tmp: Path, monkeypatch, capsys) -> Outcome:
    spec: Cli = r.run(learner, tmp)
    monkeypatch.chdir(spec.cwd)
    before = _files(tmp)
    capsys.readouterr()
    try:
        code = cli.main(spec.argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        return Outcome("foreign", f"{type(exc).__name__} escaped main(): {exc}")
    out, err = capsys.readouterr()
    result = {"code": code, "out": out, "err": err}
    lost = _lost(before, tmp)
    if lost:
        return Outcome("lost", f"no copy left of {lost}", result)
    if "Traceback" in out + err or code == 3:
        return Outcome("foreign", f"exit {code}: {err[-500:]}", result)
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        errors = [line for line in lines if re.match(r"fxcourse[^:]*: ", line) and not line.startswith("usage")]
        if len(errors) != 1:
            return Outcome("foreign", f"not one error line on stderr: {err!r}", result)
        problem = _one_line_in_language(errors[0], r.lang)
        if problem:
            return Outcome("foreign", problem, result)
        return Outcome("refused", errors[0], result)
    if code not in (0, 1):
        return Outcome("foreign", f"exit {code}: {err[-300:]}", result)
    if r.expected == "refused":
        return Outcome("silent", f"exit {code}, accepted: {out[-300:]!r} {err[-300:]!r}", result)
    if r.verify is not None and not r.verify(result):
        return Outcome("silent", f"exit {code}, a wrong result: {out[-300:]!r} {err[-300:]!r}", result)
    return Outcome("ok", "", result)


@pytest.fixture(autouse=True)
def _fresh_language_and_rng(monkeypatch):
    """Each row starts in the default language; the seeds the rows set do not leak into other test files."""
    set_language(None)
    with torch.random.fork_rng(devices=[]):
        state = (random.getstate(), np.random.get_state())
        yield
        random.setstate(state[0])
        np.random.set_state(state[1])
    set_language(None)


@pytest.fixture(scope="module", autouse=True)
def _quiet_dynamo():
    yield
    torch._dynamo.reset()


TOTALS: collections.Counter[tuple[str, str]] = collections.Counter()


def run_row(r: Row, tmp_path: Path, monkeypatch, capsys, count: bool = True) -> Outcome:
    monkeypatch.setenv("FXCOURSE_LANG", r.lang)
    monkeypatch.delenv(cli.DEBUG, raising=False)
    monkeypatch.chdir(tmp_path)
    learner = Learner()
    before = _process_state()
    if r.name.startswith("cli:"):
        outcome = _classify_cli(r, learner, tmp_path, monkeypatch, capsys)
    else:
        outcome = _classify_library(r, learner, tmp_path)
    after = _process_state()
    changed = learner.changed()
    changed += [key for key in before if not _same(before[key], after[key])]
    if changed and outcome.cls not in ("foreign", "lost"):
        outcome = Outcome("mutated", f"changed: {changed}", outcome.result)
    if count:
        TOTALS[(r.name, outcome.cls)] += 1
    return outcome


@pytest.mark.parametrize("r", ROWS, ids=[r.id for r in ROWS])
def test_bad_input_matrix(r: Row, tmp_path, monkeypatch, capsys):
    outcome = run_row(r, tmp_path, monkeypatch, capsys)
    assert outcome.cls == r.expected, f"{r.id}: expected {r.expected}, got {outcome.cls}: {outcome.detail}"


# -- the harness finds what it looks for --------------------------------------------------------------

def _eval_mode(L, t):
    L.model.eval()
    return 1


def _moves_statistics(L, t):
    L.model(L.x)  # BatchNorm in training mode: running statistics move
    return 1


def _touches_grad(L, t):
    L.xg.grad.zero_()
    return 1


def _reseeds(L, t):
    torch.manual_seed(0)
    return 1


def _no_grad(L, t):
    torch.set_grad_enabled(False)
    return 1


def _two_lines(L, t):
    raise FxCourseError(got="x", accepted="y", fix="z", zh="收到 x。\n修复：z。")


def _no_zh(L, t):
    raise FxCourseError(got="x", accepted="y", fix="z")


SELF_TEST = [
    (Row("x", "KeyError", lambda L, t: {}["k"], "refused"), "foreign"),
    (Row("x", "a two-line refusal", _two_lines, "refused"), "foreign"),
    (Row("x", "a refusal with no 中文 of its own", _no_zh, "refused"), "foreign"),
    (Row("x", "a refusal not naming the input", lambda L, t: G(None), "refused", mention="zzz"), "foreign"),
    (Row("x", "a wrong input accepted", lambda L, t: 1, "refused"), "silent"),
    (Row("x", "a wrong result", lambda L, t: 1, "ok", verify=lambda r: r == 2), "silent"),
    (Row("x", "an unknown task that passes", lambda L, t: fxcourse.CheckResult("x", "passed", "", ""), "refused"),
     "silent"),
    (Row("x", "train flag", _eval_mode, "ok"), "mutated"),
    (Row("x", "BatchNorm statistics", _moves_statistics, "ok"), "mutated"),
    (Row("x", ".grad values", _touches_grad, "ok"), "mutated"),
    (Row("x", "global RNG", _reseeds, "ok"), "mutated"),
    (Row("x", "grad mode", _no_grad, "ok"), "mutated"),
]


@pytest.mark.parametrize("r, cls", SELF_TEST, ids=[r.label for r, _ in SELF_TEST])
def test_the_harness_finds_each_forbidden_class(r, cls, tmp_path, monkeypatch, capsys):
    grad = torch.is_grad_enabled()
    try:
        assert run_row(r, tmp_path, monkeypatch, capsys, count=False).cls == cls
    finally:
        torch.set_grad_enabled(grad)


@pytest.mark.parametrize("code, cls", [(3, "foreign"), (0, "lost"), (1, "lost")])
def test_the_harness_finds_a_foreign_exit_and_a_lost_file(code, cls, tmp_path, monkeypatch, capsys):
    def run(args):
        if code == 3:
            raise KeyError("a bug")  # main() turns it into exit 3, "unexpected error"
        for path in Path.cwd().glob("*.ipynb"):
            if code == 1:  # outputs and a cell's metadata replaced in place, no copy kept
                nb = nbformat.read(path, as_version=4)
                for cell in nb.cells:
                    cell.metadata["slideshow"] = {"slide_type": "skip"}
                    if cell.cell_type == "code":
                        cell.outputs = []
                nbformat.write(nb, path)
            else:
                path.unlink()
        return 0

    monkeypatch.setattr(cli, "_run", run)
    setup = _with_notebooks("doctor", folder=".")
    r = Row("cli:doctor", "synthetic", lambda L, t: setup(t), "ok")
    assert run_row(r, tmp_path, monkeypatch, capsys, count=False).cls == cls


# -- coverage of the public surface --------------------------------------------------------------------

def public_names() -> set[str]:
    names = set(fxcourse.__all__) - {"FxCourseError", "__version__"}
    return names | {f"cli:{c}" for c in cli_commands()}


def cli_commands() -> set[str]:
    import argparse

    found = {"fxcourse"}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    command = f"{prefix} {name}".strip()
                    found.add(command)
                    walk(sub, command)

    walk(cli._parser(), "")
    return found


def test_every_public_name_has_rows():
    covered = {r.name for r in ROWS}
    missing = sorted(public_names() - covered)
    assert not missing, f"public names or commands with no row in the bad-input matrix: {missing}"
    stale = sorted(covered - public_names())
    assert not stale, f"rows for names that are no longer public: {stale}"


def test_a_new_public_name_or_command_without_rows_is_caught(monkeypatch):
    monkeypatch.setattr(fxcourse, "__all__", [*fxcourse.__all__, "new_viewer"])
    real_parser = cli._parser

    def parser():
        p = real_parser()
        sub = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        sub.add_parser("newcmd")
        return p

    monkeypatch.setattr(cli, "_parser", parser)
    assert {"new_viewer", "cli:newcmd"} <= public_names() - {r.name for r in ROWS}


def test_the_matrix_is_large_and_each_name_is_tried_with_bad_input():
    assert len(ROWS) >= 200, len(ROWS)
    by_name = collections.defaultdict(set)
    for r in ROWS:
        by_name[r.name].add(r.expected)
    # every function and command is tried with at least one wrong input; classes are read
    # through what their function returns
    no_refusal = sorted(n for n, kinds in by_name.items() if "refused" not in kinds
                        and not n[:1].isupper() and not n.endswith("--help"))
    assert not no_refusal, no_refusal
    assert len({r.id for r in ROWS}) == len(ROWS), "two rows with the same label"


def test_totals_hold_no_forbidden_class():
    """Runs after the matrix (file order): the totals per class and per public name, printed
    (``pytest -s`` or ``-rP`` shows them); none in a forbidden class."""
    if not TOTALS:
        pytest.skip("the matrix did not run in this session (-k chose other tests)")
    per_class = collections.Counter()
    per_name: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (name, cls), n in TOTALS.items():
        per_class[cls] += n
        per_name[name][cls] += n
    print(f"\nbad-input matrix: {sum(per_class.values())} trials: "
          + ", ".join(f"{cls} {per_class[cls]}" for cls in CLASSES))
    for name in sorted(per_name):
        print(f"  {name:32} " + "  ".join(f"{cls} {per_name[name][cls]}" for cls in CLASSES if per_name[name][cls]))
    assert not any(per_class[cls] for cls in FORBIDDEN), dict(per_class)
