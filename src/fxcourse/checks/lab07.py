"""Checkers for labs/lab07_guards_breaks.ipynb (lecture course/07_dynamo_guards_breaks.ipynb).

Every checker resets Dynamo before and after it runs and changes Dynamo's configuration only
inside ``config.patch`` blocks, so nothing it does leaks into the learner's notebook; whatever an
answer changes in Dynamo's configuration or torch.compiler's stance is put back, and such an answer
is wrong (:func:`_keeps_dynamo_settings`). Graph
breaks and recompiles are read from torch itself: a counting backend and the ``graph_breaks``
and ``recompiles`` logging artifacts (see :func:`fxcourse.checks.lab06.dynamo_log`).
"""
from __future__ import annotations

import contextlib
import io
import os
import warnings
from typing import Any, Callable, Iterator

import torch
from torch import nn

from . import Wrong, task
from . import _dynamo_settings as dynamo_settings
from .._text import first_line, quiet
from ._probe import Mistake, Probe, describe, differs, need_callable, run_probes
from .lab06 import _break_records, _guard_failures, dynamo_log

__all__ = ["Router", "messy", "recompile_reasons"]


@contextlib.contextmanager
def _fresh_dynamo() -> Iterator[None]:
    """Reset Dynamo around a check; keep the learner's prints and torch's logs off the notebook."""
    torch._dynamo.reset()
    try:
        with quiet(), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        torch._dynamo.reset()


#: the feedback for an answer that left Dynamo's settings changed
_settings_wrong = dynamo_settings.left_changed


def _keeps_dynamo_settings(advice: tuple[str, str]) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Run a checker under Dynamo's default settings, as the tasks say (a notebook's own settings, such as
    ``reorderable_logging_functions`` or a stance, would otherwise pass wrong answers or fail right ones),
    and put the notebook's back afterwards: an answer that leaves them changed is wrong. ``advice`` says
    what to do instead."""
    return dynamo_settings.keeping_settings(advice, from_defaults=True)


class _CountingBackend:
    """A backend that records every graph it is given and runs it unchanged."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.dynamic: list[bool] = []  # per graph: whether some input size is symbolic
        self.runs = 0  # calls of the compiled graphs: a call that ran eagerly does not count
        self.__name__ = "counting_backend"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        self.dynamic.append(any(isinstance(a, torch.SymInt) or (isinstance(a, torch.Tensor) and any(
            isinstance(size, torch.SymInt) for size in a.shape)) for a in example_inputs))

        def run(*args: Any) -> Any:
            self.runs += 1
            return gm.forward(*args)
        return run


# -- lab07.1 ---------------------------------------------------------------------------

def messy(x: torch.Tensor) -> torch.Tensor:
    """The function of exercise 1: three graph breaks (.item(), print, a data-dependent if)."""
    y = torch.sin(x) * 2
    scale = y.abs().max().item()
    print("scale:", scale)
    if y.sum() > 0:
        y = y / scale
    else:
        y = -y
    return y + 1


def _messy_quietly(x: torch.Tensor) -> torch.Tensor:
    with contextlib.redirect_stdout(io.StringIO()):
        return messy(x)


def _messy_probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(707)
    out = []
    for shape in ((3, 5), (7,), (2, 3, 4)):
        x = torch.randn(shape, generator=gen)
        for sign, label in ((1, "> 0"), (-1, "< 0")):
            # sin is odd, so flipping x flips the sign of y.sum(): one input per branch
            base = x if torch.sin(x).sum() * sign > 0 else -x
            out.append(Probe((f"x of shape {tuple(shape)} with y.sum() {label}",
                              f"形状为 {tuple(shape)} 且 y.sum() {label} 的 x"), (base.clone(),)))
    a = float(torch.rand(1, generator=gen)) + 0.2
    out.append(Probe((f"x = [{a:.4g}, {-a:.4g}] (y.sum() exactly 0)", f"x = [{a:.4g}, {-a:.4g}]（y.sum() 恰好为 0）"),
                     (torch.tensor([a, -a]),)))
    out.append(Probe(("x of zeros, shape (4,)", "全零的 x，形状 (4,)"), (torch.zeros(4),)))
    out.append(Probe(("x of zeros, shape (2, 3)", "全零的 x，形状 (2, 3)"), (torch.zeros(2, 3),)))
    # y.sum() > 0 while the entry of largest magnitude is negative
    out.append(Probe(("x = [0.3, 0.35, 0.4, 0.45, -1.3] (y.sum() > 0, the largest |y| is negative)",
                      "x = [0.3, 0.35, 0.4, 0.45, -1.3]（y.sum() > 0，而绝对值最大的 y 元素是负数）"),
                     (torch.tensor([0.3, 0.35, 0.4, 0.45, -1.3]),)))
    out.append(Probe(("x of shape (6,), float64", "形状为 (6,) 的 float64 x"),
                     (torch.randn(6, generator=gen, dtype=torch.float64),)))
    # x.sum() and y.sum() = (2 sin x).sum() of opposite signs: the decision reads y, not x
    out.append(Probe(("x = [4.0, 0.5] (x.sum() > 0 but y.sum() < 0)", "x = [4.0, 0.5]（x.sum() > 0，但 y.sum() < 0）"),
                     (torch.tensor([4.0, 0.5]),)))
    out.append(Probe(("x = [-4.0, -0.5] (x.sum() < 0 but y.sum() > 0)", "x = [-4.0, -0.5]（x.sum() < 0，但 y.sum() > 0）"),
                     (torch.tensor([-4.0, -0.5]),)))
    # far below any epsilon: y / scale still reaches 1 in size
    out.append(Probe(("x = [1e-08, 3e-09, -2e-09] (tiny, y.sum() > 0)", "x = [1e-08, 3e-09, -2e-09]（极小，y.sum() > 0）"),
                     (torch.tensor([1e-8, 3e-9, -2e-9]),)))
    out.append(Probe(("x of shape (5,), float16", "形状为 (5,) 的 float16 x"),
                     (torch.randn(5, generator=gen).half(),)))
    out.append(Probe(("x = tensor(0.5), a 0-d tensor", "x = tensor(0.5)，0 维张量"), (torch.tensor(0.5),)))
    out.append(Probe(("x = [nan, 1.0] (y.sum() is NaN, so y.sum() > 0 is False)",
                      "x = [nan, 1.0]（y.sum() 是 NaN，所以 y.sum() > 0 为 False）"),
                     (torch.tensor([float("nan"), 1.0]),)))
    # y.sum() whose sign depends on the dtype it is computed in: the branch shows a conversion
    # (the labels of these say "within rounding of 0": see the mistake "sum rounded differently")
    out.append(Probe(("x = [1.3, 1e-08, -1.3], float32 (y.sum() is within rounding of 0: exactly 0 in float32, "
                      "not in float64)",
                      "x = [1.3, 1e-08, -1.3]，float32（y.sum() 与 0 只差舍入误差：在 float32 中恰好为 0，在 float64 中则不是）"),
                     (torch.tensor([1.3, 1e-8, -1.3]),)))
    out.append(Probe(("x = [1.3, 1e-10, -1.3], float64 (y.sum() is within rounding of 0: > 0 in float64, exactly 0 "
                      "in float32)",
                      "x = [1.3, 1e-10, -1.3]，float64（y.sum() 与 0 只差舍入误差：在 float64 中 > 0，在 float32 中恰好为 0）"),
                     (torch.tensor([1.3, 1e-10, -1.3], dtype=torch.float64),)))
    out.append(Probe(("x = [0.5293, -0.6045, 0.06348], float16 (y.sum() is within rounding of 0: < 0 in float16, "
                      "> 0 in float32)",
                      "x = [0.5293, -0.6045, 0.06348]，float16（y.sum() 与 0 只差舍入误差：在 float16 中 < 0，在 float32 中 > 0）"),
                     (torch.tensor([0.529296875, -0.6044921875, 0.0634765625], dtype=torch.float16),)))
    # the exact sum of y is 0; summed per row or per column first, or in float64, it is 0 too, but y.sum() is not
    out.append(Probe(("x = [[-0.7, -0.2], [0.7, 0.2]], float32 (y.sum() is within rounding of 0: its sign depends "
                      "on the order of summation)",
                      "x = [[-0.7, -0.2], [0.7, 0.2]]，float32（y.sum() 与 0 只差舍入误差：它的正负取决于求和的顺序）"),
                     (torch.tensor([[-0.7, -0.2], [0.7, 0.2]]),)))
    # tinier still, down to subnormal numbers: y.sum() > 0, and messy's y / scale still reaches 1 in size
    out.append(Probe(("x = [1e-30, 3e-31, -2e-31] (tiny, y.sum() > 0)", "x = [1e-30, 3e-31, -2e-31]（极小，y.sum() > 0）"),
                     (torch.tensor([1e-30, 3e-31, -2e-31]),)))
    out.append(Probe(("x = [1.4e-45, 0, 0, 0, 0], float32 (tiny: the smallest subnormal float32, y.sum() > 0)",
                      "x = [1.4e-45, 0, 0, 0, 0]，float32（极小：float32 最小的次正规数，y.sum() > 0）"),
                     (torch.tensor([1.4e-45, 0.0, 0.0, 0.0, 0.0]),)))
    out.append(Probe(("x = [6e-08, 0, 0, 0, 0], float16 (tiny: the smallest subnormal float16, y.sum() > 0)",
                      "x = [6e-08, 0, 0, 0, 0]，float16（极小：float16 最小的次正规数，y.sum() > 0）"),
                     (torch.tensor([6e-8, 0.0, 0.0, 0.0, 0.0], dtype=torch.float16),)))
    # strides of a transpose: an answer that assumes a contiguous input (view) fails here
    out.append(Probe(("x of shape (3, 5), transposed from (5, 3) (not contiguous)",
                      "形状为 (3, 5) 的 x，由 (5, 3) 转置而来（内存不连续）"),
                     (torch.randn(5, 3, generator=gen).t(),)))
    # an epsilon like 1e-300 rounds to 0 in float32 and float16, but not in float64
    out.append(Probe(("x = [1e-310, 0], float64 (tiny: a subnormal float64, y.sum() > 0)",
                      "x = [1e-310, 0]，float64（极小：float64 的次正规数，y.sum() > 0）"),
                     (torch.tensor([1e-310, 0.0], dtype=torch.float64),)))
    # y.sum() of a transposed y adds in memory order (> 0 here); flattened or made contiguous first, it adds in
    # the logical order and gives exactly 0
    out.append(Probe(("x = [[-1e-07, 0.4, -0.4], [1e-07, 0.4, -0.4]] transposed, float32 (not contiguous; y.sum() "
                      "is within rounding of 0: its sign depends on the order of summation)",
                      "x = [[-1e-07, 0.4, -0.4], [1e-07, 0.4, -0.4]] 转置，float32（内存不连续；y.sum() 与 0 只差舍入误差："
                      "它的正负取决于求和的顺序）"),
                     (torch.tensor([[-1e-7, 0.4, -0.4], [1e-7, 0.4, -0.4]]).t(),)))
    # y.sum() is exactly 0, but (y / scale).sum() rounds above 0: a decision on the scaled values shows
    out.append(Probe(("x = [-0.7193, -0.4033, 0.7193, 0.4033], float32 (y.sum() is exactly 0, (y / scale).sum() "
                      "is not)",
                      "x = [-0.7193, -0.4033, 0.7193, 0.4033]，float32（y.sum() 恰好为 0，(y / scale).sum() 不为 0）"),
                     (torch.tensor([-0.7192575931549072, -0.40334352850914, 0.7192575931549072, 0.40334352850914]),)))
    return out


#: Indices into _messy_probes(): what compiled code could get wrong (both branches, the exact-zero sum,
#: zeros, float64 and every input added after it), and where a plain compile's breaks are counted.
_COMPILED = tuple(i for i in range(len(_messy_probes())) if i not in (2, 3, 4, 5, 9))
_COUNTED = (0, 1, 8)


#: (rtol, atol) a result is compared at, by dtype: float64 at float64's precision, so that a float64 input
#: computed in float32 and converted back shows (its error is about 1e-7, float64's about 1e-16).
_TOLERANCE = {torch.float16: (2e-3, 2e-3), torch.bfloat16: (2e-3, 2e-3), torch.float64: (1e-10, 1e-12)}


