"""Checkers for labs/lab09_aot_inductor.ipynb (lecture course/09_aot_inductor.ipynb).

lab09.1 compares predicted counts of saved tensors with what AOTAutograd's min-cut
partitioner saves on this torch; lab09.2 compiles the answer with Inductor on inputs the lab
does not show and counts graphs and kernels with ``fxcourse.inductor_code``; lab09.3 runs
AOTAutograd with the learner's decomposition table and reads the forward and backward graphs.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from . import Wrong, task
from ._probe import Mistake, Probe, describe, differs, need_callable

# -- exercise 1: predict what the forward saves -------------------------------------------------

#: The lab's four functions: name -> (function, which arguments require grad).
PREDICT_FUNCTIONS: dict[str, tuple[Callable[..., torch.Tensor], tuple[bool, ...]]] = {
    "linear_relu": (lambda x, w: (x @ w).relu(), (True, False)),
    "sin_cos": (lambda x: torch.sin(x).cos(), (True,)),
    "affine_sum": (lambda x: (x * 2 + 1).sum(), (True,)),
    "tanh_times_x": (lambda x: torch.tanh(x) * x, (True,)),
}
_SHAPES = {"linear_relu": [(4, 6), (6, 3)], "sin_cos": [(5,)], "affine_sum": [(3, 4)], "tanh_times_x": [(6,)]}


def saved_counts(partitioner: str) -> dict[str, int]:
    """How many tensors each of the lab's functions saves for backward, read from AOTAutograd."""
    from ..viewers.inductor import aot_graphs

    gen = torch.Generator().manual_seed(91)
    counts = {}
    for name, (fn, grads) in PREDICT_FUNCTIONS.items():
        args = [torch.randn(shape, generator=gen).requires_grad_(g) for shape, g in zip(_SHAPES[name], grads)]
        counts[name] = len(aot_graphs(fn, *args, partitioner=partitioner).saved)
    return counts


_PREDICT_MISTAKES = [
    ("default partitioner",
     lambda got, want, default: got == default,
     "these are the counts of AOTAutograd's default partitioner; torch.compile with Inductor uses the min-cut "
     "partitioner, which recomputes cheap pointwise ops in the backward instead of saving their results.",
     "这是 AOTAutograd 默认划分器的计数；torch.compile 配合 Inductor 使用的是最小割（min-cut）划分器，"
     "它会在反向图中重新计算廉价的逐元素算子，而不是保存它们的结果。"),
    ("affine_sum saves something",
     lambda got, want, default: got.get("affine_sum", 0) > want["affine_sum"],
     "affine_sum's gradient does not depend on x at all (the derivative of x * 2 + 1 is the constant 2): its "
     "backward needs no saved tensor.",
     "affine_sum 的梯度与 x 的取值完全无关（x * 2 + 1 的导数是常数 2）：它的反向图不需要保存任何张量。"),
    ("linear_relu without w",
     lambda got, want, default: got.get("linear_relu", 0) < want["linear_relu"],
     "linear_relu: the gradient with respect to x needs w (or a view of it) even though w itself does not "
     "require grad, and relu's backward needs to know where its input was positive.",
     "linear_relu：对 x 求梯度需要 w（或它的视图），尽管 w 本身不要求梯度；relu 的反向还需要知道输入在哪些位置为正。"),
]


#: What lab09.1 tries: the lab's functions, read with Inductor's partitioner.
_FOUR_FUNCTIONS = ("the lab's four functions, min-cut partitioner", "本实验的四个函数，最小割划分器")


