"""Checkers for labs/lab09_aot_inductor.ipynb (lecture course/09_aot_inductor.ipynb).

lab09.1 compares predicted counts of saved tensors with what AOTAutograd's min-cut
partitioner saves on this torch, naming the functions whose count is wrong but never the count;
lab09.2 compares the answer's values with ``normalise`` on numerical edges (tiny, huge and
all-zero tensors, float64, 0-d, transposed, requiring grad), then compiles it with Inductor on
inputs the lab does not show and counts graphs and kernels with ``fxcourse.inductor_code``;
lab09.3 runs AOTAutograd with the learner's decomposition table, reads the forward and backward
graphs and compares values and gradients with eager silu, where exp overflows float32 too.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from .._lang import Phrase
from . import Wrong, task
from ._probe import Mistake, Probe, built, clone_args, describe, described, differs, need_callable

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


def _count(value: Any) -> int | None:
    """``value`` as a count: an int, a numpy integer, a one-element integer tensor (anything
    ``operator.index`` reads); None for a bool (True is not a count), a float (even 2.0) or
    anything else."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _names(names: list[str]) -> tuple[str, str]:
    return ", ".join(names), "、".join(names)


def _w_requires_grad_count() -> int:
    """What linear_relu saves when w requires grad too (the lab says it does not)."""
    from ..viewers.inductor import aot_graphs

    gen = torch.Generator().manual_seed(91)
    fn, _ = PREDICT_FUNCTIONS["linear_relu"]
    args = [torch.randn(shape, generator=gen, requires_grad=True) for shape in _SHAPES["linear_relu"]]
    return len(aot_graphs(fn, *args, partitioner="min_cut").saved)


