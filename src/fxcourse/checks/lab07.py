"""Checkers for labs/lab07_guards_breaks.ipynb (lecture course/07_dynamo_guards_breaks.ipynb).

Every checker resets Dynamo before and after it runs and changes Dynamo's configuration only
inside ``config.patch`` blocks, so nothing it does leaks into the learner's notebook. Graph
breaks and recompiles are read from torch itself: a counting backend and the ``graph_breaks``
and ``recompiles`` logging artifacts (see :func:`fxcourse.checks.lab06.dynamo_log`).
"""
from __future__ import annotations

import contextlib
import io
from typing import Any, Callable, Iterator

import torch
from torch import nn

from . import Wrong, task
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


class _CountingBackend:
    """A backend that records every graph it is given and runs it unchanged."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.runs = 0  # calls of the compiled graphs: a call that ran eagerly does not count
        self.__name__ = "counting_backend"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)

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
    return out


#: Indices into _messy_probes(): what compiled code could get wrong (both branches, the exact-zero sum,
#: zeros, float64 and every input added after it), and where a plain compile's breaks are counted.
_COMPILED = (0, 1, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16)
_COUNTED = (0, 1, 8)


def _compare(got: Any, want: Any) -> str | None:
    """:func:`differs`, with a float16 result compared at float16's precision."""
    if isinstance(want, torch.Tensor) and want.dtype in (torch.float16, torch.bfloat16):
        return differs(got, want, rtol=2e-3, atol=2e-3)
    return differs(got, want)


def _messy_variant(probe: Probe, *, at_least: bool = False, plain_max: bool = False, swapped: bool = False,
                   per: str = "") -> torch.Tensor:
    """What messy would return with one known slip: ``>=`` for ``>``, ``y.max()`` for ``y.abs().max()``,
    the two branches swapped, or the decision taken per element, per row or from x instead of once from y."""
    (x,) = probe.args
    y = torch.sin(x) * 2
    scale = y.max() if plain_max else y.abs().max()
    total = y if per == "element" else y.sum(-1, keepdim=True) if per == "row" else x.sum() if per == "x" else y.sum()
    take = total >= 0 if at_least else total > 0
    if swapped:
        take = ~take
    return torch.where(take, y / scale, -y) + 1


def _label(probe: Probe) -> tuple[str, str]:
    """A probe's label as an (English, 中文) pair (every probe of this lab has one)."""
    label = probe.label
    return (label[0], label[1]) if isinstance(label, tuple) else (label, label)


def _same(got: Any, want: Any) -> bool:
    return differs(got, want) is None


def _nan_where_number(got: Any, want: Any, probe: Probe) -> bool:
    return bool(torch.isnan(got).any()) and not bool(torch.isnan(want).any())


def _nan_replaced(got: Any, want: Any, probe: Probe) -> bool:
    return bool(torch.isnan(want).any()) and int(torch.isnan(got).sum()) < int(torch.isnan(want).sum())


def _scale_bounded(got: Any, want: Any, probe: Probe) -> bool:
    """On the tiny input messy's largest |y / scale| is 1; a clamped or padded scale leaves it well below."""
    return "tiny" in _label(probe)[0] and float((got.double() - 1).abs().max()) < 1 - 1e-5