@task("lab09.1", "predict what the forward saves", "预测前向图保存的张量", hints=[
    ("For each function, ask what its backward needs to compute the gradient: an input, an intermediate "
     "result, or nothing. Then ask which of those are cheap to recompute from what is saved anyway.",
     "对每个函数想一想：它的反向计算梯度需要什么？输入、中间结果，还是什么都不需要？"
     "然后再想：其中哪些可以从本来就要保存的张量廉价地重新算出来？"),
    ("Lecture 09, section 4 (The partitioner: what the forward saves) compares the default partitioner with the "
     "min-cut one; the min-cut one is Inductor's. Predict first, then verify with aot_graphs(..., "
     "partitioner='min_cut') and read .saved.",
     "第 09 讲第 4 节（The partitioner: what the forward saves）比较了默认划分器和最小割划分器；Inductor 用的是后者。"
     "先预测，再用 aot_graphs(..., partitioner='min_cut') 验证，读取 .saved。"),
])
def _predict(make_predictions: Any) -> None:
    need_callable(make_predictions, "make_predictions")
    answer = make_predictions()
    if not isinstance(answer, dict):
        raise Wrong("make_predictions() must return a dict {function name: int}.",
                    "make_predictions() 应返回 dict {函数名: int}。", got=describe(answer))
    want = saved_counts("min_cut")
    diff = differs(answer, want, where="predictions")
    if diff is None:
        return
    if set(answer) == set(want) and all(type(v) is int for v in answer.values()):
        default = saved_counts("default")
        for _name, matches, en, zh in _PREDICT_MISTAKES:
            if matches(answer, want, default):
                raise Wrong(en, zh, tried=_FOUR_FUNCTIONS, got=diff)
    raise Wrong("at least one prediction differs from what the min-cut partitioner saves; check that function "
                "with aot_graphs and read which tensors its backward takes as inputs.",
                "至少有一个预测与最小割划分器实际保存的数量不同；用 aot_graphs 检查那个函数，看看它的反向图以哪些张量为输入。",
                tried=_FOUR_FUNCTIONS, got=diff)


# -- exercise 2: one kernel ----------------------------------------------------------------------

def normalise(x: torch.Tensor) -> torch.Tensor:
    """The lab's starting point: divide by the largest magnitude (read as a Python float), then relu."""
    peak = x.abs().max().item()
    return torch.relu(x / peak)


def _fused_probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(92)
    mostly_negative = torch.randn(6, 5, generator=gen) - 1.5   # its largest value is far from its largest magnitude
    with_zeros = torch.randn(3, 4, 7, generator=gen)
    with_zeros[0] = 0.0
    return [Probe(("a (6, 5) tensor, mostly negative", "形状 (6, 5)、大多为负数的张量"), (mostly_negative,)),
            Probe(("a (3, 4, 7) tensor with a slice of zeros", "形状 (3, 4, 7)、其中一片全为零的张量"), (with_zeros,)),
            Probe(("a 1-D tensor of 33 values", "含 33 个值的一维张量"), (torch.randn(33, generator=gen) * 4,))]


_FUSED_MISTAKES = [
    Mistake("largest value, not magnitude",
            lambda got, want, p: torch.allclose(got, torch.relu(p.args[0] / p.args[0].max())),
            "you divide by the largest value, not the largest magnitude (absolute value); on a tensor that is "
            "mostly negative the two differ.",
            "你除以的是最大值，而不是最大的绝对值；对一个大多为负数的张量，两者并不相同。"),
    Mistake("per-row peak",
            lambda got, want, p: torch.allclose(got, torch.relu(p.args[0] / p.args[0].abs().amax(-1, keepdim=True))),
            "you normalise each row by its own peak; the function divides the whole tensor by one number.",
            "你按每一行各自的峰值做了归一化；原函数是把整个张量除以同一个数。"),
]


@task("lab09.2", "rewrite a function so Inductor makes one kernel", "改写函数，让 Inductor 只生成一个内核",
      time_limit=300, hints=[
          ("Count the graphs first: what does `.item()` do to Dynamo's capture, and what does each captured graph "
           "become in Inductor?",
           "先数一数计算图：`.item()` 会对 Dynamo 的捕获造成什么影响？每张捕获到的计算图在 Inductor 里又会变成什么？"),
          ("Lecture 09, section 5 (Inductor: from post-grad graph to kernels) shows a reduction and the pointwise ops "
           "that read it fused into one kernel when they stay tensors in one graph. Keep the peak a tensor.",
           "第 09 讲第 5 节（Inductor: from post-grad graph to kernels）展示了：只要归约和读取它的逐元素算子都以张量形式"
           "留在同一张图里，它们就会融合成一个内核。让峰值保持为张量。"),
          ("Each generated kernel and each extern call shows in inductor_code(your_function, x).to_text(); aim for one "
           "kernel row and nothing else, with the same values as normalise.",
           "inductor_code(your_function, x).to_text() 会列出每个生成的内核和每个外部调用；目标是只有一行内核，"
           "没有别的，并且数值与 normalise 相同。"),
      ])
