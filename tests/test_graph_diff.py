"""graph_diff: the passes lecture 04 runs, reported as added / removed / changed nodes."""
from __future__ import annotations

import copy
import operator
import types
import warnings

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import fx
from torch.fx.experimental.optimization import fuse

from fxcourse import FxCourseError, graph_diff, zoo  # the function, not the module
from fxcourse import GraphDiff
from fxcourse.viewers.graph_diff import Change
from test_graph_table import _STEPS, random_graph


def traced(name: str) -> fx.GraphModule:
    model, _ = zoo.example(name)
    return fx.symbolic_trace(model)


def node(gm: fx.GraphModule, name: str) -> fx.Node:
    return next(n for n in gm.graph.nodes if n.name == name)


def test_relu_retargeted_to_sigmoid(golden):
    before = traced("mlp")
    after = copy.deepcopy(before)
    node(after, "relu").target = torch.sigmoid
    after.recompile()
    diff = graph_diff(before, after)
    assert diff.changed == [Change("retargeted", "relu", "call_function torch.relu (fc1,)",
                                   "call_function torch.sigmoid (fc1,)", "relu")]
    assert diff.added == [] and diff.removed == [] and len(diff) == 1
    text = diff.to_text(width=120)
    assert "~  relu    call_function  torch.relu → torch.sigmoid" in text
    golden("graph_diff_relu_sigmoid", text)


def test_erase_after_replace_all_uses_with(golden):
    before = traced("clamp_linear")
    after = copy.deepcopy(before)
    clamp = node(after, "clamp")
    clamp.replace_all_uses_with(clamp.args[0])
    after.graph.erase_node(clamp)
    after.recompile()
    diff = graph_diff(before, after)
    assert diff.removed == ["clamp"] and diff.added == []
    assert [(c.kind, c.name) for c in diff.changed] == [("rewired", "output")]
    assert diff.summary == "1 removed, 1 rewired (6 nodes before, 5 after)"
    golden("graph_diff_erase_clamp", diff.to_text(width=120))


def test_insert_with_inserting_after(golden):
    before = traced("clamp_linear")
    after = copy.deepcopy(before)
    linear = node(after, "linear")
    with after.graph.inserting_after(linear):
        sigmoid = after.graph.call_function(torch.sigmoid, (linear,))
    linear.replace_all_uses_with(sigmoid, delete_user_cb=lambda user: user is not sigmoid)
    after.recompile()
    diff = graph_diff(before, after)
    assert diff.added == ["sigmoid"] and diff.removed == []
    assert [(c.kind, c.name, c.after) for c in diff.changed] == [
        ("rewired", "clamp", "call_method clamp (sigmoid,) {'min': 0.0, 'max': 1.0}")]
    text = diff.to_text(width=120)
    assert "\n+  sigmoid" in text
    golden("graph_diff_insert_sigmoid", text)


def test_conv_bn_fusion(golden):
    before = traced("conv_bn_relu")
    diff = graph_diff(before, fuse(before))
    assert diff.removed == ["bn"]
    assert [(c.kind, c.name, c.before, c.after) for c in diff.changed] == [
        ("rewired", "relu", "call_function torch.relu (bn,)", "call_function torch.relu (conv,)")]
    golden("graph_diff_fuse_conv_bn", diff.to_text(width=120))


def test_renamed_nodes_are_matched_by_target_and_their_users_are_not_rewired():
    before = traced("clamp_linear")
    after = copy.deepcopy(before)
    node(after, "add").name = "plus"
    diff = graph_diff(before, after)
    assert [(c.kind, c.old_name, c.name) for c in diff.changed] == [("renamed", "add", "plus")]
    assert diff.added == diff.removed == []


def test_ambiguous_leftovers_stay_added_and_removed():
    def graph(names: list[str]) -> fx.Graph:
        g = fx.Graph()
        x = g.placeholder("x")
        for name in names:
            g.call_function(torch.relu, (x,)).name = name
        g.output(x)
        return g

    diff = graph_diff(graph(["a", "b"]), graph(["c"]))
    assert diff.removed == ["a", "b"] and diff.added == ["c"] and diff.changed == []