def _compare(got: Any, want: Any) -> str | None:
    """:func:`differs`, at the precision of the expected result's dtype (:data:`_TOLERANCE`)."""
    if isinstance(want, torch.Tensor) and want.dtype in _TOLERANCE:
        rtol, atol = _TOLERANCE[want.dtype]
        return differs(got, want, rtol=rtol, atol=atol)
    return differs(got, want)


def _messy_variant(probe: Probe, *, at_least: bool = False, plain_max: bool = False, swapped: bool = False,
                   per: str = "") -> torch.Tensor:
    """What messy would return with one known slip: ``>=`` for ``>``, ``y.max()`` for ``y.abs().max()``,
    the two branches swapped, or the decision taken per element, per row, from x or from y / scale instead of
    once from y."""
    (x,) = probe.args
    y = torch.sin(x) * 2
    scale = y.max() if plain_max else y.abs().max()
    total = (y if per == "element" else y.sum(-1, keepdim=True) if per == "row" else x.sum() if per == "x"
             else y.nansum() if per == "nansum" else (y / scale).sum() if per == "scaled" else y.sum())
    take = total >= 0 if at_least else total > 0
    if swapped:
        take = ~take
    return torch.where(take, y / scale, -y) + 1


def _messy_in(x: torch.Tensor, dtype: torch.dtype, *, sum_only: bool = False) -> torch.Tensor:
    """messy(x) computed in ``dtype`` and converted back to x's dtype, or (``sum_only``) with only the
    decision's y.sum() taken in ``dtype``."""
    y = torch.sin(x) * 2
    if sum_only:
        return torch.where(y.to(dtype).sum() > 0, y / y.abs().max(), -y) + 1
    low = torch.sin(x.to(dtype)) * 2
    return (torch.where(low.sum() > 0, low / low.abs().max(), -low) + 1).to(x.dtype)


def _distance(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().nan_to_num(nan=float("inf")).max()) if a.numel() else 0.0


def _other_precision(got: Any, want: Any, probe: Probe) -> bool:
    """The result is messy's computed (wholly, or only y.sum()) in another floating dtype than the input's."""
    (x,) = probe.args
    if not isinstance(got, torch.Tensor) or got.dtype != x.dtype or not x.is_floating_point():
        return False
    for dtype in (torch.float16, torch.float32, torch.float64):
        if dtype == x.dtype:
            continue
        for sum_only in (False, True):
            variant = _messy_in(x, dtype, sum_only=sum_only)
            # at the precision of the coarser of the two dtypes: that is what the conversion leaves
            rtol, atol = max(_TOLERANCE.get(dtype, (1e-6, 1e-7)), _TOLERANCE.get(x.dtype, (1e-6, 1e-7)))
            if _compare(variant, want) is not None and differs(got.double(), variant.double(),
                                                              rtol=rtol, atol=atol) is None \
                    and _distance(got, variant) < _distance(got, want):  # nearer to it than to messy's own
                return True
    return False


def _scale_per_dim(got: Any, want: Any, probe: Probe) -> bool:
    """The result of a scale taken along one dimension (the largest |y| of each row or column) instead of
    over the whole tensor."""
    (x,) = probe.args
    y = torch.sin(x) * 2
    for dim in range(y.dim()):
        for keep in (True, False):
            try:
                variant = torch.where(y.sum() > 0, y / y.abs().amax(dim=dim, keepdim=keep), -y) + 1
            except RuntimeError:  # a scale that does not broadcast against y
                continue
            if variant.shape == want.shape and _like(got, want, variant):
                return True
    return False


def _label(probe: Probe) -> tuple[str, str]:
    """A probe's label as an (English, 中文) pair (every probe of this lab has one)."""
    label = probe.label
    return (label[0], label[1]) if isinstance(label, tuple) else (label, label)


def _same(got: Any, want: Any) -> bool:
    return differs(got, want) is None


def _like(got: Any, want: Any, variant: torch.Tensor) -> bool:
    """``got`` is ``variant`` (messy with a known slip) at the precision of its dtype, and the slip shows on
    this probe: the variant is not messy's own result there."""
    return _compare(variant, want) is not None and _compare(got, variant) is None


def _nan_where_number(got: Any, want: Any, probe: Probe) -> bool:
    return bool(torch.isnan(got).any()) and not bool(torch.isnan(want).any())


def _nan_replaced(got: Any, want: Any, probe: Probe) -> bool:
    return bool(torch.isnan(want).any()) and int(torch.isnan(got).sum()) < int(torch.isnan(want).sum())


def _scale_bounded(got: Any, want: Any, probe: Probe) -> bool:
    """On a tiny input messy's largest |y / scale| is 1; a clamped or padded scale leaves it well below, and
    so does the other branch (a threshold on the sum, or a mean that rounds to 0), whose -y + 1 is 1 there."""
    return "tiny" in _label(probe)[0] and float((got.double() - 1).abs().max()) < 1 - 1e-5


def _reciprocal_overflows(got: Any, want: Any, probe: Probe) -> bool:
    """On a subnormal input 1 / scale is inf: y * (1 / scale) gives inf and NaN where messy's y / scale is finite."""
    return ("subnormal" in _label(probe)[0] and bool(torch.isfinite(want).all())
            and not bool(torch.isfinite(got).all()))


def _rounded_otherwise(got: Any, want: Any, probe: Probe) -> bool:
    """On an input whose y.sum() is within rounding of 0: the other branch, at the input dtype's precision (a sum
    taken in another dtype, in another order, or as a cumsum, which torch accumulates in float64)."""
    other = _messy_variant(probe, swapped=True)
    if "within rounding of 0" not in _label(probe)[0] or _compare(got, other) is not None:
        return False
    # exactly messy's computed wholly in another dtype (and not exactly the other branch): "computed in another dtype"
    (x,) = probe.args
    return torch.equal(got, other) or not any(torch.equal(got, _messy_in(x, dtype))
                                              for dtype in (torch.float16, torch.float32, torch.float64)
                                              if dtype != x.dtype)


_MESSY_MISTAKES = [
    Mistake("1 / scale overflows", _reciprocal_overflows,
            "your result has inf or NaN where messy's is a number: on this input of subnormal magnitude the largest "
            "|y| is so small that its reciprocal, 1 / scale, overflows to inf (and 0 * inf is NaN). messy divides y "
            "by the scale itself, which stays finite for every scale that is not 0.",
            "你的结果在 messy 给出数值的位置出现了 inf 或 NaN：这个输入的数值小到次正规数的量级，|y| 的最大值小到它的倒数 1 / scale "
            "溢出为 inf（而 0 * inf 是 NaN）。messy 直接用 scale 去除 y，只要 scale 不为 0，结果就是有限的。"),
    Mistake("NaN from the branch not taken", _nan_where_number,
            "your result has NaN where messy's is a number: on an input of zeros y / scale is 0 / 0. Mixing "
            "both branches with arithmetic keeps that NaN; select the result of the branch messy takes, so "
            "the other one's value never enters the output.",
            "你的结果在 messy 给出数值的位置出现了 NaN：输入全为零时 y / scale 是 0 / 0。用算术把两个分支混合起来会保留这个 NaN；"
            "请选取 messy 实际走的那个分支的结果，让另一个分支的值不进入输出。"),
    # before "computed in another dtype": a flipped branch is named as a sum that rounds otherwise, whatever
    # made it round otherwise (another dtype, another order of summation, a cumsum)
    Mistake("sum rounded differently", _rounded_otherwise,
            "your result takes the other branch on this input, whose y.sum() is within rounding of 0: messy decides "
            "from its own y.sum() > 0, one sum over all of y taken in the input's dtype. A sum taken another way "
            "rounds differently here and flips the branch: in another dtype than the input's, in another order (per "
            "row or per column first, or element by element), or as a cumulative sum (which torch accumulates in "
            "higher precision).",
            "你的结果在这个输入上走了另一个分支，而这个输入的 y.sum() 与 0 只差舍入误差：messy 依据的是它自己的 y.sum() > 0，"
            "即在输入的 dtype 中对 y 的全部元素求一次和。换一种方式求和，在这里舍入结果就不同，分支也随之翻转：用与输入不同的 dtype "
            "求和，按另一种顺序求和（先按行或按列求和，或逐个元素累加），或者用累积和（torch 以更高的精度累加它）。"),
    # before "computed in another dtype": float16 cannot hold a tiny input, so it would match there too
    Mistake("scale bounded below", _scale_bounded,
            "on an input of tiny magnitude the largest |y / scale| in your result stays below 1: there y.sum() > 0, "
            "so messy "
            "takes the y / scale branch, and it divides y by exactly the largest |y|, however small it is, so the "
            "largest |y / scale| is 1. A lower bound or an epsilon on the scale changes that (only an input of zeros "
            "gives 0 / 0, and there messy takes the other branch), and so does a decision that needs more than "
            "y.sum() > 0: a threshold above 0, or a quantity that rounds to 0 when y is this small (a mean divides "
            "the sum by the number of entries).",
            "在数值极小的输入上，你的结果中 |y / scale| 的最大值小于 1：这时 y.sum() > 0，messy 走 y / scale 分支，并且恰好用 |y| 的最大值去除 y，"
            "无论它多小，所以 |y / scale| 的最大值是 1。给 scale 加下限或 epsilon 会改变这一点（只有全零的输入才会出现 0 / 0，"
            "而那时 messy 走的是另一个分支）；判断条件比 y.sum() > 0 更严也会如此：与一个大于 0 的阈值比较，"
            "或者使用在 y 如此小时舍入为 0 的量（平均值要把和除以元素个数）。"),
    # before "computed in another dtype": on the probe where y.sum() is exactly 0, messy wholly in float64 and a
    # decision on y / scale agree
    Mistake("decided on y / scale", lambda got, want, probe: _like(got, want, _messy_variant(probe, per="scaled")),
            "your result takes its branch from the sum of y / scale; messy decides from y.sum() before dividing, and "
            "the two round differently: here y.sum() is exactly 0 (messy takes the else branch) while the sum of the "
            "scaled values is not.",
            "你的结果依据 y / scale 之和选择分支；messy 依据的是除法之前的 y.sum()，两者的舍入不同：这里 y.sum() 恰好为 0"
            "（messy 走 else 分支），而缩放之后的和不为 0。"),
    Mistake("computed in another dtype", _other_precision,
            "your result is messy's computed in another dtype than the input's (all of it, or only y.sum()) and "
            "then given the input's dtype back: its rounding differs from the input dtype's, and on this input "
            "that changes the result (near a sum of 0, even the branch). Compute every intermediate, the sum "
            "included, in the input's dtype, with no conversion.",
            "你的结果是用与输入不同的 dtype 计算 messy（全部计算，或只有 y.sum()）、再转回输入 dtype 得到的：它的舍入与输入 dtype "
            "的不同，在这个输入上改变了结果（在和接近 0 时甚至改变了分支）。请让包括求和在内的所有中间量都使用输入的 dtype，不做任何转换。"),
    # at the input dtype's precision: on a probe whose sum is not 0 the >= variant is messy itself
    Mistake("if y.sum() >= 0", lambda got, want, probe: _compare(got, _messy_variant(probe, at_least=True)) is None,
            "messy takes the else branch when y.sum() is exactly 0: its test is a strict y.sum() > 0.",
            "当 y.sum() 恰好为 0 时，messy 走的是 else 分支：它的条件是严格的 y.sum() > 0。"),
    # before the swap: on an input where x.sum() and y.sum() differ in sign, both give the other branch
    Mistake("decided on x.sum()", lambda got, want, probe: "x.sum()" in _label(probe)[0]
            and _like(got, want, _messy_variant(probe, per="x")),
            "your result takes its branch from the sign of the input's sum; messy decides from y.sum(), and y is "
            "2 * sin(x): sin can give a sum of the other sign (here x.sum() and y.sum() have opposite signs).",
            "你的结果依据输入之和的正负选择分支；messy 依据的是 y.sum()，而 y 是 2 * sin(x)：经过 sin 之后，和的正负可能相反"
            "（这个输入的 x.sum() 与 y.sum() 符号相反）。"),
    Mistake("NaN skipped in the sum", lambda got, want, probe: bool(torch.isnan(probe.args[0]).any())
            and _like(got, want, _messy_variant(probe, per="nansum")),
            "your decision takes the y / scale branch when y holds a NaN: messy's y.sum() is then NaN, and NaN > 0 "
            "is False, so messy takes the else branch (a sum that skips the NaN, or a test written as not "
            "(y.sum() <= 0), decides otherwise).",
            "当 y 含有 NaN 时，你的判断走了 y / scale 分支：这时 messy 的 y.sum() 是 NaN，而 NaN > 0 为 False，所以 messy 走的是 "
            "else 分支（跳过 NaN 的求和，或写成 not (y.sum() <= 0) 的判断，结论都会不同）。"),
    Mistake("decided per element", lambda got, want, probe: _like(got, want, _messy_variant(probe, per="element")),
            "your result decides element by element whether y is positive; messy makes one decision for the whole "
            "tensor, from the sum of all of y.",
            "你的结果逐个元素判断 y 是否为正；messy 对整个张量只做一次判断，依据的是 y 全部元素之和。"),
    Mistake("decided per row", lambda got, want, probe: _like(got, want, _messy_variant(probe, per="row")),
            "your result decides row by row from the sum of each row; messy makes one decision for the whole "
            "tensor, from the sum of all of y.",
            "你的结果按行判断，依据的是每一行之和；messy 对整个张量只做一次判断，依据的是 y 全部元素之和。"),
    Mistake("scale from y.max()", lambda got, want, probe: _like(got, want, _messy_variant(probe, plain_max=True)),
            "scale is the largest absolute value of y; where y's most negative entry is the largest in size, the "
            "largest value and the largest absolute value differ.",
            "scale 是 y 的绝对值的最大值；当 y 中最负的元素绝对值最大时，最大值与绝对值的最大值并不相同。"),
    Mistake("scale per row or column", _scale_per_dim,
            "your scale is the largest |y| of each row or column; messy's scale is one number, the largest |y| "
            "over the whole tensor.",
            "你的 scale 是每一行或每一列中 |y| 的最大值；messy 的 scale 只有一个数，即整个张量中 |y| 的最大值。"),
    Mistake("dtype changed", lambda got, want, probe: got.dtype != want.dtype,
            "messy keeps the input's dtype; keep every intermediate in it too (no conversion to float32 or to a "
            "Python number, and no float32 constant tensor mixed in, which promotes a float16 result to float32).",
            "messy 保持输入的 dtype；请让所有中间量也保持这个 dtype（不要转换成 float32 或 Python 数，也不要混入 float32 的常量张量，"
            "它会把 float16 的结果提升为 float32）。"),
    Mistake("shape changed", lambda got, want, probe: tuple(got.shape) != tuple(want.shape),
            "messy's result has the input's shape (a 0-d x gives a 0-d result); yours has another one. A reshape "
            "changes it, and so does a constant tensor with a dimension of its own mixed into the result (it "
            "broadcasts the result to its shape).",
            "messy 的结果与输入形状相同（0 维的 x 得到 0 维的结果）；你的结果形状不同。改变形状的操作会改变它，"
            "混入结果的、自带维度的常量张量也会（它把结果广播成自己的形状）。"),
    Mistake("NaN replaced", _nan_replaced,
            "messy's result keeps the NaN that a NaN in the input gives; yours replaced it with a number. Return what "
            "messy returns for every input, NaN included.",
            "对于含 NaN 的输入，messy 的结果保留了由此产生的 NaN；你的结果把它换成了数值。请对每个输入都返回与 messy 相同的结果，"
            "NaN 也不例外。"),
]


