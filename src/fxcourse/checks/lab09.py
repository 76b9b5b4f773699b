"""Checkers for labs/lab09_aot_inductor.ipynb (lecture course/09_aot_inductor.ipynb).

lab09.1 compares predicted counts of saved tensors with what AOTAutograd's min-cut
partitioner saves on this torch, naming the functions whose count is wrong but never the count;
lab09.2 compares the answer's values with ``normalise`` on numerical edges (tiny, huge, near the
dtype's largest number and all-zero tensors, NaN and ±inf, float64 to its precision and beyond float32's range, 0-d,
transposed, requiring grad, a second call with the same shape and dtype), then compiles it with
Inductor on inputs the lab does not show and counts graphs and kernels with ``fxcourse.inductor_code``;
lab09.3 runs AOTAutograd with the learner's decomposition table, reads the forward and backward
graphs and compares values and gradients with eager silu, where exp overflows float32 too, on
float64 (to its precision, NaN and ±inf included) and with two silu calls of one shape.
"""
from __future__ import annotations

import math
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
    """``value`` as a count: an int or a numpy integer (anything ``operator.index`` reads that is
    not a tensor); None for a bool (True is not a count), a float (even 2.0), a tensor (even
    ``torch.tensor(2)``: a count is a Python number) or anything else."""
    if isinstance(value, (bool, torch.Tensor)) or type(value).__name__ == "bool_":
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
     "affine_sum: you count more than its backward needs. Ask of each op in it (a multiply by a number, an add, a "
     "sum) whether its backward reads any forward value at all, or only the incoming gradient.",
     "affine_sum：你数的比它的反向真正需要的多。对其中每个算子（乘以一个数、加法、求和）问一问：它的反向究竟是读取了前向的某个值，"
     "还是只用到了传入的梯度？"),
    ("linear_relu too few",
     lambda got, want, wrong, default: "linear_relu" in wrong and got["linear_relu"] < want["linear_relu"],
     "linear_relu: you count fewer than its backward needs. Go through its ops one at a time and ask what the "
     "backward of each reads from the forward to compute the gradient with respect to x.",
     "linear_relu：你数的比它的反向实际需要的少。把它的算子逐个过一遍，问一问：为了算出对 x 的梯度，每个算子的反向要从前向读取什么？"),
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
     "第 09 讲第 4 节“划分器：前向图保存了什么”比较了默认划分器和最小割划分器；Inductor 用的是后者。"
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
            raise Wrong(f"{name}: each count must be a whole number of tensors, an int (not a bool, a float or a "
                        "tensor).",
                        f"{name}：每个计数都应是张量的个数，一个 int（不能是 bool、float 或张量）。",
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


#: Tolerances for float64 results: float64 keeps about 16 digits, so a result computed through
#: float32 (about 7 digits) and cast back differs by far more than these.
_FLOAT64_TOL = dict(rtol=1e-10, atol=1e-12)


def _diff(got: Any, want: Any, where: str = "result", where_zh: str = "结果", **tol: float) -> Phrase | None:
    """``differs``' line in English with its 中文 twin, or None when the two are the same; a
    float64 ``want`` is compared with ``_FLOAT64_TOL`` unless ``tol`` says otherwise."""
    if not tol and isinstance(want, torch.Tensor) and want.dtype == torch.float64:
        tol = dict(_FLOAT64_TOL)
    diff = differs(got, want, where=where, **tol)
    if diff is None:
        return None
    infinite = _own_line(got, want, where=where, where_zh=where_zh, **tol)
    if infinite is not None:
        return infinite
    return Phrase(diff, differs(got, want, where=where_zh, expected="期望", lang="zh", **tol) or diff)


def _own_line(got: Any, want: Any, *, where: str = "result", where_zh: str = "结果", rtol: float = 1e-5,
                 atol: float = 1e-6) -> Phrase | None:
    """The first difference as a line of our own when an infinity is involved there (``differs``
    reports its "max abs difference" over finite values only, which reads 0 when the only
    difference is an inf) or when the values read the same at ``differs``' 4 digits; None
    otherwise (``differs``' line stands)."""
    if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)) or got.shape != want.shape \
            or got.dtype != want.dtype or not got.is_floating_point():
        return None
    g, w = got.detach(), want.detach()
    if not torch.equal(torch.isnan(g), torch.isnan(w)):
        return None   # differs' own NaN line says it
    bad = ~torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not bool(bad.any()):
        return None
    index = tuple(bad.nonzero()[0].tolist())
    gi, wi = g[index].item(), w[index].item()
    if not (math.isinf(gi) or math.isinf(wi)):
        digits = {torch.float64: 17, torch.float32: 9}.get(g.dtype)
        if f"{gi:.4g}" != f"{wi:.4g}" or digits is None:
            return None
        # values that read the same at differs' 4 digits: show all the dtype's digits
        return Phrase(f"{where}: at index {index} got {gi:.{digits}g}, expected {wi:.{digits}g}",
                      f"{where_zh}：索引 {index} 处得到 {gi:.{digits}g}，期望 {wi:.{digits}g}")
    return Phrase(f"{where}: at index {index} got {gi:.4g}, expected {wi:.4g} (an infinity where a finite number "
                  "was expected, or the reverse)",
                  f"{where_zh}：索引 {index} 处得到 {gi:.4g}，期望 {wi:.4g}（该是有限数的地方出现了无穷大，或者反过来）")


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
    again = torch.randn(6, 5, generator=gen) * 7 + 2   # the first probe's shape and dtype, other values
    infinite = torch.randn(3, 4, generator=gen)
    infinite[0, 1], infinite[2, 2] = -float("inf"), float("inf")   # the peak is inf: -inf / inf is NaN
    with_nan = torch.randn(2, 5, generator=gen)
    with_nan[1, 3] = float("nan")   # the peak is NaN, so every value is
    huge64 = torch.randn(3, 4, generator=gen, dtype=torch.float64) * 1e300   # beyond float32's range
    tiny64 = torch.randn(4, 2, generator=gen, dtype=torch.float64) * 1e-300
    # near each dtype's largest finite number: x + |x| or twice the peak overflows there, x / peak does not
    near_max = torch.tensor([[3.0e38, -1.0, 1.0e38], [-3.2e38, 1e30, 2.5e38]])
    near_max64 = torch.tensor([[1e308, -1.0], [-1.5e308, 1.2e308]], dtype=torch.float64)
    return [(Probe(("a (6, 5) tensor, mostly negative", "形状 (6, 5)、大多为负数的张量"), (mostly_negative,)), True),
            (Probe(("another (6, 5) float32 tensor, with other values (the same shape and dtype as the one before)",
                    "另一个形状 (6, 5) 的 float32 张量，数值不同（形状和 dtype 与前一个相同）"), (again,)), False),
            (Probe(("a (3, 4, 7) tensor with a slice of zeros", "形状 (3, 4, 7)、其中一片全为零的张量"), (with_zeros,)), True),
            (Probe(("a 1-D tensor of 33 values", "含 33 个值的一维张量"), (one_d,)), True),
            (Probe(("a transposed (4, 7) view, not contiguous", "转置得到的 (4, 7) 视图，内存不连续"), (transposed,)), True),
            (Probe(("a (3, 5) float64 tensor", "形状 (3, 5) 的 float64 张量"), (float64,)), False),
            (Probe(("a 0-d tensor, -2.5", "0 维张量 -2.5"), (torch.tensor(-2.5),)), False),
            (Probe(("a (4, 4) tensor that requires grad", "形状 (4, 4)、要求梯度的张量"), (needs_grad,)), False),
            (Probe(("a (2, 9) tensor of huge values (about 1e25)", "形状 (2, 9)、数值极大（约 1e25）的张量"), (huge,)), False),
            (Probe(("a (5, 4) tensor of tiny values (about 1e-39, below float32's smallest normal number)",
                    "形状 (5, 4)、数值极小（约 1e-39，低于 float32 最小的正规数）的张量"), (tiny,)), False),
            (Probe(("a (4, 3) tensor of zeros only", "形状 (4, 3)、全为零的张量"), (torch.zeros(4, 3),)), False),
            (Probe(("a (3, 4) tensor holding -inf and inf", "形状 (3, 4)、含有 -inf 和 inf 的张量"), (infinite,)), False),
            (Probe(("a (2, 5) tensor holding one NaN", "形状 (2, 5)、含有一个 NaN 的张量"), (with_nan,)), False),
            (Probe(("a (3, 4) float64 tensor of values about 1e300 (beyond float32's range)",
                    "形状 (3, 4)、数值约为 1e300 的 float64 张量（超出 float32 的范围）"), (huge64,)), False),
            (Probe(("a (4, 2) float64 tensor of values about 1e-300 (below float32's range)",
                    "形状 (4, 2)、数值约为 1e-300 的 float64 张量（低于 float32 的范围）"), (tiny64,)), False),
            (Probe(("a (2, 3) float32 tensor of values near float32's largest number (about 3e38)",
                    "形状 (2, 3)、数值接近 float32 最大数（约 3e38）的 float32 张量"), (near_max,)), False),
            (Probe(("a (2, 2) float64 tensor of values near float64's largest number (about 1e308)",
                    "形状 (2, 2)、数值接近 float64 最大数（约 1e308）的 float64 张量"), (near_max64,)), False)]