_MESSY_MISTAKES = [
    Mistake("NaN from the branch not taken", _nan_where_number,
            "your result has NaN where messy's is a number: on an input of zeros y / scale is 0 / 0. Mixing "
            "both branches with arithmetic keeps that NaN; select the result of the branch messy takes, so "
            "the other one's value never enters the output.",
            "你的结果在 messy 给出数值的位置出现了 NaN：输入全为零时 y / scale 是 0 / 0。用算术把两个分支混合起来会保留这个 NaN；"
            "请选取 messy 实际走的那个分支的结果，让另一个分支的值不进入输出。"),
    Mistake("if y.sum() >= 0", lambda got, want, probe: _same(got, _messy_variant(probe, at_least=True)),
            "messy takes the else branch when y.sum() is exactly 0: its test is a strict y.sum() > 0.",
            "当 y.sum() 恰好为 0 时，messy 走的是 else 分支：它的条件是严格的 y.sum() > 0。"),
    # before the swap: on an input where x.sum() and y.sum() differ in sign, both give the other branch
    Mistake("decided on x.sum()", lambda got, want, probe: "x.sum()" in _label(probe)[0]
            and _same(got, _messy_variant(probe, per="x")),
            "your result takes its branch from the sign of the input's sum; messy decides from y.sum(), and y is "
            "2 * sin(x): sin can give a sum of the other sign (here x.sum() and y.sum() have opposite signs).",
            "你的结果依据输入之和的正负选择分支；messy 依据的是 y.sum()，而 y 是 2 * sin(x)：经过 sin 之后，和的正负可能相反"
            "（这个输入的 x.sum() 与 y.sum() 符号相反）。"),
    Mistake("decided per element", lambda got, want, probe: _same(got, _messy_variant(probe, per="element")),
            "your result decides element by element whether y is positive; messy makes one decision for the whole "
            "tensor, from the sum of all of y.",
            "你的结果逐个元素判断 y 是否为正；messy 对整个张量只做一次判断，依据的是 y 全部元素之和。"),
    Mistake("decided per row", lambda got, want, probe: _same(got, _messy_variant(probe, per="row")),
            "your result decides row by row from the sum of each row; messy makes one decision for the whole "
            "tensor, from the sum of all of y.",
            "你的结果按行判断，依据的是每一行之和；messy 对整个张量只做一次判断，依据的是 y 全部元素之和。"),
    Mistake("scale from y.max()", lambda got, want, probe: _same(got, _messy_variant(probe, plain_max=True)),
            "scale is the largest absolute value of y; where y's most negative entry is the largest in size, the "
            "largest value and the largest absolute value differ.",
            "scale 是 y 的绝对值的最大值；当 y 中最负的元素绝对值最大时，最大值与绝对值的最大值并不相同。"),
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
    Mistake("scale bounded below", _scale_bounded,
            "on an input of tiny magnitude your y / scale stays far below 1 in size: messy divides y by exactly "
            "the largest |y|, however small it is, so the largest |y / scale| is 1. A lower bound or an epsilon on "
            "the scale changes that (only an input of zeros gives 0 / 0, and there messy takes the other branch).",
            "在数值极小的输入上，你的 y / scale 的绝对值远小于 1：messy 恰好用 |y| 的最大值去除 y，无论它多小，"
            "所以 |y / scale| 的最大值是 1。给 scale 加下限或 epsilon 会改变这一点（只有全零的输入才会出现 0 / 0，"
            "而那时 messy 走的是另一个分支）。"),
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

    other = lambda got, want, probe: _same(got, _messy_variant(probe, swapped=True))  # noqa: E731
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


def _break_hint(line: str, reason: str) -> tuple[str, str]:
    """What to rethink for a graph break at ``line`` with ``reason`` (torch's graph_breaks log)."""
    if "print(" in line or "`print`" in reason:
        return ("a print inside the function breaks the graph; the task asks for no printing.",
                "函数里的 print 会造成图中断；本题要求不打印任何内容。")
    if "item()" in reason or ".item()" in line:
        return ("Tensor.item() still breaks a plain torch.compile (fullgraph=True captures it on its own, which "
                "hides the break); keep the scale a 0-d tensor.",
                "Tensor.item() 在普通的 torch.compile 中仍会造成图中断（fullgraph=True 会自动捕获它，掩盖了这个中断）；"
                "请让 scale 保持为 0 维张量。")
    if "ata-dependent" in reason or "jump" in reason:
        return ("a Python `if` on a tensor value still breaks the graph; choose between the two results with a "
                "tensor operation instead (lecture 07, section 4 'Removing graph breaks').",
                "依据张量数值的 Python `if` 仍会造成图中断；请改用张量运算在两个结果之间选择（第 07 讲第 4 节“消除图中断”）。")
    return ("the function still has a graph break; read the reason and rewrite that line with torch operations.",
            "函数仍有图中断；请阅读原因，并用 torch 运算改写那一行。")


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
def _no_breaks(answer: Any) -> None:
    need_callable(answer, "no_breaks")
    probes = _messy_probes()
    with _fresh_dynamo():
        run_probes(answer, _messy_quietly, probes, mistakes=_messy_mistakes(answer), what="no_breaks", compare=_compare,
                   generic=("run eagerly, no_breaks gives a different result from messy.",
                            "在 eager 模式下，no_breaks 的结果与 messy 不同。"))
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
    weight, bias = torch.randn(6, 5, generator=gen), torch.randn(5, generator=gen)
    scale = torch.randn(4, generator=gen)

    def head(x: torch.Tensor) -> torch.Tensor:  # x: (batch, 6)
        h = torch.nn.functional.layer_norm(x, (6,))
        return torch.softmax(h @ weight + bias, dim=-1)

    def score(x: torch.Tensor) -> torch.Tensor:  # x: (batch, 4)
        return torch.tanh((x * scale).sum(-1)) - x.mean(0).sum()

    # sizes beyond the lecture's, one of them large: a range bounded to small sizes shows
    return [(("head: (batch, 6) -> (batch, 5)", "head：(批大小, 6) -> (批大小, 5)"), head, 6, (3, 5, 2050)),
            (("score: (batch, 4) -> (batch,)", "score：(批大小, 4) -> (批大小,)"), score, 4, (7, 2, 4099))]


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
                 got=(f"a range on {shown}; {got[0]}", f"范围 {shown}；{got[1]}"))


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
def _compile_once(answer: Any) -> None:
    need_callable(answer, "compile_once")
    for what, fn, features, batches in _hidden_functions():
        gen = torch.Generator().manual_seed(27)
        inputs = [torch.randn(b, features, generator=gen) for b in batches]
        backend = _CountingBackend()
        tried = (f"compile_once(fn, backend) with fn = {what[0]}, called with batch sizes {batches}",
                 f"compile_once(fn, backend)，其中 fn = {what[1]}，依次用批大小 {batches} 调用")
        one = ("1 compile", "编译 1 次")
        with _fresh_dynamo():
            compiled = answer(fn, backend)
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
                    if type(exc).__name__ != "ConstraintViolationError" or not marked:
                        raise
                    raise Wrong(f"you marked dim {marked[0]} as dynamic, but fn needs it to be exactly {features} "
                                "(it multiplies by a weight of fixed size), so Dynamo refused the mark. The batch "
                                "is dim 0.",
                                f"你把第 {marked[0]} 维标记为动态，但 fn 要求这一维恰好是 {features}（它要乘以一个尺寸固定的权重），"
                                "所以 Dynamo 拒绝了这个标记。批大小是第 0 维。",
                                tried=tried, expected=one,
                                got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
                diff = differs(out, fn(x))
                if diff:
                    raise Wrong("the compiled function gives a different result from the original.",
                                "编译后的函数与原函数结果不同。",
                                tried=(f"{tried[0]}; batch {x.shape[0]}", f"{tried[1]}；批大小 {x.shape[0]}"),
                                expected=describe(fn(x)), got=diff)
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
            raise Wrong("the backend you were given never ran: compile fn with it (not with another backend, and "
                        "not eagerly), so that the checker can count the compiles.",
                        "给你的 backend 从未运行：请用它来编译 fn（不要换成别的后端，也不要直接 eager 运行），这样检查器才能统计编译次数。",
                        tried=tried, expected=one, got=got)
        if marked and 0 not in marked:
            raise Wrong(f"you marked dim {marked[0]} as dynamic, but the batch is dim 0.",
                        f"你把第 {marked[0]} 维标记为动态，但批大小是第 0 维。", tried=tried, expected=one, got=got)
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
        out.append(f"type ({type(new).__name__}, not {type(x).__name__})")
    return out


#: How the details name each kind in 中文 (the kind itself is the argument the learner receives).
_KIND_ZH = {"shape": "形状", "dtype": "dtype", "requires_grad": "requires_grad", "stride": "步长"}


def _layout(t: torch.Tensor) -> tuple[str, str]:
    return (f"shape {tuple(t.shape)}, {t.dtype}, stride {t.stride()}, requires_grad={t.requires_grad}",
            f"形状 {tuple(t.shape)}，{t.dtype}，步长 {t.stride()}，requires_grad={t.requires_grad}")


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
def _fail_guard(answer: Any) -> None:
    need_callable(answer, "fail_guard")
    gen = torch.Generator().manual_seed(73)
    for shape in ((5, 4), (3, 6), (4, 4)):
        x = torch.randn(shape, generator=gen)
        for kind in _KINDS:
            tried = (f"fail_guard(x, {kind!r}) with x of shape {shape}, float32, contiguous",
                     f"fail_guard(x, {kind!r})，x 的形状为 {shape}，float32，连续存储")
            only = (f"only the {kind} changed", f"只有{_KIND_ZH[kind]}改变")
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
                raise Wrong(f"the new tensor matches x in every part of the guard, so nothing would recompile. "
                            f"Change the tensor's {kind}.",
                            f"新张量在守卫的每一项上都与 x 相同，因此不会重新编译。请改变张量的 {kind}。",
                            tried=tried, expected=only, got=got)
            if kind == "stride" and changed[0] == "shape":
                raise Wrong("the shape changed as well (a transpose swaps the sizes of a non-square matrix); keep "
                            "x's shape and change only the strides, i.e. the order in which the same shape is laid "
                            "out in memory.",
                            "形状也变了（对非方阵转置会交换各维尺寸）；请保持 x 的形状不变，只改变步长，即同样形状的数据在内存中的排列顺序。",
                            tried=tried, expected=(f"shape {tuple(x.shape)} with other strides",
                                                   f"形状仍为 {tuple(x.shape)}，步长不同"), got=got)
            if kind in changed and len(changed) > 1:
                others = ", ".join(c for c in changed if c != kind)
                raise Wrong(f"the {kind} changed, but so did: {others}. The recompile reason names only the first "
                            "difference Dynamo checks, so a second change can hide behind it; change the "
                            f"{kind} only.",
                            f"{kind} 改变了，但下列属性也变了：{others}。重新编译的原因只说出 Dynamo 检查到的第一处不同，"
                            f"第二处改变可能被它掩盖；请只改变 {kind}。",
                            tried=tried, expected=only, got=got)
            if kind not in changed:
                raise Wrong(f"you changed the {', '.join(changed)}, not the {kind}.",
                            f"你改变的是 {', '.join(changed)}，而不是 {kind}。",
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
    return out


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


def _router_mistakes(reference: Router, model: Callable[..., Any]) -> list[Mistake]:
    other_branch = _other_branch(reference)
    swapped = _swapped_everywhere(model, reference)
    return [
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
        Mistake("another predicate", other_branch,
                "your model takes the other branch on this input, though not on every input: its predicate is not "
                "Router's. Router compares x.norm(), the Euclidean norm of all of x, with 2.0.",
                "你的模型在这个输入上走了另一个分支（但并非在每个输入上都如此）：它的条件与 Router 的不同。"
                "Router 用 x.norm()，即整个 x 的欧几里得范数，与 2.0 比较。"),
    ]


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
    try:
        model.load_state_dict(reference.state_dict())
    except RuntimeError as exc:
        raise Wrong("keep Router's layers (self.small, self.large) so the weights can be loaded.",
                    "请保留 Router 的层（self.small、self.large），以便加载权重。",
                    got=first_line(str(exc))) from None
    model.eval()
    probes = _router_probes()
    run_probes(model, reference, probes, mistakes=_router_mistakes(reference, model), what="CondRouter",
               generic=("run eagerly, CondRouter gives a different result from Router.",
                        "在 eager 模式下，CondRouter 的结果与 Router 不同。"))
    with _fresh_dynamo(), contextlib.redirect_stderr(io.StringIO()):
        try:
            exported = torch.export.export(model, probes[0].args)
        except Exception as exc:
            raise Wrong("torch.export refused the model: a Python decision on a tensor value (an `if`, or bool() of "
                        "a tensor) cannot be exported; let torch.cond take the predicate as a tensor and make the "
                        "choice, as the exercise asks.",
                        "torch.export 拒绝了这个模型：依据张量数值的 Python 判断（`if`，或对张量调用 bool()）无法导出；"
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
        runnable = exported.module()
        run_probes(runnable, reference, probes, mistakes=_router_mistakes(reference, runnable),
                   what="the exported program",
                   generic=("the exported program gives a different result from Router.",
                            "导出的程序与 Router 结果不同。"))