def _fused(answer: Any) -> None:
    from ..viewers.inductor import inductor_code
    from .._text import quiet

    need_callable(answer, "normalise_fused")
    for probe in _fused_probes():
        x = probe.args[0]
        want = normalise(x.clone())
        with quiet():
            got = answer(x.clone())
        diff = differs(got, want)
        if diff is not None:
            for mistake in _FUSED_MISTAKES:
                try:
                    matched = bool(mistake.matches(got, want, probe))
                except Exception:
                    matched = False
                if matched:
                    raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=describe(want), got=diff)
            raise Wrong("normalise_fused gives different values from normalise.",
                        "normalise_fused 的数值与 normalise 不同。", tried=probe.label, expected=describe(want),
                        got=diff)
        code = inductor_code(answer, x.clone())
        graphs = len(code.post_grad)
        if graphs > 1:
            raise Wrong(f"Inductor compiled {graphs} graphs: something in the function still breaks Dynamo's "
                        "capture (a Python number read from a tensor ends the graph), so the work cannot fuse.",
                        f"Inductor 编译了 {graphs} 张计算图：函数里仍有东西打断了 Dynamo 的捕获（从张量读出 Python 数会结束"
                        "计算图），所以这些计算无法融合。", tried=probe.label, expected=("1 graph, 1 kernel", "1 张计算图，1 个内核"),
                        got=(f"{graphs} graphs, {len(code.kernels)} kernels", f"{graphs} 张计算图，{len(code.kernels)} 个内核"))
        if code.externs:
            names = ", ".join(e.name for e in code.externs)
            raise Wrong(f"Inductor left an op to a library or to eager ATen ({names}); such a call is a fusion "
                        "boundary. Compute the peak with a reduction Inductor generates code for.",
                        f"Inductor 把一个算子交给了库函数或 eager 的 ATen（{names}）；这样的调用是融合的边界。"
                        "请用 Inductor 能生成代码的归约算子来求峰值。", tried=probe.label,
                        expected=("1 kernel, no extern calls", "1 个内核，没有外部调用"),
                        got=(f"extern calls: {names}", f"外部调用：{names}"))
        if len(code.kernels) != 1:
            raise Wrong(f"Inductor made {len(code.kernels)} kernels; the reduction and the pointwise ops did not fuse.",
                        f"Inductor 生成了 {len(code.kernels)} 个内核；归约和逐元素算子没有融合在一起。",
                        tried=probe.label, expected=("1 kernel", "1 个内核"), got=", ".join(k.name for k in code.kernels))


# -- exercise 3: decompose silu, forward and backward ----------------------------------------------

class _SiLUMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(5, 4)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x)).sum(-1)


def _silu_cases() -> list[tuple[tuple[str, str], Callable[..., torch.Tensor], torch.Tensor]]:
    gen = torch.Generator().manual_seed(93)
    mlp = _SiLUMLP()
    with torch.no_grad():
        for p in mlp.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    signs = torch.tensor([-6.0, -2.0, -0.5, 0.0, 0.5, 2.0, 6.0])
    return [(("F.silu(x) * x on 7 values from -6 to 6 (with 0)", "F.silu(x) * x，输入为 -6 到 6 之间的 7 个值（含 0）"),
             lambda x: F.silu(x) * x, signs),
            (("an nn.SiLU after an nn.Linear, input (3, 5)", "nn.Linear 之后接 nn.SiLU，输入形状 (3, 5)"),
             mlp, torch.randn(3, 5, generator=gen)),
            (("F.silu on a (2, 3, 4) tensor, then a sum", "对形状 (2, 3, 4) 的张量做 F.silu，再求和"),
             lambda x: F.silu(x).sum(), torch.randn(2, 3, 4, generator=gen))]


def _silu_ops(ops: list[str]) -> list[str]:
    return [op for op in ops if op.startswith("aten.silu")]