def _near_max(x: torch.Tensor) -> bool:
    """``x`` is finite and its peak is within a factor 4 of the largest number its dtype holds."""
    return x.is_floating_point() and bool(torch.isfinite(x).all()) and x.numel() > 0 \
        and float(x.detach().abs().amax()) >= torch.finfo(x.dtype).max / 4


def _same(got: Any, candidate: torch.Tensor) -> bool:
    """``got`` is ``candidate`` (float64 compared with ``_FLOAT64_TOL``, as the results are)."""
    return isinstance(got, torch.Tensor) and _diff(got.detach(), candidate.detach()) is None


def _one_dim_peak(got: Any, x: torch.Tensor) -> bool:
    """``got`` is x divided by its peak along some of its dimensions, not all (kept, or
    broadcast from the right), e.g. ``amax(dim=0).amax(dim=0)`` on a 3-D tensor."""
    import itertools

    subsets = [dims for n in range(1, max(x.dim(), 2)) for dims in itertools.combinations(range(x.dim()), n)]
    for dims in subsets:
        peaks = [x.abs().amax(dims, keepdim=True), x.abs().amax(dims)]
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


def _through_lower(x: torch.Tensor) -> list[torch.Tensor]:
    """``normalise`` of ``x`` computed in some part in a lower precision than x's dtype (float32
    for a float64 x, float16 or bfloat16 for either), as learners write it."""
    lower = [torch.float16, torch.bfloat16] + ([torch.float32] if x.dtype == torch.float64 else [])
    candidates = []
    for dtype in lower:
        xl = x.to(dtype)
        peak = xl.abs().amax()
        candidates += [torch.relu(x / peak), torch.relu(x / peak.to(x.dtype)), torch.relu(xl / peak).to(x.dtype),
                       (torch.relu(xl) / peak).to(x.dtype)]
    return candidates