def _messy_mistakes(answer: Callable[..., Any]) -> list[Mistake]:
    """:data:`_MESSY_MISTAKES`, with the swap told apart from another decision: swapped branches give the other
    branch's result on every input of both signs, a decision on another quantity only on some."""
    memo: list[bool] = []

    def swapped_everywhere() -> bool:
        if not memo:
            probes = _messy_probes()[:6]  # three shapes, each with y.sum() > 0 and < 0
            try:
                with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
                    memo.append(all(_same(answer(*p.args), _messy_variant(p, swapped=True)) for p in probes))
            except Exception:  # an answer that cannot run a probe is not read as swapped
                memo.append(False)
        return memo[0]

    other = lambda got, want, probe: _like(got, want, _messy_variant(probe, swapped=True))  # noqa: E731
    known = list(_MESSY_MISTAKES)
    at = next(i for i, m in enumerate(known) if m.name == "decided per element")
    known[at:at] = [
        Mistake("branches swapped", lambda got, want, probe: other(got, want, probe) and swapped_everywhere(),
                "your result is messy's other branch on every input: y / scale belongs to the case y.sum() > 0, and "
                "-y to the rest.",
                "你的结果在每个输入上都是 messy 另一个分支的结果：y / scale 对应 y.sum() > 0 的情况，-y 对应其余情况。"),
    ]
    # after every named way of deciding: the branch results are right, the decision is not messy's
    known.append(Mistake("decided on another quantity", other,
                         "your result takes the other branch on this input, though not on every input: the decision "
                         "is not messy's. messy decides once for the whole tensor, from whether y.sum() > 0.",
                         "你的结果在这个输入上走了另一个分支（但并非在每个输入上都如此）：判断方式与 messy 不同。"
                         "messy 对整个张量只判断一次，依据是 y.sum() > 0 是否成立。"))
    return known