def test_no_change_is_said_plainly():
    diff = graph_diff(traced("mlp"), traced("mlp"))
    assert len(diff) == 0 and not diff
    assert str(diff) == "no change: the graphs are equivalent (5 nodes)"
    assert "no change" in diff.to_html() and "<table" not in diff.to_html()
    gm = traced("mlp")
    assert "copy.deepcopy(gm)" in graph_diff(gm, gm).summary  # a pass that edited in place


def test_long_unchanged_runs_fold():
    before = fx.symbolic_trace(zoo.resnet18().eval())
    after = copy.deepcopy(before)
    node(after, "layer3_0_relu").target = "layer3.0.bn1"  # a retargeted call_module
    text = graph_diff(before, after, context=1).to_text(width=120)
    assert text.count("\n⋮  ") == 2 and "layer3.0.relu → layer3.0.bn1" in text
    assert len(text.splitlines()) == 3 + 2 + 3  # caption, header, rule; two folds; three rows


def test_result_object_and_html():
    before = traced("conv_bn_relu")
    diff = graph_diff(before, fuse(before))
    assert isinstance(diff, GraphDiff)
    assert str(diff) == diff.to_text() and diff._repr_html_() == diff.to_html()
    assert repr(diff) == "<GraphDiff: 1 removed, 1 rewired (5 nodes before, 4 after)>"
    assert diff.columns == ("", "name", "opcode", "target", "args", "kwargs")
    assert diff.rows[2] == ("-", "bn", "call_module", "bn", "(conv,)", "{}")
    html = diff.to_html()
    assert '<tr class="diff-remove">' in html and '<tr class="diff-change">' in html
    assert "(bn,) → (conv,)" in html and "<style>" in html


def test_html_is_escaped():
    before = fx.Graph()
    x = before.placeholder("x")
    before.output(before.call_function(operator.add, (x, "<b>")))
    after = copy.deepcopy(before)
    next(n for n in after.nodes if n.op == "call_function").args = (x, "<i>")
    html = graph_diff(before, after).to_html()
    assert "&#x27;&lt;b&gt;&#x27;" in html and "<i>" not in html


def test_exported_programs_and_captured_graphs_are_accepted():
    model, args = zoo.example("mlp")
    ep = torch.export.export(model, args)
    assert not graph_diff(ep, types.SimpleNamespace(gm=ep.graph_module))


@pytest.mark.parametrize("before, after, match", [
    (None, "mlp", r"graph_diff \(before\): got None"),
    ("mlp", zoo.MLP(), r"graph_diff \(after\): got MLP.*symbolic_trace"),
    ("mlp", "script", r"graph_diff \(after\): got TorchScript RecursiveScriptModule.*view a TorchScript"),
])
def test_bad_input(before, after, match):
    def make(x):
        if x == "mlp":
            return traced("mlp")
        if x == "script":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return torch.jit.script(zoo.MLP())
        return x

    with pytest.raises(FxCourseError, match=match):
        graph_diff(make(before), make(after))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), _STEPS)
def test_a_graph_equals_itself(n_inputs, steps):
    g = random_graph(n_inputs, steps)
    assert not graph_diff(g, g)
    assert not graph_diff(g, random_graph(n_inputs, steps))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), _STEPS.filter(lambda s: any(k in ("add", "mul") for k, _, _ in s)),
       st.integers(0, 100))
def test_one_swapped_target_is_exactly_one_change(n_inputs, steps, pick):
    before, after = random_graph(n_inputs, steps), random_graph(n_inputs, steps)
    calls = [n for n in after.nodes if n.target in (torch.add, torch.mul)]
    swapped = calls[pick % len(calls)]
    swapped.target = torch.mul if swapped.target is torch.add else torch.add
    diff = graph_diff(before, after)
    assert diff.added == [] and diff.removed == []
    assert [(c.kind, c.name) for c in diff.changed] == [("retargeted", swapped.name)]