def _stale(got: Any, x: torch.Tensor, earlier: list[torch.Tensor]) -> bool:
    """``got`` is ``x``'s result computed with an earlier input of the same shape and dtype: its
    peak, or its whole result."""
    for old in earlier:
        if old.shape != x.shape or old.dtype != x.dtype or torch.equal(old, x):
            continue
        if _same(got, torch.relu(x / old.abs().amax())) or _same(got, normalise(old)):
            return True
    return False


_FUSED_MISTAKES = [
    # first: on these probes (the last ones) every other difference has shown on an earlier probe already
    Mistake("overflow near the dtype's largest number",
            lambda got, want, p: _near_max(p.args[0]),
            "your function overflows on values near the largest number x's dtype holds: it computes something larger "
            "than any value of x (such as x + |x|, twice the peak, or the sum of two large values), which becomes inf "
            "there. normalise only divides x by its peak, so none of its intermediates exceeds x's own magnitude; "
            "keep yours within it too.",
            "你的函数在数值接近 x 的 dtype 所能表示的最大数时溢出了：它算出了比 x 中任何值都大的中间结果（例如 x + |x|、"
            "峰值的两倍，或两个大数之和），在那里变成了 inf。normalise 只是把 x 除以它的峰值，没有哪个中间结果超过 x 自身的量级；"
            "你的中间结果也不能超过。"),
    Mistake("largest value, not magnitude",
            lambda got, want, p: (_same(got, torch.relu(p.args[0] / p.args[0].max()))
                                  or _same(got, torch.relu(p.args[0] / p.args[0].max().abs()))),
            "you divide by the largest value, not the largest magnitude (absolute value); on a tensor that is "
            "mostly negative the two differ.",
            "你除以的是最大值，而不是最大的绝对值；对一个大多为负数的张量，两者并不相同。"),
    Mistake("peak along one dimension",
            lambda got, want, p: _one_dim_peak(got, p.args[0]),
            "you normalise each row (or column, or slice) by its own peak, taken over some dimensions but not all; the "
            "function divides the whole tensor by one number.",
            "你按每一行（或每一列、每一片）各自的峰值做了归一化，峰值只在部分维度上求得；原函数是把整个张量除以同一个数。"),
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
    Mistake("relu before dividing",
            lambda got, want, p: _same(got, torch.relu(p.args[0]) / p.args[0].abs().amax()),
            "your result is 0 where normalise gives NaN: x holds -inf, so the peak is inf and normalise computes "
            "-inf / inf = NaN, which its relu keeps. Your function sets negative values to 0 without dividing them "
            "(relu or a clamp before the division, or a where that selects 0 instead of the quotient); normalise "
            "divides every value first, then applies relu.",
            "你的结果在 normalise 给出 NaN 的地方是 0：x 含有 -inf，所以峰值是 inf，normalise 计算 -inf / inf 得到 NaN，"
            "而它的 relu 会保留这个 NaN。你的函数没有做除法就把负值设成了 0（在除法之前做了 relu 或 clamp，或者用 where "
            "选了 0 而不是商）；normalise 先把每个值都除以峰值，然后才做 relu。"),
    Mistake("NaN or inf skipped",
            lambda got, want, p: (not bool(torch.isfinite(p.args[0]).all()) and isinstance(got, torch.Tensor)
                                  and bool((torch.isnan(want) & ~torch.isnan(got.detach())).any())),
            "your function skips or replaces NaN or inf in x (when finding the peak, or in the result); normalise "
            "does not: the largest magnitude of a tensor holding NaN is NaN, so every value of its result is NaN, "
            "and that of a tensor holding inf is inf, so inf / inf and -inf / inf give NaN.",
            "你的函数跳过或替换了 x 中的 NaN 或 inf（在求峰值时，或在结果里）；normalise 不会这样做：含有 NaN 的张量，其最大绝对值就是 "
            "NaN，所以结果中的每个值都是 NaN；含有 inf 的张量，其最大绝对值是 inf，于是 inf / inf 和 -inf / inf 都得到 NaN。"),
    Mistake("lower precision inside",
            lambda got, want, p: p.args[0].dtype in (torch.float32, torch.float64) and any(
                _same(got, candidate) for candidate in _through_lower(p.args[0])),
            "your function computes in a lower precision than x's dtype (float32 on a float64 input, or float16 or "
            "bfloat16, through a cast or a tensor of that dtype it computes with): normalise computes in x's own "
            "dtype, whose precision and range (float64 holds 1e300 and 1e-300, float32 does not) the result keeps.",
            "你的函数用比 x 的 dtype 更低的精度进行计算（float64 输入经过了 float32，或者经过了 float16、bfloat16："
            "通过一次类型转换，或参与计算的某个该 dtype 的张量）：normalise 按 x 自己的 dtype 计算，结果保留该 dtype 的精度和范围"
            "（float64 能表示 1e300 和 1e-300，float32 不能）。"),
    Mistake("NaN of 0 / 0 replaced",
            lambda got, want, p: (not bool(p.args[0].any()) and isinstance(got, torch.Tensor)
                                  and bool((torch.isnan(want) & ~torch.isnan(got.detach())).any())),
            "your result is a number where normalise gives NaN: on an all-zero x normalise divides 0 by 0 and returns "
            "NaN everywhere. Your function guards the division (an epsilon added to the peak, a floor on it, or a "
            "special case for zero) or replaces the NaN afterwards (nan_to_num, fmax or fmin, which pick the number "
            "over a NaN, or a where whose comparison is false for NaN and so selects 0; relu itself keeps NaN); "
            "normalise does neither.",
            "你的结果在 normalise 给出 NaN 的地方是一个数：对全零的 x，normalise 计算 0 / 0，处处返回 NaN。你的函数给除法加了保护"
            "（给峰值加一个 epsilon、给它设下限，或对零单独处理），或者事后替换了 NaN（nan_to_num；fmax 或 fmin，它们在数和 NaN 之间选数；或者一个 where："
            "它的比较对 NaN 为假，于是选了 0；relu 本身会保留 NaN）；normalise 两者都没有做。"),
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
           "第 09 讲第 5 节“Inductor：从 post-grad 计算图到内核”展示了：只要归约和读取它的逐元素算子都以张量形式"
           "留在同一张图里，它们就会融合成一个内核。让峰值保持为张量。"),
          ("Each generated kernel and each extern call shows in inductor_code(your_function, x).to_text(); aim for one "
           "kernel row and nothing else, with the same values as normalise.",
           "inductor_code(你的函数, x).to_text() 会列出每个生成的内核和每个外部调用；目标是只有一行内核，"
           "没有别的，并且数值与 normalise 相同。"),
      ])