def _any_layout(answer: Callable[..., Any], probes: list[Probe]) -> Callable[..., Any]:
    """``answer``, with an error on a non-contiguous input turned into feedback that names the input."""
    def run(x: torch.Tensor) -> Any:
        try:
            return answer(x)
        except RuntimeError as exc:
            if x.is_contiguous():
                raise
            transposed = next(p for p in probes if not p.args[0].is_contiguous() and p.args[0].shape == x.shape
                              and p.args[0].dtype == x.dtype)
            raise Wrong("no_breaks failed on an input that is not contiguous in memory (a transposed tensor), "
                        "where messy works: something in it assumes x's entries lie one after another (a view "
                        "that flattens x, for example). Use operations that work on any layout.",
                        "no_breaks 在一个内存不连续的输入（转置得到的张量）上出错了，而 messy 可以正常运行：其中有操作假定 x "
                        "的元素在内存中依次排列（例如把 x 展平的 view）。请使用适用于任何内存布局的操作。",
                        tried=transposed.label, expected="messy(x)",
                        got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
    return run


def _break_hint(line: str, reason: str) -> tuple[str, str]:
    """What to rethink for a graph break at ``line`` with ``reason`` (torch's graph_breaks log)."""
    if "print(" in line or "`print`" in reason:
        return ("a print inside the function breaks the graph; the task asks for no printing.",
                "函数里的 print 会造成图中断；本题要求不打印任何内容。")
    if "bool(" in line and "item()" in reason:
        return ("bool() of a tensor reads its value into Python (an item() call), which breaks a plain "
                "torch.compile; give the selection the 0-d boolean tensor itself.",
                "对张量调用 bool() 会把它的值读进 Python（相当于调用 item()），这会让普通的 torch.compile 中断；"
                "请把 0 维的布尔张量本身交给选择操作。")
    if "item()" in reason or ".item()" in line:
        return ("Tensor.item() still breaks a plain torch.compile (fullgraph=True captures it on its own, which "
                "hides the break; float() or int() of a tensor calls it too); keep the scale a 0-d tensor.",
                "Tensor.item() 在普通的 torch.compile 中仍会造成图中断（fullgraph=True 会自动捕获它，掩盖了这个中断；"
                "对张量调用 float() 或 int() 也会调用它）；请让 scale 保持为 0 维张量。")
    if "tolist()" in reason or ".tolist()" in line:
        return ("Tensor.tolist() reads the tensor's values into Python, which breaks the graph; keep the scale a "
                "0-d tensor computed by a tensor operation.",
                "Tensor.tolist() 会把张量的值读进 Python，这会造成图中断；请用张量运算得到 scale，并让它保持为 0 维张量。")
    if "ata-dependent" in reason or "jump" in reason:
        return ("a Python `if` on a tensor value still breaks the graph; choose between the two results with a "
                "tensor operation instead (lecture 07, section 4 'Removing graph breaks').",
                "依据张量数值的 Python `if` 仍会造成图中断；请改用张量运算在两个结果之间选择（第 07 讲第 4 节“消除图中断”）。")
    return ("the function still has a graph break; read the reason and rewrite that line with torch operations.",
            "函数仍有图中断；请阅读原因，并用 torch 运算改写那一行。")


@contextlib.contextmanager
def _own_output(into: io.StringIO, answer: Any) -> Iterator[None]:
    """Within the block, what the answer shows besides stdout and stderr is written to ``into`` as lines, as a
    print would be: a warnings.warn or warn_explicit call from code outside torch (also through a name the
    answer's module bound to them, ``from warnings import warn``), and IPython's display(). Warnings torch
    gives (from C++ or its Python code) are not."""
    import sys

    torch_dir = os.path.dirname(torch.__file__)
    real_warn, real_explicit = warnings.warn, warnings.warn_explicit

    def shown(message: Any, category: Any) -> None:
        if not sys._getframe(2).f_code.co_filename.startswith(torch_dir):
            kind = category.__name__ if isinstance(category, type) else type(message).__name__ \
                if isinstance(message, Warning) else "UserWarning"
            into.write(f"{kind}: {message}\n")

    def warn(message: Any, category: Any = None, stacklevel: int = 1, *args: Any, **kwargs: Any) -> None:
        shown(message, category)
        return real_warn(message, category, stacklevel + 1, *args, **kwargs)

    def warn_explicit(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
        shown(message, category)
        return real_explicit(message, category, *args, **kwargs)

    namespace = getattr(answer, "__globals__", {})
    bound = {name: value for name, value in namespace.items() if value is real_warn or value is real_explicit}
    publisher = None
    try:  # display() in a notebook goes to the kernel's display publisher, not to stdout
        from IPython import get_ipython

        shell = get_ipython()
        publisher = getattr(shell, "display_pub", None)
    except Exception:  # no IPython: nothing to catch there
        shell = None
    real_publish = getattr(publisher, "publish", None)

    def publish(data: Any, *args: Any, **kwargs: Any) -> None:
        text = data.get("text/plain", "") if isinstance(data, dict) else data
        into.write(f"display: {text}\n")

    warnings.warn, warnings.warn_explicit = warn, warn_explicit
    for name, value in bound.items():
        namespace[name] = warn if value is real_warn else warn_explicit
    if real_publish is not None:
        publisher.publish = publish
    try:
        yield
    finally:
        warnings.warn, warnings.warn_explicit = real_warn, real_explicit
        namespace.update(bound)
        if real_publish is not None:
            publisher.publish = real_publish


@task("lab07.1", "remove every graph break", "消除全部图中断", hints=[
    ("messy has three lines Dynamo cannot put in a graph. For each, ask what the line is for and how to get "
     "the same value while staying a tensor.",
     "messy 中有三行是 Dynamo 无法放进计算图的。逐一想想每一行的作用，以及如何在保持为张量的前提下得到同样的值。"),
    ("Lecture 07, section 4 'Removing graph breaks': a value read with .item() can stay a 0-d tensor, a print "
     "can go, and an if on a tensor becomes a selection made by a tensor operation (torch.where or torch.cond).",
     "第 07 讲第 4 节“消除图中断”：用 .item() 读出的值可以保持为 0 维张量，print 可以删掉，依据张量的 if "
     "可以改为由张量运算完成的选择（torch.where 或 torch.cond）。"),
    ("Check the edge cases as well: an input of zeros (what is 0 / 0, and does it reach your output?) and an "
     "input whose y.sum() is exactly 0.",
     "也要检查边界情况：全为零的输入（0 / 0 是什么？它会进入你的输出吗？），以及 y.sum() 恰好为 0 的输入。"),
], time_limit=120)
@_keeps_dynamo_settings(("Remove the breaks in the function itself; the checker compiles it with Dynamo's default "
                         "settings.",
                         "请在函数本身中消除图中断；检查器用 Dynamo 的默认设置编译它。"))
def _no_breaks(answer: Any) -> None:
    need_callable(answer, "no_breaks")
    # a no_breaks already wrapped by torch.compile (a decorator, as the lecture shows) is checked as the
    # function it wraps: compiling a compiled function again is not what the task is about
    answer = getattr(answer, "_torchdynamo_orig_callable", answer)
    probes = _messy_probes()
    # called eagerly, outside any compile, on every probe (printing may depend on the input), the answer
    # prints nothing; log records are kept by quiet(); what the answer writes to stdout or stderr, warns
    # itself or displays is printing
    for probe in probes:
        printed = io.StringIO()
        with quiet(stderr=False), contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                _own_output(printed, answer):
            try:
                answer(*(a.clone() for a in probe.args))
            except Exception:  # its errors are named by the probes below
                pass
        if printed.getvalue():
            raise Wrong("no_breaks printed when called eagerly (a print kept behind a condition such as "
                        "torch.compiler.is_compiling() still runs outside a compile); the task asks for no printing.",
                        "直接（eager）调用 no_breaks 时它打印了内容（放在 torch.compiler.is_compiling() 之类条件后面的 print，"
                        "在编译之外仍然会执行）；本题要求不打印任何内容。",
                        tried=(f"no_breaks({_label(probe)[0]}), called eagerly",
                               f"直接调用 no_breaks，输入：{_label(probe)[1]}"),
                        expected=("nothing printed", "不打印任何内容"), got=first_line(printed.getvalue()))
    with _fresh_dynamo():
        run_probes(_any_layout(answer, probes), _messy_quietly, probes, mistakes=_messy_mistakes(answer),
                   what="no_breaks", compare=_compare,
                   generic=("run eagerly, no_breaks gives a different result from messy.",
                            "在 eager 模式下，no_breaks 的结果与 messy 不同。"))
        # an x that requires grad: messy's result carries autograd (its scale is a number, its y is not)
        x = probes[0].args[0].clone().requires_grad_()
        with quiet(), contextlib.redirect_stdout(io.StringIO()):
            got = answer(x)
        if isinstance(got, torch.Tensor) and not got.requires_grad:
            raise Wrong("no_breaks cuts its result off from autograd (detach, no_grad, or a new tensor): for an x "
                        "that requires grad, messy's result requires grad too, so a loss computed from it can be "
                        "backpropagated to x.",
                        "no_breaks 让结果与 autograd 断开了（detach、no_grad 或新建张量）：x 需要梯度时，messy 的结果也需要梯度，"
                        "这样由它算出的损失才能反向传播到 x。",
                        tried=(f"no_breaks(x) with x = {_label(probes[0])[0]}, requires_grad=True",
                               f"no_breaks(x)，x 为{_label(probes[0])[1]}，requires_grad=True"),
                        expected=("a result with requires_grad=True", "requires_grad=True 的结果"),
                        got=("a result with requires_grad=False", "requires_grad=False 的结果"))
        # the gradient that reaches x, on each branch: messy's (its scale a number, held constant) or, where the
        # scale is a tensor, the one through the scale too (the two differ only at the largest |y|); on the else
        # branch (-y + 1) both are the same
        for probe in probes[:2]:  # y.sum() > 0, then y.sum() < 0
            x_got = probe.args[0].clone().requires_grad_()
            wants = []
            for through_scale in (False, True):
                x_want = probe.args[0].clone().requires_grad_()
                if through_scale:
                    y = torch.sin(x_want) * 2
                    (torch.where(y.sum() > 0, y / y.abs().max(), -y) + 1).sum().backward()
                else:
                    _messy_quietly(x_want).sum().backward()
                wants.append(x_want.grad)
            with quiet(), contextlib.redirect_stdout(io.StringIO()):
                out = answer(x_got)
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.sum().backward()
            grad = x_got.grad if x_got.grad is not None else torch.zeros_like(x_got)
            if all(_compare(grad, want) is not None for want in wants):
                branch = (("the y / scale branch", " y / scale 分支") if probe is probes[0]
                          else ("the else branch (-y)", " else 分支（-y）"))
                raise Wrong(f"on an x that takes {branch[0]}, the gradient that reaches x differs from messy's: "
                            "something on a branch changes what backward sees (a detach or no_grad, or a trick that "
                            "keeps the values but not the gradient), so backward through no_breaks does not compute "
                            "what it computes through messy.",
                            f"在走{branch[1]}的 x 上，传回 x 的梯度与 messy 不同：某个分支上的写法改变了反向传播看到的内容"
                            "（detach、no_grad，或数值不变但梯度不同的技巧），所以经过 no_breaks 的反向传播与经过 messy 的不一样。",
                            tried=(f"no_breaks(x).sum().backward() with x = {_label(probe)[0]}, requires_grad=True",
                                   f"no_breaks(x).sum().backward()，x 为{_label(probe)[1]}，requires_grad=True"),
                            expected=("x.grad as messy gives it", "与 messy 相同的 x.grad"),
                            got=(_compare(grad, wants[0]) or "").replace("result", "x.grad", 1))
        with torch._dynamo.config.patch(capture_scalar_outputs=False):
            compiled = torch.compile(answer, backend="eager", fullgraph=True)
            # both branches, the exact-zero sum, zeros and float64: what compiled code could get wrong
            for probe in (probes[i] for i in _COMPILED):
                try:
                    got = compiled(*probe.args)
                except Exception as exc:
                    reason = str(exc)
                    en, zh = _break_hint(reason, reason)
                    label_en, label_zh = _label(probe)
                    raise Wrong(f"torch.compile(no_breaks, fullgraph=True) refused it: {en}",
                                f"torch.compile(no_breaks, fullgraph=True) 拒绝了它：{zh}",
                                tried=(f"fullgraph=True on {label_en}", f"fullgraph=True，输入：{label_zh}"),
                                expected=("one graph", "一张计算图"),
                                got=f"{type(exc).__name__}: {first_line(reason)}") from None
                diff = _compare(got, _messy_quietly(*probe.args))
                if diff:
                    label_en, label_zh = _label(probe)
                    raise Wrong("compiled with fullgraph=True, no_breaks gives a different result from messy.",
                                "用 fullgraph=True 编译后，no_breaks 的结果与 messy 不同。",
                                tried=(f"compiled no_breaks({label_en})", f"编译后的 no_breaks，输入：{label_zh}"),
                                expected="messy(x)", got=diff)
            for probe in (probes[i] for i in _COUNTED):
                torch._dynamo.reset()
                backend = _CountingBackend()
                with dynamo_log("graph_breaks") as messages:
                    torch.compile(answer, backend=backend)(*probe.args)
                breaks = _break_records(messages)
                if breaks or len(backend.graphs) != 1:
                    n = len(backend.graphs)
                    line, reason = breaks[0] if breaks else ("", f"{n} graphs")
                    reason_zh = reason if breaks else f"{n} 张计算图"
                    en, zh = _break_hint(line, reason)
                    label_en, label_zh = _label(probe)
                    raise Wrong(f"fullgraph=True passed, but a plain torch.compile still breaks: {en}",
                                f"fullgraph=True 通过了，但普通的 torch.compile 仍然中断：{zh}",
                                tried=(f"torch.compile(no_breaks) on {label_en}", f"torch.compile(no_breaks)，输入：{label_zh}"),
                                expected=("1 graph, 0 graph breaks", "1 张计算图，0 个图中断"),
                                got=(f"{n} graphs, {len(breaks)} breaks; first at {line!r}: {reason}",
                                     f"{n} 张计算图，{len(breaks)} 个图中断；第一个位于 {line!r}：{reason_zh}"))


# -- lab07.2 ---------------------------------------------------------------------------

def _hidden_functions() -> list[tuple[tuple[str, str], Callable[[torch.Tensor], torch.Tensor], int, tuple[int, ...]]]:
    """((English, 中文) description, function, features, batch sizes) of the functions lab07.2 compiles."""
    gen = torch.Generator().manual_seed(72)
    # weights that require grad, as a model's parameters do: the compiled function's result must carry gradients
    weight, bias = torch.randn(6, 5, generator=gen), torch.randn(5, generator=gen)
    scale = torch.randn(4, generator=gen)
    for w in (weight, bias, scale):
        w.requires_grad_()

    head_weights, score_weights = (weight, bias), (scale,)

    def head(x: torch.Tensor) -> torch.Tensor:  # x: (batch, 6)
        h = torch.nn.functional.layer_norm(x, (6,))
        return torch.softmax(h @ weight + bias, dim=-1)

    def score(x: torch.Tensor) -> torch.Tensor:  # x: (batch, 4)
        return torch.tanh((x * scale).sum(-1)) - x.mean(0).sum()

    head.weights, score.weights = head_weights, score_weights  # type: ignore[attr-defined]
    # sizes beyond the lecture's, one of them large: a range bounded to small sizes shows
    return [(("head: (batch, 6) -> (batch, 5)", "head：(批大小, 6) -> (批大小, 5)"), head, 6, (3, 5, 2050)),
            (("score: (batch, 4) -> (batch,)", "score：(批大小, 4) -> (批大小,)"), score, 4, (7, 2, 4099))]


def _same_gradients(out: Any, want: torch.Tensor, fn: Callable[..., Any], at: tuple[str, str]) -> None:
    """The compiled function's result carries gradients to fn's weights (``fn.weights``), and the same ones as
    fn's own result: no torch.no_grad around the call, no detach."""
    weights = fn.weights  # type: ignore[attr-defined]
    expected = ("a result that requires grad, with fn's gradients for its weights",
                "需要梯度的结果，对权重的梯度与 fn 的相同")
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        raise Wrong("the compiled function's result carries no gradients: fn's weights require grad, so fn's result "
                    "does too, but yours does not (a result computed under torch.no_grad() or detached is cut off "
                    "from autograd, and nothing could be trained through it). Return what the compiled function "
                    "returns, as it is.",
                    "编译后函数的结果不带梯度：fn 的权重需要梯度，所以 fn 的结果也需要梯度，而你的结果不需要（在 torch.no_grad() "
                    "下计算或经过 detach 的结果与 autograd 断开了，无法通过它训练任何东西）。请把编译后函数的返回值原样返回。",
                    tried=at, expected=expected, got=f"requires_grad={getattr(out, 'requires_grad', None)}")
    got_grads = torch.autograd.grad(out.sum(), weights, allow_unused=True)
    want_grads = torch.autograd.grad(want.sum(), weights, allow_unused=True)
    for got_grad, want_grad in zip(got_grads, want_grads):
        diff = differs(got_grad, want_grad, where="gradient")
        if diff:
            raise Wrong("the compiled function's result carries other gradients than fn's: the backward pass through "
                        "it does not match fn's. Return what the compiled function returns, as it is.",
                        "编译后函数的结果所带的梯度与 fn 的不同：经过它的反向传播与 fn 的不一致。请把编译后函数的返回值原样返回。",
                        tried=at, expected=expected, got=diff)


def _marked(inputs: list[torch.Tensor]) -> list[int]:
    return sorted({d for t in inputs for d in getattr(t, "_dynamo_dynamic_indices", set())})


def _bounded(inputs: list[torch.Tensor]) -> list[tuple[int, Any, Any]]:
    """(dim, min, max) of every range given to mark_dynamic that does not cover every size from 2 up."""
    return [(r.dim, r.min, r.max) for t in inputs for r in getattr(t, "_dynamo_dynamic_range", set())
            if r.max is not None or (r.min is not None and r.min > 2)]


def _bounded_wrong(bounds: list[tuple[int, Any, Any]], tried: tuple[str, str], got: Any) -> Wrong:
    dim, low, high = bounds[0]
    shown = f"dim {dim}: min={low}, max={high}"
    return Wrong("you gave the dynamic batch dimension a range (min/max), but the task asks for one compile for "
                 "every batch size from 2 up, with no upper bound: a size outside your range is refused or "
                 "compiled again. Leave the range open.",
                 "你给动态的批大小这一维指定了范围（min/max），但任务要求所有不小于 2 的批大小只编译一次，没有上限："
                 "超出范围的批大小会被拒绝或重新编译。请不要限定范围。",
                 tried=tried, expected=("batch sizes from 2 up, no upper bound", "不小于 2 的批大小，没有上限"),
                 got=(f"a range on {shown}; {got[0]}", f"第 {dim} 维的范围：min={low}，max={high}；{got[1]}"))


#: What lab07.2 says to an answer that leaves Dynamo's settings changed.
_ONCE_ADVICE = ("Make the batch dimension dynamic for this function only: mark it on the input, or tell "
                "torch.compile (lecture 07, section 5). A setting changed only for the duration of one call of the "
                "compiled function and put back before that call returns is fine.",
                "请只针对这个函数让批大小这一维成为动态的：在输入上标记这一维，或者告诉 torch.compile（第 07 讲第 5 节）。"
                "只在编译后函数的一次调用期间修改、并在这次调用返回前恢复的设置是可以的。")


def _never_ran(tried: tuple[str, str], expected: tuple[str, str], got: tuple[str, str]) -> Wrong:
    return Wrong("the backend you were given never ran: compile fn with it (not with another backend, and "
                 "not eagerly), so that the checker can count the compiles.",
                 "给你的 backend 从未运行：请用它来编译 fn（不要换成别的后端，也不要直接 eager 运行），这样检查器才能统计编译次数。",
                 tried=tried, expected=expected, got=got)


@task("lab07.2", "compile once for three batch sizes", "三种批大小只编译一次", hints=[
    ("By default, when does Dynamo decide that a dimension may change? Count the compiles for three batch "
     "sizes with a plain torch.compile.",
     "默认情况下，Dynamo 在什么时候才认定某一维可能变化？用普通的 torch.compile 数一数三种批大小各编译了几次。"),
    ("Lecture 07, section 5 'Dynamic shapes': automatic dynamic makes a dimension symbolic only after it has "
     "seen it change; you can say so before the first call, for one dimension of one input or for the whole "
     "compile.",
     "第 07 讲第 5 节“动态形状”：自动动态只有在看到某一维发生变化之后才把它变成符号；你也可以在第一次调用之前就声明这一点，"
     "既可以针对某个输入的某一维，也可以针对整个编译。"),
    ("Keep the backend you are given: the checker counts compiles through it. Only the batch dimension (dim 0) "
     "may vary; the features dimension must stay fixed.",
     "请使用给你的 backend：检查器通过它统计编译次数。只有批大小这一维（第 0 维）可以变化；特征这一维必须保持不变。"),
], time_limit=120)
@_keeps_dynamo_settings(_ONCE_ADVICE)
def _compile_once(answer: Any) -> None:
    need_callable(answer, "compile_once")
    settings = dynamo_settings.dynamo_state()
    for what, fn, features, batches in _hidden_functions():
        gen = torch.Generator().manual_seed(27)
        inputs = [torch.randn(b, features, generator=gen) for b in batches]
        backend = _CountingBackend()
        tried = (f"compile_once(fn, backend) with fn = {what[0]}, called with batch sizes {batches}",
                 f"compile_once(fn, backend)，其中 fn = {what[1]}，依次用批大小 {batches} 调用")
        one = ("1 compile", "编译 1 次")
        with _fresh_dynamo():
            compiled = answer(fn, backend)
            # settings changed by compile_once and put back only by a later call are changed meanwhile
            changed = dynamo_settings.restore(settings)
            if changed:
                raise _settings_wrong(changed, _ONCE_ADVICE, (
                    f"{tried[0]}: Dynamo's settings when compile_once returned, before any call",
                    f"{tried[1]}：compile_once 返回时、尚未调用时的 Dynamo 设置"))
            if not callable(compiled):
                raise Wrong("return the compiled function.", "请返回编译后的函数。", tried=tried, got=describe(compiled))
            for x in inputs:
                try:
                    out = compiled(x)
                except Exception as exc:
                    marked = [d for d in _marked(inputs) if d != 0]
                    if type(exc).__name__ == "ConstraintViolationError" and _bounded(inputs) and not marked:
                        raise _bounded_wrong(_bounded(inputs), (f"{tried[0]}; batch {x.shape[0]}",
                                                                f"{tried[1]}；批大小 {x.shape[0]}"),
                                             (f"{type(exc).__name__}: {first_line(str(exc))}",
                                              f"{type(exc).__name__}：{first_line(str(exc))}")) from None
                    one_sided = [(d, low, high) for t in inputs for d, low, high in
                                 ((r.dim, r.min, r.max) for r in getattr(t, "_dynamo_dynamic_range", set()))
                                 if (low is None) != (high is None)]
                    if isinstance(exc, AssertionError) and one_sided:
                        d, low, high = one_sided[0]
                        raise Wrong("torch failed on your mark: on this torch, mark_dynamic given only one end of "
                                    "its range (a min without a max, or a max without a min) stops with an "
                                    "AssertionError inside torch. A dimension marked without any range already "
                                    "covers every batch size from 2 up, so no range is needed.",
                                    "torch 在处理你的标记时出错：在这个版本的 torch 中，只给 mark_dynamic 指定范围的一端"
                                    "（只有 min 没有 max，或只有 max 没有 min），会在 torch 内部抛出 AssertionError。"
                                    "不指定任何范围的标记本来就覆盖所有不小于 2 的批大小，因此不需要范围。",
                                    tried=(f"{tried[0]}; batch {x.shape[0]}", f"{tried[1]}；批大小 {x.shape[0]}"),
                                    expected=one,
                                    got=(f"dim {d}: min={low}, max={high}; {type(exc).__name__}: {first_line(str(exc))}",
                                         f"第 {d} 维：min={low}，max={high}；"
                                         f"{type(exc).__name__}：{first_line(str(exc))}")) from None
                    if type(exc).__name__ != "ConstraintViolationError" or not marked:
                        raise
                    raise Wrong(f"you marked dim {marked[0]} as dynamic, but fn needs it to be exactly {features} "
                                "(it multiplies by a weight of fixed size), so Dynamo refused the mark. The batch "
                                "is dim 0.",
                                f"你把第 {marked[0]} 维标记为动态，但 fn 要求这一维恰好是 {features}（它要乘以一个尺寸固定的权重），"
                                "所以 Dynamo 拒绝了这个标记。批大小是第 0 维。",
                                tried=tried, expected=one,
                                got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
                at = (f"{tried[0]}; batch {x.shape[0]}", f"{tried[1]}；批大小 {x.shape[0]}")
                changed = dynamo_settings.restore(settings)
                if changed:
                    raise _settings_wrong(changed, _ONCE_ADVICE, (f"{at[0]}: Dynamo's settings after that call",
                                                                  f"{at[1]}：这次调用之后的 Dynamo 设置"))
                want = fn(x)
                try:
                    diff = differs(out, want)
                    if diff:
                        raise Wrong("the compiled function gives a different result from the original.",
                                    "编译后的函数与原函数结果不同。", tried=at, expected=describe(want), got=diff)
                    _same_gradients(out, want, fn, at)
                except Wrong:
                    if not backend.graphs:  # another backend's rounding: the real slip is the backend
                        raise _never_ran(tried, one, ("0 compiles with it", "用它编译 0 次")) from None
                    raise
            marked = _marked(inputs)
        n = len(backend.graphs)
        if _bounded(inputs):
            raise _bounded_wrong(_bounded(inputs), tried, (f"{n} compiles", f"编译 {n} 次"))
        if n == 1 and backend.runs < len(inputs):
            raise Wrong(f"one compile, but the compiled graph ran for only {backend.runs} of the {len(inputs)} calls: "
                        "the other batch sizes ran eagerly (a stance such as eager_on_recompile, or calling fn itself, "
                        "skips the recompile instead of avoiding it). Make the batch dimension dynamic so that one "
                        "compiled graph serves every batch size.",
                        f"只编译了一次，但编译后的计算图在 {len(inputs)} 次调用中只运行了 {backend.runs} 次：其他批大小是以 eager 方式运行的"
                        "（eager_on_recompile 之类的 stance，或直接调用 fn，只是跳过了重新编译，而不是避免了它）。"
                        "请让批大小这一维成为动态的，使同一张编译后的计算图服务所有批大小。",
                        tried=tried, expected=(f"1 compile, its graph run {len(inputs)} times",
                                               f"编译 1 次，其计算图运行 {len(inputs)} 次"),
                        got=(f"1 compile, its graph run {backend.runs} times", f"编译 1 次，其计算图运行 {backend.runs} 次"))
        if n == 1:
            continue
        got = (f"{n} compiles", f"编译 {n} 次")
        if n == 0:
            raise _never_ran(tried, one, got)
        if marked and 0 not in marked and marked[0] < 0:
            raise Wrong(f"you marked dim {marked[0]} as dynamic: mark_dynamic takes the dimension counted from 0, not "
                        "from the end (a negative index marks no dimension Dynamo uses), and the batch is dim 0.",
                        f"你把第 {marked[0]} 维标记为动态：mark_dynamic 要的是从 0 开始数的维度编号，而不是从末尾倒数"
                        "（负数编号标记不到 Dynamo 使用的维度），批大小是第 0 维。", tried=tried, expected=one, got=got)
        if marked and 0 not in marked:
            raise Wrong(f"you marked dim {marked[0]} as dynamic, but the batch is dim 0.",
                        f"你把第 {marked[0]} 维标记为动态，但批大小是第 0 维。", tried=tried, expected=one, got=got)
        if all(backend.dynamic):
            raise Wrong("every graph already had a dynamic batch size, yet later calls compiled again: what was "
                        "compiled is thrown away between calls (Dynamo's cache reset, or a new function compiled "
                        "for each call), so nothing is reused. Compile once and keep the compiled function.",
                        "每张计算图的批大小本来就已经是动态的，之后的调用却仍然重新编译：编译的结果在两次调用之间被丢弃了"
                        "（Dynamo 的缓存被重置，或每次调用都编译一个新函数），因此没有任何复用。请只编译一次，并保留编译后的函数。",
                        tried=tried, expected=one,
                        got=(f"{n} compiles, each with a dynamic batch size", f"编译 {n} 次，每次的批大小都是动态的"))
        if n == 2:
            raise Wrong("the second batch size compiled again: Dynamo makes a dimension dynamic only after it has "
                        "seen it change. Tell Dynamo before the first call that the batch dimension varies "
                        "(lecture 07, section 5).",
                        "第二个批大小又编译了一次：Dynamo 只有在看到某一维变化之后才会把它变成动态的。请在第一次调用之前就告诉 "
                        "Dynamo 批大小这一维会变化（第 07 讲第 5 节）。",
                        tried=tried, expected=one, got=got)
        raise Wrong("every batch size compiled again: dynamic shapes are off (dynamic=False, or automatic dynamic "
                    "turned off in Dynamo's config, keeps every size static). Let the batch dimension be dynamic "
                    "instead.",
                    "每个批大小都重新编译了：动态形状被关闭了（dynamic=False，或在 Dynamo 配置中关闭自动动态，都会让所有尺寸保持静态）。"
                    "请让批大小这一维成为动态的。",
                    tried=tried, expected=one, got=got)


# -- lab07.3 ---------------------------------------------------------------------------

_KINDS = ("shape", "dtype", "requires_grad", "stride")
#: The shapes of x lab07.3 tries: any matrix but 1 x 1 (the task says so), small ones and a single row or column.
_GUARD_SHAPES = ((5, 4), (3, 6), (4, 4), (2, 3), (2, 2), (1, 3), (5, 1), (1, 5))
#: What torch's recompile reason says when each part of TENSOR_MATCH fails.
#: A new number of dimensions is a shape change too; torch then reports a rank mismatch.
_REASONS = {"shape": ("size mismatch", "rank mismatch"), "dtype": ("dtype mismatch",),
            "requires_grad": ("requires_grad mismatch",), "stride": ("stride mismatch",)}


def _guarded(x: torch.Tensor) -> torch.Tensor:
    return (torch.tanh(x) * 3).sum(0)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _changed(new: torch.Tensor, x: torch.Tensor) -> list[str]:
    """Every part of TENSOR_MATCH in which ``new`` differs from ``x`` (a contiguous matrix).

    A new shape with its own contiguous strides counts as a shape change only.
    """
    out = []
    if tuple(new.shape) != tuple(x.shape):
        out.append("shape")
    if new.dtype != x.dtype:
        out.append("dtype")
    if new.requires_grad != x.requires_grad:
        out.append("requires_grad")
    if "shape" in out:
        if new.stride() != _contiguous_strides(tuple(new.shape)):
            out.append("stride")
    elif new.stride() != x.stride():
        out.append("stride")
    if new.device != x.device:
        out.append("device")
    if type(new) is not type(x):  # e.g. nn.Parameter: the guard checks the tensor's class first
        out.append("type")
    return out


#: How the details name each part in 中文 (the kind itself is the argument the learner receives).
_KIND_ZH = {"shape": "形状", "dtype": "dtype", "requires_grad": "requires_grad", "stride": "步长", "device": "设备"}


def _named(parts: list[str], new: torch.Tensor, x: torch.Tensor) -> tuple[str, str]:
    """``parts`` (:func:`_changed`) as (English, 中文) words; the class names the two classes."""
    en = [f"type ({type(new).__name__}, not {type(x).__name__})" if part == "type" else part for part in parts]
    zh = [f"类（{type(new).__name__}，而不是 {type(x).__name__}）" if part == "type" else _KIND_ZH[part]
          for part in parts]
    return ", ".join(en), "、".join(zh)


def _zh_word(word: str) -> str:
    """``word`` set into 中文 text: a Latin word gets a space on each side."""
    return f" {word} " if word.isascii() else word


def _layout(t: torch.Tensor) -> tuple[str, str]:
    kind = "" if type(t) is torch.Tensor else f", class {type(t).__name__}"
    kind_zh = "" if type(t) is torch.Tensor else f"，类 {type(t).__name__}"
    return (f"shape {tuple(t.shape)}, {t.dtype}, stride {t.stride()}, requires_grad={t.requires_grad}{kind}",
            f"形状 {tuple(t.shape)}，{t.dtype}，步长 {t.stride()}，requires_grad={t.requires_grad}{kind_zh}")


def _same_values(new: torch.Tensor, x: torch.Tensor) -> bool:
    """``new`` holds ``x``'s values (as its own dtype stores them)."""
    try:
        return new.shape == x.shape and bool(torch.equal(new.detach(), x.to(new.dtype)))
    except Exception:  # a dtype x cannot be cast to
        return False


def recompile_reasons(fn: Callable[..., Any], first: tuple[Any, ...], then: tuple[Any, ...]) -> list[str]:
    """Compile ``fn`` afresh, call it with ``first``, then with ``then``: the guards torch reports
    as failed by the second call (empty when it reused the cache entry).

    >>> import torch
    >>> recompile_reasons(_guarded, (torch.ones(4, 3),), (torch.ones(5, 3),))
    ["tensor 'x' size mismatch at index 0. expected 4, actual 5"]
    """
    return _recompiled(fn, first, then)[1]


def _recompiled(fn: Callable[..., Any], first: tuple[Any, ...], then: tuple[Any, ...]) -> tuple[bool, list[str]]:
    """(whether the second call compiled again, the failed guards torch reports)."""
    backend = _CountingBackend()
    with _fresh_dynamo():
        compiled = torch.compile(fn, backend=backend)
        compiled(*first)
        with dynamo_log("recompiles") as messages:
            compiled(*then)
    return len(backend.graphs) > 1, [r for m in messages for r in _guard_failures(m)]


@task("lab07.3", "fail a chosen guard", "让指定的守卫失败", hints=[
    ("TENSOR_MATCH checks several properties of x. For each kind, which tensor operation changes that one "
     "property and none of the others?",
     "TENSOR_MATCH 检查 x 的好几项属性。对每一种 kind，哪个张量运算只改变这一项属性、而不改变其他属性？"),
    ("Lecture 07, section 2 'Failing guards on purpose': sizes, dtype, requires_grad and strides are separate "
     "parts of one guard, and the recompile reason names only the first part that differs. Strides describe "
     "how the same shape is laid out in memory.",
     "第 07 讲第 2 节“故意让守卫失败”：尺寸、dtype、requires_grad 和步长是同一个守卫的不同部分，而重新编译的原因只说出第一处不同。"
     "步长描述的是同样的形状在内存中如何排列。"),
    ("Return a new tensor and leave x as it was: an in-place change (a method ending in _) changes the caller's "
     "tensor too.",
     "请返回一个新张量，并保持 x 不变：原地修改（以 _ 结尾的方法）也会改变调用者手里的张量。"),
])
@_keeps_dynamo_settings(("fail_guard only builds a new tensor; leave Dynamo's settings alone.",
                         "fail_guard 只需构造一个新张量；请不要改动 Dynamo 的设置。"))
def _fail_guard(answer: Any) -> None:
    need_callable(answer, "fail_guard")
    gen = torch.Generator().manual_seed(73)
    # small sizes too: a change computed from x's sizes (its first two rows, pairs of entries) can leave a small
    # x's shape as it was; and a single row or column: a transposed copy of such a matrix keeps x's strides
    shapes = list(_GUARD_SHAPES)
    for shape in shapes:  # grows: the shape an answer gives for "shape" is tried as x as well
        x = torch.randn(shape, generator=gen)
        for kind in _KINDS:
            tried = (f"fail_guard(x, {kind!r}) with x of shape {shape}, float32, contiguous",
                     f"fail_guard(x, {kind!r})，x 的形状为 {shape}，float32，连续存储")
            only = (f"only the {kind} changed", f"只有{_zh_word(_KIND_ZH[kind])}改变")
            given = x.clone()
            new = answer(given, kind)
            if not isinstance(new, torch.Tensor):
                raise Wrong("return a tensor.", "请返回一个张量。", tried=tried, got=describe(new))
            if _changed(given, x) or not torch.equal(given.detach(), x):
                raise Wrong("fail_guard changed x itself (in place); return a new tensor and leave x as it was, "
                            "or the caller's tensor would fail the guard too.",
                            "fail_guard 原地修改了 x 本身；请返回一个新张量并保持 x 不变，否则调用者手里的张量也会让守卫失败。",
                            tried=tried, expected=(f"x unchanged: {_layout(x)[0]}", f"x 保持不变：{_layout(x)[1]}"),
                            got=(f"x became: {_layout(given)[0]}", f"x 变成了：{_layout(given)[1]}"))
            changed = _changed(new, x)
            got = _layout(new)
            if not changed:
                why = ("", "")
                if kind == "shape":
                    why = (" On this x your new shape is x's own: a shape computed from x's sizes (keeping some of "
                           "its rows, regrouping its entries) can come out the same for a small x. The new shape "
                           "must differ from x's for every x.",
                           "在这个 x 上，你的新形状就是 x 自己的形状：由 x 的尺寸算出的形状（保留其中几行、重新分组元素）"
                           "在 x 很小时可能与原来相同。新形状必须对每个 x 都与 x 的形状不同。")
                elif kind == "stride" and 1 in shape:
                    why = (" This x has a dimension of size 1: transposed, such a matrix already counts as "
                           "contiguous, so making it contiguous copies nothing, and transposing back gives x's own "
                           "strides. Choose a layout whose strides differ from x's for every x.",
                           "这个 x 有一维的尺寸是 1：这样的矩阵转置后已经算是连续的，所以再让它连续不会复制任何东西，"
                           "转置回来得到的仍是 x 自己的步长。请选择一种对每个 x 都与 x 的步长不同的内存布局。")
                raise Wrong(f"the new tensor matches x in every part of the guard, so nothing would recompile. "
                            f"Change the tensor's {kind}." + why[0],
                            f"新张量在守卫的每一项上都与 x 相同，因此不会重新编译。请改变张量的 {kind}。" + why[1],
                            tried=tried, expected=only, got=got)
            if kind == "stride" and changed[0] == "shape":
                raise Wrong("the shape changed as well (a transpose swaps the sizes of a non-square matrix, a slice "
                            "with a step drops rows or columns); keep x's shape and change only the strides, i.e. "
                            "the order in which the same shape is laid out in memory.",
                            "形状也变了（对非方阵转置会交换各维尺寸，带步长的切片会去掉一些行或列）；请保持 x 的形状不变，只改变步长，即同样形状的数据在内存中的排列顺序。",
                            tried=tried, expected=(f"shape {tuple(x.shape)} with other strides",
                                                   f"形状仍为 {tuple(x.shape)}，步长不同"), got=got)
            if kind in changed and len(changed) > 1:
                others = _named([c for c in changed if c != kind], new, x)
                raise Wrong(f"the {kind} changed, but so did: {others[0]}. The recompile reason names only the first "
                            "difference Dynamo checks, so a second change can hide behind it; change the "
                            f"{kind} only.",
                            f"{kind} 改变了，但下列属性也变了：{others[1]}。重新编译的原因只说出 Dynamo 检查到的第一处不同，"
                            f"第二处改变可能被它掩盖；请只改变 {kind}。",
                            tried=tried, expected=only, got=got)
            if kind not in changed:
                named = _named(changed, new, x)
                raise Wrong(f"you changed the {named[0]}, not the {kind}.",
                            f"你改变的是{' ' if named[1][0].isascii() else ''}{named[1]}，而不是 {kind}。",
                            tried=tried, expected=only, got=got)
            if kind != "shape" and not _same_values(new, x):
                where = ("", "") if kind != "stride" else (
                    " A view such as expand or as_strided gets other strides by repeating or reinterpreting "
                    "entries; keep x's values and change only where they sit in memory.",
                    "expand、as_strided 之类的视图是靠重复或重新解释元素得到别的步长的；请保持 x 的取值，只改变它们在内存中的位置。")
                raise Wrong(f"the {kind} changed, but the values are no longer x's: the guard does not look at values, "
                            f"but the task asks for x itself with only its {kind} changed." + where[0],
                            f"{kind} 改变了，但取值已经不是 x 的了：守卫虽然不看取值，但任务要的是 x 本身，只改变它的 {kind}。"
                            + where[1],
                            tried=tried, expected=(f"x's values, {only[0]}", f"x 的取值，{only[1]}"),
                            got=(f"other values: {got[0]}", f"取值不同：{got[1]}"))
            new_shape = tuple(new.shape)
            if (kind == "shape" and len(new_shape) == 2 and 0 not in new_shape and new_shape != (1, 1)
                    and new_shape not in shapes and len(shapes) < len(_GUARD_SHAPES) + 3):
                shapes.append(new_shape)  # a shape fixed in the answer is x's own for an x of that shape
            recompiled, reasons = _recompiled(_guarded, (x,), (new,))
            if not recompiled or not any(reason in r for reason in _REASONS[kind] for r in reasons):
                raise Wrong(f"the {kind} changed, but the compiled function did not recompile because of it.",
                            f"{kind} 改变了，但编译后的函数并没有因此重新编译。",
                            tried=tried, expected=(f"a recompile: tensor 'x' {' or '.join(_REASONS[kind])}",
                                                   f"重新编译，原因为 tensor 'x' {' 或 '.join(_REASONS[kind])}"),
                            got="; ".join(reasons) or ("no recompile", "没有重新编译"))


# -- lab07.4 ---------------------------------------------------------------------------

class Router(nn.Module):
    """The model of exercise 4: which layer runs depends on the input's norm."""

    def __init__(self) -> None:
        super().__init__()
        self.small = nn.Linear(4, 4)
        self.large = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.norm() > 2.0:
            return torch.relu(self.large(x))
        return self.small(x) * 0.5


def _has_cond(gm: torch.fx.GraphModule) -> bool:
    return any(node.target is torch.ops.higher_order.cond for node in gm.graph.nodes)


def _layer_reads(exported: Any) -> tuple[list[str], list[tuple[set[str], set[str]]]]:
    """Where the exported graph reads Router's layers: the layers (``small``, ``large``) whose parameters an
    op outside every torch.cond reads, and for each cond node the layers its (true, false) branch reads."""
    gm = exported.graph_module
    layer_of = {name: target.split(".")[0]
                for name, target in exported.graph_signature.inputs_to_parameters.items()}
    conds = [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.cond]
    outside = sorted({layer_of[n.name] for n in gm.graph.nodes if n.op == "placeholder" and n.name in layer_of
                      and any(user not in conds for user in n.users)})
    branches = []
    for node in conds:
        operands = list(node.args[3])
        reads = []
        for branch in node.args[1:3]:
            sub = getattr(gm, branch.target)
            holders = [n for n in sub.graph.nodes if n.op == "placeholder"]
            reads.append({layer_of[operand.name] for holder, operand in zip(holders, operands)
                          if isinstance(operand, torch.fx.Node) and operand.name in layer_of
                          and any(user.op != "output" for user in holder.users)})
        branches.append((reads[0], reads[1]))
    return outside, branches


def _after_cond(gm: torch.fx.GraphModule) -> list[str]:
    """The ops of the exported graph that work on a torch.cond's result (reading an item of it, copying or
    aliasing it does not count), by name."""
    seen, todo, found = set(), [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.cond], []
    plain = {"getitem", "clone", "alias", "detach", "view", "_assert_tensor_metadata"}
    while todo:
        for user in todo.pop().users:
            if user in seen or user.op != "call_function":
                continue
            seen.add(user)
            todo.append(user)
            name = getattr(user.target, "__name__", str(user.target)).split(".")[0]
            if name not in plain and not _same_layout(user) and name not in found:
                found.append(name)
    return found


#: ops that may leave a tensor exactly as it was (same sizes, dtype and strides): a no-op then
_LAYOUT_OPS = {"to", "_to_copy", "view_as", "reshape", "contiguous", "expand", "expand_as", "type_as", "flatten"}


def _same_layout(node: torch.fx.Node) -> bool:
    """Whether ``node`` is a layout op whose result has its input's sizes, dtype and strides (``y.to(x.dtype)``,
    ``y.view_as(x)`` on a y already like x): it changes nothing, so it is no work after torch.cond."""
    name = getattr(node.target, "__name__", str(node.target)).split(".")[0]
    source = node.args[0] if node.args else None
    out = node.meta.get("val")
    inp = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
    if name not in _LAYOUT_OPS or not isinstance(out, torch.Tensor) or not isinstance(inp, torch.Tensor):
        return False
    return out.shape == inp.shape and out.dtype == inp.dtype and out.stride() == inp.stride()


def _router_probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(47)
    out = []
    for i in range(2):
        direction = torch.randn(3, 4, generator=gen)
        direction = direction / direction.norm()
        out.append(Probe((f"x with norm 5 (the large branch), direction {i + 1}",
                          f"范数为 5 的 x（large 分支），方向 {i + 1}"), (5 * direction,)))
        out.append(Probe((f"x with norm 0.5 (the small branch), direction {i + 1}",
                          f"范数为 0.5 的 x（small 分支），方向 {i + 1}"), (0.5 * direction,)))
    # Spread evenly over all 12 entries: the Euclidean norm decides, not the sum of |x|, the largest |x| or
    # the squared norm.
    even = torch.ones(3, 4) / 12 ** 0.5
    out.append(Probe(("x with norm 1.8 spread evenly (the small branch; the sum of |x| is 6.2)",
                      "范数为 1.8、均匀分布的 x（small 分支；|x| 之和为 6.2）"), (1.8 * even,)))
    out.append(Probe(("x with norm 3 spread evenly (the large branch; the largest |x| is 0.87)",
                      "范数为 3、均匀分布的 x（large 分支；|x| 的最大值为 0.87）"), (-3.0 * even,)))
    edge = torch.zeros(3, 4)
    edge[0, 0] = -2.0
    out.append(Probe(("x with norm exactly 2.0 (x.norm() > 2.0 is False)",
                      "范数恰好为 2.0 的 x（x.norm() > 2.0 为 False）"), (edge,)))
    # x.norm() is exactly 2.0 in float32, but (x * x).sum() > 4.0, the square root of the sum of squares, the norm
    # taken in float64 and the norm of the row norms all round above (found by a search over random directions)
    out.append(Probe(("x whose x.norm() is exactly 2.0, while the same norm computed another way rounds above 2.0",
                      "x.norm() 恰好为 2.0 的 x，而用别的方式计算同一个范数会舍入到 2.0 以上"),
                     (torch.tensor(_ROUNDS_ABOVE),)))
    # Router takes any x whose last dimension is 4: a single vector, a batch of matrices
    vector = torch.randn(4, generator=gen)
    batch = torch.randn(2, 3, 4, generator=gen)
    out.append(Probe(("x of shape (4,) with norm 3 (the large branch)", "形状为 (4,)、范数为 3 的 x（large 分支）"),
                     (3 * vector / vector.norm(),)))
    out.append(Probe(("x of shape (2, 3, 4) with norm 1.5 (the small branch)",
                      "形状为 (2, 3, 4)、范数为 1.5 的 x（small 分支）"), (1.5 * batch / batch.norm(),)))
    out.append(Probe(("x of shape (2, 3, 4) with norm 4 (the large branch)",
                      "形状为 (2, 3, 4)、范数为 4 的 x（large 分支）"), (4 * batch / batch.norm(),)))
    # the float32 just above 2.0: a tolerance in the predicate (x.norm() > 2.0 + 1e-6, isclose) takes the small
    # branch, Router the large one
    above = torch.zeros(3, 4)
    above[0, 0] = -torch.nextafter(torch.tensor(2.0), torch.tensor(3.0))
    out.append(Probe(("x whose norm is the float32 just above 2.0 (2.0000002: the large branch)",
                      "范数为刚好大于 2.0 的 float32（2.0000002）的 x（large 分支）"), (above,)))
    # a NaN in the batch: x.norm() is NaN, NaN > 2.0 is False, so Router takes the small branch (a predicate
    # written the other way round, x.norm() <= 2.0 with the branches swapped, takes the large one)
    nan_row = torch.ones(2, 4)
    nan_row[0, 0] = float("nan")
    out.append(Probe(("x = [[nan, 1, 1, 1], [1, 1, 1, 1]] (x.norm() is NaN, and NaN > 2.0 is False: the small "
                      "branch)",
                      "x = [[nan, 1, 1, 1], [1, 1, 1, 1]]（x.norm() 是 NaN，NaN > 2.0 为 False：small 分支）"), (nan_row,)))
    # far from the threshold: large(x) reaches values above 6 (a relu6, or a clamp, shows)
    far = torch.randn(3, 4, generator=gen)
    out.append(Probe(("x with norm 40 (the large branch, outputs far above 6)",
                      "范数为 40 的 x（large 分支，输出远大于 6）"), (40 * far / far.norm(),)))
    return out


#: A float32 (3, 4) x whose x.norm() is exactly 2.0 while other ways of computing its norm round above 2.0.
_ROUNDS_ABOVE = [[-0.4771292805671692, -0.670286238193512, 0.5143404603004456, 0.5899408459663391],
                 [-0.18854598701000214, 0.05863465741276741, -1.1891828775405884, 0.029812535271048546],
                 [0.9080755114555359, -0.29159268736839294, 0.55143803358078, 0.2067480832338333]]


def _any_rank(model: Callable[..., Any]) -> Callable[..., Any]:
    """``model``, with an error on an x that is not a matrix turned into feedback that names the input."""
    def run(x: torch.Tensor) -> Any:
        try:
            return model(x)
        except Exception as exc:
            if x.dim() == 2:
                raise
            raise Wrong(f"CondRouter failed on an x of shape {tuple(x.shape)}, where Router works: Router takes an x "
                        "of any shape whose last dimension is 4 (its layers do), and its x.norm() is the norm of all "
                        "of x, whatever its number of dimensions. Something in your forward only works for a matrix.",
                        f"CondRouter 在形状为 {tuple(x.shape)} 的 x 上出错了，而 Router 可以正常运行：Router 接受最后一维为 4 "
                        "的任意形状的 x（它的层接受这样的输入），它的 x.norm() 是整个 x 的范数，与 x 有几维无关。"
                        "你的 forward 中有某个操作只适用于矩阵。",
                        tried=(f"CondRouter()(x) with x of shape {tuple(x.shape)}",
                               f"CondRouter()(x)，x 的形状为 {tuple(x.shape)}"),
                        expected="Router()(x)", got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
    return run


def _other_branch(reference: Router) -> Callable[[Any, Any, Probe], bool]:
    def matches(got: Any, want: Any, probe: Probe) -> bool:
        (x,) = probe.args
        with torch.no_grad():
            other = reference.small(x) * 0.5 if x.norm() > 2.0 else torch.relu(reference.large(x))
        return differs(got, other) is None
    return matches


def _swapped_everywhere(model: Callable[..., Any], reference: Router) -> Callable[[], bool]:
    """Whether ``model`` returns the other branch's result on every norm-5 and norm-0.5 probe (computed once):
    swapped branches do that, a wrong predicate does not."""
    other_branch = _other_branch(reference)
    memo: list[bool] = []

    def swapped() -> bool:
        if not memo:
            probes = [p for p in _router_probes() if "direction" in _label(p)[0]]
            try:
                with torch.no_grad():
                    memo.append(all(other_branch(model(*p.args), None, p) for p in probes))
            except Exception:  # an answer that cannot run a probe is not read as swapped
                memo.append(False)
        return memo[0]
    return swapped


def _aliasing_line(message: str) -> str:
    """The line of torch's refusal that names the aliasing (its first line only says tracing failed)."""
    lines = [line.strip() for line in message.splitlines() if "aliasing" in line]
    return lines[0] if lines else first_line(message)


def _router_mistakes(reference: Router, model: Callable[..., Any]) -> list[Mistake]:
    other_branch = _other_branch(reference)
    swapped = _swapped_everywhere(model, reference)
    return [
        Mistake("norm computed another way", lambda got, want, probe: "computed another way" in _label(probe)[0]
                and other_branch(got, want, probe),
                "on this input x.norm() is exactly 2.0, so Router takes the small branch; your model takes the large "
                "one: it computes the norm another way (the square root of a sum of squares, squares compared with "
                "4.0, a norm in float64, a norm of row norms), and here that rounds above 2.0. Router's predicate is "
                "x.norm() > 2.0, with the norm computed as x.norm() computes it.",
                "在这个输入上 x.norm() 恰好为 2.0，所以 Router 走 small 分支；你的模型走了 large 分支：它用别的方式计算范数"
                "（平方和的平方根、把平方和与 4.0 比较、在 float64 中求范数、对各行范数再求范数），在这里舍入到了 2.0 以上。"
                "Router 的条件是 x.norm() > 2.0，范数按 x.norm() 的方式计算。"),
        Mistake("another measure of size", lambda got, want, probe: "evenly" in _label(probe)[0]
                and other_branch(got, want, probe),
                "your model takes the other branch on this input: Router decides by x.norm(), the Euclidean norm "
                "of all of x, compared with 2.0 (not the sum of |x|, the largest |x| or the squared norm).",
                "你的模型在这个输入上走了另一个分支：Router 依据的是 x.norm()，即整个 x 的欧几里得范数，与 2.0 比较"
                "（不是 |x| 之和、|x| 的最大值或范数的平方）。"),
        Mistake("x.norm() >= 2.0", lambda got, want, probe: "exactly 2.0" in _label(probe)[0]
                and other_branch(got, want, probe),
                "on an input of norm exactly 2.0 Router takes the small branch: its test is a strict x.norm() > 2.0.",
                "对于范数恰好为 2.0 的输入，Router 走的是 small 分支：它的条件是严格的 x.norm() > 2.0。"),
        Mistake("branches swapped", lambda got, want, probe: other_branch(got, want, probe) and swapped(),
                "your model returns the other branch's result on every input: the first function torch.cond gets "
                "runs when the predicate is True.",
                "你的模型在每个输入上返回的都是另一个分支的结果：torch.cond 的第一个函数在条件为 True 时运行。"),
        Mistake("relu or 0.5 on both branches", lambda got, want, probe: differs(got, want) is not None and (
                    _same(got, torch.relu(want)) or _same(got, want * 0.5)),
                "your model applies one branch's last step to the other branch's result too: the relu belongs to the "
                "large branch only, the factor 0.5 to the small branch only. Keep each inside its branch.",
                "你的模型把某个分支的最后一步也用在了另一个分支的结果上：relu 只属于 large 分支，乘以 0.5 只属于 small 分支。"
                "请把它们各自留在自己的分支里。"),
        Mistake("another predicate", other_branch,
                "your model takes the other branch on this input, though not on every input: its predicate is not "
                "Router's. Router compares x.norm(), the Euclidean norm of all of x, with 2.0.",
                "你的模型在这个输入上走了另一个分支（但并非在每个输入上都如此）：它的条件与 Router 的不同。"
                "Router 用 x.norm()，即整个 x 的欧几里得范数，与 2.0 比较。"),
    ]


def _state_dict_problem(text: str) -> str:
    """The line of a load_state_dict error that names the keys (its first line only says there were errors)."""
    lines = [line.strip() for line in text.splitlines() if "key" in line.lower() or "size mismatch" in line]
    return lines[0] if lines else first_line(text)


def _router_gradients(model: nn.Module, reference: Router) -> None:
    """On one x per branch, with gradients on: the output carries a gradient, and x's and the layers' gradients
    are Router's (torch.cond differentiates through the branch it ran)."""
    base = torch.randn(3, 4, generator=torch.Generator().manual_seed(75))
    for norm, branch in ((3.0, ("the large branch", "large 分支")), (1.5, ("the small branch", "small 分支"))):
        x = (norm * base / base.norm()).requires_grad_()
        tried = (f"CondRouter()(x).sum().backward() with x of norm {norm} ({branch[0]}), x and the layers requiring "
                 "gradients", f"CondRouter()(x).sum().backward()，x 的范数为 {norm}（{branch[1]}），x 和各层都需要梯度")
        x_ref = x.detach().clone().requires_grad_()
        reference.zero_grad()
        reference(x_ref).sum().backward()
        # a layer the branch did not run has no gradient in Router (None) and zeros through torch.cond
        want = {"x": x_ref.grad, **{n: torch.zeros_like(p) if p.grad is None else p.grad.clone()
                                    for n, p in reference.named_parameters()}}
        model.zero_grad()
        try:
            with quiet():
                out = model(x)
        except Exception as exc:
            raise Wrong("with gradients on, CondRouter raised where Router runs: each branch of torch.cond must be "
                        "a function of its operands that autograd can follow.",
                        "开启梯度时，CondRouter 抛出了异常，而 Router 可以正常运行：torch.cond 的每个分支都必须是"
                        "自动求导能够跟踪的、关于其操作数的函数。", tried=tried, expected="Router()(x)",
                        got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
        if not isinstance(out, torch.Tensor) or not out.requires_grad:
            raise Wrong("CondRouter's output carries no gradient where Router's does: something in your forward "
                        "cuts it off (.detach(), torch.no_grad()), so training through it fails. torch.cond "
                        "differentiates through the branch it ran.",
                        "CondRouter 的输出不带梯度，而 Router 的输出带有梯度：你的 forward 中有东西把梯度切断了"
                        "（.detach()、torch.no_grad()），于是无法通过它训练。torch.cond 可以对它运行的那个分支求导。",
                        tried=tried, expected=("an output with requires_grad=True", "requires_grad=True 的输出"),
                        got=("requires_grad=False", "requires_grad=False") if isinstance(out, torch.Tensor)
                        else describe(out))
        out.sum().backward()
        got = {"x": x.grad, **{n: torch.zeros_like(p) if p.grad is None else p.grad
                               for n, p in model.named_parameters()}}
        for name, w in want.items():
            problem = differs(got.get(name), w, rtol=1e-4, atol=1e-6, where=f"the gradient of {name}")
            if problem is not None:
                zh = differs(got.get(name), w, rtol=1e-4, atol=1e-6, where=f"{name} 的梯度", lang="zh")
                raise Wrong(f"CondRouter's gradients differ from Router's: {problem}",
                            f"CondRouter 的梯度与 Router 的不同：{zh}", tried=tried)


@task("lab07.4", "torch.cond so that torch.export works", "用 torch.cond 让 torch.export 成功", hints=[
    ("torch.export needs one whole graph. What in Router's forward cannot be part of a graph, and which "
     "operator keeps a real branch inside one?",
     "torch.export 需要一整张计算图。Router 的 forward 中哪一部分无法成为计算图的一部分？哪个算子能在图里保留真正的分支？"),
    ("Lecture 07, section 4 'Removing graph breaks': torch.cond(pred, true_fn, false_fn, operands) makes both "
     "branches subgraphs and runs one of them; each branch is a function of the operands and returns tensors of "
     "the same shape.",
     "第 07 讲第 4 节“消除图中断”：torch.cond(pred, true_fn, false_fn, operands) 把两个分支都变成子图，运行时只执行其中一个；"
     "每个分支都是 operands 的函数，并返回形状相同的张量。"),
    ("Keep self.small and self.large (the checker loads a Router's weights) and keep Router's condition exactly, "
     "including what happens when the norm is exactly 2.0.",
     "保留 self.small 和 self.large（检查器会加载一个 Router 的权重），并保持 Router 的条件完全不变，包括范数恰好为 2.0 时的情况。"),
])
@_keeps_dynamo_settings(("CondRouter only needs torch.cond in its forward; leave Dynamo's settings alone.",
                         "CondRouter 只需在 forward 中使用 torch.cond；请不要改动 Dynamo 的设置。"))
def _cond_router(answer: Any) -> None:
    model = answer() if isinstance(answer, type) else answer
    if not isinstance(model, nn.Module):
        raise Wrong("pass the class CondRouter (or an instance of it).",
                    "请传入 CondRouter 类（或它的实例）。", got=describe(model))
    init = torch.Generator().manual_seed(74)
    reference = Router().eval()
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(torch.randn(p.shape, generator=init) * 0.5)
    try:  # strict=False: a buffer of the answer's own (a threshold kept as a tensor) is fine
        missing, unexpected = model.load_state_dict(reference.state_dict(), strict=False)
        if unexpected:
            raise RuntimeError(f"Unexpected key(s) in state_dict: {', '.join(unexpected)}")
    except RuntimeError as exc:
        raise Wrong("keep Router's layers (self.small, self.large) so the weights can be loaded.",
                    "请保留 Router 的层（self.small、self.large），以便加载权重。",
                    got=_state_dict_problem(str(exc))) from None
    model.eval()
    probes = _router_probes()
    run_probes(_any_rank(model), reference, probes, mistakes=_router_mistakes(reference, model), what="CondRouter",
               generic=("run eagerly, CondRouter gives a different result from Router.",
                        "在 eager 模式下，CondRouter 的结果与 Router 不同。"))
    with _fresh_dynamo(), contextlib.redirect_stderr(io.StringIO()):
        try:
            exported = torch.export.export(model, probes[0].args)
        except Exception as exc:
            if "aliasing" in str(exc):
                raise Wrong("torch.export refused the model: a branch of torch.cond returns a tensor it did not "
                            "compute itself (one of its operands, or a tensor computed before torch.cond, returned "
                            "unchanged). Each branch does its own branch's work on the operands and returns what it "
                            "computed.",
                            "torch.export 拒绝了这个模型：torch.cond 的某个分支返回了一个不是它自己计算出的张量（它的某个操作数，"
                            "或在 torch.cond 之前算好的张量，原样返回）。每个分支都应当在操作数上完成本分支的计算，并返回计算结果。",
                            tried="torch.export.export(CondRouter(), (x,))",
                            expected=("an ExportedProgram", "一个 ExportedProgram"),
                            got=f"{type(exc).__name__}: {_aliasing_line(str(exc))}") from None
            raise Wrong("torch.export refused the model: a Python decision on a tensor value (an `if`, float() or "
                        "bool() of a tensor) cannot be exported; let torch.cond take the predicate as a tensor and make the "
                        "choice, as the exercise asks.",
                        "torch.export 拒绝了这个模型：依据张量数值的 Python 判断（`if`，或对张量调用 float()、bool()）无法导出；"
                        "请按题目要求让 torch.cond 以张量形式接收条件并完成选择。",
                        tried="torch.export.export(CondRouter(), (x,))", expected=("an ExportedProgram", "一个 ExportedProgram"),
                        got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
        if not _has_cond(exported.graph_module):
            raise Wrong("the export worked, but its graph has no cond: this exercise asks for torch.cond, so that only "
                        "the chosen branch runs.",
                        "导出成功了，但图中没有 cond：本题要求使用 torch.cond，使运行时只执行被选中的分支。",
                        tried="torch.export.export(CondRouter(), (x,))",
                        expected=("a torch.ops.higher_order.cond node", "一个 torch.ops.higher_order.cond 节点"),
                        got=("no cond node", "没有 cond 节点"))
        outside, branches = _layer_reads(exported)
        expected = ("self.large read only inside the branch for x.norm() > 2.0, self.small only inside the other",
                    "self.large 只在 x.norm() > 2.0 的分支内读取，self.small 只在另一个分支内读取")
        where = ("torch.export.export(CondRouter(), (x,)): the layers its graph reads, outside and inside torch.cond",
                 "torch.export.export(CondRouter(), (x,))：图在 torch.cond 之外和之内读取的层")
        if outside:
            raise Wrong("the exported graph runs " + " and ".join(f"self.{n}" for n in outside) + " before "
                        "torch.cond, outside its branches: that work is done on every call, whichever branch is "
                        "chosen, and torch.cond only picks among results computed already. Put each branch's work "
                        "inside its branch function, so that only the chosen branch runs.",
                        "导出的图在 torch.cond 之前、在分支之外运行了 " + " 和 ".join(f"self.{n}" for n in outside) +
                        "：无论选中哪个分支，每次调用都会做这部分计算，torch.cond 只是在已经算好的结果中挑选。"
                        "请把每个分支的计算放进它自己的分支函数里，使运行时只执行被选中的分支。",
                        tried=where, expected=expected,
                        got=(f"outside torch.cond: {', '.join('self.' + n for n in outside)}",
                             f"torch.cond 之外：{'、'.join('self.' + n for n in outside)}"))
        # either way round: a predicate written the other way (x.norm() <= 2.0) swaps the branches too, and the
        # probes on both sides of the threshold tell a right pair from a swapped one
        split = (({"large"}, {"small"}), ({"small"}, {"large"}))
        right = [pair for pair in branches if pair in split]
        if right and len(right) < len(branches) and all(not t and not f for t, f in branches if (t, f) not in right):
            raise Wrong("the exported graph has a second torch.cond that works on the first one's result: choosing "
                        "again with the predicate does not put a step inside the branch. Do each branch's whole work "
                        "inside its function: the relu in the large branch, the factor 0.5 in the small one.",
                        "导出的图中有第二个 torch.cond，对第一个 cond 的结果做计算：再用条件选择一次，并不能把步骤放进分支里。"
                        "请把每个分支的全部计算放进它自己的函数里：relu 放在 large 分支，乘以 0.5 放在 small 分支。",
                        tried=where, expected=("one torch.cond", "一个 torch.cond"),
                        got=(f"{len(branches)} torch.cond nodes", f"{len(branches)} 个 torch.cond 节点"))
        for true_reads, false_reads in branches:
            if (true_reads, false_reads) not in split:
                shown = (lambda reads: ", ".join(sorted("self." + n for n in reads)) or "none")
                shown_zh = (lambda reads: "、".join(sorted("self." + n for n in reads)) or "无")
                raise Wrong("each branch of torch.cond must run its own layer and only that one: the branch for "
                            "x.norm() > 2.0 runs self.large, the other runs self.small.",
                            "torch.cond 的每个分支都应当只运行自己的那一层：x.norm() > 2.0 的分支运行 self.large，另一个分支运行 self.small。",
                            tried=where, expected=expected,
                            got=(f"true branch reads {shown(true_reads)}; false branch reads {shown(false_reads)}",
                                 f"true 分支读取 {shown_zh(true_reads)}；false 分支读取 {shown_zh(false_reads)}"))
        after = _after_cond(exported.graph_module)
        if after:
            raise Wrong("the exported graph works on torch.cond's result after torch.cond, outside its branches: "
                        f"{', '.join(after)}. Such a step belongs to one branch, not after the choice (choosing it "
                        "again with the predicate does not put it inside the branch). Do each branch's whole work "
                        "inside its function: the relu in the large branch, the factor 0.5 in the small one.",
                        "导出的图在 torch.cond 之后、在分支之外对它的结果做了计算："
                        f"{'、'.join(after)}。这样的步骤属于某一个分支，而不应放在选择之后（再用条件选择一次，并不能把它放进分支里）。"
                        "请把每个分支的全部计算放进它自己的函数里：relu 放在 large 分支，乘以 0.5 放在 small 分支。",
                        tried=("torch.export.export(CondRouter(), (x,)): the ops of its graph after torch.cond",
                               "torch.export.export(CondRouter(), (x,))：图中位于 torch.cond 之后的运算"),
                        expected=("torch.cond's result returned as it is", "原样返回 torch.cond 的结果"),
                        got=(f"after torch.cond: {', '.join(after)}", f"torch.cond 之后：{'、'.join(after)}"))
        runnable = exported.module()
        # exported for x of shape (3, 4): its shapes are fixed, so only those probes run through it
        probes = [p for p in probes if tuple(p.args[0].shape) == (3, 4)]
        run_probes(runnable, reference, probes, mistakes=_router_mistakes(reference, runnable),
                   what="the exported program",
                   generic=("the exported program gives a different result from Router.",
                            "导出的程序与 Router 结果不同。"))
    _router_gradients(model, reference)
