"""Checkers of lab00, second attack (issue 30): counting distinct targets instead of nodes, and a
threshold at an epsilon instead of `y.sum() > 0`, are rejected and named in both languages; right
answers written differently still pass. (The first lab00 tests live in test_checks.py.)"""
from __future__ import annotations

from collections import Counter

import torch
from torch import fx

from fxcourse import zoo

from checking import expect_passed, expect_wrong


# -- lab00.1 --------------------------------------------------------------------------------------
def test_lab00_1_counting_distinct_targets_is_named():
    def count_by_opcode(gm: fx.GraphModule) -> dict[str, int]:
        return dict(Counter(op for op, _ in {(node.op, node.target) for node in gm.graph.nodes}))

    result = expect_wrong("lab00.1", count_by_opcode)
    assert "not the distinct things they call" in result.en and "不同的调用对象" in result.zh
    assert "twice" in str(result.tried[0])


def test_lab00_1_counting_distinct_target_names_is_named():
    def count_by_opcode(gm: fx.GraphModule) -> dict[str, int]:
        seen: dict[str, set] = {}
        for node in gm.graph.nodes:
            seen.setdefault(node.op, set()).add(str(node.target))
        return {op: len(targets) for op, targets in seen.items()}

    result = expect_wrong("lab00.1", count_by_opcode)
    assert "each call is a node of its own" in result.en and "每次调用都是一个独立的节点" in result.zh


def test_lab00_1_right_answers_written_differently_pass():
    expect_passed("lab00.1", lambda gm: dict(Counter(n.op for n in gm.graph.nodes)))
    expect_passed("lab00.1", lambda gm: {op: sum(n.op == op for n in gm.graph.nodes) for op in {n.op for n in gm.graph.nodes}})


# -- lab00.3 --------------------------------------------------------------------------------------
def _gate(decide):
    class TraceableGate(zoo.Gate):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.linear(x)
            return torch.where(decide(y), torch.relu(y), -y)

    return TraceableGate


def test_lab00_3_mean_above_an_epsilon_is_named():
    result = expect_wrong("lab00.3", _gate(lambda y: y.mean() > 1e-6))
    assert "small epsilon" in result.en and "y.sum() > 0" in result.en
    assert "小 epsilon" in result.zh and "0 上不加任何余量" in result.zh
    assert "2**-147" in result.tried[0]


def test_lab00_3_sum_above_a_tiny_epsilon_is_named():
    result = expect_wrong("lab00.3", _gate(lambda y: y.sum() > 1e-10))
    assert "tiny positive" in result.tried[0] and "极小的正数" in result.tried[1]
    assert "small epsilon" in result.en and "小 epsilon" in result.zh


def test_lab00_3_mean_above_an_epsilon_below_zero_is_named():
    # At an exact 0 it takes relu(y): the strict boundary is named first.
    result = expect_wrong("lab00.3", _gate(lambda y: y.mean() > -1e-9))
    assert "exactly 0" in result.en and "恰好为 0" in result.zh


def test_lab00_3_right_answers_written_differently_pass():
    expect_passed("lab00.3", _gate(lambda y: y.sum().gt(0)))
    expect_passed("lab00.3", _gate(lambda y: y.double().sum() > 0))


def test_lab00_1_counting_after_dead_code_elimination_is_named():
    import copy

    def count_by_opcode(gm: fx.GraphModule) -> dict[str, int]:
        clean = copy.deepcopy(gm)
        clean.graph.eliminate_dead_code()
        return dict(Counter(node.op for node in clean.graph.nodes))

    result = expect_wrong("lab00.1", count_by_opcode)
    assert "nobody uses" in result.en and "无人使用" in result.zh


def test_lab00_1_cleaning_the_given_graph_is_wrong():
    def count_by_opcode(gm: fx.GraphModule) -> dict[str, int]:
        gm.graph.eliminate_dead_code()
        return dict(Counter(node.op for node in gm.graph.nodes))

    result = expect_wrong("lab00.1", count_by_opcode)
    assert "changed the graph it was given" in result.en and "修改了传给它的计算图" in result.zh


# -- second fix round (att-l00) ---------------------------------------------------------------------
def test_lab00_1_counting_distinct_calls_with_their_arguments_is_named():
    def count_by_opcode(gm: fx.GraphModule) -> dict[str, int]:
        return dict(Counter(op for op, _, _ in {(n.op, str(n.target), str(n.args)) for n in gm.graph.nodes}))

    result = expect_wrong("lab00.1", count_by_opcode)
    assert "torch.cos(x) * torch.cos(x)" in str(result.tried[0])
    assert "even on the same arguments" in result.en and "即使参数也相同" in result.zh


def test_lab00_2_switching_the_model_to_training_mode_is_named():
    result = expect_wrong("lab00.2", lambda model: torch.jit.script(model.train()))
    assert "training and evaluation mode" in result.en and "训练/评估模式" in result.zh


def test_lab00_2_switching_a_training_model_to_eval_mode_is_named():
    result = expect_wrong("lab00.2", lambda model: torch.jit.script(model.eval()))
    assert "training and evaluation mode" in result.en and "训练/评估模式" in result.zh
    assert "training mode" in result.tried and "still in training mode" in result.expected[0]