def _fused(answer: Any) -> None:
    from ..viewers.inductor import inductor_code
    from .._text import one_line_error, quiet

    need_callable(answer, "normalise_fused")
    probes = _fused_probes()
    earlier: list[torch.Tensor] = []   # the inputs tried so far, to name a result kept from an earlier call
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
            if _stale(got, probe.args[0], earlier):
                raise Wrong("normalise_fused returns a result computed from an earlier call: called again with a "
                            "tensor of the same shape and dtype but other values, it uses the earlier tensor's peak "
                            "(something is kept between calls, e.g. a cache keyed by shape). Compute everything "
                            "from the x you are given.",
                            "normalise_fused 返回的结果是用之前某次调用的数据算出来的：用形状和 dtype 相同、数值不同的张量再调用一次时，"
                            "它用的仍是之前那个张量的峰值（有东西在两次调用之间被保留了下来，例如按形状缓存）。请全部根据传入的 x 计算。",
                            tried=probe.label, expected=described(want), got=diff)
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
        if x.requires_grad and not (isinstance(got, torch.Tensor) and got.requires_grad):
            raise Wrong("for an x that requires grad, normalise_fused's result does not require grad: something in "
                        "it detaches x (or runs under no_grad), so nothing computed from the result can be "
                        "differentiated with respect to x. normalise's result stays connected to autograd; yours "
                        "must too (its gradient is not compared, only that there is one).",
                        "对于要求梯度的 x，normalise_fused 的结果却不要求梯度：函数里有东西把 x detach 了（或在 no_grad 下运行），"
                        "于是由结果算出的任何东西都无法对 x 求导。normalise 的结果仍连在自动微分（autograd）的计算图上，"
                        "你的结果也必须如此（不比较梯度的数值，只要求梯度存在）。",
                        tried=probe.label, expected=("a result that requires grad", "要求梯度的结果"),
                        got=("a result that does not require grad", "不要求梯度的结果"))
        earlier.append(probe.args[0])
    for probe, compiled in probes:
        if not compiled:
            continue
        x = probe.args[0]
        code = inductor_code(answer, x.clone())
        graphs = len(code.post_grad)
        if graphs > 1:
            raise Wrong(f"Inductor compiled {graphs} graphs: something in the function still breaks Dynamo's "
                        "capture (a Python number read from a tensor ends the graph), so the work cannot fuse.",
                        f"Inductor 编译了 {graphs} 张计算图：函数里仍有东西打断了 Dynamo 的捕获（从张量读出 Python 数值会结束"
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
             lambda x: F.silu(x).sum(), strided),
            # two silu calls of one shape in one function: an entry that keeps something from another call reads
            # the wrong one
            (("F.silu(x) + F.silu(2 * x), input of shape (7,)", "F.silu(x) + F.silu(2 * x)，输入形状 (7,)"),
             lambda x: F.silu(x) + F.silu(2 * x), torch.randn(7, generator=gen) * 3),
            # float64's precision and range (a float32 detour shows), and NaN and inf, which eager silu passes on
            (("F.silu on a float64 tensor holding 1/3, -0.7, 2.5, values from ±5.5 to ±40, ±1e300, 0, NaN, inf "
              "and -inf",
              "对 float64 张量做 F.silu，其中含 1/3、-0.7、2.5、±5.5 到 ±40 之间的若干值、±1e300、0、NaN、inf 和 -inf"),
             lambda x: F.silu(x), _EDGES64)]


