"""Checkers for labs/lab00_warmup.ipynb (lecture course/00_overview.ipynb).

Each task reads as its data: the reference, probes the lab does not show, the known mistakes
(a predicate and a message each) and a hint ladder. Probe data comes from the checker's own
``torch.Generator``; probe models are built inside ``torch.random.fork_rng`` so the learner's
random numbers are never touched.
"""
from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Callable

import torch
from torch import fx, nn
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from . import Wrong, task
from ._probe import (Mistake, Probe, built, close, counted_once, describe, differs, need_callable,
                     plain_counts, run_probes)
from .. import zoo
from .._lang import Bilingual
from .._text import quiet


def _pair(value: Bilingual) -> tuple[str, str]:
    """``value`` as an (English, 中文) pair: a plain string (code, a repr) reads the same in both."""
    return value if isinstance(value, tuple) else (value, value)


def _close(a: Any, b: torch.Tensor) -> bool:
    return close(a, b, atol=1e-5)


# -- lab00.1: count nodes by opcode --------------------------------------------------------------
class _AttrsAndMethods(nn.Module):
    """get_attr nodes (a Parameter and a buffer used directly) and call_method nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("offset", torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, self.weight).add(self.offset).relu().sum(-1)


def _scaled_norm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x + y).norm(dim=-1).clamp(min=1e-3)


class _Repeats(nn.Module):
    """The same submodule, function and method called twice each: one target, two nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.abs()  # an unused node: symbolic_trace records it, and it counts like any other
        h = torch.relu(self.lin(x))
        h = torch.relu(self.lin(h) + h)
        return h.sum(-1).sum()


def _same_call_twice(x: torch.Tensor) -> torch.Tensor:
    return torch.cos(x) * torch.cos(x)


def _opcode_probes() -> list[Probe]:
    """Graphs the learner has not seen; together they hold all six opcodes, and one calls the same
    submodule, function and method twice (so counting distinct targets shows)."""
    probes = [Probe(f"symbolic_trace(zoo.{name})", (fx.symbolic_trace(zoo.example(name)[0]),))
              for name in ("mlp", "clamp_linear", "conv_bn_relu")]
    probes.append(Probe(("symbolic_trace(<a module using its own Parameter and buffer, and tensor methods>)",
                         "symbolic_trace(<直接使用自身 Parameter 和 buffer、并调用张量方法的模块>)"),
                        (fx.symbolic_trace(built(_AttrsAndMethods, 5)),)))
    probes.append(Probe(("symbolic_trace(<a function of two tensors using methods>)",
                         "symbolic_trace(<接收两个张量、调用张量方法的函数>)"), (fx.symbolic_trace(_scaled_norm),)))
    probes.append(Probe(("symbolic_trace(<a module calling the same Linear, torch.relu and .sum twice each, "
                         "and an unused .abs()>)",
                         "symbolic_trace(<同一个 Linear、torch.relu 和 .sum 各调用两次、另有一个无人使用的 .abs() 的模块>)"),
                        (fx.symbolic_trace(built(_Repeats, 6)),)))
    probes.append(Probe(("symbolic_trace(lambda x: torch.cos(x) * torch.cos(x))",
                         "symbolic_trace(lambda x: torch.cos(x) * torch.cos(x))"),
                        (fx.symbolic_trace(_same_call_twice),)))
    return probes


def _count_reference(gm: fx.GraphModule) -> dict[str, int]:
    return dict(Counter(node.op for node in gm.graph.nodes))


def _without_dead_code(gm: fx.GraphModule) -> fx.GraphModule:
    clean = copy.deepcopy(gm)
    clean.graph.eliminate_dead_code()
    return clean


def _gm(probe: Probe) -> fx.GraphModule:
    return probe.args[0]


_OPCODES = {"placeholder", "get_attr", "call_function", "call_method", "call_module", "output"}


def _graph_text(gm: fx.GraphModule) -> str:
    return str(gm.graph)


def _leaves_graph_alone(answer: Callable[[fx.GraphModule], Any], probe: Probe) -> Callable[[fx.GraphModule], Any]:
    """``answer`` as a function that fails when it edits the graph it was given (a counter only reads)."""
    def call(gm: fx.GraphModule) -> Any:
        before = _graph_text(gm)
        got = answer(gm)
        if _graph_text(gm) != before:
            raise Wrong("count_by_opcode changed the graph it was given (a node was added, removed or rewired); "
                        "counting only reads the nodes.",
                        "count_by_opcode 修改了传给它的计算图（增加、删除或重连了节点）；统计只需读取节点。",
                        tried=probe.label, expected=("the graph unchanged", "计算图保持不变"),
                        got=("a changed graph", "计算图被改动了"))
        return got
    return call


