"""Checkers of lab02 (TorchScript IR): reference answers pass, stubs are not implemented,
and the common mistakes get their specific hint."""
from __future__ import annotations

import itertools
from collections import Counter
from typing import Optional

import pytest
import torch

from fxcourse import check
from fxcourse.checks import lab02
from fxcourse.checks.lab02 import MaskedPool

C = torch._C


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def _all_nodes(block):
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _all_nodes(sub)


def count_kinds(graph):
    return dict(Counter(node.kind() for node in _all_nodes(graph)))


def make_fixed_pool():
    class FixedPool(MaskedPool):
        def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                    scale: Optional[float] = None) -> torch.Tensor:
            h = self.proj(x)
            if mask is not None:
                h = h.masked_fill(~mask, 0.0)
            if scale is None:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale

    return FixedPool


def run_passes(graph):
    C._jit_pass_cse(graph)
    C._jit_pass_constant_propagation(graph)
    C._jit_pass_dce(graph)
    return graph


@pytest.mark.parametrize("task_id, answer", [
    ("lab02.1", count_kinds), ("lab02.2", make_fixed_pool), ("lab02.3", run_passes),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()


@pytest.mark.parametrize("task_id", ["lab02.1", "lab02.2", "lab02.3"])
def test_stubs_are_not_implemented(task_id):
    assert check(task_id, _stub).status == "not_implemented"


def test_the_fixed_class_itself_is_accepted_too():
    assert check("lab02.2", make_fixed_pool()).status == "passed"


# --------------------------------------------------------------------------- lab02.1


def test_top_level_only_is_told_to_recurse_into_blocks():
    result = check("lab02.1", lambda g: dict(Counter(n.kind() for n in g.nodes())))
    assert result.status == "wrong"
    assert "node.blocks()" in result.en and "node.blocks()" in result.zh
    assert "'prim::If': 1" in result.expected


def test_one_level_down_is_told_to_recurse_not_loop_twice():
    def one_level(graph):
        counts = Counter(n.kind() for n in graph.nodes())
        for node in graph.nodes():
            for sub in node.blocks():
                counts.update(inner.kind() for inner in sub.nodes())
        return dict(counts)

    result = check("lab02.1", one_level)
    assert result.status == "wrong" and "recurse" in result.en


def test_counting_param_and_return_nodes_is_named():
    def with_param_return(graph):
        counts = Counter(count_kinds(graph))
        counts.update(["prim::Param", "prim::Return"])
        return dict(counts)

    result = check("lab02.1", with_param_return)
    assert result.status == "wrong" and "prim::Param" in result.en


# --------------------------------------------------------------------------- lab02.2


def test_the_broken_model_still_refuses_to_script():
    result = check("lab02.2", lambda: MaskedPool)
    assert result.status == "wrong" and "**kwargs" in result.en
    assert result.got.startswith("NotSupportedError")


def test_dropping_kwargs_only_hits_the_untyped_none_trap():
    class NoKwargs(MaskedPool):
        def forward(self, x, mask=None, scale=None):
            h = self.proj(x)
            if mask is not None:
                h = h.masked_fill(~mask, 0.0)
            if scale is None:
                scale = 1.0 / h.shape[-1]
            return h.sum(-1) * scale

    result = check("lab02.2", lambda: NoKwargs)
    assert result.status == "wrong"
    assert "Optional[torch.Tensor]" in result.en and "Optional[torch.Tensor]" in result.zh
    assert "Tensor mask=[ Tensor (undefined) ]" in result.got
    text = result.to_text()
    assert "/__w/" not in text and ".cpp" not in text  # C++ source paths are cleaned away


def test_changing_the_default_scale_is_a_different_result():
    class FixedScale(MaskedPool):
        def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None, scale: float = 1.0) -> torch.Tensor:
            h = self.proj(x)
            if mask is not None:
                h = h.masked_fill(~mask, 0.0)
            return h.sum(-1) * scale

    result = check("lab02.2", lambda: FixedScale)
    assert result.status == "wrong" and "1 / last dimension" in result.en
    assert result.got.startswith("max abs difference")


def test_dropping_the_linear_layer_is_caught():
    class NoProj(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.sum(-1)

    result = check("lab02.2", lambda: NoProj)
    assert result.status == "wrong" and "self.proj" in result.en


# --------------------------------------------------------------------------- lab02.3


def test_returning_what_a_pass_returns_is_none():
    def returns_none(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_constant_propagation(graph)
        return C._jit_pass_dce(graph)

    result = check("lab02.3", returns_none)
    assert result.status == "wrong" and "return the graph" in result.en and result.got == "None"


def test_missing_constant_propagation_is_named():
    def no_constant_propagation(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_dce(graph)
        return graph

    result = check("lab02.3", no_constant_propagation)
    assert result.status == "wrong" and "_jit_pass_constant_propagation" in result.en


def test_missing_cse_is_named():
    def no_cse(graph):
        C._jit_pass_constant_propagation(graph)
        C._jit_pass_dce(graph)
        return graph

    result = check("lab02.3", no_cse)
    assert result.status == "wrong" and "_jit_pass_cse" in result.en


def test_passes_on_a_copy_returning_the_original_is_named():
    def on_a_copy(graph):
        run_passes(graph.copy())
        return graph

    result = check("lab02.3", on_a_copy)
    assert result.status == "wrong" and "unchanged" in result.en and "graph.copy()" in result.en


def test_deleting_a_side_effect_is_caught_by_running_the_graph():
    def aggressive(graph):
        C._jit_pass_cse(graph)
        C._jit_pass_constant_propagation(graph)
        C._jit_pass_dce_allow_deleting_nodes_with_side_effects(graph)
        return graph

    result = check("lab02.3", aggressive)
    assert result.status == "wrong" and "side effect" in result.en and "aten::mul_" in result.zh


def test_the_order_of_the_three_passes_does_not_matter_on_the_hidden_graphs():
    """The checker expects what one run of CSE, constant propagation and DCE leaves; any order
    of the three must leave the same number of nodes, or a learner's order could fail."""
    passes = [run for _, run in lab02._PASSES]
    for label, graph, _ in lab02._pass_cases():
        counts = set()
        for order in itertools.permutations(passes):
            g = graph.copy()
            for run in order:
                run(g)
            counts.add(lab02._count(g))
        assert len(counts) == 1, (label, counts)
        assert counts.pop() < lab02._count(graph), label