#: Values where float64 and eager silu's treatment of NaN and inf show.
_EDGES64 = torch.tensor([1 / 3, -0.7, 2.5, 40.0, -40.0, 1e300, -1e300, 0.0, float("nan"), float("inf"),
                         -float("inf"), 5.5, 8.0, 11.0, 15.0, 21.0, -5.5, -11.0, -21.0, -25.0],
                        dtype=torch.float64)   # 5.5 to 25: where a cutoff of silu at 10 or 20 (x, or 0) shows


def _entries(table: dict[Any, Any]) -> tuple[Any, Any]:
    """The table's silu and silu_backward entries (None where missing or not callable)."""
    fwd, bwd = table.get(torch.ops.aten.silu.default), table.get(torch.ops.aten.silu_backward.default)
    return (fwd if callable(fwd) else None), (bwd if callable(bwd) else None)


def _precision_mistake(table: dict[Any, Any], dtype: torch.dtype, *, backward: bool) -> tuple[str, str] | None:
    """Name an entry that computes an input of ``dtype`` in a lower precision and casts back."""
    fwd, bwd = _entries(table)
    gen = torch.Generator().manual_seed(95)
    x = (torch.randn(8, generator=gen, dtype=torch.float64) * 2).to(dtype)
    grad = torch.randn(8, generator=gen, dtype=torch.float64).to(dtype)
    try:
        with torch.no_grad():
            if backward:
                got, want, which = bwd(grad.clone(), x.clone()), torch.ops.aten.silu_backward(grad, x), "silu_backward"
            else:
                got, want, which = fwd(x.clone()), F.silu(x), "silu"
    except Exception:
        return None
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not got.is_floating_point() \
            or torch.finfo(got.dtype).bits > torch.finfo(dtype).bits:
        return None
    got = got.to(dtype)   # returned in the lower dtype, or cast back
    if _diff(got, want, **_silu_tol(dtype)) is None or differs(got.detach(), want, rtol=1e-2, atol=1e-3) is not None:
        return None
    return (f"your {which} entry loses precision: it computes in a lower precision than its input's dtype (a "
            ".float(), .half() or .bfloat16() inside), so fewer digits are right than the dtype "
            "holds (about 7 of float64's 16 through float32, about 3 of float32's 7 through float16), and values "
            "beyond the lower dtype's range (such as 1e300 through float32) become inf. Compute in the input's own "
            "dtype.",
            f"你的 {which} 条目丢掉了精度：它用比输入的 dtype 更低的精度计算（里面有 .float()、.half() 或 .bfloat16()），"
            "所以对的有效数字比该 dtype 能表示的少（经过 float32 时，float64 的 16 位只剩大约 7 位对；"
            "经过 float16 时，float32 的 7 位只剩大约 3 位对），而超出低精度 dtype 范围的值（例如经过 float32 的 1e300）会变成 inf。"
            "请按输入自己的 dtype 计算。")