_OPCODE_MISTAKES = [
    Mistake("not a dict", lambda got, want, p: not isinstance(got, dict),
            "return a dict from opcode (a string such as 'placeholder') to the number of nodes.",
            "请返回从 opcode（如 'placeholder' 这样的字符串）到节点数的 dict。"),
    Mistake("counted targets or names",
            lambda got, want, p: bool(set(map(str, got)) - set(want)) and set(map(str, got)) <= {
                s for n in _gm(p).graph.nodes for s in (str(n.target), n.name)},
            "the keys are node targets or names; count what kind of operation each node is (its opcode), "
            "not what it calls or how it is named.",
            "这些键是节点的 target 或名字；应统计每个节点是哪一类操作（它的 opcode），而不是它调用了什么或叫什么名字。"),
    Mistake("left out inputs and output",
            lambda got, want, p: got == {k: v for k, v in want.items() if k not in ("placeholder", "output")},
            "the inputs (placeholder) and the output are nodes too; every node counts once under its opcode.",
            "输入（placeholder）和输出（output）也是节点；每个节点都按其 opcode 计一次。"),
    Mistake("counts that are not ints",
            lambda got, want, p: set(got) == set(want) and any(type(v) is not int for v in got.values()),
            "the keys are right, but a count is not a Python int (a float, a string or a tensor): count "
            "nodes into plain integers.",
            "键是对的，但有的计数不是 Python int（而是 float、字符串或张量）：请用普通整数统计节点数。"),
    Mistake("counted modules",
            lambda got, want, p: not set(got) <= _OPCODES
            and sum(got.values()) == len(dict(_gm(p).named_modules()))
            and sum(got.values()) != sum(want.values()),
            "that counts the submodules of the GraphModule; walk the nodes of its graph instead.",
            "这统计的是 GraphModule 的子模块；应遍历它的计算图中的节点。"),
    counted_once("opcodes", " opcode "),
    Mistake("left out unused nodes", lambda got, want, p: got == _count_reference(_without_dead_code(_gm(p))) != want,
            "a node whose result nobody uses is missing from your counts (the graph was cleaned, e.g. by "
            "eliminate_dead_code, before counting): count every node the graph holds, used or not.",
            "结果无人使用的节点没有算进你的计数（统计之前计算图被清理过，例如调用了 eliminate_dead_code）："
            "请统计计算图中的每个节点，无论是否被使用。"),
    Mistake("counted distinct targets",
            lambda got, want, p: got != want and (
                got == dict(Counter(op for op, _ in {(n.op, str(n.target)) for n in _gm(p).graph.nodes}))
                or got == dict(Counter(op for op, _, _ in {(n.op, str(n.target), str(n.args)) for n in _gm(p).graph.nodes}))),
            "a node that calls the same function, method or submodule as another node (even on the same "
            "arguments) was not counted: each call is a node of its own, so count the nodes, not the distinct "
            "things they call.",
            "调用同一个函数、方法或子模块的节点（即使参数也相同）没有被重复计数：每次调用都是一个独立的节点，所以要统计节点个数，而不是不同的调用对象个数。"),
]


@task("lab00.1", "count nodes by opcode", "按 opcode 统计节点数", hints=[
    ("Every node of the graph has exactly one opcode. Count each node once under its opcode, including the "
     "inputs and the output.",
     "计算图的每个节点都恰好有一个 opcode。每个节点按其 opcode 计一次，输入和输出也算在内。"),
    ("The opcode is the kind of operation a node is (placeholder, get_attr, call_function, call_method, "
     "call_module, output), not the function or module it calls; a graph module's graph yields its nodes in order.",
     "opcode 表示节点是哪一类操作（placeholder、get_attr、call_function、call_method、call_module、output），"
     "而不是它调用的函数或模块；GraphModule 的计算图会按顺序给出它的节点。"),
    ("Lecture course/03_fx_tracing_ir.ipynb, section '4 · The six opcodes', shows a node of each opcode; "
     "lecture 00, section '3 · torch.fx.symbolic_trace', shows the graph of a traced model.",
     "讲义 course/03_fx_tracing_ir.ipynb 第「4 · 六种 opcode」节展示了每种 opcode 的节点；"
     "第 00 讲第「3 · torch.fx.symbolic_trace」节展示了追踪得到的计算图。"),
])
def _count_by_opcode(answer: Any) -> None:
    need_callable(answer, "count_by_opcode")
    for probe in _opcode_probes():
        counted = _leaves_graph_alone(answer, probe)
        run_probes(lambda gm: plain_counts(counted(gm)), _count_reference, [probe],
                   mistakes=_OPCODE_MISTAKES, what="count_by_opcode",
                   generic=("a count is off: every node counts once under its opcode (node.op).",
                            "有计数不对：每个节点都按其 opcode（node.op）计一次。"))


