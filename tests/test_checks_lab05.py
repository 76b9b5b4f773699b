"""Checkers of lab05 (FX limits): references pass, stubs are not implemented, classic mistakes are named."""
from __future__ import annotations

import pytest
import torch
from torch import fx

from fxcourse import check
from fxcourse.labs import STUB

from checking import expect_wrong


def _stub(*args):
    raise NotImplementedError(STUB.split('"')[1])


# -- reference answers (the solutions notebook's) -------------------------------------------
def trace_for_mode(model, mode):
    return fx.symbolic_trace(model, concrete_args={"mode": mode})


def trace_with_leaves(model, leaf_types):
    class LeafTracer(fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            return isinstance(m, leaf_types) or super().is_leaf_module(m, module_qualified_name)

    tracer = LeafTracer()
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph)


def trace_keeping(model, fn):
    tracer = fx.Tracer(autowrap_functions=(fn,))
    graph = tracer.trace(model)
    return fx.GraphModule(tracer.root, graph)


def position_ids_fx(lengths):
    pos = torch.arange(lengths.max())
    return torch.where(pos < lengths[:, None], pos, -1)


REFERENCES = {"lab05.1": trace_for_mode, "lab05.2": trace_with_leaves, "lab05.3": trace_keeping,
              "lab05.4": position_ids_fx}


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_reference_answer_passes(task_id):
    result = check(task_id, REFERENCES[task_id])
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _stub)
    assert result.status == "not_implemented", result.to_text()


# -- lab05.1: concrete_args -----------------------------------------------------------------
def test_misspelled_concrete_args_key_is_named():
    result = expect_wrong("lab05.1", lambda m, mode: fx.symbolic_trace(m, concrete_args={"modes": mode}))
    assert "spelled exactly" in result.en and result.got.startswith("TraceError")


def test_a_hard_coded_mode_is_caught_by_reading_the_guard():
    result = expect_wrong("lab05.1", lambda m, mode: fx.symbolic_trace(m, concrete_args={"mode": "max"}))
    assert "`mode` argument" in result.en and "specialised to 'max'" in result.got


def test_the_eager_model_is_not_a_graph_module():
    assert "eager model" in expect_wrong("lab05.1", lambda m, mode: m).en


def test_a_wrapper_without_the_guard_is_told_to_use_concrete_args():
    class Fixed(torch.nn.Module):
        def __init__(self, model, mode):
            super().__init__()
            self.model, self.mode = model, mode

        def forward(self, x):
            return self.model(x, self.mode)

    def via_wrapper(model, mode):
        class Tracer(fx.Tracer):  # keep the wrapped model opaque so tracing succeeds
            def is_leaf_module(self, m, name):
                return m is model or super().is_leaf_module(m, name)

        root = Fixed(model, mode)
        tracer = Tracer()
        graph = tracer.trace(root)
        return fx.GraphModule(root, graph)

    result = expect_wrong("lab05.1", via_wrapper)
    assert "no guard" in result.got and "concrete_args" in result.en


# -- lab05.2: leaf modules ------------------------------------------------------------------
def _tracer_answer(is_leaf):
    def answer(model, leaf_types):
        class T(fx.Tracer):
            def is_leaf_module(self, m, name):
                return is_leaf(self, m, name, leaf_types)

        tracer = T()
        graph = tracer.trace(model)
        return fx.GraphModule(tracer.root, graph)
    return answer


def test_every_module_a_leaf_is_too_coarse():
    result = expect_wrong("lab05.2", _tracer_answer(lambda self, m, name, types: True))
    assert "custom module became a leaf" in result.en and "pre" in result.got


def test_forgetting_super_traces_through_torch_nn_layers():
    result = expect_wrong("lab05.2", _tracer_answer(lambda self, m, name, types: isinstance(m, types)))
    assert "super().is_leaf_module" in result.en


def test_choosing_leaves_by_name_fails_on_other_names():
    by_name = _tracer_answer(lambda self, m, name, types: name in {"gate", "clip"}
                             or fx.Tracer.is_leaf_module(self, m, name))
    result = expect_wrong("lab05.2", by_name)
    assert "isinstance" in result.en and result.got.startswith("TraceError")


def test_returning_the_graph_is_named():
    def graph_only(model, leaf_types):
        return trace_with_leaves(model, leaf_types).graph
    assert "fx.GraphModule(tracer.root, graph)" in expect_wrong("lab05.2", graph_only).en


def test_reading_root_before_tracing_is_explained():
    def root_first(model, leaf_types):
        tracer = fx.Tracer()
        return fx.GraphModule(tracer.root, tracer.trace(model))  # noqa: the classic ordering bug
    result = expect_wrong("lab05.2", root_first)
    assert "left to right" in result.en


# -- lab05.3: a helper kept as one call_function ---------------------------------------------
def test_fx_wrap_inside_the_function_is_named():
    def wrap_inside(model, fn):
        fx.wrap(fn)
        return fx.symbolic_trace(model)
    result = expect_wrong("lab05.3", wrap_inside)
    assert "autowrap_functions" in result.en and "top level" in result.got


def test_plain_symbolic_trace_points_to_autowrap_functions():
    result = expect_wrong("lab05.3", lambda model, fn: fx.symbolic_trace(model))
    assert "another module" in result.en and "autowrap_functions" in result.en


# -- lab05.4: a value-dependent size that FX can trace ----------------------------------------
def test_int_of_a_proxy_is_named():
    def with_int(lengths):
        pos = torch.arange(int(lengths.max()))
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", with_int)
    assert "int(...)" in result.en and result.got.startswith("TypeError")


def test_a_fixed_width_is_caught_on_new_lengths():
    def fixed(lengths):
        pos = torch.arange(8)
        return torch.where(pos < lengths[:, None], pos, -1)
    result = expect_wrong("lab05.4", fixed)
    assert "lengths.max()" in result.en and "(3, 4)" in result.expected


def test_item_is_an_accepted_fx_answer():
    def with_item(lengths):
        pos = torch.arange(lengths.max().item())
        return torch.where(pos < lengths[:, None], pos, -1)
    assert check("lab05.4", with_item).status == "passed"