def _silu_tol(dtype: torch.dtype) -> dict[str, float]:
    """lab09.3's tolerances: float64 to its precision, float32 loose enough for any sigmoid formula."""
    return dict(_FLOAT64_TOL) if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)


#: Where lab09.3 reads an entry directly to tell a cutoff from a cancellation: small values (right
#: either way), the range where a cutoff at 10, 20 or 50 shows, and huge values, where a formula
#: that subtracts nearly equal large numbers loses its small term.
_LADDER = torch.tensor([0.5, 2.0, 5.5, 8.0, 11.0, 15.0, 21.0, 30.0, 50.0, 100.0, 1e3, 1e6, 1e17, 1e300],
                       dtype=torch.float64)


def _large_input_fault(table: dict[Any, Any], *, backward: bool) -> str | None:
    """What the table's silu (or silu_backward, with a gradient of ones) entry does wrong for large
    inputs, read on ``_LADDER`` in float64: "cutoff" when it is right on small values and, where it
    differs, gives what a cutoff gives (x itself for silu, grad_output for silu_backward, 0, or one
    constant on each side), from a moderate magnitude on; "cancellation" when it differs only for
    huge inputs (beyond 1e6) and stays finite there; None otherwise."""
    fwd, bwd = _entries(table)
    entry = bwd if backward else fwd
    if entry is None:
        return None
    x = torch.cat([_LADDER, -_LADDER])
    grad = torch.ones_like(x)
    try:
        with torch.no_grad():
            got = entry(grad.clone(), x.clone()) if backward else entry(x.clone())
    except Exception:
        return None
    want = torch.ops.aten.silu_backward(grad, x) if backward else F.silu(x)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
        return None
    got = got.detach()
    bad = ~torch.isclose(got, want, equal_nan=True, **_FLOAT64_TOL)
    if not bool(bad.any()) or bool(bad[x.abs() <= 2].any()):
        return None
    if float(x[bad].abs().min()) > 1e6:
        return "cancellation" if bool(torch.isfinite(got[bad]).all()) else None
    for side in (x > 0, x < 0):
        where = bad & side
        if not bool(where.any()):
            continue
        values = got[where]
        cut = (values == (grad if backward else x)[where]) | (values == 0)
        if int(where.sum()) >= 2:
            cut |= values == values[-1]
        if not bool(cut.all()):
            return None
    return "cutoff"