def test_lab00_3_sum_above_the_normalize_epsilon_is_named():
    result = expect_wrong("lab00.3", _gate(lambda y: y.sum() > 1e-12))
    assert "tiny positive" in result.tried[0] and "极小的正数" in result.tried[1]
    assert "small epsilon" in result.en and "小 epsilon" in result.zh


def test_lab00_3_sum_above_a_subnormal_threshold_is_named():
    result = expect_wrong("lab00.3", _gate(lambda y: y.sum() > torch.finfo(torch.float32).tiny))
    assert "small epsilon" in result.en and "小 epsilon" in result.zh


def test_lab00_3_steep_clamped_blend_is_named():
    class TraceableGate(zoo.Gate):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.linear(x)
            c = torch.clamp(y.sum() * 1e13, 0, 1)
            return c * torch.relu(y) + (1 - c) * (-y)

    result = expect_wrong("lab00.3", TraceableGate)
    assert "small epsilon" in result.en and "小 epsilon" in result.zh


def test_lab00_3_more_right_answers_pass():
    expect_passed("lab00.3", _gate(lambda y: torch.sign(y.sum()) > 0))
    expect_passed("lab00.3", _gate(lambda y: ~(y.sum() <= 0) & ~torch.isnan(y.sum())))
    # The task text allows a sum in another order or precision (it differs from Gate's only by rounding).
    expect_passed("lab00.3", _gate(lambda y: y.sum(-1).sum() > 0))
    expect_passed("lab00.3", _gate(lambda y: y.double().sum() > 0))


# -- third attack: a mean that rounds to 0, NaN sums, inf entries (lab00.2 and lab00.3) ------------
def test_lab00_3_mean_above_zero_is_named():
    # y.sum() is 2**-147 over 8 entries: the mean, 2**-150, rounds to 0 in float32.
    result = expect_wrong("lab00.3", _gate(lambda y: y.mean() > 0))
    assert "mean rounds to 0" in result.tried[0] and "均值在 float32 中舍入为 0" in result.tried[1]
    assert "rounded mean" in result.en and "舍入后的均值" in result.zh


def test_lab00_3_negated_less_or_equal_is_named():
    class TraceableGate(zoo.Gate):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.linear(x)
            return torch.where(y.sum() <= 0, -y, torch.relu(y))

    result = expect_wrong("lab00.3", TraceableGate)
    assert "y.sum() is NaN" in result.en and "y.sum() 为 NaN" in result.zh


def test_lab00_3_nansum_is_named():
    result = expect_wrong("lab00.3", _gate(lambda y: y.nansum() > 0))
    assert "holding a NaN" in result.tried[0] and "含一个 NaN" in result.tried[1]
    assert "skips NaN" in result.en and "跳过 NaN" in result.zh


def test_lab00_3_arithmetic_blend_is_named():
    class Blend(zoo.Gate):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.linear(x)
            c = (y.sum() > 0).to(y.dtype)
            return c * torch.relu(y) + (1 - c) * (-y)

    result = expect_wrong("lab00.3", Blend)
    assert "+inf" in result.tried[0]
    assert "0 · inf" in result.en and "0 · inf 变成 NaN" in result.zh


def test_lab00_3_heaviside_blend_is_named():
    class Blend(zoo.Gate):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.linear(x)
            h = torch.heaviside(y.sum(), torch.zeros(()))
            return h * torch.relu(y) - (1 - h) * y

    result = expect_wrong("lab00.3", Blend)
    assert "0 · inf" in result.en and "逐元素选择" in result.zh


class _EpsilonBlend(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.linear = model.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        c = (y.sum() > 1e-4).float()
        return c * torch.relu(y) + (1 - c) * (-y)


class _NegatedLessOrEqual(_EpsilonBlend):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return torch.where(y.sum() <= 0, -y, torch.relu(y))


class _Blend(_EpsilonBlend):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        c = (y.sum() > 0).float()
        return c * torch.relu(y) + (1 - c) * (-y)


def test_lab00_2_scripted_epsilon_is_named():
    result = expect_wrong("lab00.2", lambda model: torch.jit.script(_EpsilonBlend(model)))
    assert "tiny positive" in result.tried[0] and "极小的正数" in result.tried[1]
    assert "small epsilon" in result.en and "小 epsilon" in result.zh


def test_lab00_2_scripted_nan_sum_as_positive_is_named():
    result = expect_wrong("lab00.2", lambda model: torch.jit.script(_NegatedLessOrEqual(model)))
    assert "y.sum() is NaN" in result.en and "y.sum() 为 NaN" in result.zh


def test_lab00_2_scripted_blend_is_named():
    result = expect_wrong("lab00.2", lambda model: torch.jit.script(_Blend(model)))
    assert "0 · inf" in result.en and "0 · inf 变成 NaN" in result.zh


def test_lab00_2_right_answers_pass():
    expect_passed("lab00.2", lambda model: torch.jit.script(model))
    expect_passed("lab00.2", lambda model: torch.compile(model, backend="eager"))
