"""Checkers for labs/lab13_capstone.ipynb (lecture course/13_capstone.ipynb).

The lab's model, ``Router``, is one the lecture does not use: a data-dependent ``if`` on a sum and a
scale computed with NumPy. Exercise 1's right answers are not written here: the checker runs the
whole matrix (``compare_capture(..., paths="all")``) on its own copy of the model once per process
and reads each path's outcome and cause off the rows. Exercise 3 is judged on tables built here, with
rows that failed, rows that differ from eager and timings chosen so that one fixed answer cannot pass.
"""
from __future__ import annotations

import collections
import contextlib
import copy
import dataclasses
import functools
import os
from typing import Any

import numpy as np
import torch
from torch import nn

from . import Wrong, task, trying
from .._lang import only
from .._text import one_line_error, quiet
from ._probe import Snapshot, described, differs, need_callable, require_untouched, seeded


class Router(nn.Module):
    """The lab's model: a data-dependent branch on a sum, and a scale computed with NumPy."""

    def __init__(self, d: int = 6) -> None:
        super().__init__()
        self.a = nn.Linear(d, d)
        self.b = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))
        scale = float(np.abs(h.detach().numpy()).max())
        if h.sum() > 0:
            return self.b(h) / scale
        return -h


#: Router's own forward, put back after an answer that patched the class
_ROUTER_FORWARD = Router.forward

OUTCOMES = ("works", "wrong result", "fails")
CAUSES = ("data-dependent branch", "NumPy call")


def _example() -> tuple[Router, torch.Tensor]:
    """The model and input of the lab's cell (same seed, so the same rows)."""
    gen = torch.Generator().manual_seed(0)
    model = seeded(Router(), 13)
    return model, torch.randn(4, 6, generator=gen)


def _cause(reason: str) -> str:
    """The cause a failed row's measured reason names; anything else is returned as it is."""
    text = reason.lower()
    if "numpy" in text or "__array" in text or "ufunc" in text:
        return CAUSES[1]
    if "data-dependent" in text or "control flow" in text:
        return CAUSES[0]
    return reason


@functools.lru_cache(maxsize=1)
def measured() -> dict[str, Any]:
    """Each path's outcome ("works", "wrong result", or ("fails", cause)), measured on this torch."""
    from ..viewers.compare import compare_capture

    model, x = _example()
    # a class of its own at each measurement: torch.jit.script keeps the methods of a class it failed on, and
    # scripting Router again in the same process then fails for another reason ("Can't redefine method")
    fresh = type("Router", (Router,), {"__module__": Router.__module__})
    model.__class__ = fresh
    with quiet(), torch.no_grad():
        table = compare_capture(model, x, paths="all")
    out: dict[str, Any] = {}
    for row in table.rows:
        if not row.worked:
            out[row.method] = ("fails", _cause(row.reason))
        else:
            out[row.method] = "works" if row.matches else "wrong result"
    return out


def _normal(value: Any) -> Any:
    if isinstance(value, (tuple, list)) and len(value) == 2 and value[0] in ("works", "wrong result"):
        return value[0] if value[1] in (None, "") else tuple(value)
    if isinstance(value, list):
        return tuple(value)
    return value


@task("lab13.1", "predict the matrix", "预测整张矩阵", hints=[
    ("Go through the model line by line for each path: which paths read the Python source, which run it "
     "on fake values, which record one run? A path that records one run does not fail; it may answer wrongly.",
     "对每条路径逐行过一遍模型：哪些路径读 Python 源码，哪些用假值运行它，哪些只记录一次运行？"
     "只记录一次运行的路径不会失败，但可能给出错误的结果。"),
    ("Lecture 13, section 2 'One model, every path': the same reading of each row on gate; every compiled "
     "path after export fails where export fails.",
     "第 13 讲第 2 节“一个模型，走遍每条路径”：在 gate 上对每一行的同样解读；导出之后的每条编译路径，"
     "都会在导出失败的地方失败。"),
], time_limit=240)  # the checker's own measurement compiles every path (25-45 s on 2 busy cores)
def _check_predict(answer: Any) -> None:
    need_callable(answer, "predict")
    with quiet():
        got = answer()
    if not isinstance(got, dict):
        raise Wrong("predict() must return a dict: path name → outcome.",
                    "predict() 必须返回一个 dict：路径名 → 结果。", got=described(got))
    from ..viewers.compare import PATHS

    missing = [p for p in PATHS if p not in got]
    extra = [str(k) for k in got if k not in PATHS]
    if missing or extra:
        raise Wrong("The dict must have exactly one entry per path of PATHS"
                    + (f"; missing: {', '.join(missing)}" if missing else "")
                    + (f"; not a path: {', '.join(extra)}" if extra else "") + ".",
                    "这个 dict 必须为 PATHS 中的每条路径各给出一项"
                    + (f"；缺少：{'、'.join(missing)}" if missing else "")
                    + (f"；不是路径名：{'、'.join(extra)}" if extra else "") + "。",
                    expected=(f"{len(PATHS)} entries", f"{len(PATHS)} 项"), got=(f"{len(got)} entries", f"{len(got)} 项"))
    for path in PATHS:
        value = _normal(got[path])
        ok = value in OUTCOMES[:2] or (isinstance(value, tuple) and len(value) == 2 and value[0] == "fails"
                                       and value[1] in CAUSES)
        if not ok:
            raise Wrong(f"The entry for {path!r} is not one of the forms the lab accepts: \"works\", "
                        f"\"wrong result\", or (\"fails\", cause) with a cause from {CAUSES}.",
                        f"{path!r} 这一项不是实验接受的写法：\"works\"、\"wrong result\"，"
                        f"或 (\"fails\", 原因)，原因取自 {CAUSES}。", got=repr(got[path]))
    truth = measured()
    wrong = [p for p in PATHS if _normal(got[p]) != truth[p]]
    if not wrong:
        return
    path = wrong[0]
    said, real = _normal(got[path]), truth[path]
    said_outcome = said if isinstance(said, str) else said[0]
    real_outcome = real if isinstance(real, str) else real[0]
    others = len(wrong) - 1
    more_en = f" ({others} other entr{'y is' if others == 1 else 'ies are'} wrong too.)" if others else ""
    more_zh = f"（另外还有 {others} 项不对。）" if others else ""
    if said_outcome == real_outcome:  # both "fails": the cause is what differs
        raise Wrong(f"{path!r} does fail, but not for the cause you gave: the measured error is about the other "
                    f"thing in the model.{more_en}",
                    f"{path!r} 确实会失败，但原因不是你给出的那一个：测得的错误指向模型里的另一处。{more_zh}",
                    tried=(f"compare_capture(Router, x, paths=\"all\"), row {path!r}",
                           f"compare_capture(Router, x, paths=\"all\") 的 {path!r} 一行"),
                    got=repr(said))
    raise Wrong(f"Your prediction for {path!r} is not what the measurement shows.{more_en}",
                f"你对 {path!r} 的预测与测量结果不符。{more_zh}",
                tried=(f"compare_capture(Router, x, paths=\"all\"), row {path!r}",
                       f"compare_capture(Router, x, paths=\"all\") 的 {path!r} 一行"),
                got=repr(said_outcome))  # no expected: the lab is about predicting it


# -- exercise 2: make it exportable with a dynamic batch -------------------------------------------

def _probe_inputs(model: Router) -> list[tuple[tuple[str, str], torch.Tensor]]:
    """Inputs that take each branch at batch sizes 1, 3 and 50, one of them transposed, and one whose rows
    disagree in sign. From 3 rows on, each branch's input has rows of both signs and a sum of ``a(x)`` (before
    tanh) of the other sign than h's, so a branch on any row, or on ``a(x)``, takes the other branch."""
    gen = torch.Generator().manual_seed(131)
    d = model.a.in_features
    out = []
    for batch in (1, 3, 50):
        for above in (True, False):
            for _ in range(100_000):
                x = torch.randn(batch, d, generator=gen)
                with torch.no_grad():
                    a = model.a(x)
                    h = torch.tanh(a)
                rows = h.sum(1) > 0
                if bool(h.sum() > 0) == above and (batch == 1 or (bool(rows.any()) and not bool(rows.all())
                                                                   and bool(a.sum() > 0) != above)):
                    break
            else:  # pragma: no cover - the seeded search finds each within about 6,000 draws
                raise RuntimeError(f"no probe input of batch {batch} found")
            both = batch > 1
            out.append(((f"x of shape {tuple(x.shape)} whose h sums {'above 0' if above else 'to 0 or less'}"
                         + (" (its rows' sums differ in sign)" if both else ""),
                         f"形状为 {tuple(x.shape)} 的 x，h 之和{'大于 0' if above else '不大于 0'}"
                         + ("（各行之和有正有负）" if both else "")), x))
    t = torch.randn(d, 7, generator=gen).t()
    out.append(((f"a transposed (non-contiguous) x of shape {tuple(t.shape)}",
                 f"转置过的（非连续）形状为 {tuple(t.shape)} 的 x"), t))
    mixed = torch.randn(64, d, generator=gen)
    out.append(((f"x of shape {tuple(mixed.shape)} whose rows' sums differ in sign",
                 f"各行之和正负不一的形状为 {tuple(mixed.shape)} 的 x"), mixed))
    # last, tried after the boundary models (whose messages name a threshold): the sum of h is +3e-8 in float32
    # and -1.5e-8 in float64, so a sum taken in another dtype takes the other branch (found by a search over
    # inputs for the checker's own weights, seed 1313)
    near = torch.tensor([[3.723875045776367, 5.731048107147217, -4.355832576751709, -1.9283453226089478,
                          -2.3239104747772217, -4.040297031402588]])
    out.append((("x of shape (1, 6) whose h sums to +3e-8 in float32 (and below 0 in float64)",
                 "形状为 (1, 6) 的 x，h 之和在 float32 中为 +3e-8（在 float64 中小于 0）"), near))
    return out


def _branch_of(model: Router, x: torch.Tensor) -> bool:
    with torch.no_grad():
        return bool(torch.tanh(model.a(x)).sum() > 0)


@task("lab13.2", "make the model exportable with a dynamic batch", "让模型能以动态批大小导出", hints=[
    ("Two things stop export: a Python if on a tensor's value, and a Python number read out of a tensor. "
     "Which op keeps both branches in the graph, and do you need a Python number at all for the scale?",
     "有两处让导出失败：对张量的值做 Python if，以及从张量中读出一个 Python 数。"
     "哪个算子能把两个分支都留在图里？缩放系数真的需要一个 Python 数吗？"),
    ("Lecture 13, section 6 'Mini-project: from graph breaks to a reloaded package', and lecture 10's "
     "torch.cond: both branches take the same operands and return tensors of the same shape.",
     "第 13 讲第 6 节“小项目：从图中断到重新加载的包”，以及第 10 讲的 torch.cond："
     "两个分支接收相同的操作数，返回形状相同的张量。"),
], time_limit=120)
def _check_fix(answer: Any) -> None:
    need_callable(answer, "make_exportable", classes=True)
    try:
        _check_fix_kept(answer)
    finally:  # an answer may patch the class itself: it is put back
        Router.forward = _ROUTER_FORWARD


def _boundary_models() -> list[tuple[tuple[str, str], Router]]:
    """Routers whose h is the same tiny value in every row: its sum is exactly 0, just above or below 0, down
    to a subnormal, so a threshold other than the model's `h.sum() > 0` takes the other branch somewhere."""
    out = []
    for bias, en, zh in ((0.0, "is exactly 0", "恰好为 0"), (1e-8, "is just above 0 (3e-8)", "略大于 0（3e-8）"),
                         (-1e-8, "is just below 0 (-3e-8)", "略小于 0（-3e-8）"),
                         (1e-10, "is just above 0 (3e-10)", "略大于 0（3e-10）"),
                         (1e-45, "is the smallest it can be above 0 (4e-45, a subnormal float32)",
                          "为大于 0 的最小可能值（4e-45，float32 的次正规数）")):
        model = seeded(Router(), 1317)
        with torch.no_grad():
            model.a.weight.zero_()
            model.a.bias.zero_()
            model.a.bias[0] = bias
        out.append(((en, zh), model))
    return out


def _beyond_snapshot(model: nn.Module) -> list[Any]:
    """What Snapshot does not see: which weights require gradients, and each submodule's class, mode,
    hooks and a forward replaced on it."""
    return [p.requires_grad for p in model.parameters()] + [
        (name, type(m), m.training, len(m._forward_hooks), len(m._forward_pre_hooks), "forward" in vars(m))
        for name, m in model.named_modules()]


def _require_kept(model: nn.Module, before: Snapshot, rest: list[Any], tried: tuple[str, str],
                  who: tuple[str, str]) -> None:
    """``who`` (your function, or running your module) left the given model as it was: its weights and
    graph (Snapshot), and what Snapshot does not see (:func:`_beyond_snapshot`)."""
    require_untouched(before, model, tried=tried, en=f"{who[0]} changed the model it was given.",
                      zh=f"{who[1]}修改了传入的模型。")
    now = _beyond_snapshot(model)
    if now != rest:
        raise Wrong(f"{who[0]} changed the given model: which weights require gradients, a submodule's class or "
                    "mode, a hook, or a submodule's forward.",
                    f"{who[1]}修改了传入的模型：哪些权重需要梯度、某个子模块的类或模式、钩子，或某个子模块的 forward。",
                    tried=tried, expected=("requires_grad, classes, modes, hooks and forwards as they were",
                                           "requires_grad、类、模式、钩子和 forward 都保持原样"),
                    got=_first_change(rest, now))


def _first_change(before: list[Any], after: list[Any]) -> tuple[str, str]:
    """The first difference between two :func:`_beyond_snapshot` lists, in words."""
    kinds = (("class", "类"), ("training", "training"), ("forward hooks", "forward 钩子"),
             ("forward pre-hooks", "forward 前置钩子"), ("forward set on the module", "模块上设置的 forward"))
    for old, new in zip(before, after):
        if old == new:
            continue
        if isinstance(old, bool) or isinstance(new, bool):
            return "a parameter's requires_grad changed", "某个参数的 requires_grad 变了"
        if old[0] != new[0]:
            break
        name = old[0] or "the model"
        for (en, zh), a, b in zip(kinds, old[1:], new[1:]):
            if a != b:
                a, b = (x.__name__ if isinstance(x, type) else x for x in (a, b))
                return f"{name}: {en} {a} -> {b}", f"{old[0] or '模型本身'}：{zh} {a} -> {b}"
    return "its submodules changed", "它的子模块变了"