@task("lab09.3", "decompose silu, forward and backward", "分解 silu 的前向与反向", hints=[
    ("A decomposition table maps an op overload to a Python function written with other ops. Which two ops "
     "appear in the joint graph of a function that calls F.silu?",
     "分解表把一个算子重载（overload）映射到一个用其他算子写成的 Python 函数。调用 F.silu 的函数，其联合计算图中会出现哪两个算子？"),
    ("Lecture 09, section 3 (Decompositions and Core ATen): the keys are overloads such as `.default`, not the "
     "op packet; the backward op has its own entry, because autograd differentiates silu with its own formula "
     "before your forward decomposition runs.",
     "第 09 讲第 3 节（Decompositions and Core ATen）：表的键是 `.default` 这样的重载，而不是算子包（packet）；"
     "反向算子要单独登记，因为 autograd 在你的前向分解生效之前，就已经用 silu 自己的公式求导了。"),
])
def _decompose(make_table: Any) -> None:
    from ..viewers.inductor import aot_graphs
    from .._text import quiet

    need_callable(make_table, "make_silu_decompositions")
    answer = make_table()
    if not isinstance(answer, dict):
        raise Wrong("make_silu_decompositions() must return a dict from op overloads to functions.",
                    "make_silu_decompositions() 应返回从算子重载映射到函数的 dict。", got=describe(answer))
    packets = [k for k in answer if isinstance(k, torch._ops.OpOverloadPacket)]
    if packets:
        raise Wrong("a key of your table is an op packet (torch.ops.aten.silu); AOTAutograd looks decompositions up "
                    "by overload, so a packet key never fires.",
                    "分解表的某个键是算子包（torch.ops.aten.silu）；AOTAutograd 按重载查找分解，以算子包为键的条目永远不会生效。",
                    got=(f"keys: {sorted(str(k) for k in answer)}", f"键：{sorted(str(k) for k in answer)}"))
    for label, fn, x in _silu_cases():
        eager_x = x.clone().requires_grad_()
        want = fn(eager_x)
        want.sum().backward()
        with quiet():
            graphs = aot_graphs(fn, x.clone().requires_grad_(), decompositions=answer)
        left = _silu_ops(graphs.ops(graphs.forward)) + _silu_ops(graphs.ops(graphs.backward))
        if "aten.silu.default" in left:
            raise Wrong("the forward graph still calls aten.silu: your table has no entry that fires for it.",
                        "前向图仍在调用 aten.silu：你的分解表里没有对它生效的条目。", tried=label,
                        got=(f"forward ops: {graphs.ops(graphs.forward)}", f"前向图的算子：{graphs.ops(graphs.forward)}"))
        if left:
            raise Wrong("the forward is decomposed, but the backward still calls aten.silu_backward: autograd "
                        "differentiates silu with its own backward op, which needs an entry of its own.",
                        "前向已被分解，但反向图仍在调用 aten.silu_backward：autograd 用 silu 自己的反向算子求导，"
                        "它需要单独的条目。", tried=label,
                        got=(f"backward ops: {graphs.ops(graphs.backward)}", f"反向图的算子：{graphs.ops(graphs.backward)}"))
        got_x = x.clone().requires_grad_()
        with quiet():
            got = _aot_run(fn, answer)(got_x)
        diff = differs(got.detach(), want.detach(), rtol=1e-4, atol=1e-5)
        if diff is not None:
            raise Wrong("with your decompositions the function's values differ from eager silu: check the forward "
                        "formula against silu(x) = x * sigmoid(x).",
                        "使用你的分解后，函数的数值与 eager 的 silu 不同：请对照 silu(x) = x * sigmoid(x) 检查前向公式。",
                        tried=label, expected=describe(want), got=diff)
        with quiet():
            got.sum().backward()
        diff = differs(got_x.grad, eager_x.grad, rtol=1e-4, atol=1e-5, where="gradient")
        if diff is not None:
            raise Wrong("the values match but the gradients do not: your silu_backward entry computes a different "
                        "derivative (it must return grad_output times silu'(self)).",
                        "数值一致，但梯度不一致：你为 silu_backward 写的分解算出的导数不对（它应返回 grad_output 乘以 silu'(self)）。",
                        tried=label, expected=describe(eager_x.grad), got=diff)


def _aot_run(fn: Callable[..., torch.Tensor], table: dict[Any, Any]) -> Callable[..., torch.Tensor]:
    """``fn`` compiled through AOTAutograd with ``table``, graphs run as Python."""
    import torch._dynamo
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified

    def backend(gm: Any, example_inputs: list[Any]) -> Any:
        nop = lambda g, _: make_boxed_func(g.forward)  # noqa: E731
        return aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop, decompositions=table)

    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, fullgraph=True)