# -- probes shared by lab00.2 and lab00.3: zoo.Gate on both branches -------------------------------
def _rows_with_sums(gate: zoo.Gate, gen: torch.Generator, y_sums: list[float], x_sums: list[float]) -> torch.Tensor:
    """Rows x whose y = gate.linear(x) rows sum to ``y_sums`` and whose own rows sum to ``x_sums``,
    plus random noise that changes neither sum (so the probes are not symmetric)."""
    w, b = gate.linear.weight.detach().double(), gate.linear.bias.detach().double()
    a = torch.stack([w.sum(0), torch.ones(w.shape[1], dtype=torch.float64)])  # 2 × d
    pinv = torch.linalg.pinv(a)
    rows = []
    for ys, xs in zip(y_sums, x_sums):
        noise = 2.0 * torch.randn(w.shape[1], generator=gen, dtype=torch.float64)
        noise = noise - pinv @ (a @ noise)
        rows.append(noise + pinv @ torch.tensor([ys - float(b.sum()), xs], dtype=torch.float64))
    return torch.stack(rows).float()


def _gate_probes(gate: zoo.Gate, seed: int) -> list[Probe]:
    """Inputs on both branches, in three shapes, with rows of y of both signs. On the first two the
    sum of x has the sign of the sum of y; on the last two it has the other sign."""
    gen = torch.Generator().manual_seed(seed)
    d = gate.linear.in_features
    up = _rows_with_sums(gate, gen, [3.0, 2.0, -1.5], [1.0, 2.0, -0.5])
    down = _rows_with_sums(gate, gen, [1.5, -4.0], [-2.0, 1.0])
    single = _rows_with_sums(gate, gen, [2.5], [-1.0])
    batched = torch.cat([_rows_with_sums(gate, gen, [1.0, -2.5, 0.5], [1.0, 2.0, -0.5]) for _ in range(2)])
    return [
        Probe((f"x of shape (3, {d}): sum of y > 0, one row of y sums below 0",
               f"x（形状 (3, {d})）：y 之和 > 0，y 有一行之和小于 0"), (up,)),
        Probe((f"x of shape (2, {d}): sum of y <= 0, one row of y sums above 0",
               f"x（形状 (2, {d})）：y 之和 <= 0，y 有一行之和大于 0"), (down,)),
        Probe((f"x of shape (1, {d}): sum of y > 0 while sum of x < 0",
               f"x（形状 (1, {d})）：y 之和 > 0，而 x 之和 < 0"), (single,)),
        Probe((f"x of shape (2, 3, {d}): sum of y <= 0 while sum of x > 0",
               f"x（形状 (2, 3, {d})）：y 之和 <= 0，而 x 之和 > 0"), (batched.view(2, 3, d),)),
    ]


def _zero_sum_gate() -> zoo.Gate:
    """A Gate whose y always sums to exactly 0 (column sums of W and the sum of b are 0, all
    values exact in binary), so the boundary `y.sum() > 0` versus `>= 0` shows."""
    gate = zoo.Gate(4).eval()
    with torch.no_grad():
        gate.linear.weight.copy_(torch.tensor([[1.0, 0, 0.5, 0], [-1.0, 0, 0, 1], [0, 2.0, -0.5, 0], [0, -2.0, 0, -1]]))
        gate.linear.bias.copy_(torch.tensor([0.5, -0.25, -0.25, 0.0]))
    return gate


_ZERO_SUM_X = torch.tensor([[1.0, 0.5, 3.0, -2.0], [-0.75, 1.25, 0.0, 1.0]])
_ZERO_SUM_LABEL = ("x of shape (2, 4) for which y.sum() is exactly 0 (another Gate's weights)",
                   "形状为 (2, 4)、使 y.sum() 恰好为 0 的 x（另一个 Gate 的权重）")