def _check_fix_kept(answer: Any) -> None:
    model = seeded(Router(), 1313)
    before, rest = Snapshot.of(model), _beyond_snapshot(model)
    tried = ("a Router with weights of the checker's own", "一个权重由检查器给出的 Router")
    x0 = torch.randn(4, 6, generator=torch.Generator().manual_seed(130))
    probes = _probe_inputs(model)
    with torch.no_grad():  # what the model computes, taken before the answer runs
        wants = [model(x.clone()) for _, x in probes]
        want0 = model(x0.clone())
    boundary = _boundary_models()
    xz = torch.randn(3, 6, generator=torch.Generator().manual_seed(132))
    with torch.no_grad():
        want_boundary = [m(xz.clone()) for _, m in boundary]
    with quiet():
        fixed = answer(model)
    if Router.forward is not _ROUTER_FORWARD or type(model) is not Router:
        raise Wrong("Your function changed the given model's class (its forward, or which class it is), and with it "
                    "every model of that class; build a new module and leave the model as it is.",
                    "你的函数修改了传入模型的类（它的 forward，或它属于哪个类），同一个类的所有模型都随之改变；"
                    "请新建一个模块，让传入的模型保持原样。", tried=tried)
    if "forward" in vars(model):
        raise Wrong("Your function replaced the given model's forward; build a new module and leave the model "
                    "as it is.", "你的函数替换了传入模型的 forward；请新建一个模块，让传入的模型保持原样。", tried=tried)
    _require_kept(model, before, rest, tried, ("Your function", "你的函数"))
    if not isinstance(fixed, nn.Module):
        raise Wrong("make_exportable must return an nn.Module.", "make_exportable 必须返回一个 nn.Module。",
                    tried=tried, got=described(fixed))
    if fixed is model:
        raise Wrong("Your function returned the model it was given, which export cannot take; return a new module.",
                    "你的函数返回了传入的模型，而导出处理不了它；请返回一个新模块。", tried=tried)
    try:
        with quiet():
            program = torch.export.export(fixed, (x0,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    except Exception as exc:
        text = one_line_error(exc)
        if "numpy" in text.lower():
            en, zh = ("export still meets the NumPy call: fake tensors have no data for NumPy to read. Compute the "
                      "scale with torch operations, as a tensor.",
                      "导出仍然遇到了 NumPy 调用：伪张量没有可供 NumPy 读取的数据。请用 torch 运算计算缩放系数，让它保持为张量。")
        elif "UncapturedHigherOrderOp" in text:
            en, zh = ("torch.cond could not capture one of your branches whole: a branch may only apply tensor "
                      "operations to its operands and the module's weights; a Python number taken out of a tensor "
                      "(NumPy, .item(), float()) does not go into it.",
                      "torch.cond 无法完整捕获你的某个分支：分支只能对它的操作数和模块的权重做张量运算；"
                      "从张量中取出的 Python 数（NumPy、.item()、float()）不能用在分支里。")
        elif "data-dependent" in text.lower() or "control flow" in text.lower():
            en, zh = ("export still meets a Python if on a tensor's value: keep both branches in the graph.",
                      "导出仍然遇到了对张量值的 Python if：请把两个分支都留在图里。")
        elif "batch" in text or "specializ" in text.lower() or "constraint" in text.lower():
            en, zh = ("export refused a dynamic batch: something in your module fixes the batch size.",
                      "导出拒绝了动态批大小：你的模块中有东西把批大小固定住了。")
        else:
            en, zh = ("torch.export could not export your module with a dynamic batch.",
                      "torch.export 无法以动态批大小导出你的模块。")
        raise Wrong(en, zh, tried=("torch.export.export(your module, (x of shape (4, 6),), dynamic batch)",
                                   "torch.export.export(你的模块, (形状为 (4, 6) 的 x,), 动态批大小)"),
                    got=text) from None
    runner = program.module()

    def run_exported(label_en: str, label_zh: str, x: torch.Tensor, want: torch.Tensor) -> None:
        at = (f"the exported program of your module on {label_en}", f"你的模块导出的程序，输入是{label_zh}")
        branch = (("the branch for a positive sum", "和为正时的分支") if _branch_of(model, x)
                  else ("the branch for a sum ≤ 0", "和 ≤ 0 时的分支"))
        try:
            with quiet(), torch.no_grad():
                got = runner(x.clone())
        except Exception as exc:
            raise Wrong(f"The exported program refused an input the model takes ({branch[0]}).",
                        f"导出的程序拒绝了模型能处理的输入（{branch[1]}）。", tried=at,
                        expected=(f"an output of shape {tuple(want.shape)}", f"形状为 {tuple(want.shape)} 的输出"),
                        got=one_line_error(exc)) from None
        problem = differs(got, want)
        if problem is not None:
            raise Wrong(f"The exported program's output differs from the original model's on {branch[0]}: {problem}",
                        f"在{branch[1]}上，导出程序的输出与原模型不同：{differs(got, want, lang='zh')}", tried=at)

    for ((label_en, label_zh), x), want in zip(probes[:-1], wants[:-1]):
        run_exported(label_en, label_zh, x, want)
    for ((sum_en, sum_zh), edge), want in zip(boundary, want_boundary):
        with quiet():
            fixed_edge = answer(edge)
        with quiet(), torch.no_grad():
            got = fixed_edge(xz.clone())
        problem = differs(got, want)
        gap = " " if sum_zh[-1].isascii() else ""  # a space between a number and the 中文 after it
        if problem is not None:
            raise Wrong(f"Where the sum of h {sum_en}, your module does not compute what the model's `h.sum() > 0` "
                        f"does: {problem}",
                        f"当 h 之和{sum_zh}{gap}时，你的模块算出的结果与模型的 `h.sum() > 0` 不同："
                        f"{differs(got, want, lang='zh')}",
                        tried=(f"a Router whose first layer gives every row the same h, whose sum {sum_en}; x of "
                               "shape (3, 6)", f"第一层让每一行的 h 都相同、h 之和{sum_zh}{gap}的 Router；x 的形状为 (3, 6)"))
    (last_en, last_zh), last = probes[-1]
    run_exported(last_en, last_zh, last, wants[-1])
    with torch.no_grad():
        got0 = fixed(x0.clone())
    problem = differs(got0, want0)
    if problem is not None:
        raise Wrong(f"Your module itself, called eagerly, differs from the original model: {problem}",
                    f"直接调用你的模块时，结果与原模型不同：{differs(got0, want0, lang='zh')}",
                    tried=("your module on x of shape (4, 6)", "你的模块，输入是形状为 (4, 6) 的 x"))
    _require_kept(model, before, rest, tried, ("Running your module", "运行你的模块"))


# -- exercise 3: choose a path for a constraint ---------------------------------------------------

#: the paths each constraint allows (the lab's text gives the same lists)
ALLOWED = {
    "no compiler on target": ("torch.jit.trace", "torch.jit.script", "torch.fx.symbolic_trace",
                              "dynamo fullgraph=True", "dynamo fullgraph=False", "torch.export.export",
                              "export + AOTInductor", "export + IREE"),
    "no Python on target": ("torch.jit.trace", "torch.jit.script", "export + AOTInductor", "export + IREE"),
    # a TORCH_LIBRARY op: TorchScript and AOTInductor keep it as one call into its library (lecture 11 §5, §8);
    # torch-mlir cannot lower an op it does not know
    "C++ custom op, no Python on target": ("torch.jit.trace", "torch.jit.script", "export + AOTInductor"),
    "fastest": None,
}
CUSTOM = "C++ custom op, no Python on target"


_SCRIPT_NOTE = ("TorchScript is deprecated: use torch.compile or torch.export",  # as compare_capture notes it
                "TorchScript 已被弃用：请改用 torch.compile 或 torch.export")
_SCRIPT_WARNING = "FutureWarning: `torch.jit.{}` is deprecated. Please switch to `torch.compile` or `torch.export`."


#: what compare_capture says of a path that worked (the made-up rows read like a real table's)
_REASONS = {
    "torch.jit.trace": ("recorded the ops that ran on the example input", "记录了示例输入实际执行的算子"),
    "torch.jit.script": ("compiled from the Python source, control flow included", "由 Python 源码编译而来，包括控制流"),
    "torch.fx.symbolic_trace": ("traced with proxy values", "用代理值（Proxy）符号追踪"),
    "dynamo fullgraph=True": ("one graph, no graph breaks", "一个计算图，没有图中断"),
    "dynamo fullgraph=False": ("one graph, no graph breaks", "一个计算图，没有图中断"),
    "torch.export.export": ("one graph of ATen ops", "一个由 ATen 算子组成的计算图"),
    "torch.compile inductor": ("one graph, no graph breaks", "一个计算图，没有图中断"),
    "export + AOTInductor": ("one exported graph, compiled ahead of time into a .pt2 package and loaded back",
                             "一个导出的计算图，提前编译成 .pt2 包后再加载回来"),
    "export + IREE": ("lowered to linalg-on-tensors by torch-mlir, compiled for this CPU by IREE",
                      "由 torch-mlir 下降到 linalg-on-tensors，再由 IREE 编译到本机 CPU"),
}


class _Row(tuple):
    """A made-up row ``(method, worked, matches, ms)`` that also carries something a real row can
    carry (a TracerWarning, graph breaks, a noisy or long measurement …): ``extra`` holds the
    Attempt's fields to set and ``says`` what it is, for the feedback."""

    def __new__(cls, method: str, worked: bool, matches: bool | None, ms: float | None,
                says: tuple[str, str] = ("", ""), **extra: Any) -> "_Row":
        row = super().__new__(cls, (method, worked, matches, ms))
        row.says, row.extra = says, extra
        return row


_TRACE_WARNINGS = [_SCRIPT_WARNING.format("trace"), _SCRIPT_WARNING.format("trace_method")]  # as tracing records them
_TRACER = ("TracerWarning: Converting a tensor to a Python boolean might cause the trace to be incorrect. We can't "
           "record the data flow of Python values, so this value will be treated as a constant in the future.")


_COND = ("the branch depends on tensor values: express it with torch.cond", "分支取决于张量的值：请用 torch.cond 表达")
_SKIPPED = tuple(f"{head}No ops traced for the FX graph. `torch.compile` will skip the frame and fall back to eager."
                 for head in ("Dynamo skipped the frame of Same: ", "Dynamo 跳过了 Same 的帧："))  # as compare_capture says it
_SOFTMAX = ("UserWarning: Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
            "as an argument.")


def _decorations() -> list[tuple[tuple[str, ...] | None, tuple[str, str], dict[str, Any]]]:
    """What real rows carry besides their speed: (paths it applies to, None for any; what the feedback
    calls it; the Attempt's fields). A rule that reads speed alone must ignore every one of them."""
    splits = ("4 graphs, 3 graph breaks; the first: Data-dependent branching: a Python if or while on a tensor value "
              "(model.py:20)", "4 个计算图，3 处图中断；第一处：数据相关的分支：Python 的 if 或 while 取决于张量的值（model.py:20）")
    tracer = f"TracerWarning: {_TRACER.partition(': ')[2]}"
    return [
        (("torch.jit.trace",), ("a TracerWarning in its note and a UserWarning", "提示中有 TracerWarning，另有一条 UserWarning"),
         {"note": tuple(_TRACER.split(". ")[0] + sep + note for sep, note in zip(("; ", "；"), _SCRIPT_NOTE)),
          "warnings": _TRACE_WARNINGS + [tracer, _SOFTMAX]}),
        (("dynamo fullgraph=False", "torch.compile inductor"), ("4 graphs, 3 graph breaks, a torch.cond note",
                                                                 "4 个计算图、3 次图中断，提示用 torch.cond"),
         {"note": _COND, "reason": splits, "graphs": 4, "breaks": 3}),
        (("dynamo fullgraph=False", "torch.compile inductor"), ("21 graphs, 20 graph breaks", "21 个计算图、20 处图中断"),
         {"reason": ("21 graphs, 20 graph breaks; the first: Failed to trace builtin operator (model.py:7)",
                     "21 个计算图，20 处图中断；第一处：Failed to trace builtin operator（model.py:7）"),
          "graphs": 21, "breaks": 20}),
        (("dynamo fullgraph=False", "torch.compile inductor"), ("0 graphs, 0 ops: Dynamo skipped the frame",
                                                                 "0 个计算图、0 个算子：Dynamo 跳过了这一帧"),
         {"reason": _SKIPPED, "graphs": 0, "ops": 0, "breaks": 0}),
        (None, ("0 ops", "0 个算子"), {"ops": 0}),
        (("dynamo fullgraph=False", "torch.compile inductor"), ("3 graphs from separate frames, no graph break",
                                                                 "3 个计算图来自不同的帧，没有图中断"),
         {"reason": ("3 graphs from separate frames, no graph breaks", "3 个计算图，来自不同的帧，没有图中断"), "graphs": 3,
          "breaks": 0}),
        (("dynamo fullgraph=True", "dynamo fullgraph=False", "torch.compile inductor"),
         ("no graph: Dynamo found nothing to capture", "没有计算图：Dynamo 没有找到可捕获的运算"),
         {"reason": ("no graph: Dynamo found no tensor operation to capture", "没有计算图：Dynamo 没有找到可以捕获的张量运算"),
          "graphs": 0, "ops": 0}),
        (None, ("a UserWarning", "一条 UserWarning"), {"warnings": [_SOFTMAX]}),
        (None, ("an IQR 3.5 times its median", "IQR 是中位数的 3.5 倍"), {"iqr": 3.5}),
        (None, ("an IQR 9 times its median", "IQR 是中位数的 9 倍"), {"iqr": 9.0}),
        (None, ("700 s to capture", "捕获用了 700 秒"), {"seconds": 700.0}),
        (None, ("captured in 1 ms", "捕获只用了 1 毫秒"), {"seconds": 0.001}),
        (None, ("100 ops", "100 个算子"), {"ops": 100}),
        (None, ("12 warnings", "12 条警告"), {"warnings": [_SOFTMAX] * 4 + [f"TracerWarning: {_TRACER.partition(': ')[2]}"] * 4
                                             + [_SCRIPT_WARNING.format("trace")] * 4}),
    ]


_SECOND = ("example input with 1 floating-point tensor sign-flipped", "示例输入，其中 1 个浮点张量取反")  # compare_capture's default
_NOT_TIMED = ("one graph, no graph breaks (not timed: running it again failed: RuntimeError: torch.compile with "
              "fullgraph=True found no compiled frames)",
              "一个计算图，没有图中断（未计时：再次运行时出错：RuntimeError: torch.compile with fullgraph=True found no "
              "compiled frames）")


#: how compare_capture says a row differs from eager (a small difference, on the second input, is a difference)
_DIFFERS = [("outputs differ from eager on the second input (output: at index (0, 1) got 0.4998, eager gives 0.5 "
             "(max abs difference 0.000255))", "在第二个输入上，输出与 eager 不同（output: at index (0, 1) got 0.4998, "
             "eager gives 0.5 (max abs difference 0.000255)）"),
            ("the trace baked in one branch: outputs differ from eager on the second input (output: at index (0, 0) got "
             "1.2, eager gives -0.4 (max abs difference 1.6))", "trace 把一个分支固化进了计算图：在第二个输入上，输出与 eager 不同"
             "（output: at index (0, 0) got 1.2, eager gives -0.4 (max abs difference 1.6)）")]

_TINY = ("outputs differ from eager on the second input (output: at index (2, 0) got 0.1000001, eager gives 0.1 "
         "(max abs difference 1.19e-07))", "在第二个输入上，输出与 eager 不同（output: at index (2, 0) got 0.1000001, "
         "eager gives 0.1 (max abs difference 1.19e-07)）")

#: a row carrying more than any real row does, high and low: the rule reads speed alone, so a table whose
#: winner (or whose other rows) carry these must get the same answer
_WORDS = ("error", "Error", "TypeError", "RuntimeError", "failed", "Failed", "unsupported", "Unsupported", "not supported",
          "numpy", "dynamic shape", "Dynamic shape", "exception", "Exception", "skipped", "fall back to eager", "graph break",
          "Data-dependent", "TracerWarning", "deprecated", "incorrect", "warning", "WARNING", "not", "wrong", "differ")
#: more words a reason, note or warning may hold, and every graph-break type Dynamo names (its registry)
_MORE_WORDS = ("fallback", "fell back", "recompile", "recompilation", "guard", "Traceback", "assert", "NotImplemented",
               "not implemented", "timeout", "timed out", "crash", "abort", "invalid", "unknown", "unrecognized", "unable",
               "cannot", "can't", "could not", "missing", "undefined", "bad", "problem", "issue", "unstable", "noisy",
               "noise", "suspicious", "outlier", "CUDA", "GPU", "retry", "constant", "baked", "specialized", "Python",
               "print", "builtin", ".item()", "tolist", "NumPy", "nan", "NaN", "inf", "overflow", "mismatch", "broken",
               "break", "symbolic", "RuntimeWarning", "UserWarning", "FutureWarning", "DeprecationWarning", "log ERROR",
               "log INFO", "log CRITICAL", "ERROR", "CRITICAL", "skip", "frame", "eager", "None", "no graph", "0 ops",
               "separate frames", "again", "not timed", "untimed", "slow", "slower", "slowdown", "first call", "unsafe",
               "AssertionError", "ValueError", "KeyError", "AttributeError", "IndexError", "NotImplementedError",
               "OSError", "MemoryError", "CPU", "AVX", "vectorized", "scalar", "memory", "leak", "deadlock", "hang",
               "killed", "terminated", "interrupt", "cache_size_limit",
               "recompile_limit", "wrong result", "cannot guard", "unbacked", "SymInt", "storage", "alias", "mutation",
               "in-place", "hook", "closure", "generator", "lambda", "global", "side effect", "disable", "graph_break")
_MORE_ZH = ("出错", "错误", "失败", "异常", "不支持", "回退", "退回", "跳过", "警告", "不一致", "固化", "计算图", "处图中断", "第一处",
            "已被弃用", "数据相关", "取决于张量的值", "动态", "形状", "慢", "重新编译", "守卫", "未计时", "没有计算图", "来自不同的帧",
            "没有与 eager 对照", "检查它时出错", "再次运行时出错", "只记录了", "请用 torch.cond 表达", "不可信", "噪声", "超时",
            "报错", "无法", "不能", "崩溃", "问题", "不稳定", "可疑", "无效", "未知", "缺少", "缺失", "不匹配", "不正确", "常量",
            "特化", "不安全", "变慢", "更慢", "回退到 eager", "降级", "标量", "向量化", "内存", "泄漏", "死锁", "中断", "终止",
            "已弃用", "弃用警告", "不推荐", "波动", "不可靠", "不准确", "可能不正确", "可能", "误差", "偏差", "精度", "没有计时",
            "未对照", "没有对照", "卡住", "挂起", "结果错误", "错误的结果", "输出不同", "与 eager 不同", "找不到", "异常值", "离群",
            "抖动", "方差", "四分位", "中位数", "轮", "线程", "算子")


#: phrases a rule may search for with ``re`` (where ``in`` is not asked), and the names Python gives its errors
#: and warnings, each with its colon as a message starts
_PHRASES = ("falling back", "fall back", "fell back to eager", "nondeterministic", "non-deterministic", "flaky",
            "unreliable", "fails", "failing", "failure", "errors", "errored", "warnings", "warned", "raise", "raised",
            "fatal", "FATAL", "panic", "denied", "refused", "rejected", "dropped", "ignored", "skipping", "not traced",
            "untraced", "graph breaks", "Graph break", "graph-break", "recompiling", "retrace", "retraced", "unsound",
            "approximate", "precision", "tolerance", "atol", "rtol", "allclose", "max abs difference", "at index",
            "got", "gives", "did not", "doesn't", "isn't", "won't", "wasn't", "no longer", "obsolete", "legacy",
            "experimental", "beta", "prototype", "unstable API", "python fallback", "eager fallback", "Dynamo",
            "TorchDynamo", "Inductor", "AOTAutograd", "FX", "TorchScript", "IREE", "MLIR", "torch-mlir", "C++",
            "compile", "compiled", "compiling", "compilation", "trace", "traced", "tracing", "script", "scripted",
            "export", "exported", "lowered", "lowering", "package", ".pt2", "variance", "spread", "IQR", "median",
            "outliers", "jitter", "warm-up", "warmup", "cold", "first call", "rounds", "threads", "speedup", "speed-up",
            # what the twentieth round searched for and found nowhere: torch's own check_trace and recompile messages,
            # error classes, and words about timing
            "does not match", "not close!", "Tensor-likes", "Mismatched elements", "Recompiling", "guard failure",
            "hit config", "torch._dynamo hit", "Graph break in user code", "skipping cudagraphs", "cudagraph", "Could not",
            "diverge", "inconsistent", "Mismatch", "suspect", "too slow", "regress", "regression", "slower than eager",
            "Specializ", "tf32", "float16", "bfloat16", "check_trace", "trace_module",
            "might cause the trace to be incorrect", "treated as a constant", "underflow", "Wrong", "Deprecated",
            "DEPRECATED", "FAIL", "stale", "cached", "throttled", "thermal", "contention", "busy", "background", "GIL",
            "single-thread", "interpreter", "per-call overhead", "cold start", "compile time", "Recompil", "Guard",
            "Skipped", "no ops", "No ops", "empty graph", "No graph", "trivial", "no-op", "noop", "deprecation",
            "removed", "will be removed", "future", "switch to", "Not supported", "TODO", "FIXME", "XXX", "hack",
            "danger", "risk", "caution", "careful", "beware", "verify", "verified", "unverified", "unchecked",
            "not checked", "untested", "Differ", "rel diff", "assert_close", "TorchRuntimeError", "torch._dynamo.exc",
            "Unsupported:", "UserError", "InternalTorchDynamoError", "BackendCompilerFailed", "LoweringException",
            "InductorError", "CppCompileError", "SubprocException", "OutOfMemoryError", "CUDA out of memory",
            "segfault", "Segmentation", "core dumped", "SIGSEGV", "SIGKILL", "signal", "child", "subprocess",
            "ran it in a child", "crashed", "hung", "seed", "Graph Break", "GRAPH BREAK", "Break", "splits", "split",
            "fragment", "Partial", "incomplete", "absent", "Unknown", "?", "!",
            # a traceback's lines, as a reason might quote one
            "Traceback (most recent call last):", 'File "model.py", line 12, in forward', "most recent call last",
            "not reliable", "not trusted", "not accurate", "found no compiled frames")


def _error_names() -> list[str]:
    """``ValueError:``, ``UserWarning:`` …: every error and warning class Python names, as a message starts."""
    import builtins

    return [f"{name}:" for name in dir(builtins) if name.endswith(("Error", "Warning", "Exception", "Exit", "Interrupt"))]


_EVERY = " ; ".join(_WORDS + _MORE_WORDS + _PHRASES + tuple(_error_names()))  # spaced: each word is a token of split()
#: the vocabulary is cut into this many slices; each path wins at least this many dressed tables, so each slice
#: lands on a winner of each path
_SLICES = 126


@functools.lru_cache(maxsize=None)
def _vocabulary() -> tuple[str, ...]:
    """Every word and frequent phrase of torch's and the library's messages (``_lab13_words``)."""
    import json

    from ._lab13_words import WORDS

    return tuple(json.loads(WORDS.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=None)
def _starts() -> tuple[str, ...]:
    """What a dressed row's texts begin with, one per slice of the vocabulary (for a rule that reads a
    text's start: ``re.match``, ``split(":")[0]``, a slice): error names and words a failed or doubtful
    row's text may start with, in 中文 too, then the other error names Python gives, then listed words."""
    names = [name for name in _error_names() if "Warning" not in name]
    first = ["RuntimeError:", "TypeError:", "ValueError:", "AssertionError:", "NotImplementedError:",
                         "Unsupported:", "failed", "Failed", "error", "Error", "ERROR", "captured", "captured, but",
                         "捕获成功，但", "captured, but running it failed:", "captured, but checking it failed:",
                         "捕获成功，但运行它时出错：", "捕获成功，但检查它时出错：", "outputs differ from eager", "在第二个输入上", "exception",
                         "Exception:", "skipped", "失败：", "错误：", "出错：", "报错：", "异常：", "warning", "Warning:",
                         "UserWarning:", "TracerWarning:", "FutureWarning:", "RuntimeWarning:", "log ERROR", "log WARNING",
                         "not", "no", "unsupported", "fell back", "fallback", "timed out", "crash", "无法", "不支持", "跳过",
                         "回退", "警告：", "Traceback", "torch._dynamo.exc.Unsupported:", "BackendCompilerFailed:",
                         "InductorError:", "TorchRuntimeError:", "UserError:"]
    return tuple(dict.fromkeys(first + names + list(_WORDS + _MORE_WORDS + _PHRASES + _MORE_ZH)))


@functools.lru_cache(maxsize=None)
def _ends() -> tuple[str, ...]:
    """What a dressed row's texts end with, one per slice (before a closing mark or none): the verdicts a
    text may end on, in English and 中文, then the listed words."""
    first = ["failed", "error", "失败", "出错", "错误", "slow", "慢", "太慢", "unstable", "不稳定", "noisy", "噪声", "Error",
             "failure", "crashed", "崩溃", "skipped", "跳过", "fell back to eager", "回退到 eager", "deprecated", "已弃用",
             "differs from eager", "与 eager 不一致", "not checked", "未检查", "wrong", "不正确", "timed out", "超时",
             "incorrect", "unsupported", "不支持", "untrusted", "不可信", "warning", "警告", "inaccurate", "不准确",
             "recompiled", "重新编译", "graph break", "图中断", "bad", "问题"]
    return tuple(dict.fromkeys(first + list(_WORDS + _MORE_WORDS + _PHRASES + _MORE_ZH)))


@functools.lru_cache(maxsize=None)
def _high(k: int) -> dict[str, Any]:
    """A row carrying every note, warning, count and listed word, and slice ``k`` of the vocabulary
    (``re``, ``split`` and ``splitlines`` find each of them); its reason, note and last warning begin
    with the ``k``-th start."""
    start = _starts()[k % len(_starts())]
    words = _vocabulary()
    part = words[k * len(words) // _SLICES:(k + 1) * len(words) // _SLICES]
    # the listed words turned by the slice, so each sits near a text's start in some slice (a rule that reads a
    # text cut short: [:200], textwrap.shorten); the reason and the note hold it all on one line (a rule that reads
    # the first line: re.match(".*w"), splitlines()[0]), the last warning one word a line
    listed, zh = _EVERY.split(" ; "), list(_MORE_ZH)
    listed, zh = listed[k * len(listed) // _SLICES:] + listed[:k * len(listed) // _SLICES], \
        zh[k * len(zh) // _SLICES:] + zh[:k * len(zh) // _SLICES]
    line = " ; ".join(listed + list(part))
    lead = start + " "
    # and each text ends its own way (a rule that reads a text's end: [-30:], "(failed|error)\W*$")
    # (on its own line in every other slice, so some texts span lines and still hold every word on their first)
    end = ("\n" if k % 2 == 0 else " ; ") + _ends()[k % len(_ends())] + ("", ".", "。", "）", ")")[k % 5]
    high = {"reason": (lead + " ; ".join(listed[:40]) + " ; (made up by the checker) 1000 graphs, 400 graph breaks; the "
                       "first: " + line + end,
                       lead + " ； ".join(zh) + " ；（检查器构造的）1000 个计算图，400 处图中断；第一处：" + line + end),
            "note": (lead + " ; ".join(listed[:40]) + "; TracerWarning: the trace might be incorrect; the branch depends on "
                     "tensor values: express it with torch.cond; TorchScript is deprecated: use torch.compile or "
                     "torch.export; " + line + end,
                     lead + "；".join(zh) + "；TracerWarning: the trace might be incorrect；分支取决于张量的值：请用 torch.cond "
                     "表达；TorchScript 已被弃用：请改用 torch.compile 或 torch.export；" + line + end),
            "warnings": [f"{kind}: {word} (made up by the checker)"
                         for kind in ("UserWarning", "TracerWarning", "FutureWarning", "DeprecationWarning", "log WARNING")
                         for word in _WORDS]
            + [f"{kind}: {word}" for kind in ("SyntaxWarning", "ResourceWarning", "log ERROR", "log INFO", "log CRITICAL")
               for word in ("made up by the checker", "检查器构造的")]
            + [f"{lead}RuntimeWarning: " + "\n".join(listed + zh + list(part)) + end],
            "graphs": 1000, "breaks": 400, "ops": 12345, "seconds": 86400.0, "iqr": 50.0, "number": 1}
    high["reason"] = tuple(_AnyText(text) for text in high["reason"])
    high["note"] = tuple(_AnyText(text) for text in high["note"])
    high["warnings"] = [_AnyText(text) for text in high["warnings"]]
    return high


class _AnyText(str):
    """A reason, note or warning that holds every word: ``"x" in text`` is true for any x, and so are
    ``startswith``/``endswith``; ``find`` finds it (at 1) and ``count`` counts it many times; a case
    change or a strip keeps it so. Printed, it is its own words.
    A rule that reads the text at all drops the row that carries it."""

    def __contains__(self, part: object) -> bool:
        return True

    def startswith(self, *args: Any, **kwargs: Any) -> bool:
        return True

    def endswith(self, *args: Any, **kwargs: Any) -> bool:
        return True

    def find(self, *args: Any, **kwargs: Any) -> int:  # found, and not at the start ("find(w) > 0" finds it too)
        return 1

    rfind = index = rindex = find

    def count(self, *args: Any, **kwargs: Any) -> int:  # found many times
        return 1000

    def __deepcopy__(self, memo: Any) -> "_AnyText":
        return self


for _name in ("lower", "upper", "casefold", "strip", "lstrip", "rstrip", "title", "capitalize", "swapcase"):
    setattr(_AnyText, _name, lambda self, *args, _m=getattr(str, _name): _AnyText(_m(self, *args)))


_LOW = {"reason": ("done", "完成"), "note": ("", ""), "warnings": [], "graphs": 0, "breaks": 0, "ops": 0, "seconds": 1e-6,
        "iqr": 0.0, "number": 10**9}
_SINK = {"high": ("carrying every note, warning, word and count a row could", "带有一行所能带的全部提示、警告、词语和计数"),
         "low": ("carrying nothing: a one-word reason, no note, warning, graph or op",
                 "几乎什么都不带：原因只有一个词，没有提示、警告、计算图或算子")}


def _sunk(rows: list[Any], winner: str | None, k: int = 0) -> list[list[Any]]:
    """The rows twice more: the winner carrying everything (slice ``k`` of the vocabulary, its texts
    beginning with that slice's start) and the rest nothing, then the other way round (with no winner:
    every row carrying everything). The timings and flags stay."""
    def dressed(row: Any, how: str) -> Any:
        m, w, mt, ms = row
        if m == "eager":
            return row
        fields = dict(getattr(row, "extra", {})) | (_high(k % _SLICES) if how == "high" else _LOW)
        return _Row(m, w, mt, ms, says=_SINK[how], **fields)

    if winner is None:
        return [[dressed(row, "high") for row in rows]]
    return [[dressed(row, "high" if row[0] == winner else "low") for row in rows],
            [dressed(row, "low" if row[0] == winner else "high") for row in rows]]


@contextlib.contextmanager
def _language(lang: str | None):
    """Build a table as compare_capture does when the reader reads ``lang`` (None: as set now)."""
    from .. import _lang

    saved = _lang._chosen
    _lang._chosen = lang if lang is not None else saved
    try:
        yield
    finally:
        _lang._chosen = saved


def _table(rows: list[tuple[str, bool, bool | None, float | None]], eager_ms: float = 1.0,
           rounds: int | None = None, threads: int = 1, second: bool | tuple[str, str] = False,
           eager_iqr: float | None = None, eager_once: int | None = None, inputs: str = "tensor(4, 6)",
           name: str = "a made-up model") -> Any:
    """A Comparison built from (method, worked, matches, ms per call or None), eager at ``eager_ms``;
    a :class:`_Row` also sets the fields it carries. The rest is what compare_capture would record
    (``rounds`` and ``threads`` as passed to it; ``second``: its default second input's label)."""
    import math

    from ..viewers._latency import Latency
    from ..viewers.compare import Attempt, Comparison

    # by default one balanced design over eager and the timed rows, as fair_latency runs it
    runners = 1 + sum(ms is not None for *_, ms in rows)
    if rounds is None:
        rounds = runners if runners % 2 == 0 else 2 * runners

    def lat(ms: float, k: int = 0, iqr: float | None = None, number: int | None = None) -> Latency:
        # the spread does not follow the median: ranking rows by their IQR is not ranking them by speed;
        # calls per round come from one timed call (50 ms / its time), which strays from the median;
        # one round has no spread
        once = ms * (0.6, 1.7, 1.0, 2.4, 5.0, 60.0)[k % 6]
        spread = 0.0 if rounds == 1 else (iqr if iqr is not None else (0.1, 0.5, 0.02, 0.3)[k % 4])
        return Latency(ms / 1e3, ms / 1e3 * spread, rounds,
                       number if number is not None else max(1, math.ceil(50.0 / once)), threads)

    # Dynamo's rows break the graph where fullgraph=True failed or is absent (as on a real table)
    broken = not any(m == "dynamo fullgraph=True" and w for m, w, *_ in rows)
    attempts = []
    for k, row in enumerate(rows):
        m, w, mt, ms = row
        extra = dict(getattr(row, "extra", {}))
        splits = broken and w and m in ("dynamo fullgraph=False", "torch.compile inductor")
        # capture times run against speed in some rows and with it in others, so neither the shortest
        # nor the longest capture time is the fastest row in every table
        # TorchScript's rows carry what compare_capture really records there: a deprecation note and warnings
        script = w and m.startswith("torch.jit")
        # reasons read like compare_capture's (a Dynamo row that splits says "graph break"), and op counts
        # differ from row to row, neither following speed
        reason = (only("captured, but checking it failed: RuntimeError: made up by the checker",
                       "捕获成功，但检查它时出错：RuntimeError: 检查器构造的") if w and mt is None
                  else only(*_DIFFERS[k % 2]) if w and mt is False
                  else only(*_NOT_TIMED) if w and mt and ms is None
                  else only("2 graphs, 1 graph break: Data-dependent branching: a Python if or while on a tensor "
                            "value (model.py:12)", "2 个计算图，1 处图中断：数据相关的分支：Python 的 if 或 while 取决于张量的值"
                            "（model.py:12）") if splits
                  else only(*_REASONS[m]) if w and m in _REASONS else only("made up by the checker", "检查器构造的"))
        warnings = (list(_TRACE_WARNINGS) if m == "torch.jit.trace" else [_SCRIPT_WARNING.format(m.split(".")[-1])]) if script else []
        latency = None if ms is None else lat(ms, k, extra.pop("iqr", None), extra.pop("number", None))
        notes = ([only(*_SCRIPT_NOTE)] if script else []) + ([only(*_COND)] if splits else [])
        attempt = Attempt(m, w, reason, (2 if splits else 1) if w else None,
                          (3, 40, 12, 7)[k % 4] if w else None, mt,
                          seconds=(0.1 if ms is None else 10.0 / ms if k % 2 else 40.0 * ms),
                          breaks=(1 if splits else 0) if m.startswith(("dynamo", "torch.compile")) and w else None,
                          latency=latency, note=only("; ", "；").join(notes), warnings=warnings)
        for field, value in extra.items():  # a pair of texts reads in the table's language
            # a list of the row's own: one an answer changes must not change the next table's (nor a later check's:
            # the dressed rows' lists are made once per process)
            setattr(attempt, field, only(*value) if field in ("reason", "note") and isinstance(value, tuple)
                    else list(value) if isinstance(value, list) else value)
        attempts.append(attempt)
    label = second if isinstance(second, tuple) else _SECOND if second else ("given", "由调用者给出")
    return Comparison(name, inputs, only(*label), attempts,
                      lat(eager_ms, len(rows) if eager_once is None else eager_once,
                          iqr=(0.1, 0.39, 0.7, 0.02, 2.0, 5.0)[len(rows) % 6] if eager_iqr is None else eager_iqr))


def _PATHS() -> tuple[str, ...]:
    from ..viewers.compare import PATHS

    return tuple(PATHS)


def _allowed(constraint: str) -> tuple[str, ...]:
    """The paths a constraint allows, in PATHS order (``ALLOWED`` holds None for every path)."""
    return tuple(m for m in _PATHS() if ALLOWED[constraint] is None or m in ALLOWED[constraint])


#: eager's spread (over its median) and the example's shapes, varying from table to table
_EAGER_IQR = (0.1, 0.39, 0.7, 0.02, 2.0, 5.0, 0.0)
_INPUTS = ("tensor(4, 6)", "tensor(2, 3), True", "[tensor([0.1, 0.2, 0.3])], None", "tensor(1, 5)")  # as compare_capture writes them
_NAMES = ("a made-up model", "Router", "MLP", "Gate", "CharGPT", "MobileNetV2", "ResNet")  # the lab's and the lecture's models


#: per constraint, two paths it allows (the first a compiler's, the second TorchScript's or a capture's)
_PAIRS = {"fastest": ("torch.compile inductor", "torch.jit.trace"),
          "no compiler on target": ("torch.export.export", "torch.fx.symbolic_trace"),
          "no Python on target": ("export + IREE", "torch.jit.script"),
          CUSTOM: ("export + AOTInductor", "torch.jit.script")}


def _real_row_cases() -> list[tuple[str, list[tuple[str, bool, bool | None, float | None]], Any]]:
    """Rows 0.1% apart where one carries what real rows carry besides speed (a TracerWarning, graph
    breaks, Dynamo's skipped frame, no ops, a UserWarning, a noisy or long measurement), winning and
    losing, in both orders; the same pairs from 1.8 µs to 1.5 s per call and from 120 times faster
    than eager to 40 times slower; a sole allowed row 160 times slower than eager; a row that matched
    but was not timed; one-round and two-thread tables; a row far ahead of the rest; nine-row tables.
    Whatever an answer filters or rounds off besides the rule turns one of them."""
    cases = []
    for paths, says, fields in _decorations():
        for constraint, allowed in ALLOWED.items():
            pair = _PAIRS[constraint]
            marked = [p for p in paths if p in _allowed(constraint)] if paths else list(pair)
            for path in marked:
                other = pair[0] if path != pair[0] else pair[1]
                for fast, slow in ((path, other), (other, path)):
                    rows = [_Row(fast, True, True, 0.3, **({"says": says} | fields if fast == path else {})),
                            _Row(slow, True, True, 0.3003, **({"says": says} | fields if slow == path else {}))]
                    cases += [(constraint, rows, fast), (constraint, rows[::-1], fast)]
    for constraint, (one, other) in _PAIRS.items():
        for fast_ms, slow_ms, eager_ms in ((0.005, 0.005005, 0.009), (0.1, 0.1001, 8.0), (0.1, 0.1001, 12.0),
                                           (40.0, 40.04, 1.0), (60.0, 60.06, 80.0), (250.0, 250.25, 300.0),
                                           (0.0018, 0.0018018, 0.001), (1500.0, 1501.5, 1800.0),
                                           (0.00105, 0.00105105, 0.0012), (0.001, 0.001001, 2.5),
                                           (0.00107, 0.00107107, 0.00005), (0.15, 0.15015, 0.00005),
                                           (2500.0, 2502.5, 3000.0), (0.0005, 0.0005005, 0.0004),
                                           (0.001, 0.001001, 100.0), (1000.0, 1001.0, 0.001),
                                           (20000.0, 20020.0, 15000.0), (0.00003, 0.00003003, 0.00001),
                                           (1e8, 1.001e8, 1e9), (1e-6, 1.001e-6, 1e3), (1e3, 1.001e3, 1e-6)):
            for fast, slow in ((one, other), (other, one)):
                rows = [(fast, True, True, fast_ms), (slow, True, True, slow_ms), ("eager", True, True, eager_ms)]
                cases += [(constraint, rows, fast), (constraint, [rows[1], rows[0], rows[2]], fast)]
        cases.append((constraint, [(one, True, True, 0.5), (other, True, False, 0.0002), ("eager", True, True, 0.00005)],
                      one))
        cases.append((constraint, [(one, True, True, 250.0), (other, True, False, 0.5), ("eager", True, True, 1.0)],
                      one))
        # a row that matched but was not timed (compare_capture leaves one that fails when run again), beside
        # a timed one and alone; one round (no spread) and two threads, as compare_capture takes them
        untimed = (one, True, True, None)
        cases += [(constraint, [untimed, (other, True, True, 0.5)], other),
                  (constraint, [(other, True, True, 0.5), untimed], other),
                  (constraint, [untimed, (other, True, False, 0.2)], None)]
        for design in ({"rounds": 1}, {"threads": 2}, {"threads": 8}, {"rounds": 40}, {"rounds": 100}):
            eager = _Row("eager", True, True, 1.0, **design)
            cases += [(constraint, [(one, True, True, 0.3), (other, True, True, 0.3003), eager], one),
                      (constraint, [(one, True, True, 0.3003), (other, True, True, 0.3), eager], other)]
        # far ahead of the rest (not an outlier to drop), and a nine-row table won by its last or first row
        rest = [m for m in _allowed(constraint) if m not in (one, other)]
        cases.append((constraint, [(other, True, True, 0.9), (one, True, True, 0.05)]
                      + [(m, True, True, 1.0 + 0.1 * i) for i, m in enumerate(dict.fromkeys([rest[0], rest[-1]]))], one))
        nine = [(m, True, True, 0.9 - 0.05 * i) for i, m in enumerate(_PATHS())]
        best = _allowed(constraint)[-1]
        # and with one row failed: eager and eight timed rows are nine runners, so 18 rounds
        failed = [(m, w, mt, ms) if m != rest[0] else (m, False, None, None) for m, w, mt, ms in nine]
        cases += [(constraint, nine, best), (constraint, nine[::-1], best), (constraint, failed, best)]
    # every path the constraint allows timed while it differs from eager (a tiny difference, or a large one) or was
    # never checked, and fastest; a matching rival is the answer. A table with seven failed rows, two differing rows
    # and one right row
    for constraint, allowed in ALLOWED.items():
        for k, path in enumerate(_allowed(constraint)):
            rival = next(m for m in _PAIRS[constraint] if m != path)
            cases += [(constraint, [_Row(path, True, False, 0.1, reason=_DIFFERS[k % 2]), (rival, True, True, 0.5)], rival),
                      (constraint, [(rival, True, True, 0.5), _Row(path, True, False, 0.1, reason=_TINY)], rival),
                      (constraint, [(rival, True, True, 0.5), (path, True, None, 0.1)], rival)]
        many = [(m, False, None, None) for m in _PATHS()[:7]]
        winner = _PAIRS[constraint][0]
        cases.append((constraint, [row for row in many if row[0] != winner]
                      + [(m, True, False, 0.01) for m in _PATHS()[7:] if m != winner] + [(winner, True, True, 0.8)], winner))
    # each allowed winner with every other path in one state (all failed, all differing and faster, all never
    # checked, all matched but untimed): another row's outcome says nothing about the winner's. Each path alone,
    # differing and timed (no fallback to it when nothing fits). Winners whose speed-up is near 1
    for constraint, allowed in ALLOWED.items():
        for path in _allowed(constraint):
            others = [m for m in _PATHS() if m != path]
            for state in ((False, None, None), (True, False, 0.05), (True, None, None), (True, True, None)):
                cases.append((constraint, [(m, *state) for m in others] + [(path, True, True, 0.5)], path))
            cases.append((constraint, [(path, True, False, 0.1)], None))
            rival = next(m for m in _PAIRS[constraint] if m != path)
            for near in (0.97, 0.999, 1.001, 1.02, 1.08):
                cases += [(constraint, [(path, True, True, 1.0 / near), (rival, True, True, 1.3)], path),
                          (constraint, [(path, True, True, 1.0 / near)], path)]
    # corners of time per call against speed-up: 0.5 µs, 2 ms and 2 s per call, each 1000 times slower than eager,
    # 3 times faster and 500 times faster
    for constraint, (one, other) in _PAIRS.items():
        for ms in (0.0002, 0.0005, 2.0, 2000.0):
            for speedup in (0.001, 3.0, 500.0):
                eager = ("eager", True, True, ms * speedup)
                cases += [(constraint, [(one, True, True, ms), (other, True, True, ms * 1.5), eager], one),
                          (constraint, [(one, True, True, ms * 1.5), (other, True, True, ms), eager], other)]
    # every path winning while 100 times slower than eager and while 100 times faster, and 10,000 times ahead of
    # the next row: a rule of thumb about one path's speed ("fullgraph=True slower than eager went wrong")
    for constraint, allowed in ALLOWED.items():
        for path in _allowed(constraint):
            rival = next(m for m in _PAIRS[constraint] if m != path)
            cases += [(constraint, [(path, True, True, 100.0), (rival, True, True, 100.1), ("eager", True, True, 1.0)], path),
                      (constraint, [(rival, True, True, 0.0101), (path, True, True, 0.01), ("eager", True, True, 1.0)], path),
                      (constraint, [(path, True, True, 0.001), (rival, True, True, 10.0), ("eager", True, True, 1.0)], path),
                      (constraint, [(path, True, True, 1e4), (rival, True, True, 1.001e4), ("eager", True, True, 1.0)], path),
                      (constraint, [(rival, True, True, 1.001e-6), (path, True, True, 1e-6), ("eager", True, True, 10.0)], path),
                      (constraint, [(path, True, True, 1e-6), (rival, True, True, 10.0), ("eager", True, True, 1.0)], path)]
            for design in ({"rounds": 1}, {"threads": 8}, {"rounds": 100}):
                cases.append((constraint, [(rival, True, True, 0.3003), (path, True, True, 0.3),
                                           _Row("eager", True, True, 1.0, **design)], path))
            cases.append((constraint, [(path, True, True, None), (rival, True, True, 0.5),
                                       (next(m for m in _PATHS() if m not in (path, rival)), False, None, None)], rival))
    # twins that print alike (to_text(timings=True)): the same model, inputs, language, capture times and spreads,
    # the two rows' times swapped 0.4% apart; a cache keyed by the printout answers the second as the first
    same = {"name": "Router", "inputs": "tensor(4, 6)", "second": False, "eager_iqr": 0.1, "eager_once": 0}
    for constraint, (one, other) in _PAIRS.items():
        for lang in ("en", "zh"):
            eager = _Row("eager", True, True, 1.0, lang=lang, **same)
            cases += [(constraint, [_Row(one, True, True, 1.0, seconds=5.0), _Row(other, True, True, 1.004, seconds=5.0),
                                    eager], one),
                      (constraint, [_Row(one, True, True, 1.004, seconds=5.0), _Row(other, True, True, 1.0, seconds=5.0),
                                    eager], other)]
    # Inductor that skipped the frame (compiled nothing) is still refused without a compiler
    skipped = dict(reason=_SKIPPED, graphs=0, ops=0, breaks=0, says=("0 graphs, 0 ops: Dynamo skipped the frame",
                                                                     "0 个计算图、0 个算子：Dynamo 跳过了这一帧"))
    cases.append(("no compiler on target", [_Row("torch.compile inductor", True, True, 0.005, **skipped),
                                            ("torch.export.export", True, True, 0.04), ("eager", True, True, 0.0012)],
                  "torch.export.export"))
    # Dynamo's fullgraph=True row untimed beside fullgraph=False, at the scale of a model with no ops
    for constraint in ("fastest", "no compiler on target"):
        cases.append((constraint, [("dynamo fullgraph=True", True, True, None),
                                   _Row("dynamo fullgraph=False", True, True, 0.007, reason=_SKIPPED, graphs=0, ops=0,
                                        breaks=0, says=("0 graphs, 0 ops: Dynamo skipped the frame",
                                                        "0 个计算图、0 个算子：Dynamo 跳过了这一帧")),
                                   ("eager", True, True, 0.0008)], "dynamo fullgraph=False"))
    return cases


def _recorded_cases() -> list[tuple[str, list[tuple[str, bool, bool | None, float | None]], Any]]:
    """Each real row recorded by ``_lab13_record`` (a model that prints, calls .item(), warns, branches,
    has no ops, takes integers …), timed a hair ahead of a plain rival and a hair behind it, under a
    constraint that allows it (in turn), in the table it came from's second-input label."""
    import json

    from ._lab13_record import RECORDED

    cases = []
    for k, rec in enumerate(json.loads(RECORDED.read_text(encoding="utf-8"))):
        method = rec["method"]
        fits = [c for c in ALLOWED if method in _allowed(c)]
        constraint = fits[k % len(fits)]
        pair = _PAIRS[constraint]
        rival = pair[0] if method != pair[0] else pair[1]
        fields = {f: tuple(rec[f]) if isinstance(rec[f], list) and f in ("reason", "note") else rec[f]
                  for f in ("reason", "note", "warnings", "graphs", "ops", "breaks", "seconds")}
        reason = rec["reason"]
        says = (f"a real row: {rec['graphs']} graph(s), {rec['breaks'] or 0} break(s), {rec['ops']} ops, "
                f"{len(rec['warnings'])} warning(s), reason {reason[0][:60]!r}",
                f"一行实测记录：{rec['graphs']} 个计算图、{rec['breaks'] or 0} 处图中断、{rec['ops']} 个算子、"
                f"{len(rec['warnings'])} 条警告，原因 {reason[1][:60]!r}")
        eager = _Row("eager", True, True, 1.0, second=tuple(rec["second"]))
        ahead = [_Row(method, True, True, 0.3, says=says, **fields), (rival, True, True, 0.3003), eager]
        behind = [_Row(method, True, True, 0.3003, says=says, **fields), (rival, True, True, 0.3), eager]
        cases += [(constraint, ahead, method), (constraint, [ahead[1], ahead[0], eager], method),
                  (constraint, behind if k % 2 else [behind[1], behind[0], eager], rival)]
    return cases


def _drawn_cases(count: int = 150, seed: int = 1313) -> list[tuple[str, list[Any], Any]]:
    """Tables drawn at random (seeded), each asked under every constraint, then its twin (the same times, its
    fastest right row now differing or failed): 1 to 9 rows in any order, each in any state (failed, never
    checked, differing timed or untimed, matching timed or untimed), most rows of a table often in one state; times over eight orders of magnitude, eager anywhere among them; one
    round or many, one thread or several, a calm or a noisy eager; rows that carry what real rows carry.
    The answer is the rule's (fastest among rows that worked, matched and are allowed). A rule that reads
    anything else (how many rows failed, differ or went unchecked, how noisy eager is, how far apart the
    rows are, which model) turns some of them."""
    import random

    rng = random.Random(seed)
    states = [(False, None, False), (True, None, False), (True, False, True), (True, False, False),
              (True, True, False), (True, True, True)]  # (worked, matches, timed)
    decorations = _decorations()
    designs = ({}, {"rounds": 1}, {"threads": 2}, {"rounds": 100}, {"eager_iqr": 12.0}, {"eager_iqr": 40.0},
               {"eager_iqr": 0.0}, {"threads": 8, "eager_iqr": 6.0})
    cases = []
    for _ in range(count):
        paths = rng.sample(_PATHS(), rng.randint(1, 9))
        # times a hair or more apart (0.35% at least), so exactly one row is fastest
        times = sorted(float(f"{10 ** rng.uniform(-4, 4):.4g}") for _ in paths)  # as a reader would type them
        for k in range(1, len(times)):
            times[k] = max(times[k], float(f"{times[k - 1] * 1.004:.4g}"))
        rng.shuffle(times)
        mood = rng.choice(states)  # the state most rows of this table are in
        rows: list[Any] = []
        for m, ms in zip(paths, times):
            worked, matches, timed = mood if rng.random() < 0.55 else rng.choice(states)
            fits = [(says, fields) for where, says, fields in decorations if where is None or m in where]
            says, fields = rng.choice(fits) if worked and fits and rng.random() < 0.4 else (("", ""), {})
            rows.append(_Row(m, worked, matches, ms if timed else None, says=says, **fields))
        eager = _Row("eager", True, True, float(f"{10 ** rng.uniform(-4, 4):.4g}"), **rng.choice(designs))
        tables = [rows + [eager]]
        # and a twin with the same times where the fastest row that fits "fastest" now differs from eager (still
        # timed) or failed: an answer that remembers tables by their times, not their rows, answers it as before
        fit = [(ms, k) for k, (m, w, mt, ms) in enumerate(rows) if w and mt and ms is not None]
        if fit:
            k = min(fit)[1]
            m, _, _, ms = rows[k]
            twin = list(rows)
            twin[k] = _Row(m, True, False, ms, reason=_DIFFERS[k % 2]) if rng.random() < 0.7 else _Row(m, False, None, None)
            tables.append(twin + [eager])
        for table in tables:
            cases += [(constraint, table, _rule(table, constraint)) for constraint in ALLOWED]
    return cases


def _choice_cases() -> list[tuple[str, list[tuple[str, bool, bool | None, float | None]], Any]]:
    """(constraint, rows, right answer). Capture time (``seconds``) runs against speed on purpose."""
    a = [("torch.jit.trace", True, False, None), ("torch.jit.script", True, True, 0.8),
         ("torch.fx.symbolic_trace", False, None, None), ("dynamo fullgraph=True", True, True, 0.9),
         ("dynamo fullgraph=False", True, True, 0.95), ("torch.export.export", True, True, 0.85),
         ("torch.compile inductor", True, True, 0.2), ("export + AOTInductor", True, True, 0.3),
         ("export + IREE", True, True, 0.5)]
    b = [("torch.jit.trace", True, True, 0.4), ("torch.jit.script", False, None, None),
         ("torch.fx.symbolic_trace", True, True, 0.9), ("dynamo fullgraph=True", False, None, None),
         ("dynamo fullgraph=False", True, True, 0.7), ("torch.export.export", False, None, None),
         ("torch.compile inductor", True, True, 0.6), ("export + AOTInductor", False, None, None),
         ("export + IREE", False, None, None)]
    c = [("torch.jit.trace", True, False, None), ("torch.jit.script", False, None, None),
         ("torch.fx.symbolic_trace", False, None, None), ("dynamo fullgraph=True", False, None, None),
         ("dynamo fullgraph=False", True, True, 0.9), ("torch.export.export", False, None, None),
         ("torch.compile inductor", True, True, 0.3), ("export + AOTInductor", False, None, None),
         ("export + IREE", False, None, None)]
    d = [("torch.jit.script", True, True, 0.9), ("export + AOTInductor", True, True, 0.4),
         ("export + IREE", True, True, 0.2), ("torch.compile inductor", True, True, 0.1)]
    # e-g: each path a constraint allows wins somewhere, and each one it refuses is the fastest somewhere;
    # f and g time a row that differs from eager, so speed alone without the two filters is caught
    e = [("torch.jit.trace", True, True, 0.6), ("torch.jit.script", True, True, 0.5),
         ("torch.fx.symbolic_trace", True, True, 0.1), ("dynamo fullgraph=True", True, True, 0.05),
         ("dynamo fullgraph=False", True, True, 0.3), ("torch.export.export", True, True, 0.2),
         ("torch.compile inductor", False, None, None), ("export + AOTInductor", True, True, 0.4),
         ("export + IREE", False, None, None)]
    f = [("torch.jit.trace", True, False, 0.05), ("torch.jit.script", True, True, 0.3),
         ("torch.fx.symbolic_trace", True, True, 0.15), ("torch.export.export", True, True, 0.25),
         ("export + AOTInductor", False, None, None), ("export + IREE", True, True, 0.7)]
    g = [("torch.jit.script", True, True, 0.6), ("torch.export.export", True, True, 0.1),
         ("export + AOTInductor", True, True, 0.35), ("dynamo fullgraph=False", True, False, 0.02)]
    # h-k: script the only right row, slower than eager (no Python on target still needs it); script fastest
    # without a compiler; IREE, fullgraph=False and AOTInductor fastest of all
    h = [("torch.jit.script", True, True, 2.0), ("torch.jit.trace", True, False, 0.5),
         ("torch.compile inductor", False, None, None)]
    i = [("torch.jit.script", True, True, 0.3), ("torch.compile inductor", True, True, 0.1),
         ("export + AOTInductor", True, True, 0.5)]
    j = [("export + IREE", True, True, 0.1), ("torch.compile inductor", True, True, 0.5),
         ("dynamo fullgraph=False", True, True, 0.2)]
    k = [("dynamo fullgraph=False", True, True, 0.2), ("torch.compile inductor", True, False, 0.1),
         ("export + AOTInductor", True, True, 0.25)]
    m = [("export + AOTInductor", True, True, 0.2), ("torch.compile inductor", True, True, 0.4),
         ("torch.jit.script", True, True, 0.3)]
    # o, o2: two rows whose speed-ups share an integer part, the faster with the wider spread (median + IQR/2
    # ranks them the other way); o2 has o's rows with the times swapped
    o = [("torch.compile inductor", True, False, 0.1), ("torch.jit.script", True, True, 0.3),
         ("export + AOTInductor", True, True, 0.33)]
    o2 = [("torch.compile inductor", True, False, 0.1), ("torch.jit.script", True, True, 0.33),
          ("export + AOTInductor", True, True, 0.3)]
    # z, z2: nothing qualifies for "fastest" / "no compiler on target" (z2 only for the latter)
    z = [("torch.jit.trace", True, False, 0.2), ("torch.jit.script", False, None, None),
         ("torch.compile inductor", False, None, None)]
    z2 = [("torch.jit.script", False, None, None), ("torch.compile inductor", True, True, 0.3)]
    # r: speed-ups 2.0 and 2.004, 0.2% apart (alike at two decimals); q: three
    # rows equally fast, only one of them right and allowed
    r = [("torch.jit.script", True, True, 0.5), ("export + AOTInductor", True, True, 0.499)]
    q = [("torch.compile inductor", True, True, 0.3), ("torch.jit.trace", True, False, 0.3),
         ("export + AOTInductor", True, True, 0.3)]
    # r2, q2: r and q with the rows the other way round (whichever of two alike rows an answer keeps, one
    # of the pair is caught); w1-w3: IREE, trace and script each win by a few per cent (a path weighted
    # down, against "the rule reads speed alone")
    r2, q2 = list(reversed(r)), list(reversed(q))
    r3 = [("torch.jit.script", True, True, 0.499), ("export + AOTInductor", True, True, 0.5)]  # the earlier path wins
    w1 = [("export + AOTInductor", True, True, 0.3), ("torch.compile inductor", True, True, 0.31),
          ("export + IREE", True, True, 0.29)]
    w2 = [("torch.jit.trace", True, True, 0.48), ("torch.compile inductor", True, True, 0.5)]
    w3 = [("torch.jit.script", True, True, 0.3), ("export + AOTInductor", True, True, 0.31)]
    # under each constraint, every path it allows a hair (0.1%) faster than every other it allows, listed first
    # and second: a weight on a path, a bonus, or a swap of one path for another turns one of them;
    # s2: two rows that qualify, both slower than eager
    hair = [(constraint, pair, winner) for constraint, allowed in ALLOWED.items()
            for winner in _allowed(constraint) for other in _allowed(constraint) if other != winner
            for pair in ([(winner, True, True, 0.3), (other, True, True, 0.3003)],
                         [(other, True, True, 0.3003), (winner, True, True, 0.3)])]
    # and every ordered pair with the winner 3 and 100 times faster than the other ("a trace that beats script by
    # that much must have skipped work")
    hair += [(constraint, [(other, True, True, 0.9), (winner, True, True, 0.9 / lead)], winner)
             for constraint, allowed in ALLOWED.items()
             for winner in _allowed(constraint) for other in _allowed(constraint) if other != winner for lead in (3, 100)]
    s2 = [("export + AOTInductor", True, True, 3.0), ("torch.jit.script", True, True, 2.0)]
    # one-row tables (a failed row, a differing row, a row the constraint refuses), a row captured but never
    # checked against eager (matches None, untimed, as compare_capture leaves one whose check failed), one
    # allowed row refused by the constraint next to a differing one, and a row five times slower than eager
    one = [("fastest", [("torch.jit.script", False, None, None)], None),
           ("fastest", [("torch.jit.trace", True, False, None)], None),
           ("no Python on target", [("torch.compile inductor", True, True, 0.2)], None),
           ("fastest", [("torch.compile inductor", True, True, 0.2)], "torch.compile inductor"),
           ("no Python on target", [("export + AOTInductor", True, None, None)], None),
           ("fastest", [("export + AOTInductor", True, None, None), ("torch.jit.script", True, True, 0.5)],
            "torch.jit.script"),
           (CUSTOM, [("torch.jit.trace", True, False, None), ("torch.compile inductor", True, True, 0.2)], None),
           ("no compiler on target", [("torch.jit.script", True, False, None), ("torch.compile inductor", True, True, 0.2)],
            None),
           ("no Python on target", [("export + IREE", True, True, 5.0)], "export + IREE")]
    hair += one
    # rows ten times slower than eager, 0.1% apart (an absolute tolerance on the speed-up), and a sole allowed
    # row thirty times slower than eager (a floor on the speed-up)
    for constraint, one_path, other_path in (("no Python on target", "torch.jit.script", "export + AOTInductor"),
                                             ("no compiler on target", "torch.fx.symbolic_trace", "dynamo fullgraph=False")):
        hair += [(constraint, [(one_path, True, True, 0.3003), (other_path, True, True, 0.3), ("eager", True, True, 0.03)],
                  other_path),
                 (constraint, [(one_path, True, True, 0.3), (other_path, True, True, 0.3003), ("eager", True, True, 0.03)],
                  one_path)]
    hair.append(("no Python on target", [("export + IREE", True, True, 0.9), ("torch.compile inductor", True, True, 0.02),
                                         ("eager", True, True, 0.03)], "export + IREE"))
    # at the scale of a small model (eager 30 µs), rows 0.023 µs apart, both orders: an absolute tolerance on
    # the times ("timer noise") that a table in milliseconds would not show
    for constraint, one_path, other_path in (("fastest", "torch.jit.trace", "torch.compile inductor"),
                                             ("no Python on target", "torch.jit.script", "export + AOTInductor"),
                                             ("no compiler on target", "torch.fx.symbolic_trace", "torch.export.export"),
                                             (CUSTOM, "torch.jit.trace", "export + AOTInductor")):
        for first, second in ((one_path, other_path), (other_path, one_path)):
            hair += [(constraint, [(first, True, True, 0.023023), (second, True, True, 0.023),
                                   ("eager", True, True, 0.03)], second),
                     (constraint, [(first, True, True, 0.023), (second, True, True, 0.023023),
                                   ("eager", True, True, 0.03)], first)]
    hair += [("no Python on target", s2, "torch.jit.script"), ("no Python on target", s2[::-1], "torch.jit.script")]
    # n: eager at 20 ms, rows of 9 and 12 ms (compared as text, "12 ± …" sorts before "9 ± …")
    n = [("torch.jit.script", True, True, 9.0), ("export + AOTInductor", True, True, 12.0), ("eager", True, True, 20.0)]
    later = [("no Python on target", h, "torch.jit.script"), ("fastest", h, "torch.jit.script"),
             ("no compiler on target", i, "torch.jit.script"), ("no Python on target", i, "torch.jit.script"),
             ("fastest", i, "torch.compile inductor"), ("fastest", j, "export + IREE"),
             ("fastest", k, "dynamo fullgraph=False"), ("no Python on target", k, "export + AOTInductor"),
             ("fastest", m, "export + AOTInductor"), ("no compiler on target", m, "export + AOTInductor")]
    # the custom op: each of its three paths wins somewhere; IREE, the fastest file without Python in d and j,
    # is refused; e's fastest capture and h's script slower than eager
    custom = [(CUSTOM, a, "export + AOTInductor"), (CUSTOM, b, "torch.jit.trace"), (CUSTOM, c, None),
              (CUSTOM, d, "export + AOTInductor"), (CUSTOM, e, "export + AOTInductor"),
              (CUSTOM, f, "torch.jit.script"), (CUSTOM, h, "torch.jit.script"), (CUSTOM, j, None),
              ("no Python on target", n, "torch.jit.script"), ("fastest", n, "torch.jit.script"),
              ("no compiler on target", h, "torch.jit.script"), ("no Python on target", o, "torch.jit.script"),
              (CUSTOM, o, "torch.jit.script"), ("no Python on target", o2, "export + AOTInductor"),
              (CUSTOM, o2, "export + AOTInductor"), ("fastest", z, None), ("no compiler on target", z, None),
              ("no compiler on target", z2, None), ("fastest", z2, "torch.compile inductor"),
              # rows a few per cent apart before rows 0.2% apart: a tolerance is shown a clear case first
              ("no Python on target", w1, "export + IREE"), ("fastest", w1, "export + IREE"),
              ("fastest", w2, "torch.jit.trace"), ("no compiler on target", w2, "torch.jit.trace"),
              ("no Python on target", w3, "torch.jit.script"), (CUSTOM, w3, "torch.jit.script"),
              ("no Python on target", r, "export + AOTInductor"), ("fastest", r, "export + AOTInductor"),
              ("no compiler on target", q, "export + AOTInductor"), ("no Python on target", q, "export + AOTInductor"),
              ("no Python on target", r2, "export + AOTInductor"), ("fastest", r2, "export + AOTInductor"),
              ("no Python on target", r3, "torch.jit.script"), (CUSTOM, r3[::-1], "torch.jit.script"),
              ("no compiler on target", q2, "export + AOTInductor"), ("no Python on target", q2, "export + AOTInductor"),
              ] + hair + _real_row_cases() + _recorded_cases()
    return [("no compiler on target", a, "export + AOTInductor"), ("no Python on target", a, "export + AOTInductor"),
            ("fastest", a, "torch.compile inductor"), ("no compiler on target", b, "torch.jit.trace"),
            ("no Python on target", b, "torch.jit.trace"), ("fastest", b, "torch.jit.trace"),
            ("no compiler on target", c, "dynamo fullgraph=False"), ("no Python on target", c, None),
            ("fastest", c, "torch.compile inductor"), ("no compiler on target", d, "export + IREE"),
            ("no Python on target", d, "export + IREE"), ("fastest", d, "torch.compile inductor"),
            ("no compiler on target", e, "dynamo fullgraph=True"), ("no Python on target", e, "export + AOTInductor"),
            ("fastest", e, "dynamo fullgraph=True"), ("no compiler on target", f, "torch.fx.symbolic_trace"),
            ("no Python on target", f, "torch.jit.script"), ("fastest", f, "torch.fx.symbolic_trace"),
            ("no compiler on target", g, "torch.export.export"), ("no Python on target", g, "export + AOTInductor"),
            ("fastest", g, "torch.export.export")] + later + custom


@task("lab13.3", "choose a path for a constraint", "按约束选择路径", hints=[
    ("Three filters before you compare speeds: did the row work, does it match eager, does the constraint "
     "allow the path? Speed is the comparison's speedup(), not the capture time.",
     "比较速度之前先过三道筛选：这一行成功了吗？与 eager 一致吗？约束允许这条路径吗？"
     "速度看 Comparison 的 speedup()，而不是捕获用时。"),
    ("Lecture 13, section 5 'Which tool when': the guide reads its answer off the measured rows, and a "
     "row that fails or differs from eager is never an answer.",
     "第 13 讲第 5 节“什么时候用哪个工具”：指南的答案是从测得的各行中读出来的，失败或与 eager 不一致的行永远不是答案。"),
    ("The C++ custom op: which files call an op by name and find its kernel in a library loaded beside them? "
     "Lecture 11, sections 5 and 8; and what does the MLIR route do with an op it has never seen?",
     "C++ 自定义算子：哪些文件按名字调用算子，并在与它们一同加载的库里找到它的内核（见第 11 讲第 5 节和第 8 节）？另外，"
     "MLIR 路线遇到一个它从未见过的算子时又会怎样？"),
], time_limit=300)  # some 8,000 calls: an answer that pretty-prints every row it reads still finishes on a busy machine
def _check_choose(answer: Any) -> None:
    need_callable(answer, "choose")
    from ..viewers.compare import Comparison

    from ..viewers._latency import Latency
    from ..viewers.compare import Attempt

    # one table per list of rows, asked about each of its constraints in turn, all kept alive during the
    # check (no later table gets a used id)
    tables: dict[int, Any] = {}
    classes = {cls: dict(vars(cls)) for cls in (Comparison, Attempt, Latency)}
    cases = _choice_cases()
    sunk: dict[tuple[int, Any], list[list[Any]]] = {}  # each rows list's dressed variants per winner, made once
    turns: collections.Counter[Any] = collections.Counter()
    for constraint, rows, right in list(cases):
        if (id(rows), right) not in sunk:  # each path's winners take the vocabulary's slices in turn
            sunk[id(rows), right] = _sunk(rows, right, turns[right])
            turns[right] += 1
        cases += [(constraint, variant, right) for variant in sunk[id(rows), right]]
    cases += _drawn_cases()

    def build(rows: list[Any], k: int) -> Any:
        """The ``k``-th table made: a real table's text is in the language it was made in (English and
        中文 ones alternate), and some carry compare_capture's own label for its default second input."""
        eager_ms = next((ms for m, _, _, ms in rows if m == "eager"), 1.0)
        design = dict(next((getattr(row, "extra", {}) for row in rows if row[0] == "eager"), {}))
        with _language(design.pop("lang", ("en", "zh")[k % 2])):
            return _table([row for row in rows if row[0] != "eager"], eager_ms,
                          **({"second": k % 3 == 1, "eager_iqr": _EAGER_IQR[k % 7], "eager_once": k % 6,
                              "inputs": _INPUTS[k % 4], "name": _NAMES[k % 7]} | design))

    # per constraint and right answer, the first call answered right (asked again when a later one is wrong)
    first: dict[tuple[str, Any], tuple[list[Any], int]] = {}
    # each table's state as the checker made it, taken once: a call that changes it ends the check
    states: dict[int, tuple] = {}
    # one quiet block for every call (what the answer warns, logs or writes to stderr is dropped, as before);
    # entering it per call was a third of the check's time
    with quiet():
        for call, (constraint, rows, right) in enumerate(cases, 1):
            _ask_one(answer, call, len(cases), constraint, rows, right, tables, states, first, build, classes)


def _ask_one(answer: Any, call: int, calls: int, constraint: str, rows: list[Any], right: Any,
             tables: dict[int, Any], states: dict[int, tuple], first: dict[tuple[str, Any], tuple[list[Any], int]],
             build: Any, classes: dict[type, dict[str, Any]]) -> None:
    """Call ``call`` of the check: ``answer(constraint, table)`` on the table made for ``rows``, judged
    against ``right``; returns when the answer is right, raises :class:`Wrong` with its feedback when not."""
    from ..viewers.compare import Attempt

    eager_ms = next((ms for m, _, _, ms in rows if m == "eager"), 1.0)
    design = next((getattr(row, "extra", {}) for row in rows if row[0] == "eager"), {})
    if id(rows) not in tables:
        tables[id(rows)] = (rows, build(rows, len(tables)), len(tables))
    asked = tables[id(rows)]
    table = asked[1]
    rows = [row for row in rows if row[0] != "eager"]
    before = states.get(id(table))
    if before is None:
        before = states[id(table)] = _table_state(table)

    spread = f"{table.eager.iqr * 1e3:.3g}"  # eager's IQR, which an answer may read

    def timed(ms: float | None, en: bool) -> str:
        # :.10g: a time made by arithmetic (0.003 * 3) shows as 0.009, not 0.009000000000000001
        return "" if ms is None else (f" ({ms:.10g} ms)" if en else f"（{ms:.10g} 毫秒）")

    def carries(row: Any, en: bool) -> str:
        says = getattr(row, "says", ("", ""))[0 if en else 1]
        return "" if not says else (f" ({says})" if en else f"（{says}）")

    def describe() -> tuple[str, str]:
        """The call, in words (made only when the feedback needs it: most calls are answered right)."""
        listing = "; ".join(f"{m}: " + ("failed" if not w else "not checked against eager" if mt is None
                                        else "differs from eager" + timed(ms, True) if not mt else "matched, not timed" if ms is None
                                        else f"{ms:.10g} ms")
                            + carries(row, True) for row in rows for m, w, mt, ms in [row])
        listing_zh = "；".join(f"{m}：" + ("失败" if not w else "没有与 eager 对照" if mt is None
                                          else "与 eager 不一致" + timed(ms, False) if not mt else "与 eager 一致，未计时" if ms is None
                                          else f"{ms:.10g} 毫秒")
                               + carries(row, False) for row in rows for m, w, mt, ms in [row])
        rounds = design.get("rounds")
        how = ("".join([f" ({rounds} round{'s' if rounds != 1 else ''})" if rounds else "",
                        f" ({design['threads']} threads)" if "threads" in design else ""]),
               "".join([f"（{rounds} 轮）" if rounds else "", f"（{design['threads']} 个线程）" if "threads" in design else ""]))
        return (f"call {call} of {calls}: choose({constraint!r}, table) with eager at {eager_ms:g} ms (IQR {spread} ms)"
                f"{how[0]} and rows {listing}", f"第 {call}/{calls} 次调用：choose({constraint!r}, table)，eager 为 "
                f"{eager_ms:g} 毫秒（IQR {spread} 毫秒）{how[1]}，"
                f"各行：{listing_zh}")

    try:  # the check's quiet block is around every call
        got = answer(constraint, table)
    except Exception:
        with trying(describe()):  # the feedback names the call that raised
            raise
    changed = []
    for cls, methods in classes.items():
        names = [k for k in set(methods) | set(vars(cls)) if vars(cls).get(k) is not methods.get(k)
                 and k != "__slotnames__"]  # a cache copyreg fills on the first copy.copy
        for k in names:  # put the class back before anything else uses it
            if k in methods:
                setattr(cls, k, methods[k])
            else:
                delattr(cls, k)
        changed += [f"{cls.__name__}.{k}" for k in sorted(names)]
    if changed:
        raise Wrong(f"Your function changed a class of the library ({', '.join(changed)}); only read the table.",
                    f"你的函数修改了库中的类（{'、'.join(changed)}）；只能读取表格。", tried=describe())
    try:
        after = _table_state(table)
    except Exception:  # table.rows set to None, a row replaced by a string …: no longer a table to read
        raise Wrong("Your function changed the table it was given so that it can no longer be read as one (table.rows "
                    "or a row replaced by something else). Only read it: build what you need from new lists.",
                    "你的函数修改了传入的表格，使它再也不能当作表格读取（table.rows 或某一行被换成了别的东西）。"
                    "只能读取：需要什么就用新的列表去构建。", tried=describe()) from None
    if after != before:
        parts = (("table.rows (their order or which rows)", "table.rows（行的顺序或包含哪些行）"),
                 ("the fields or attributes of a row", "某一行的字段或属性"),
                 ("an attribute of the table (table.eager, table.speedup …)",
                  "表格的属性（table.eager、table.speedup 等）"))
        kept = {i: fields for i, fields in after[1]}  # rows taken out are not rows whose fields changed
        # a row put in place of another (a copy with a field changed) changes fields; one only added does not
        fields_changed = any(kept.get(i, fields) != fields for i, fields in before[1]) or \
            (any(i not in dict(before[1]) for i in kept) and any(i not in kept for i, _ in before[1]))
        what = [part for n, (part, b, a) in enumerate(zip(parts, before, after))
                if a != b and (n != 1 or fields_changed)]
        names = _changed_attributes(before[2], after[2])
        if names and parts[2] in what:  # name the attributes set, replaced or removed
            what[what.index(parts[2])] = (f"an attribute of the table ({', '.join(names)})",
                                          f"表格的属性（{'、'.join(names)}）")
        if before[0] != after[0]:  # the rows themselves, their order or which
            advice = ("Only read it: sort or filter a new list (sorted(table.rows, ...)); copy.copy(table) shares "
                      "its rows.", "只能读取，不要修改：要排序或筛选，请生成一个新列表（sorted(table.rows, ...)）；"
                      "copy.copy(table) 与原表共用同一个行列表。")
        else:  # a row's fields, or the table's attributes
            advice = ("Only read it: do not change a row or the table, by assigning or by editing a list they hold "
                      "(they are the caller's; copy.deepcopy(table) gives rows of your own).",
                      "只能读取：不要改动某一行或表格，无论是给它赋值，还是修改它所持有的列表"
                      "（它们属于调用者；copy.deepcopy(table) 会连同各行复制出一份完全属于你的表格）。")
        raise Wrong(f"Your function changed the table it was given: {', '.join(en for en, _ in what)}. "
                    + advice[0], f"你的函数修改了传入的表格：{'、'.join(zh for _, zh in what)}。" + advice[1],
                    tried=describe())
    if got is not None and not isinstance(got, str):
        row_given = isinstance(got, Attempt)
        position = isinstance(got, (int, np.integer)) and not isinstance(got, bool)
        raise Wrong("choose must return a path name (a string from PATHS) or None"
                    + ("; for a row, return row.method." if row_given
                       else "; return the name itself, not its index (for a row at position i of table.rows, "
                            "table.rows[i].method)." if position else "."),
                    "choose 必须返回一个路径名（PATHS 中的字符串）或 None"
                    + ("；你返回的是一行，请改为返回它的 row.method。" if row_given
                       else "；请返回名字本身，而不是它的下标（如果是 table.rows 中位置 i 的那一行，就返回 "
                            "table.rows[i].method）。" if position else "。"),
                    tried=describe(), got=described(got))
    if got is not None:
        got = str.__str__(got)  # numpy's str_ reads as its text; a str subclass cannot compare equal to anything
    if got.strip().lower() == "none" if got is not None else False:
        raise Wrong(f"You returned the string {got!r}; return the value None when no row qualifies.",
                    f"你返回的是字符串 {got!r}；没有符合条件的行时，应返回值 None。", tried=describe(),
                    expected=repr(right), got=repr(got))
    if got == "" and right is None:
        raise Wrong("No path of this table fits, and then the answer is None, not an empty string.",
                    "这张表里没有符合条件的路径，这时答案是 None，而不是空字符串。", tried=describe(),
                    expected="None", got=repr(got))
    if got == right:
        first.setdefault((constraint, right), (asked[0], asked[2]))
        return
    tried = describe()
    row = {m: (w, mt) for m, w, mt, _ in rows}.get(got) if got is not None else None
    unless_state = None  # what the feedback says of state when asking again does not show it
    if got is not None and got not in row_names(rows) and got.strip().lower() in {m.lower() for m in row_names(rows)}:
        en, zh = ("Your choice is a row's name written differently: return row.method exactly (case and spaces count).",
                  "你选的路径名和表中一行的名字写法不同：请原样返回 row.method（大小写和空格都算）。")
    elif got == "eager":
        en, zh = ("'eager' is what every row is compared with (table.eager), not a path to choose: return a row's "
                  "method, or None when no row fits.", "'eager' 是各行用来对比的基准（table.eager），不是可选的路径："
                  "请返回某一行的 method；没有符合条件的行时返回 None。")
    elif got is not None and got not in row_names(rows):
        en, zh = ("Your choice is not a row of this table: return a row's method.", "你选的路径不在这张表里：请返回某一行的 method。")
        unless_state = (" A function that reads only this table's rows cannot return it: look for a name taken by "
                        "position (PATHS[i], zip(PATHS, table.rows)) instead of row.method, or something kept from an "
                        "earlier call (a cache, a global).", "只读取这张表各行的函数不可能返回它：请检查是否按位置取了名字"
                        "（PATHS[i]、zip(PATHS, table.rows)）而不是用 row.method，或者保留了之前调用的东西（缓存或全局变量）。")
    elif row is not None and not row[0]:
        en, zh = ("Your choice failed on this model: a path that failed is never an answer.",
                  "你选的路径在这个模型上失败了：失败的路径不能作为答案。")
    elif row is not None and row[1] is None:
        en, zh = ("Your choice was captured but never checked against eager (matches is None): only a row that "
                  "matched is an answer.", "你选的路径捕获成功，但没有与 eager 对照过（matches 为 None）：只有与 eager 一致的行才可能是答案。")
    elif row is not None and not row[1]:
        en, zh = ("Your choice runs but differs from eager on this model: a wrong result is never an answer.",
                  "你选的路径能运行，但在这个模型上与 eager 不一致：结果错误的路径永远不能作为答案。")
    elif row is not None and {m: ms for m, _, _, ms in rows}.get(got, 0) is None:
        en, zh = ("Your choice matched eager but was not timed (its speedup is None): only a row with a speed-up "
                  "can be the fastest.", "你选的路径与 eager 一致，但没有计时（它的 speedup 为 None）：只有算出了加速比的行才可能是最快的。")
    elif got is not None and got not in _allowed(constraint):
        en, zh = (f"The constraint {constraint!r} does not allow {got!r}: check which paths your code allows for "
                  "this constraint (each constraint its own list; names compared with ==, not is, and written "
                  "exactly as in PATHS).",
                  f"约束 {constraint!r} 不允许 {got!r}：请检查你的代码为这个约束允许了哪些路径（每个约束对应它自己的列表；"
                  "比较名字要用 ==，不要用 is；名字要与 PATHS 中的写法完全一致）。")
        unless_state = (" If it already leaves this path out, check that nothing carries over from one call to the "
                        "next: a default list, a cache.", "如果代码已经排除了这条路径，再检查是否有状态从之前的调用残留了下来："
                        "比如默认参数里的列表，或者缓存。")
    elif got is None:
        en, zh = ("You returned None, but a path that worked, matched eager and is allowed exists.",
                  "你返回了 None，但存在一条成功、与 eager 一致且被允许的路径。")
    elif right is None:
        en, zh = ("No path of this table fits: the answer is None.", "这张表里没有符合条件的路径：答案是 None。")
    else:
        en, zh = ("An allowed path that works and matches eager is faster (a higher speedup over eager).",
                  "有一条被允许、成功且与 eager 一致的路径更快（相对 eager 的加速比更高）。")
    # None is what any constraint with no qualifying row gives: too weak a sign of another constraint's list
    others = [c for c in ALLOWED if c != constraint and _rule(rows, c) == got != right] if got is not None else []
    if others and unless_state is None and right is not None:
        # unless the ranking is what fails: with the right row twice as fast, does the answer pick it?
        faster = [r if r[0] != right else _Row(*r[:3], r[3] / 2) for r in asked[0]]
        if _ask(answer, constraint, build(faster, asked[2])) == right:
            others = []
    if others and unless_state is None:  # the answer is what another constraint gives here
        names = " and ".join([", ".join(repr(c) for c in others[:-1]), repr(others[-1])] if len(others) > 1
                             else [repr(others[0])])  # every constraint that gives it, not only the first
        unless_state = (f" It is also what {names} give{'s' if len(others) == 1 else ''} on this table: if your code "
                        "uses another constraint's list, or one kept from an earlier call, that is why.",
                        f"它恰好也是这张表在约束 {'、'.join(repr(c) for c in others)} 下的答案：如果你的代码用了别的约束的列表，"
                        "或者沿用了之前某次调用留下的列表，原因就在这里。")
    if right is not None and unless_state is None and (got is None or row is not None and row[0] and row[1]):
        alone = [r for r in asked[0] if r[0] in (right, "eager")]  # the right row alone: does it come back?
        if _ask(answer, constraint, build(alone, asked[2])) is None:
            unless_state = (f" Asked with that row alone, your function returns None: it leaves {right!r} out "
                            f"for {constraint!r} (its list for this constraint, a filter, or something kept from an earlier call).",
                            f"只给它那一行再问一次，你的函数返回 None：它在约束 {constraint!r} 下把 {right!r} 排除了"
                            "（这个约束的列表有误，某个筛选条件把它去掉了，或者沿用了之前某次调用留下的东西）。")
    carried = _carried_over(answer, constraint, first, build) or unless_state
    if carried is None:  # the same rows under another model's name: a cache keyed by what a table prints or holds
        renamed = build(asked[0], asked[2])
        renamed.name = f"{renamed.name} (asked again)"
        if _ask(answer, constraint, renamed) == right:
            carried = (f" Asked again with the same rows under another model name, your function returns {right!r}: "
                       "its answer depends on something besides the rows and the constraint (an answer kept from an "
                       "earlier call, such as a cache keyed by what a table prints or holds, or the model's name). "
                       "Each call must read only the rows and the constraint it is given.",
                       f"把同样的行换一个模型名再问一次，你的函数返回了 {right!r}：它的答案取决于行和约束以外的东西（之前某次调用"
                       "留下的答案，比如以表格的打印内容或数据为键的缓存，或者模型名）。每次调用只能读取传给它的行和约束。")
    en, zh = (en + " " + carried[0].strip(), zh + carried[1]) if carried else (en, zh)
    raise Wrong(en, zh, tried=tried, expected=repr(right), got=repr(got))


_RAISED = object()  # what _ask gives for an answer that raised


def _ask(answer: Any, constraint: str, table: Any) -> Any:
    """The answer's choice on a table made only to ask it again while diagnosing a wrong answer (quietly;
    a str subclass read as its text; ``_RAISED`` if it raised)."""
    try:
        with quiet():
            got = answer(constraint, table)
    except Exception:
        return _RAISED
    return str.__str__(got) if isinstance(got, str) else got


def _carried_over(answer: Any, constraint: str, first: dict[tuple[str, Any], tuple[list[Any], int]],
                  build: Any) -> tuple[str, str] | None:
    """Asks again the first call the answer got right for each constraint and right answer (the failing call's
    constraint first), each on a new table made as that one was: a different answer now means something
    carried over from call to call (what the feedback then says)."""
    for asked, right in sorted(first, key=lambda key: key[0] != constraint):
        rows, k = first[asked, right]
        again = _ask(answer, asked, build(rows, k))
        if again is not _RAISED and again != right:  # raising when asked again is state too, but the first message stands
            constraint = asked
            break
    else:
        return None
    return (f"Asked again now, the first table you answered right ({right!r} for {constraint!r}) gets {again!r}: "
            "something carries over from one call to the next (a default list, a cache, a global). Each call must "
            "read only the table and the constraint it is given.",
            f"现在用你最初答对的那张表再调用一次（约束 {constraint!r}，答案 {right!r}），你的函数却返回了 {again!r}：有状态从之前的调用"
            "残留到了这一次（默认参数里的列表、缓存或全局变量）。每次调用只能读取传给它的表格和约束。")


def _copied(value: Any) -> Any:
    """``copy.deepcopy(value)`` as far as ``==`` can tell, several times quicker on a table's plain data:
    lists, tuples and dicts are rebuilt around their immutable leaves (str, numbers, None, the dressed texts,
    which deepcopy shares too), a dataclass of numbers is copied; anything else is deep-copied."""
    kind = type(value)
    if kind in _LEAVES or kind is _AnyText:
        return value
    if kind is list:
        return [_copied(v) for v in value]
    if kind is tuple:
        return tuple(_copied(v) for v in value)
    if kind is dict and all(type(k) in _LEAVES for k in value):
        return {k: _copied(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and all(type(v) in _LEAVES for v in vars(value).values()):
        return copy.copy(value)  # a Latency: numbers only
    return copy.deepcopy(value)


_LEAVES = frozenset({str, int, float, bool, complex, bytes, type(None)})


def _table_state(table: Any) -> tuple:
    """What the answer must leave as it was: which rows, in which order; each row's fields and
    attributes (by row); the table's own attributes (eager, name, a method replaced on it)."""
    def kept(value: Any) -> Any:
        try:
            return _copied(value)
        except Exception:  # something of the answer's that cannot be copied: never equal to what was there
            return object()

    rows = list(table.rows)
    by_row = sorted((id(r), (type(r), kept(vars(r)))) for r in rows)  # a class swapped in counts too
    # the list object too: sorting table.rows in place and putting a copy back leaves the caller's list sorted
    return ([id(table.rows)] + [id(r) for r in rows], by_row,
            (type(table), kept({k: v for k, v in vars(table).items() if k != "rows"})))


def _changed_attributes(before: tuple, after: tuple) -> list[str]:
    """The table's attributes set, replaced or removed between two states (``table.best`` …)."""
    try:
        old, new = before[1], after[1]
        return [f"table.{k}" for k in sorted(set(old) | set(new)) if k not in old or k not in new or old[k] != new[k]]
    except Exception:  # an attribute that cannot be compared: the general wording stands
        return []


def _rule(rows: list[Any], constraint: str) -> str | None:
    """The rule's answer: the fastest row that worked, matched and is allowed (None if none)."""
    fit = [(ms, m) for m, w, mt, ms in rows if m != "eager" and w and mt and ms is not None and m in _allowed(constraint)]
    return min(fit)[1] if fit else None


def row_names(rows: list[tuple[str, bool, bool | None, float | None]]) -> set[str]:
    return {m for m, *_ in rows}


# -- exercise 4: deploy as an AOTInductor package, loaded in a fresh process ------------------------

#: files of someone else's already in the deploy folder (a package among them): all must stay as they are
_THEIRS = {"notes.txt": b"kept\n", "model.pt2": b"someone else's package\n", "old.pt2": b"an older one\n",
           "model4.pt2": b"a numbered one\n"}


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


class _Small(nn.Module):
    """The deploy exercise's model: its forward's argument is not called x."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(5, 7)
        self.down = nn.Linear(7, 3)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.up(inputs)))


_FRESH = r"""
import sys, torch
from torch._inductor import aoti_load_package
package, inputs, outputs = sys.argv[1:4]
try:
    runner = aoti_load_package(package)
except Exception as exc:
    torch.save({"load": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}, outputs)
    raise SystemExit(0)
got = []
for x in torch.load(inputs):
    try:
        with torch.no_grad():
            got.append(runner(x))
    except Exception as exc:
        got.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
torch.save({"outputs": got}, outputs)
"""


def _in_fresh_process(package: str, xs: list[torch.Tensor], folder: str) -> dict[str, Any]:
    """Load ``package`` with aoti_load_package in a new Python process and run it on ``xs``."""
    import subprocess
    import sys

    inputs, outputs = os.path.join(folder, "inputs.pt"), os.path.join(folder, "outputs.pt")
    torch.save(xs, inputs)
    done = subprocess.run([sys.executable, "-c", _FRESH, package, inputs, outputs], capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0 or not os.path.exists(outputs):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"load": last}
    return torch.load(outputs, weights_only=False)


@task("lab13.4", "deploy as an AOTInductor package", "部署为 AOTInductor 包", hints=[
    ("Two steps: export with the batch marked dynamic, then compile the program ahead of time into a package "
     "file inside the folder, under a name no file there has yet. Return the path the compiler gives back, after "
     "the file exists.",
     "两步：先把批维度标记为动态再导出，然后把程序提前编译成该文件夹中的一个包文件，文件名不能与已有文件重名。"
     "等包文件写好之后，再返回编译器给出的路径。"),
    ("Lecture 13, section 6 'Mini-project: from graph breaks to a reloaded package': the package is loaded "
     "back in a fresh process. A package exported with a fixed batch does not check the batch there: on another "
     "batch it can return wrong numbers without an error.",
     "第 13 讲第 6 节“小项目：从图中断到重新加载的包”：包在一个新进程中重新加载。"
     "以固定批大小导出的包在那里不检查批大小：换一个批大小，它可能不报错却返回错误的数值。"),
], time_limit=300)
def _check_deploy(answer: Any) -> None:
    import tempfile

    need_callable(answer, "deploy")
    model = seeded(_Small(), 1314)
    before, training, rest = Snapshot.of(model), [m.training for m in model.modules()], _beyond_snapshot(model)
    example = torch.randn(4, 5, generator=torch.Generator().manual_seed(1315))
    tried = ("a two-layer model, example of shape (4, 5), a folder already holding someone else's files "
             f"({', '.join(_THEIRS)})", f"一个两层模型，示例形状为 (4, 5)，文件夹中已有别人的文件（{'、'.join(_THEIRS)}）")
    with tempfile.TemporaryDirectory(prefix="fxcourse-lab13-") as root:
        folder = os.path.join(root, "deploy")
        os.makedirs(folder)
        for name, content in _THEIRS.items():
            with open(os.path.join(folder, name), "wb") as fh:
                fh.write(content)
        cwd = os.getcwd()
        with quiet():
            got = answer(model, example.clone(), folder)
        if os.getcwd() != cwd:
            os.chdir(cwd)  # the folder is removed after the check: the notebook must not be left inside it
            raise Wrong("Your function changed the working directory of your notebook (os.chdir); build the "
                        "package's path from folder instead.",
                        "你的函数改变了笔记本的当前工作目录（os.chdir）；请改为用 folder 拼出包的路径。", tried=tried)
        if [m.training for m in model.modules()] != training:
            raise Wrong("Your function switched the mode of the model it was given; export it as it is.",
                        "你的函数切换了传入模型的模式；请按原样导出它。", tried=tried)
        _require_kept(model, before, rest, tried, ("Your function", "你的函数"))  # weights, graph and beyond
        if not isinstance(got, (str, os.PathLike)):
            raise Wrong("deploy must return the path of the package file (a string).",
                        "deploy 必须返回包文件的路径（字符串）。", tried=tried, got=described(got))
        path = os.path.realpath(os.fspath(got))
        changed = [name for name, content in _THEIRS.items() if _read(os.path.join(folder, name)) != content]
        if changed:
            raise Wrong("Your function removed or overwrote a file that was already in the folder; add the package "
                        "next to what is there, under a name no file has yet.",
                        "你的函数删除或覆盖了文件夹中原有的文件；请把包放在已有文件旁边，用一个还没有被占用的名字。",
                        tried=tried, expected=(f"{', '.join(changed)} unchanged", f"{'、'.join(changed)} 保持不变"),
                        got=(f"{', '.join(changed)} removed or rewritten", f"{'、'.join(changed)} 被删除或改写"))
        if sorted(os.listdir(root)) != ["deploy"]:
            raise Wrong("Your function wrote files next to the folder, not inside it.",
                        "你的函数把文件写到了文件夹旁边，而不是文件夹里面。", tried=tried)
        if not os.path.isfile(path) and os.path.basename(os.fspath(got)) not in _THEIRS \
                and os.path.isfile(os.path.join(folder, os.path.basename(os.fspath(got)))):
            raise Wrong("The package is in the folder, but the path you returned does not lead there: a bare name "
                        "(or one made absolute with abspath or resolve) is read from the current working directory, "
                        "not from folder. Return the whole path (the folder joined with the name).",
                        "包在文件夹里，但你返回的路径并不指向那里：单独的文件名（或用 abspath、resolve 变成的绝对路径）"
                        "是相对当前工作目录解析的，而不是相对 folder。请返回完整路径（文件夹与文件名拼接起来）。",
                        tried=tried, expected=("the package's whole path", "包的完整路径"), got=repr(os.fspath(got)))
        if not os.path.isfile(path):
            raise Wrong("The path you returned is not a file"
                        + (": it is the folder itself; return the package file inside it." if os.path.isdir(path)
                           else " that exists: return the path once the package has been written."),
                        "你返回的路径不是" + ("文件：它是文件夹本身；请返回其中的包文件。" if os.path.isdir(path)
                                        else "一个已存在的文件：请在包写出之后再返回它的路径。"), tried=tried)
        if os.path.dirname(path) != os.path.realpath(folder):
            raise Wrong("The package is not directly inside the folder you were given.",
                        "包没有直接放在传给你的文件夹中。", tried=tried)
        gen = torch.Generator().manual_seed(1316)
        xs = [torch.randn(b, 5, generator=gen) for b in (4, 7, 1, 33)] + [torch.randn(5, 9, generator=gen).t()]
        with torch.no_grad():
            want = [model(x) for x in xs]
        with tempfile.TemporaryDirectory(prefix="fxcourse-lab13-run-") as scratch:
            result = _in_fresh_process(path, xs, scratch)
        again = None
        if "load" not in result and all(isinstance(g, torch.Tensor) and differs(g, w) is None
                                        for g, w in zip(result["outputs"], want)):
            # right so far: a second deploy into the same folder must keep the first package too
            first = _read(path)
            with quiet():
                second = answer(model, example.clone(), folder)
            second_path = os.path.realpath(os.fspath(second)) if isinstance(second, (str, os.PathLike)) else None
            lost = [name for name, content in _THEIRS.items() if _read(os.path.join(folder, name)) != content]
            if _read(path) != first or second_path == path or lost:
                again = (lost or [os.path.basename(path)])
    if again is not None:
        raise Wrong("Called a second time with the same folder, your function wrote over "
                    + ("the package of its first call" if again == [os.path.basename(path)] else "someone else's file")
                    + ": a fixed name, or one derived from the folder's contents, is taken sooner or later. Choose a "
                    "name no file in the folder has at the moment you write.",
                    "用同一个文件夹第二次调用时，你的函数覆盖了"
                    + ("第一次调用生成的包" if again == [os.path.basename(path)] else "别人的文件")
                    + "：固定的文件名，或由文件夹内容推算出的文件名，迟早会与已有文件重名。请在写入的那一刻选择一个文件夹中还没有被占用的名字。",
                    tried=("deploy called twice with the same folder", "用同一个文件夹调用 deploy 两次"),
                    expected=("two packages, every earlier file unchanged", "两个包，原有文件都保持不变"),
                    got=(f"{', '.join(again)} rewritten", f"{'、'.join(again)} 被改写"))
    fresh = ("your package, loaded with aoti_load_package in a fresh Python process",
             "你的包，在一个新的 Python 进程中用 aoti_load_package 加载")
    if "load" in result:
        raise Wrong("A fresh process could not load your file as an AOTInductor package (a file written with "
                    "torch.export.save or torch.save is not one): compile the exported program into a package.",
                    "新进程无法把你的文件当作 AOTInductor 包加载（用 torch.export.save 或 torch.save 写出的文件不是这种包）："
                    "请把导出的程序编译成一个包。", tried=fresh, got=result["load"])
    same_batch_ok = other_ok = False
    for x, w, g in zip(xs, want, result["outputs"]):
        at = (f"{fresh[0]}, input of shape {tuple(x.shape)}", f"{fresh[1]}，输入形状为 {tuple(x.shape)}")
        if isinstance(g, str) and "keyword mismatch" in g:
            raise Wrong("The loaded package refused the input given positionally: the model was exported with it as "
                        "a keyword argument, and the package takes it only so. Export with the example as args.",
                        "加载后的包拒绝了按位置传入的输入：导出时它是作为关键字参数传入的，包也就只接受这种方式。"
                        "请把示例作为 args 传给导出。", tried=at, got=g)
        if (same_batch_ok and x.shape[0] != example.shape[0] and isinstance(g, torch.Tensor)
                and differs(g, w) is not None):
            raise Wrong(f"The loaded package is right on a batch of {example.shape[0]}, the example's, but returns a "
                        f"wrong result for a batch of {x.shape[0]}, without an error: its batch was fixed at export. "
                        "Mark the batch dimension dynamic.",
                        f"加载后的包在批大小为 {example.shape[0]}（与示例相同）时结果正确，但在批大小为 {x.shape[0]} 时"
                        "不报错却返回了错误的结果：导出时批大小被固定了。请把批维度标记为动态。", tried=at,
                        expected=(f"an output of shape {tuple(w.shape)}", f"形状为 {tuple(w.shape)} 的输出"),
                        got=(f"an output of shape {tuple(g.shape)}, other values", f"形状为 {tuple(g.shape)}、数值不同的输出"))
        same_batch_ok = same_batch_ok or (x.shape[0] == example.shape[0] and isinstance(g, torch.Tensor)
                                          and differs(g, w) is None)
        if isinstance(g, str):
            static = x.shape[0] != example.shape[0] and not other_ok
            raise Wrong("The loaded package refused a batch the example did not have: "
                        + ("its batch was fixed at export. Mark the batch dimension dynamic." if static else g),
                        "加载后的包拒绝了示例之外的批大小："
                        + ("导出时批大小被固定了。请把批维度标记为动态。" if static else g), tried=at,
                        expected=(f"an output of shape {tuple(w.shape)}", f"形状为 {tuple(w.shape)} 的输出"), got=g)
        problem = differs(g, w)
        other_ok = other_ok or (problem is None and x.shape[0] != example.shape[0])
        if problem is not None:
            raise Wrong(f"The loaded package's output differs from the model's: {problem}",
                        f"加载后的包的输出与模型不同：{differs(g, w, lang='zh')}", tried=at)