_CUTOFF = ("{what} differ from eager silu only for inputs of large magnitude, where yours take the value a cutoff "
           "gives ({cut}, 0 or one constant): a clamp or a cutoff on x (a where) changes silu there. "
           "Eager silu keeps following x * sigmoid(x) however large x is, even where the difference is small (at x = "
           "11 in float64 silu is not yet x); write it so that nothing overflows instead, e.g. in terms of sigmoid.",
           "{what}只在输入绝对值很大的地方与 eager 的 silu 不同，而且在那里取的是截断给出的值（{cut}、0 "
           "或某个常数）：对 x 做的 clamp 或截断（where）改变了那里的 silu。无论 x 多大，eager 的 silu 都遵循 x * sigmoid(x)，"
           "即使差别很小也是如此（在 float64 中，x = 11 时 silu 还不等于 x）；请换一种写法让中间结果都不溢出，例如用 sigmoid "
           "来表示，而不是截断。")

_CANCELLATION = ("{what} differ from eager silu only for inputs of huge magnitude (beyond about 1e16 in float64): "
                 "your formula subtracts nearly equal large numbers (such as x * s and x * s * s, with s = sigmoid(x) "
                 "= 1 there), so the small term it should keep is lost. Rewrite it so that large terms do not cancel.",
                 "{what}只在输入绝对值极大（float64 中约超过 1e16）的地方与 eager 的 silu 不同：你的公式让两个几乎相等的大数相减"
                 "（例如 x * s 与 x * s * s，那里 s = sigmoid(x) = 1），于是本该保留的小项丢掉了。请改写公式，让大的项不会相互抵消。")


def _masks_nonfinite(got: torch.Tensor, want: torch.Tensor) -> bool:
    """``got`` is finite where eager gives NaN or inf."""
    return got.shape == want.shape and bool((~torch.isfinite(want.detach()) & torch.isfinite(got.detach())).any())


_MASKS = ("{what} are finite numbers where eager silu gives NaN or inf: your decomposition masks non-finite values "
          "(e.g. nan_to_num, a clamp or a where), which eager silu does not do (its value is NaN at NaN and -inf and "
          "inf at inf; its gradient is NaN at all three).",
          "在 eager 的 silu 给出 NaN 或 inf 的地方，{what}却是有限的数：你的分解把非有限值遮掉了（例如用 nan_to_num、clamp 或 "
          "where），而 eager 的 silu 不会这样做（它的值在 NaN 和 -inf 处是 NaN，在 inf 处是 inf；它的梯度在这三处都是 NaN）。")


def _kept_between_calls(table: dict[Any, Any]) -> bool:
    """The backward entry is right right after the forward entry ran on the same tensor, but not
    after it ran on another tensor of that shape: it reads something the forward entry kept."""
    fwd, bwd = _entries(table)
    if fwd is None or bwd is None:
        return False
    gen = torch.Generator().manual_seed(96)
    x, other, grad = (torch.randn(2, 6, generator=gen) * 3 for _ in range(3))
    want = torch.ops.aten.silu_backward(grad, x)
    try:
        with torch.no_grad():
            fwd(x.clone())
            right_after = bwd(grad.clone(), x.clone())
            fwd(other.clone())
            after_other = bwd(grad.clone(), x.clone())
    except Exception:
        return False
    return _same(right_after, want) and not _same(after_other, want)


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