#: Known wrong predictions: (name, matches(got, want, wrong names, default counts), en, zh), where
#: ``wrong`` lists the functions whose count differs. Messages name the function and the idea to
#: revisit, never the count.
_PREDICT_MISTAKES: list[tuple[str, Callable[..., bool], str, str]] = [
    ("counted the result or the incoming gradient",
     lambda got, want, wrong, default: all(got[n] == want[n] + 1 for n in want),
     "every count includes something that is not saved for the backward: the forward's own result (the first "
     "output of the forward graph) and the backward's incoming gradient (tangents_1) are not saved tensors.",
     "每个计数都多算了一样不是为反向保存的东西：前向图自己的结果（前向图的第一个输出）和反向图传入的梯度（tangents_1）"
     "都不是保存的张量。"),
    ("default partitioner",
     lambda got, want, wrong, default: all(got[n] == default[n] for n in wrong),
     "{names}: these counts are what AOTAutograd's default partitioner saves (and what aot_graphs shows when "
     "you leave out partitioner=); torch.compile with Inductor uses the min-cut partitioner, which recomputes "
     "cheap pointwise ops in the backward instead of saving their results.",
     "{names}：这些计数是 AOTAutograd 默认划分器保存的数量（也是不传 partitioner= 时 aot_graphs 显示的数量）；"
     "torch.compile 配合 Inductor 使用的是最小割（min-cut）划分器，它会在反向图中重新计算廉价的逐元素算子，而不是保存它们的结果。"),
    ("w counted as requiring grad",
     lambda got, want, wrong, default: "linear_relu" in wrong and got["linear_relu"] == _w_requires_grad_count(),
     "linear_relu: your count is what the forward saves when w requires grad too; in this function it does not, "
     "so the backward computes no gradient for w and needs nothing for it.",
     "linear_relu：你的计数是 w 也要求梯度时前向图保存的数量；而在这个函数里 w 不要求梯度，所以反向图不为 w 计算梯度，"
     "也不需要为它保存任何东西。"),
    ("affine_sum saves something",
     lambda got, want, wrong, default: "affine_sum" in wrong and got["affine_sum"] > want["affine_sum"],
     "affine_sum: ask which forward values its backward really reads: the derivative of x * 2 + 1 is the "
     "constant 2, and the backward of a sum only spreads the incoming gradient over x's shape.",
     "affine_sum：想一想它的反向图到底读取了哪些前向的值：x * 2 + 1 的导数是常数 2，而求和的反向只是把传入的梯度铺满 x 的形状。"),
    ("linear_relu without w",
     lambda got, want, wrong, default: "linear_relu" in wrong and got["linear_relu"] < want["linear_relu"],
     "linear_relu: think about what its backward reads. The gradient with respect to x needs w (w does not "
     "require grad, but its values are still needed), and relu's backward must know where its input was positive.",
     "linear_relu：想一想它的反向图要读取什么。对 x 的梯度需要 w（w 不要求梯度，但仍然需要它的值），"
     "而 relu 的反向还需要知道输入在哪些位置为正。"),
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
    if not isinstance(answer, Mapping):
        raise Wrong("make_predictions() must return a dict {function name: int}.",
                    "make_predictions() 应返回 dict {函数名: int}。", got=described(answer))
    want = saved_counts("min_cut")
    if set(answer) != set(want):
        if {getattr(k, "__name__", None) for k in answer} == set(want):
            keys = sorted(_key_name(k) for k in answer)
            raise Wrong("the keys must be the functions' names (strings such as 'sin_cos'), not the functions "
                        "themselves.", "键应是函数的名字（如 'sin_cos' 这样的字符串），而不是函数对象本身。",
                        got=(f"keys: {keys}", f"键：{keys}"))
        raise Wrong("the dict must have exactly one key per function of the lab, spelled as the function is named.",
                    "dict 的键必须与本实验的函数一一对应，拼写与函数名相同。",
                    got=_diff(dict(answer), want, "predictions", "预测"))
    got: dict[str, int] = {}
    for name in want:
        value = answer[name]
        count = _count(value)
        if count is None:
            if isinstance(value, (list, tuple)):
                raise Wrong(f"{name}: you give the saved tensors themselves (a {type(value).__name__}); each "
                            "value must be how many there are, an int.",
                            f"{name}：你给出的是保存的张量本身（{type(value).__name__}）；每个值应是它们的个数，一个 int。",
                            got=Phrase(f"predictions[{name!r}]: {describe(value)}",
                                       f"predictions[{name!r}]：{describe(value, lang='zh')}"))
            raise Wrong(f"{name}: each count must be a whole number of tensors, an int (not a bool or a float).",
                        f"{name}：每个计数都应是张量的个数，一个 int（不能是 bool 或 float）。",
                        got=Phrase(f"predictions[{name!r}]: {describe(value)} ({type(value).__name__})",
                                   f"predictions[{name!r}]：{describe(value, lang='zh')}（{type(value).__name__} 类型）"))
        got[name] = count
    wrong = [name for name in want if got[name] != want[name]]
    if not wrong:
        return
    shown = _names(wrong)
    detail = (f"counts that differ from what the min-cut partitioner saves: {shown[0]}",
              f"与最小割划分器实际保存的数量不同的函数：{shown[1]}")
    default = saved_counts("default")
    for _name, matches, en, zh in _PREDICT_MISTAKES:
        try:
            matched = bool(matches(got, want, wrong, default))
        except Exception:
            matched = False
        if matched:
            raise Wrong(en.format(names=shown[0]), zh.format(names=shown[1]), tried=_FOUR_FUNCTIONS, got=detail)
    raise Wrong(f"{shown[0]}: the prediction differs from what the min-cut partitioner saves; check that function "
                "with aot_graphs(..., partitioner='min_cut') and read which tensors its backward takes as inputs.",
                f"{shown[1]}：预测与最小割划分器实际保存的数量不同；用 aot_graphs(..., partitioner='min_cut') "
                "检查那个函数，看看它的反向图以哪些张量为输入。",
                tried=_FOUR_FUNCTIONS, got=detail)


# -- exercise 2: one kernel ----------------------------------------------------------------------

def normalise(x: torch.Tensor) -> torch.Tensor:
    """The lab's starting point: divide by the largest magnitude (read as a Python float), then relu."""
    peak = x.abs().max().item()
    return torch.relu(x / peak)


def _diff(got: Any, want: Any, where: str = "result", where_zh: str = "结果", **tol: float) -> Phrase | None:
    """``differs``' line in English with its 中文 twin, or None when the two are the same."""
    diff = differs(got, want, where=where, **tol)
    if diff is None:
        return None
    return Phrase(diff, differs(got, want, where=where_zh, expected="期望", lang="zh", **tol) or diff)


def _fused_probes() -> list[tuple[Probe, bool]]:
    """What lab09.2 tries, each with whether it also compiles the answer on it (compiles are slow;
    every probe runs eagerly and is compared with ``normalise``)."""
    gen = torch.Generator().manual_seed(92)
    mostly_negative = torch.randn(6, 5, generator=gen) - 1.5   # its largest value is far from its largest magnitude
    with_zeros = torch.randn(3, 4, 7, generator=gen)
    with_zeros[0] = 0.0
    one_d = torch.randn(33, generator=gen) * 4
    transposed = torch.randn(7, 4, generator=gen).t()
    float64 = torch.randn(3, 5, generator=gen, dtype=torch.float64) - 0.5
    needs_grad = torch.randn(4, 4, generator=gen).requires_grad_()
    tiny = torch.randn(5, 4, generator=gen) * 5e-40   # the peak is below 1 / float32's largest number
    huge = torch.randn(2, 9, generator=gen) * 1e25    # squares overflow float32
    return [(Probe(("a (6, 5) tensor, mostly negative", "形状 (6, 5)、大多为负数的张量"), (mostly_negative,)), True),
            (Probe(("a (3, 4, 7) tensor with a slice of zeros", "形状 (3, 4, 7)、其中一片全为零的张量"), (with_zeros,)), True),
            (Probe(("a 1-D tensor of 33 values", "含 33 个值的一维张量"), (one_d,)), True),
            (Probe(("a transposed (4, 7) view, not contiguous", "转置得到的 (4, 7) 视图，内存不连续"), (transposed,)), True),
            (Probe(("a (3, 5) float64 tensor", "形状 (3, 5) 的 float64 张量"), (float64,)), False),
            (Probe(("a 0-d tensor, -2.5", "0 维张量 -2.5"), (torch.tensor(-2.5),)), False),
            (Probe(("a (4, 4) tensor that requires grad", "形状 (4, 4)、要求梯度的张量"), (needs_grad,)), False),
            (Probe(("a (2, 9) tensor of huge values (about 1e25)", "形状 (2, 9)、数值极大（约 1e25）的张量"), (huge,)), False),
            (Probe(("a (5, 4) tensor of tiny values (about 1e-39, below float32's smallest normal number)",
                    "形状 (5, 4)、数值极小（约 1e-39，低于 float32 最小的正规数）的张量"), (tiny,)), False),
            (Probe(("a (4, 3) tensor of zeros only", "形状 (4, 3)、全为零的张量"), (torch.zeros(4, 3),)), False)]


def _same(got: Any, candidate: torch.Tensor) -> bool:
    return isinstance(got, torch.Tensor) and differs(got.detach(), candidate.detach()) is None


def _one_dim_peak(got: Any, x: torch.Tensor) -> bool:
    """``got`` is x divided by its peak along one dimension (kept, or broadcast from the right)."""
    for dim in range(x.dim()):
        peaks = [x.abs().amax(dim, keepdim=True)]
        if dim == 0 or x.dim() == 1:
            peaks.append(x.abs().amax(dim))
        for peak in peaks:
            try:
                if _same(got, torch.relu(x / peak)):
                    return True
            except RuntimeError:  # does not broadcast
                continue
    return False


def _guarded(got: Any, want: Any, x: torch.Tensor) -> bool:
    """``got`` divides by more than the peak (an epsilon added, a floor, a special case for zero)."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not bool(torch.isfinite(got).all()):
        return False
    if float(x.detach().abs().amax()) >= 1e-6:   # a guard only shows on tiny values or zeros
        return False
    g, w = got.detach().double(), want.detach().double()
    if bool(torch.isnan(w).all()):
        return True
    positive = w > 0
    return bool(positive.any()) and bool((g[~positive] == 0).all()) and bool((g[positive] < w[positive] * 0.999).all())


_FUSED_MISTAKES = [
    Mistake("largest value, not magnitude",
            lambda got, want, p: (_same(got, torch.relu(p.args[0] / p.args[0].max()))
                                  or _same(got, torch.relu(p.args[0] / p.args[0].max().abs()))),
            "you divide by the largest value, not the largest magnitude (absolute value); on a tensor that is "
            "mostly negative the two differ.",
            "你除以的是最大值，而不是最大的绝对值；对一个大多为负数的张量，两者并不相同。"),
    Mistake("peak along one dimension",
            lambda got, want, p: _one_dim_peak(got, p.args[0]),
            "you normalise each row (or column) by its own peak; the function divides the whole tensor by one number.",
            "你按每一行（或每一列）各自的峰值做了归一化；原函数是把整个张量除以同一个数。"),
    Mistake("reciprocal",
            lambda got, want, p: _same(got, torch.relu(p.args[0] * (1 / p.args[0].abs().amax()))),
            "you multiply by the reciprocal of the peak; for tiny values 1 / peak overflows to inf, where dividing by "
            "the peak stays finite.",
            "你乘的是峰值的倒数；数值极小时 1 / 峰值 会溢出为 inf，而直接除以峰值仍是有限的数。"),
    Mistake("matrix norm",
            lambda got, want, p: p.args[0].dim() == 2 and _same(got, torch.relu(p.args[0] / torch.linalg.norm(
                p.args[0], float("inf")))),
            "you divide by torch.linalg.norm(x, inf); on a matrix that is the largest row sum of magnitudes, not the "
            "largest magnitude of one entry.",
            "你除以的是 torch.linalg.norm(x, inf)；对矩阵来说，它是各行绝对值之和中的最大值，而不是单个元素的最大绝对值。"),
    Mistake("peak through squares",
            lambda got, want, p: _same(got, torch.relu(p.args[0] / (p.args[0] * p.args[0]).amax().sqrt())),
            "you find the largest magnitude through squares: x * x overflows to inf for huge values (and underflows "
            "to 0 for tiny ones), so the peak you divide by is wrong at those scales.",
            "你通过平方来求最大的绝对值：数值极大时 x * x 溢出为 inf（极小时下溢为 0），所以在这些量级上你除以的峰值是错的。"),
    Mistake("guarded division",
            lambda got, want, p: _guarded(got, want, p.args[0]),
            "your function guards the division (an epsilon added to the peak, a floor on it, or a special case for "
            "zero); normalise does not: on tiny values the guard changes the result, and on an all-zero tensor "
            "normalise divides 0 by 0 and returns NaN.",
            "你的函数给除法加了保护（给峰值加一个 epsilon、给它设下限，或对零单独处理）；normalise 没有这样做："
            "数值极小时这种保护会改变结果，而对全零的张量，normalise 计算 0 / 0，返回 NaN。"),
    Mistake("dtype changed",
            lambda got, want, p: isinstance(got, torch.Tensor) and got.dtype != want.dtype,
            "your result's dtype is not the input's: normalise keeps the dtype of x.",
            "你的结果的 dtype 与输入不同：normalise 保持 x 的 dtype。"),
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
    from .._text import one_line_error, quiet

    need_callable(answer, "normalise_fused")
    probes = _fused_probes()
    for probe, _ in probes:   # values first, on every probe: cheap, and the first thing to get right
        (x,) = clone_args(probe.args)
        want = normalise(x.detach().clone())
        try:
            with quiet():
                got = answer(x)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise Wrong("normalise_fused raised an error on this input; it must accept any float tensor "
                        "(any shape and strides, 0-d included, one that requires grad too).",
                        "normalise_fused 在这个输入上报错了；它应当接受任意浮点张量（任意形状和步长，包括 0 维张量，"
                        "也包括要求梯度的张量）。", tried=probe.label, got=one_line_error(exc)) from None
        diff = _diff(got.detach() if isinstance(got, torch.Tensor) else got, want)
        if diff is not None:
            for mistake in _FUSED_MISTAKES:
                try:
                    matched = bool(mistake.matches(got, want, probe))
                except Exception:
                    matched = False
                if matched:
                    raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=described(want), got=diff)
            raise Wrong("normalise_fused gives different values from normalise.",
                        "normalise_fused 的数值与 normalise 不同。", tried=probe.label, expected=described(want),
                        got=diff)
        changed = _diff(x.detach(), probe.args[0].detach(), "input after the call", "调用后的输入")
        if changed is not None:
            raise Wrong("normalise_fused changed its input in place; normalise leaves x as it was.",
                        "normalise_fused 原地修改了输入；normalise 不会改动 x。", tried=probe.label, got=changed)
    for probe, compiled in probes:
        if not compiled:
            continue
        x = probe.args[0]
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
    mlp = built(_SiLUMLP, 93, eval=False)   # built inside fork_rng: the learner's random numbers do not move
    with torch.no_grad():
        for p in mlp.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    # exp overflows float32 above about 88: a formula with exp(x) or exp(-x) gives inf / inf there
    signs = torch.tensor([-100.0, -20.0, -6.0, -2.0, -0.5, 0.0, 0.5, 2.0, 6.0, 20.0, 100.0])
    strided = torch.randn(4, 3, 2, generator=gen, dtype=torch.float64).permute(2, 1, 0)
    return [(("F.silu(x) * x on 11 values from -100 to 100 (with 0)",
              "F.silu(x) * x，输入为 -100 到 100 之间的 11 个值（含 0）"),
             lambda x: F.silu(x) * x, signs),
            (("an nn.SiLU after an nn.Linear, input (3, 5)", "nn.Linear 之后接 nn.SiLU，输入形状 (3, 5)"),
             mlp, torch.randn(3, 5, generator=gen)),
            (("F.silu on a non-contiguous (2, 3, 4) float64 tensor, then a sum",
              "对内存不连续、形状 (2, 3, 4) 的 float64 张量做 F.silu，再求和"),
             lambda x: F.silu(x).sum(), strided)]


def _silu_derivative(x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return s * (1 + x * (1 - s))


def _backward_mistake(table: dict[Any, Any]) -> tuple[str, str] | None:
    """Name what the table's silu_backward entry does, called directly on a gradient that is not ones."""
    entry = table.get(torch.ops.aten.silu_backward.default)
    if not callable(entry):
        return None
    gen = torch.Generator().manual_seed(94)
    grad, x = torch.randn(2, 6, generator=gen) * 3, torch.randn(2, 6, generator=gen) * 3
    try:
        with torch.no_grad():
            got = entry(grad.clone(), x.clone())
    except Exception:
        return None
    if _same(got, _silu_derivative(x)):
        return ("your silu_backward entry ignores grad_output: it returns silu'(self) alone, which is only right when "
                "the incoming gradient is all ones; it must be multiplied by grad_output.",
                "你为 silu_backward 写的分解忽略了 grad_output：它只返回 silu'(self)，这只有在传入的梯度全为 1 时才对；"
                "它还必须乘以 grad_output。")
    if _same(got, torch.ops.aten.silu_backward.default(x, grad)):
        return ("your silu_backward entry takes its arguments in the other order: the op passes grad_output first "
                "and self (silu's input) second.",
                "你为 silu_backward 写的分解把参数顺序弄反了：这个算子先传 grad_output，再传 self（silu 的输入）。")
    return None


_OVERFLOW = ("{what} become NaN or inf where eager silu gives a number: your formula overflows for inputs of large "
             "magnitude (exp of an argument above about 88 is inf in float32, and inf / inf is NaN). Write it so "
             "that no intermediate overflows, e.g. in terms of sigmoid.",
             "{what}在 eager 的 silu 给出普通数值的地方变成了 NaN 或 inf：你的公式在输入绝对值很大时会溢出"
             "（float32 中参数大于约 88 的 exp 就是 inf，而 inf / inf 是 NaN）。请换一种写法，让中间结果都不会溢出，例如用 sigmoid 来表示。")


def _key_name(key: Any) -> str:
    """A table key as the learner would write it: an op as ``aten.silu.default``, a function by name."""
    if isinstance(key, (torch._ops.OperatorBase, torch._ops.OpOverloadPacket, str)):
        return str(key)
    return getattr(key, "__qualname__", None) or describe(key)


def _overflows(got: torch.Tensor, want: torch.Tensor) -> bool:
    return bool((~torch.isfinite(got.detach()) & torch.isfinite(want.detach())).any())


def _compile_failed(exc: BaseException, label: tuple[str, str]) -> Wrong:
    """A compile with the learner's table that failed, as feedback: the innermost error, and a
    named cause when it is an entry that calls the op it decomposes."""
    from .._text import one_line_error

    inner: BaseException = exc
    seen = {id(inner)}
    while True:   # Dynamo wraps the error (BackendCompilerFailed, its context suppressed): find the one it wraps
        nxt = getattr(inner, "inner_exception", None) or inner.__cause__ or inner.__context__
        if not isinstance(nxt, BaseException) or id(nxt) in seen:
            break
        inner = nxt
        seen.add(id(inner))
        if isinstance(inner, RecursionError):
            return Wrong("an entry of your table calls the op it decomposes (silu inside silu's entry, or "
                         "silu_backward inside its own), so the decomposition runs again and again; write it with "
                         "other ops.",
                         "分解表中的某个条目调用了它要分解的算子（在 silu 的条目里又调用 silu，或在 silu_backward 的条目里"
                         "又调用它自己），于是分解一遍又一遍地运行；请用其他算子来写。",
                         tried=label, got=one_line_error(inner))
    if "entirely functional graph" in str(inner):
        return Wrong("an entry of your table writes in place (an op whose name ends in _, or out=); decompositions "
                     "run after functionalization, so AOTAutograd needs them written with ops that return new tensors.",
                     "分解表中的某个条目做了原地写入（名字以 _ 结尾的算子，或 out=）；分解在函数化（functionalization）之后运行，"
                     "所以 AOTAutograd 要求它们只用返回新张量的算子来写。",
                     tried=label, got=one_line_error(inner))
    return Wrong("AOTAutograd failed while tracing with your table: an entry cannot run on the tensors it is "
                 "given (its arguments are those of the op it replaces).",
                 "AOTAutograd 用你的分解表追踪时出错：某个条目无法在传给它的张量上运行（它的参数与它替换的算子相同）。",
                 tried=label, got=one_line_error(inner))


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
    if not isinstance(answer, Mapping):
        raise Wrong("make_silu_decompositions() must return a dict from op overloads to functions.",
                    "make_silu_decompositions() 应返回从算子重载映射到函数的 dict。", got=described(answer))
    answer = dict(answer)
    keys = sorted(_key_name(k) for k in answer)
    shown_keys = (f"keys: {keys}", f"键：{keys}")
    for label, fn, x in _silu_cases():
        eager_x = x.clone().requires_grad_()
        want = fn(eager_x)
        want.sum().backward()
        try:
            with quiet():
                graphs = aot_graphs(fn, x.clone().requires_grad_(), decompositions=answer)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _compile_failed(exc, label) from None
        forward_ops, backward_ops = graphs.ops(graphs.forward), graphs.ops(graphs.backward)
        for op, graph_ops, en, zh in (
                (torch.ops.aten.silu, forward_ops, "forward graph still calls aten.silu", "前向图仍在调用 aten.silu"),
                (torch.ops.aten.silu_backward, backward_ops, "backward graph still calls aten.silu_backward",
                 "反向图仍在调用 aten.silu_backward")):
            if f"{op.default}" not in graph_ops:
                continue
            others = [k for k in answer if getattr(k, "overloadpacket", None) is op]
            strange = [k for k in answer if not isinstance(k, torch._ops.OperatorBase)]
            got = (f"ops: {graph_ops}; {shown_keys[0]}", f"算子：{graph_ops}；{shown_keys[1]}")
            if any(k is op for k in answer):
                raise Wrong(f"the {en}: a key of your table is an op packet ({op}); AOTAutograd looks "
                            "decompositions up by overload, so a packet key never fires.",
                            f"{zh}：分解表的某个键是算子包（{op}）；AOTAutograd 按重载查找分解，以算子包为键的条目永远不会生效。",
                            tried=label, got=got)
            if others:
                raise Wrong(f"the {en}: your entry is keyed by another overload of the op ({others[0]}); the graph "
                            f"calls {op.default}, and a table entry fires only for its own overload.",
                            f"{zh}：你的条目用的是这个算子的另一个重载（{others[0]}）作为键；图里调用的是 {op.default}，"
                            "而表中的条目只对它自己的那个重载生效。", tried=label, got=got)
            if strange:
                raise Wrong(f"the {en}: a key of your table is not an op overload ({_key_name(strange[0])}); "
                            "AOTAutograd looks an op up by its overload object, as torch.ops.aten.<op>.<overload>.",
                            f"{zh}：分解表的某个键不是算子重载（{_key_name(strange[0])}）；AOTAutograd 按重载对象查找算子，"
                            "即 torch.ops.aten.<算子>.<重载>。", tried=label, got=got)
            if op is torch.ops.aten.silu:
                raise Wrong("the forward graph still calls aten.silu: your table has no entry that fires for it.",
                            "前向图仍在调用 aten.silu：你的分解表里没有对它生效的条目。", tried=label,
                            got=(f"forward ops: {forward_ops}", f"前向图的算子：{forward_ops}"))
            raise Wrong("the forward is decomposed, but the backward still calls aten.silu_backward: autograd "
                        "differentiates silu with its own backward op, which needs an entry of its own.",
                        "前向已被分解，但反向图仍在调用 aten.silu_backward：autograd 用 silu 自己的反向算子求导，"
                        "它需要单独的条目。", tried=label,
                        got=(f"backward ops: {backward_ops}", f"反向图的算子：{backward_ops}"))
        got_x = x.clone().requires_grad_()
        try:
            with quiet():
                got = _aot_run(fn, answer)(got_x)
                got.sum().backward()
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _compile_failed(exc, label) from None
        diff = _diff(got.detach(), want.detach(), rtol=1e-4, atol=1e-5)
        if diff is not None:
            if _overflows(got, want):
                raise Wrong(_OVERFLOW[0].format(what="values"), _OVERFLOW[1].format(what="数值"), tried=label,
                            expected=described(want), got=diff)
            if got.dtype != want.dtype:
                raise Wrong("your silu entry returns another dtype than its input's: a decomposition must give the "
                            "dtype the op it replaces gives (silu keeps its input's dtype).",
                            "你的 silu 条目返回的 dtype 与输入不同：分解必须给出与被替换的算子相同的 dtype（silu 保持输入的 dtype）。",
                            tried=label, expected=described(want), got=diff)
            raise Wrong("with your decompositions the function's values differ from eager silu: check the forward "
                        "formula against silu(x) = x * sigmoid(x).",
                        "使用你的分解后，函数的数值与 eager 的 silu 不同：请对照 silu(x) = x * sigmoid(x) 检查前向公式。",
                        tried=label, expected=described(want), got=diff)
        diff = _diff(got_x.grad, eager_x.grad, "gradient", "梯度", rtol=1e-4, atol=1e-5)
        if diff is not None:
            if _overflows(got_x.grad, eager_x.grad):
                raise Wrong(_OVERFLOW[0].format(what="gradients"), _OVERFLOW[1].format(what="梯度"), tried=label,
                            expected=described(eager_x.grad), got=diff)
            named = _backward_mistake(answer)
            if named is not None:
                raise Wrong(*named, tried=label, expected=described(eager_x.grad), got=diff)
            raise Wrong("the values match but the gradients do not: your silu_backward entry computes a different "
                        "derivative (it must return grad_output times silu'(self)).",
                        "数值一致，但梯度不一致：你为 silu_backward 写的分解算出的导数不对（它应返回 grad_output 乘以 silu'(self)）。",
                        tried=label, expected=described(eager_x.grad), got=diff)


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