#: y.sum() of the tiny-sum gate on ``_TINY_POS_X``, exactly (about 5.6e-45, a subnormal float32 far below
#: any epsilon; the mean of y, a quarter of it, is 2**-149, the smallest positive float32, still exact).
_TINY = 2.0 ** -147


def _tiny_sum_gate() -> zoo.Gate:
    """A Gate with W = 2**-125 · I and a bias of (2**-147, 0, 0, 0): on ``_TINY_POS_X`` y.sum() is
    +2**-147, on ``_TINY_NEG_X`` it is -2**-147. Every entry of y and every partial sum is exact in
    float32 (the spacing of float32 near 2**-125 is 2**-148), so any order of summation gives that sum.
    The entries of y are about 2.4e-38, so the outputs are compared with a relative tolerance only."""
    gate = zoo.Gate(4).eval()
    with torch.no_grad():
        gate.linear.weight.copy_(torch.eye(4) * 2.0 ** -125)
        gate.linear.bias.copy_(torch.tensor([_TINY, 0.0, 0.0, 0.0]))
    return gate


_TINY_POS_X = torch.tensor([[1.0, -1.0, 0.0, 0.0]])
_TINY_NEG_X = torch.tensor([[1.0, -1.0 - 2.0 ** -21, 0.0, 0.0]])
_TINY_LABELS = (("x of shape (1, 4) for which y.sum() is 2**-147, a tiny positive number (another Gate's weights)",
                 "形状为 (1, 4)、使 y.sum() 为 2**-147（一个极小的正数）的 x（另一个 Gate 的权重）"),
                ("x of shape (1, 4) for which y.sum() is -2**-147, a tiny negative number (another Gate's weights)",
                 "形状为 (1, 4)、使 y.sum() 为 -2**-147（一个极小的负数）的 x（另一个 Gate 的权重）"))


#: The tiny gate on two rows: y.sum() is 2**-147 again, but over 8 entries the mean, 2**-150, rounds to 0.
_TINY_BATCH_X = torch.tensor([[1.0, -1.0, 0.0, 0.0], [-2.0 ** -22, 0.0, 0.0, 0.0]])
_TINY_BATCH_LABEL = ("x of shape (2, 4) for which y.sum() is 2**-147 over 8 entries (its mean rounds to 0 in float32; "
                     "another Gate's weights)",
                     "形状为 (2, 4)、使 8 个元素的 y.sum() 为 2**-147 的 x（其均值在 float32 中舍入为 0；另一个 Gate 的权重）")
_TINY_ALL = (*_TINY_LABELS, _TINY_BATCH_LABEL)


def _tiny_probes() -> list[Probe]:
    return [Probe(label, (x,)) for label, x in zip(_TINY_ALL, (_TINY_POS_X, _TINY_NEG_X, _TINY_BATCH_X))]


def _edge_gate() -> zoo.Gate:
    """A Gate with W = 2·I and b = 0, so an input of 3e38 gives an infinite entry of y."""
    gate = zoo.Gate(4).eval()
    with torch.no_grad():
        gate.linear.weight.copy_(torch.eye(4) * 2.0)
        gate.linear.bias.zero_()
    return gate


_NAN = float("nan")
_INF_LABELS = (("x of shape (2, 4) for which y holds +inf and y.sum() is +inf (another Gate's weights)",
                "形状为 (2, 4)、使 y 含 +inf 且 y.sum() 为 +inf 的 x（另一个 Gate 的权重）"),
               ("x of shape (1, 4) for which y holds +inf and -inf, so y.sum() is NaN (another Gate's weights)",
                "形状为 (1, 4)、使 y 同时含 +inf 和 -inf、因而 y.sum() 为 NaN 的 x（另一个 Gate 的权重）"))
_NAN_LABEL = ("x of shape (2, 4) holding a NaN, so y.sum() is NaN (another Gate's weights)",
              "形状为 (2, 4)、含一个 NaN、因而 y.sum() 为 NaN 的 x（另一个 Gate 的权重）")
_NAN_SUM_LABELS = (_INF_LABELS[1], _NAN_LABEL)


def _edge_probes() -> list[Probe]:
    return [Probe(_INF_LABELS[0], (torch.tensor([[3e38, 1.0, -1.0, 0.5], [0.25, -2.0, 1.0, 0.0]]),)),
            Probe(_INF_LABELS[1], (torch.tensor([[3e38, -3e38, 1.0, 0.5]]),)),
            Probe(_NAN_LABEL, (torch.tensor([[_NAN, 1.0, 0.5, 0.0], [-0.25, 2.0, -1.0, 0.75]]),))]


