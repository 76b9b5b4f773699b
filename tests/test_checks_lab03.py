"""Checkers of lab03 (walking an FX graph): reference answers pass, stubs are not implemented,
and the common mistakes get their specific hint."""
from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch import fx

from fxcourse import check


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def histogram(gm):
    counts = Counter()
    for n in gm.graph.nodes:
        t = n.target
        counts[(n.op, t if isinstance(t, str) else f"{t.__module__}.{t.__name__}")] += 1
    return dict(counts)


def find_modules(gm, module_type):
    return [n.target for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(n.target), module_type)]


class ShapeRecorder(fx.Interpreter):
    def __init__(self, gm):
        super().__init__(gm)
        self.shapes = {}

    def run_node(self, n):
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        return value


class StubRecorder(ShapeRecorder):
    def run_node(self, n):
        raise NotImplementedError("replace this line with your code")


@pytest.mark.parametrize("task_id, answer", [
    ("lab03.1", histogram),
    ("lab03.2", find_modules),
    ("lab03.3", ShapeRecorder),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id, answer", [
    ("lab03.1", _stub), ("lab03.2", _stub), ("lab03.3", StubRecorder),
])
def test_stubs_are_not_implemented(task_id, answer):
    assert check(task_id, answer).status == "not_implemented"


def test_histogram_accepts_other_spellings_of_function_targets():
    from torch.fx.node import _get_qualified_name

    from fxcourse._node_text import qualified_name

    for name in (_get_qualified_name, qualified_name):
        def answer(gm, name=name):
            return Counter((n.op, n.target if isinstance(n.target, str) else name(n.target))
                           for n in gm.graph.nodes)
        assert check("lab03.1", answer).status == "passed"


@pytest.mark.parametrize("answer, hint", [
    (lambda gm: Counter((n.op, str(n.target)) for n in gm.graph.nodes), "<built-in function add>"),
    (lambda gm: Counter((n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes),
     "ambiguous"),
    (lambda gm: Counter((n.op, n.name) for n in gm.graph.nodes), "node.name"),
    (lambda gm: Counter((n.op, n.target) for n in gm.graph.nodes), "must be a string"),
    (lambda gm: {k: v for k, v in histogram(gm).items() if k[0] not in ("placeholder", "output")},
     "placeholder and output"),
    (lambda gm: Counter(n.op for n in gm.graph.nodes), "each key is a pair"),
])
def test_histogram_mistakes_get_their_hint(answer, hint):
    result = check("lab03.1", answer)
    assert result.status == "wrong"
    assert hint in result.en, result.en
    assert result.tried and result.expected and result.zh


@pytest.mark.parametrize("answer, hint", [
    (lambda gm, k: [name for name, m in gm.named_modules() if isinstance(m, k)], "no node calls"),
    (lambda gm, k: list(dict.fromkeys(find_modules(gm, k))), "called twice must appear twice"),
    (lambda gm, k: [n.name for n in gm.graph.nodes
                    if n.op == "call_module" and isinstance(gm.get_submodule(n.target), k)], "node names"),
    (lambda gm, k: [n.target for n in gm.graph.nodes
                    if n.op == "call_module" and type(gm.get_submodule(n.target)) is k], "isinstance"),
    (lambda gm, k: sorted(find_modules(gm, k)), "graph order"),
])
def test_find_modules_mistakes_get_their_hint(answer, hint):
    result = check("lab03.2", answer)
    assert result.status == "wrong"
    assert hint in result.en, result.en


class CallsOnly(ShapeRecorder):
    def run_node(self, n):
        value = fx.Interpreter.run_node(self, n)
        if n.op.startswith("call_") and isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        return value


class Lists(ShapeRecorder):
    def run_node(self, n):
        value = fx.Interpreter.run_node(self, n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = list(value.shape)
        return value


class Sizes(ShapeRecorder):  # torch.Size is accepted
    def run_node(self, n):
        value = fx.Interpreter.run_node(self, n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = value.shape
        return value


class NoReturn(ShapeRecorder):
    def run_node(self, n):
        value = fx.Interpreter.run_node(self, n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)


class MetaOnly(ShapeRecorder):
    def run_node(self, n):
        value = fx.Interpreter.run_node(self, n)
        if isinstance(value, torch.Tensor):
            n.meta["shape"] = tuple(value.shape)
        return value


def test_torch_size_is_accepted():
    assert check("lab03.3", Sizes).status == "passed"


@pytest.mark.parametrize("answer, hint", [
    (CallsOnly, "placeholder"),
    (Lists, "not a list"),
    (NoReturn, "return value"),
    (MetaOnly, "still empty"),
])
def test_shape_recorder_mistakes_get_their_hint(answer, hint):
    result = check("lab03.3", answer)
    assert result.status == "wrong"
    assert hint in result.en, result.en


def test_shape_recorder_wants_the_class():
    result = check("lab03.3", ShapeRecorder(fx.symbolic_trace(lambda x: x + 1)))
    assert result.status == "wrong" and "class" in result.en