def _nan_where_inf(got: torch.Tensor, want: torch.Tensor) -> bool:
    """``got`` is NaN where eager gives ±inf."""
    return got.shape == want.shape and bool((torch.isnan(got.detach()) & torch.isinf(want.detach())).any())


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
     "第 09 讲第 3 节“分解与 Core ATen”：表的键是 `.default` 这样的重载，而不是算子包（packet）；"
     "反向算子要单独注册，因为自动微分（autograd）在你的前向分解生效之前，就已经用 silu 自己的公式求导了。"),
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
                        "前向已被分解，但反向图仍在调用 aten.silu_backward：自动微分（autograd）用 silu 自己的反向算子求导，"
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
        tol = _silu_tol(want.dtype)
        diff = _diff(got.detach(), want.detach(), **tol)
        if diff is not None:
            if got.dtype != want.dtype:
                raise Wrong("your silu entry returns another dtype than its input's: a decomposition must give the "
                            "dtype the op it replaces gives (silu keeps its input's dtype).",
                            "你的 silu 条目返回的 dtype 与输入不同：分解必须给出与被替换的算子相同的 dtype（silu 保持输入的 dtype）。",
                            tried=label, expected=described(want), got=diff)
            named = _precision_mistake(answer, want.dtype, backward=False)
            if named is not None:
                raise Wrong(*named, tried=label, expected=described(want), got=diff)
            if _masks_nonfinite(got, want):
                raise Wrong(_MASKS[0].format(what="values"), _MASKS[1].format(what="数值"), tried=label,
                            expected=described(want), got=diff)
            if _nan_where_inf(got, want):
                raise Wrong("values are NaN where eager silu gives inf (at x = inf): your formula combines infinities "
                            "there (inf - inf and inf * 0 are NaN). Write it so that it gives inf at x = inf, as "
                            "x * sigmoid(x) does.",
                            "在 eager 的 silu 给出 inf 的地方（x = inf 处），数值却是 NaN：你的公式在那里让无穷大相互运算"
                            "（inf - inf 和 inf * 0 都是 NaN）。请换一种写法，让它在 x = inf 处像 x * sigmoid(x) 一样给出 inf。",
                            tried=label, expected=described(want), got=diff)
            if _overflows(got, want):
                raise Wrong(_OVERFLOW[0].format(what="values"), _OVERFLOW[1].format(what="数值"), tried=label,
                            expected=described(want), got=diff)
            fault = _large_input_fault(answer, backward=False)
            if fault is not None:
                text = _CUTOFF if fault == "cutoff" else _CANCELLATION
                raise Wrong(text[0].format(what="values", cut="x itself"), text[1].format(what="数值", cut="x 本身"),
                            tried=label, expected=described(want), got=diff)
            raise Wrong("with your decompositions the function's values differ from eager silu: check the forward "
                        "formula against silu(x) = x * sigmoid(x).",
                        "使用你的分解后，函数的数值与 eager 的 silu 不同：请对照 silu(x) = x * sigmoid(x) 检查前向公式。",
                        tried=label, expected=described(want), got=diff)
        diff = _diff(got_x.grad, eager_x.grad, "gradient", "梯度", **tol)
        if diff is not None:
            named = _precision_mistake(answer, want.dtype, backward=True)
            if named is not None:
                raise Wrong(*named, tried=label, expected=described(eager_x.grad), got=diff)
            if _masks_nonfinite(got_x.grad, eager_x.grad):
                raise Wrong(_MASKS[0].format(what="gradients"), _MASKS[1].format(what="梯度"), tried=label,
                            expected=described(eager_x.grad), got=diff)
            if _overflows(got_x.grad, eager_x.grad):
                raise Wrong(_OVERFLOW[0].format(what="gradients"), _OVERFLOW[1].format(what="梯度"), tried=label,
                            expected=described(eager_x.grad), got=diff)
            fault = _large_input_fault(answer, backward=True)
            if fault is not None:
                text = _CUTOFF if fault == "cutoff" else _CANCELLATION
                raise Wrong(text[0].format(what="gradients", cut="grad_output"),
                            text[1].format(what="梯度", cut="grad_output"), tried=label,
                            expected=described(eager_x.grad), got=diff)
            named = _backward_mistake(answer)
            if named is not None:
                raise Wrong(*named, tried=label, expected=described(eager_x.grad), got=diff)
            if _kept_between_calls(answer):
                raise Wrong("the values match but the gradients do not, in a function with two silu calls of one "
                            "shape: your silu_backward entry reads something kept from the forward entry (a global or "
                            "a closure), which then belongs to the other call. Each entry must compute from its own "
                            "arguments only (silu_backward from grad_output and self).",
                            "数值一致，但在含有两次同形状 silu 调用的函数里梯度不一致：你的 silu_backward 条目读取了前向条目保留下来的东西"
                            "（全局变量或闭包），而那时它属于另一次调用。每个条目都只能根据自己的参数计算（silu_backward 只用 "
                            "grad_output 和 self）。", tried=label, expected=described(eager_x.grad), got=diff)
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