def _edge_cases() -> list[tuple[Bilingual, zoo.Gate, list[Probe]]]:
    """Gates and inputs at the edges of `y.sum() > 0`: exactly 0, tiny of either sign, infinite, NaN."""
    return [(("a zoo.Gate whose y sums to 0", "y 之和为 0 的 zoo.Gate"), _zero_sum_gate(),
             [Probe(_ZERO_SUM_LABEL, (_ZERO_SUM_X,))]),
            (("a zoo.Gate whose y sums to a tiny number", "y 之和是一个极小数的 zoo.Gate"), _tiny_sum_gate(), _tiny_probes()),
            (("a zoo.Gate whose y can hold inf or NaN", "y 可能含 inf 或 NaN 的 zoo.Gate"), _edge_gate(), _edge_probes())]


def _exactly(got: Any, want: torch.Tensor) -> str | None:
    """``differs`` with a relative tolerance only: the tiny gate's outputs are about 2.4e-38."""
    return differs(got, want, rtol=1e-5, atol=0.0)


def _gate_mistakes(gate: zoo.Gate, fn: Callable[[torch.Tensor], Any], seed: int) -> list[Mistake]:
    """What a learner's gate returns when it decides on the wrong thing, for this gate's y.

    Swapped branches and "one branch for every input" give the same numbers on any one input, so
    those two are told apart by what ``fn`` (the learner's model) does on one input of each branch.
    """
    def y_of(x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return gate.linear(x)

    def gated(cond: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(cond, torch.relu(y), -y)

    xs = [p.args[0] for p in _gate_probes(gate, seed)]
    right = tuple("relu" if float(y_of(x).sum()) > 0 else "neg" for x in xs)
    swapped = tuple("neg" if b == "relu" else "relu" for b in right)
    seen: list[tuple[str, ...]] = []

    def behaviour() -> tuple[str, ...]:
        """Which branch fn takes on each probe input (both signs of the sum of y, in three shapes)."""
        if not seen:
            taken = []
            for x in xs:
                with torch.no_grad():
                    out = fn(x.clone())
                y = y_of(x)
                taken.append("relu" if _close(out, torch.relu(y)) else "neg" if _close(out, -y) else "other")
            seen.append(tuple(taken))
        return seen[0]

    return [
        Mistake("threshold off 0", lambda got, want, p: p.label in _TINY_ALL
                and _exactly(got, -y_of(p.args[0]) if float(y_of(p.args[0]).sum()) > 0 else torch.relu(y_of(p.args[0]))) is None,
                "when y.sum() is a tiny number (about ±6e-45, below the smallest normal float32) of one sign, Gate follows that sign; yours took the "
                "other branch, as a test against a small epsilon (or a rounded mean) would. Gate's test is "
                "y.sum() > 0, with nothing added to 0.",
                "当 y.sum() 是一个极小（约 ±6e-45，比最小的正规 float32 还小）但有确定符号的数时，Gate 按这个符号选分支；你的结果却走了另一个分支，"
                "就像拿它与一个小 epsilon 比较（或用了舍入后的均值）那样。Gate 的条件是 y.sum() > 0，0 上不加任何余量。"),
        Mistake("decided at the boundary", lambda got, want, p: p.label == _ZERO_SUM_LABEL
                and _close(got, torch.relu(y_of(p.args[0]))),
                "when y.sum() is exactly 0, Gate takes the `-y` branch (its test is a strict `> 0`); yours took relu(y).",
                "当 y.sum() 恰好为 0 时，Gate 走的是 `-y` 分支（它的条件是严格的 `> 0`）；你的结果走了 relu(y)。"),
        Mistake("NaN sum taken as positive", lambda got, want, p: p.label in _NAN_SUM_LABELS
                and _close(got, torch.relu(y_of(p.args[0]))),
                "when y.sum() is NaN (x holds a NaN, or y holds both +inf and -inf), Gate's test y.sum() > 0 is "
                "False, so it returns -y; yours returned relu(y), as a test that is only the negation of "
                "`<= 0`, or a sum that skips NaN, would.",
                "当 y.sum() 为 NaN 时（x 含 NaN，或 y 同时含 +inf 和 -inf），Gate 的条件 y.sum() > 0 为 False，"
                "因此返回 -y；你的结果却是 relu(y)，就像把条件写成 `<= 0` 的否定、或用了跳过 NaN 的求和那样。"),
        Mistake("NaN from mixing the branches", lambda got, want, p: p.label in _INF_LABELS
                and isinstance(got, torch.Tensor) and got.shape == want.shape
                and bool((torch.isnan(got) & ~torch.isnan(want)).any()),
                "y holds an infinite entry and your result has NaN where Gate's has a number: combining both "
                "branches with arithmetic (a 0/1 weight times each branch, then added) turns 0 · inf into NaN. "
                "Gate returns one branch untouched; pick it with an element-wise select instead.",
                "y 含有无穷大的元素，而你的结果在 Gate 给出数值的位置出现了 NaN：用算术把两个分支组合起来"
                "（0/1 权重分别乘以两个分支再相加）会把 0 · inf 变成 NaN。Gate 原样返回其中一个分支；请改用逐元素选择运算来挑选。"),
        Mistake("branches swapped", lambda got, want, p: behaviour() == swapped,
                "the two branches are swapped: relu(y) belongs to a positive sum, -y to the rest.",
                "两个分支对调了：和为正时应返回 relu(y)，其余情况返回 -y。"),
        Mistake("one branch for every input", lambda got, want, p: len(set(behaviour())) == 1
                and behaviour()[0] != "other",
                "the result follows the same branch whatever the input: only one path of the `if` was kept.",
                "无论输入如何，结果都走同一个分支：`if` 只保留下了一条路径。"),
        Mistake("decided per row",
                lambda got, want, p: _close(got, gated(y_of(p.args[0]).sum(-1, keepdim=True) > 0, y_of(p.args[0]))),
                "the branch is chosen row by row; Gate makes one decision for the whole input, from the sum of "
                "all of y.",
                "你按行分别选择了分支；Gate 对整个输入只做一次判断，依据是 y 所有元素之和。"),
        Mistake("decided per element",
                lambda got, want, p: _close(got, gated(y_of(p.args[0]) > 0, y_of(p.args[0]))),
                "the branch is chosen entry by entry (each entry of y against 0); Gate makes one decision for the "
                "whole input, from the sum of all of y.",
                "你逐个元素地选择了分支（y 的每个元素与 0 比较）；Gate 对整个输入只做一次判断，依据是 y 所有元素之和。"),
        Mistake("decided on the input", lambda got, want, p: _close(got, gated(p.args[0].sum() > 0, y_of(p.args[0]))),
                "the branch follows the sign of the sum of x; Gate decides on the sum of y = self.linear(x).",
                "你的分支跟随的是 x 之和的符号；Gate 依据的是 y = self.linear(x) 之和。"),
    ]


def _gate_probe_set(gate: zoo.Gate, seed: int, label: Bilingual) -> list[Probe]:
    (en, zh) = _pair(label)
    return [Probe((f"{en} on {p.label[0]}", f"{zh}，输入 {p.label[1]}"), p.args) for p in _gate_probes(gate, seed)]


# -- lab00.2: capture a model so both branches survive --------------------------------------------
def _is_capture(obj: Any) -> bool:
    """Something a capture API returned: TorchScript (module, function or method) or torch.compile's
    wrapper of a module or of a function/method."""
    script_types = (torch.jit.ScriptModule, torch.jit.ScriptFunction, torch._C.ScriptMethod)
    return isinstance(obj, script_types) or hasattr(obj, "_torchdynamo_orig_callable")


def _capture(answer: Any, gate: zoo.Gate, label: str) -> Any:
    modes = [m.training for m in gate.modules()]
    with quiet():
        try:
            captured = answer(gate)
        except GuardOnDataDependentSymNode as exc:
            raise Wrong("torch.export needs one whole graph, but the `if` depends on the data; pick an API that "
                        "keeps control flow (or breaks the graph there).",
                        "torch.export 需要一整张图，但这个 `if` 依赖数据；请选择能保留控制流（或能在那里产生图中断）的 API。",
                        tried=f"capture_gate({label})", got=f"{type(exc).__name__}: {str(exc).splitlines()[0]}") from None
        except fx.proxy.TraceError as exc:
            raise Wrong("torch.fx.symbolic_trace cannot follow an `if` on a tensor's value; pick an API that keeps "
                        "control flow.", "torch.fx.symbolic_trace 无法处理依赖张量取值的 `if`；请选择能保留控制流的 API。",
                        tried=f"capture_gate({label})", got=f"TraceError: {str(exc).splitlines()[0]}") from None
    if [m.training for m in gate.modules()] != modes:
        raise Wrong("capture_gate switched the model it was given between training and evaluation mode (for "
                    "example with .train() or .eval()); capture the model as it was handed to you and leave its "
                    "mode alone.",
                    "capture_gate 把传给它的模型切换了训练/评估模式（例如调用了 .train() 或 .eval()）；"
                    "请按传入时的状态捕获模型，不要改动它的模式。",
                    tried=f"capture_gate({label})",
                    expected=("the model still in evaluation mode" if not modes[0] else "the model still in training mode",
                              "模型仍处于评估模式" if not modes[0] else "模型仍处于训练模式"),
                    got=("its mode changed", "它的模式被改变了"))
    if captured is gate or type(captured) is type(gate) or getattr(captured, "__self__", None) is gate:
        raise Wrong("that is the eager model (or its forward) itself; return what a capture API produced.",
                    "这是 eager 模型本身（或它的 forward）；请返回捕获 API 生成的对象。",
                    tried=f"capture_gate({label})", got=describe(captured))
    if isinstance(captured, torch.jit.TopLevelTracedModule):
        raise Wrong("torch.jit.trace records only the branch its example input took; use an API that keeps "
                    "control flow.", "torch.jit.trace 只记录示例输入走过的那个分支；请使用能保留控制流的 API。",
                    tried=f"capture_gate({label})", got=("a traced module (torch.jit.trace)", "追踪得到的模块（torch.jit.trace）"))
    if not _is_capture(captured) or not callable(captured):
        raise Wrong("return the object a capture API gave you (TorchScript, or torch.compile of the model), "
                    "called like the model.",
                    "请返回捕获 API 给出的对象（TorchScript，或对模型调用 torch.compile 的结果），它的调用方式与模型相同。",
                    tried=f"capture_gate({label})", got=describe(captured))
    return captured


def _quietly(fn: Any, label: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        with quiet():
            try:
                return fn(*args)
            except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError) as exc:
                raise Wrong("torch.compile was asked for one whole graph (fullgraph=True, or torch.export), but a "
                            "data-dependent `if` needs a graph break; let Dynamo break the graph there.",
                            "你要求 torch.compile 生成一整张图（fullgraph=True 或 torch.export），但依赖数据的 `if` "
                            "需要图中断；请允许 Dynamo 在那里中断计算图。",
                            tried=(f"calling {label} on an input", f"在一个输入上调用 {label}"), got=f"{type(exc).__name__}: "
                            f"{str(exc).splitlines()[0]}") from None
    return call


@task("lab00.2", "capture a model so both branches survive", "捕获模型并保留两个分支", time_limit=300, hints=[
    ("An API that records one run of the model keeps only the path that run took. Which of the capture "
     "APIs of lecture 00 keep both paths of an `if` that depends on data?",
     "只记录模型一次运行的 API 只会保留那次运行走过的路径。第 00 讲中的哪些捕获 API 能保留依赖数据的 `if` 的两条路径？"),
    ("Two do: one compiles the Python source into a typed program with its own `if`; the other reads the "
     "bytecode and breaks the graph at the `if`, then continues in whichever branch runs. Lecture "
     "course/00_overview.ipynb, sections '2 · torch.jit.script' and '4 · torch.compile'.",
     "有两种：一种把 Python 源码编译成带类型、保留 `if` 的程序；另一种读取字节码，在 `if` 处产生图中断，"
     "再在实际执行的分支中继续。见讲义 course/00_overview.ipynb 第「2 · torch.jit.script」节和第「4 · torch.compile」节。"),
])
def _both_branches(answer: Any) -> None:
    need_callable(answer, "capture_gate")
    # Dynamo reuses code it compiled earlier in this process for Gate.forward (with another backend
    # or without fullgraph=True): start from an empty cache so the answer's own settings are what runs.
    torch._dynamo.reset()
    gates = [("zoo.Gate()", zoo.example("gate", seed=7)[0]),
             ("zoo.Gate(d=6) in training mode", built(lambda: zoo.Gate(6), 8, eval=False))]
    generic = ("the captured model gives another result than the eager model it was made from "
               "(capture the model you were given, with its weights).",
               "捕获得到的模型与它所来自的 eager 模型结果不同（请捕获传给你的那个模型，连同它的权重）。")
    for i, (label, gate) in enumerate(gates):
        captured = _capture(answer, gate, label)
        tried = f"capture_gate({label})"
        run_probes(_quietly(captured, tried), gate, _gate_probe_set(gate, 20 + i, tried),
                   mistakes=_gate_mistakes(gate, captured, 20 + i)[1:], what=tried, generic=generic)
    # The edges of `y.sum() > 0` (exactly 0, tiny, inf, NaN), each on a Gate of its own.
    for i, (label, gate, probes) in enumerate(_edge_cases()):
        en, zh = _pair(label)
        captured = _capture(answer, gate, en)
        tried = f"capture_gate({en})"
        run_probes(_quietly(captured, tried), gate, probes,
                   mistakes=_gate_mistakes(gate, captured, 25 + i), what=tried,
                   compare=_exactly if i == 1 else differs, generic=generic)


# -- lab00.3: a Gate that symbolic_trace accepts --------------------------------------------------
@task("lab00.3", "a Gate that symbolic_trace accepts", "让 symbolic_trace 接受的 Gate", hints=[
    ("symbolic_trace runs forward once with stand-ins that have no values, so nothing may ask a tensor for "
     "True or False. Compute both possible results and let a tensor operation pick one.",
     "symbolic_trace 用没有具体数值的替身运行一次 forward，所以不能向张量要 True 或 False。"
     "请把两种可能的结果都算出来，再让一个张量运算从中选一个。"),
    ("The condition is a 0-dimensional boolean tensor made from the sum of all of y (one decision for the "
     "whole input, strictly greater than 0); an element-wise select broadcasts it over y. Lecture "
     "course/00_overview.ipynb, section '3 · torch.fx.symbolic_trace'.",
     "条件是由 y 所有元素之和得到的 0 维布尔张量（对整个输入只判断一次，且是严格大于 0）；逐元素选择运算会把它广播到 y 上。"
     "见讲义 course/00_overview.ipynb 第「3 · torch.fx.symbolic_trace」节。"),
])
def _traceable_gate(answer: Any) -> None:
    try:
        model_of: Callable[[], Any] = answer if isinstance(answer, type) else (lambda: answer)
        model_of()
    except TypeError as exc:
        raise Wrong("pass the class TraceableGate; its constructor takes no arguments.",
                    "请传入 TraceableGate 类；它的构造函数不需要参数。", got=str(exc).splitlines()[0]) from None
    edges = _edge_cases()
    tiny = edges[1][1]
    cases = [("zoo.Gate()", zoo.example("gate", seed=11)[0], None),
             (("another zoo.Gate()", "另一个 zoo.Gate()"), built(zoo.Gate, 12), None), *edges]
    for i, (label, gate, probes) in enumerate(cases):
        en, zh = _pair(label)
        model = model_of()
        if not isinstance(model, nn.Module):
            raise Wrong("pass the class TraceableGate (or an instance of it).",
                        "请传入 TraceableGate 类（或它的实例）。", got=describe(model))
        try:
            model.load_state_dict(gate.state_dict())
        except RuntimeError as exc:
            raise Wrong("keep Gate's parameters (self.linear) so a Gate's weights can be loaded into your model.",
                        "请保留 Gate 的参数（self.linear），以便把 Gate 的权重加载到你的模型中。",
                        got=str(exc).splitlines()[0]) from None
        model.eval()
        try:
            gm = fx.symbolic_trace(model)
        except fx.proxy.TraceError as exc:
            raise Wrong("symbolic_trace still refuses it: a Python `if` (or bool()) on a tensor's value cannot be "
                        "traced; compute both results and choose between them with a tensor operation.",
                        "symbolic_trace 仍然拒绝：无法追踪依赖张量取值的 Python `if`（或 bool()）；"
                        "请同时计算两个结果，再用张量运算在二者之间选择。",
                        tried=(f"symbolic_trace(TraceableGate()) with the weights of {en}",
                               f"symbolic_trace(TraceableGate())，载入 {zh} 的权重"),
                        got=f"TraceError: {str(exc).splitlines()[0]}") from None
        run_probes(gm, gate, probes or _gate_probe_set(gate, 30 + i, (f"symbolic_trace(TraceableGate()), {en}",
                                                                     f"symbolic_trace(TraceableGate())，{zh}")),
                   mistakes=_gate_mistakes(gate, gm, 30 + i), what="symbolic_trace(TraceableGate())",
                   compare=_exactly if gate is tiny else differs,
                   generic=("the traced TraceableGate gives another result than Gate.",
                            "追踪得到的 TraceableGate 与 Gate 的结果不同。"))
