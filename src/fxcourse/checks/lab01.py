"""Checkers for labs/lab01_trace.ipynb (lecture course/01_torchscript_trace.ipynb).

Every task hands the learner's code models defined here, which the learner has not seen, and runs
the result on new inputs (other batch sizes, other signs). ``torch.jit`` warns on every call that
it is deprecated and traces warn about baked-in values; the checkers silence both so feedback stays readable.
"""
from __future__ import annotations

import contextlib
import numbers
from collections import Counter
from typing import Any, Iterator

import torch
from torch import nn

from . import Wrong, task
from ._probe import (Mistake, Probe, built, called, close, counted_once, describe, differs,
                     need_callable, plain_counts, run_probes)
from .._lang import Bilingual
from .._text import one_line_error, quiet


def _trace(model: Any, *example: torch.Tensor) -> Any:
    with quiet(stderr=False):
        return torch.jit.trace(model, example)


def _aten_kinds(graph: torch._C.Graph) -> Counter[str]:
    return Counter(n.kind() for n in graph.nodes() if n.kind().startswith("aten::"))


# -- lab01.1: read the inlined graph -----------------------------------------------------------
class _Residual(nn.Module):
    def __init__(self, c: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)) + x)


class _TinyCNN(nn.Module):
    """Stem, two residual blocks in a Sequential, pooling and a head: three levels of modules."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.blocks = nn.Sequential(_Residual(), _Residual())
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.stem(x)))
        return self.head(x.mean((2, 3)))


class _Gru(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(3, 5)
        self.out = nn.Linear(5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.out(self.cell(x)))


def _scaled_softmax(x: torch.Tensor) -> torch.Tensor:
    return (x * 0.5).softmax(-1).log()


def _relu_sin(x: torch.Tensor) -> torch.Tensor:
    """Its inlined graph starts with an aten:: node (no constant or GetAttr before it)."""
    return torch.sin(torch.relu(x)).neg()


def _clone_scale_max(x: torch.Tensor) -> torch.Tensor:
    """Its aten::max over a dim is one node with two outputs (values and indices)."""
    y = x.clone()
    y.mul_(2)
    values, indices = y.max(1)
    return values + indices


def _cos_squared(x: torch.Tensor) -> torch.Tensor:
    """Two aten::cos nodes on the same input: common-subexpression elimination would merge them."""
    return torch.cos(x) * torch.cos(x)


def _plus_ramp(x: torch.Tensor) -> torch.Tensor:
    """An arange and a mul on constants only: constant propagation would fold them away."""
    return x + torch.arange(3.0) * 0.5


def _kinds_reference(traced: Any) -> dict[str, int]:
    return dict(_aten_kinds(traced.inlined_graph))


def _aten_probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(3)
    cases = [
        (("torch.jit.trace(<a CNN: stem, two residual blocks in a Sequential, head>.eval(), x)",
          "torch.jit.trace(<一个 CNN：起始层、Sequential 中的两个残差块、输出头>.eval(), x)"),
         built(_TinyCNN, 3), torch.randn(1, 3, 6, 6, generator=gen)),
        (("torch.jit.trace(<a GRUCell and a Linear>.eval(), x)", "torch.jit.trace(<一个 GRUCell 加一个 Linear>.eval(), x)"),
         built(_Gru, 4), torch.randn(2, 3, generator=gen)),
        (("torch.jit.trace(<a function: scale, softmax, log>, x)", "torch.jit.trace(<一个函数：缩放、softmax、log>, x)"),
         _scaled_softmax, torch.randn(2, 5, generator=gen)),
        (("torch.jit.trace(<a function: relu, sin, neg>, x)", "torch.jit.trace(<一个函数：relu、sin、neg>, x)"),
         _relu_sin, torch.randn(3, generator=gen)),
        (("torch.jit.trace(<Linear, GELU, Dropout in a Sequential, LayerNorm, Linear> in training mode, x)",
          "torch.jit.trace(<Sequential 中的 Linear、GELU、Dropout，再接 LayerNorm、Linear>（训练模式）, x)"),
         built(_Head, 5).train(), torch.randn(4, 6, generator=gen)),
        (("torch.jit.trace(<a function: clone, in-place mul, max over a dim (values and indices), add>, x)",
          "torch.jit.trace(<一个函数：clone、原地 mul、按维度取 max（值和索引）、add>, x)"),
         _clone_scale_max, torch.randn(3, 4, generator=gen)),
        (("torch.jit.trace(lambda x: torch.cos(x) * torch.cos(x), x)",
          "torch.jit.trace(lambda x: torch.cos(x) * torch.cos(x), x)"), _cos_squared, torch.randn(3, generator=gen)),
        (("torch.jit.trace(lambda x: x + torch.arange(3.0) * 0.5, x)",
          "torch.jit.trace(lambda x: x + torch.arange(3.0) * 0.5, x)"), _plus_ramp, torch.randn(3, generator=gen)),
        (("torch.jit.trace(lambda x: torch.mm(x, w) + b, x)", "torch.jit.trace(lambda x: torch.mm(x, w) + b, x)"),
         _mm_plus_bias, torch.randn(2, 3, generator=gen)),
        (("torch.jit.trace(lambda x: torch.addmm(b, x, w), x)", "torch.jit.trace(lambda x: torch.addmm(b, x, w), x)"),
         _addmm, torch.randn(2, 3, generator=gen)),
    ]
    return [Probe(label, (_trace(model, x),)) for label, model, x in cases]


def _per_output(traced: Any) -> dict[str, int]:
    """What counting the values the aten:: nodes produce gives: a node with two outputs counts twice."""
    return dict(Counter(n.kind() for n in traced.inlined_graph.nodes() if n.kind().startswith("aten::")
                        for _ in n.outputs()))


#: JIT passes that rewrite a graph's operators (merge, fold, fuse or split them); counting after any of them
#: (alone, followed by dead code elimination, or CSE and constant propagation together) is the same mistake.
_REWRITING_PASSES = ("cse", "constant_propagation", "fuse_addmm", "decompose_ops", "peephole", "remove_mutation",
                     "canonicalize_ops", "constant_pooling")


def _after_passes(traced: Any) -> list[dict[str, int]]:
    """The counts after rewriting passes on a copy of the inlined graph."""
    out = []
    runs = [(name,) for name in _REWRITING_PASSES] + [(name, "dce") for name in _REWRITING_PASSES]
    runs += [("constant_propagation", "cse"), ("cse", "constant_propagation")]
    for passes in runs:
        graph = traced.inlined_graph.copy()
        try:
            for name in passes:
                getattr(torch._C, f"_jit_pass_{name}")(graph)
        except (AttributeError, RuntimeError, TypeError):
            continue
        out.append(dict(_aten_kinds(graph)))
    return out


def _mm_plus_bias(x: torch.Tensor) -> torch.Tensor:
    return torch.mm(x, _MM_W) + _MM_B


def _addmm(x: torch.Tensor) -> torch.Tensor:
    return torch.addmm(_MM_B, x, _MM_W)


_MM_W = torch.randn(3, 3, generator=torch.Generator().manual_seed(41))
_MM_B = torch.randn(3, generator=torch.Generator().manual_seed(42))


_ATEN_MISTAKES = [
    Mistake("not a dict", lambda got, want, p: not isinstance(got, dict),
            "return a dict from node kind (a string such as 'aten::relu') to count.",
            "请返回从节点类型（例如 'aten::relu' 这样的字符串）到数量的 dict。"),
    Mistake("top-level graph", lambda got, want, p: got == dict(_aten_kinds(p.args[0].graph)),
            "that counts only the top-level graph, where each submodule is one prim::CallMethod; count over the "
            "inlined graph, where every method call is expanded into its operators.",
            "这只统计了顶层计算图，那里每个子模块只是一个 prim::CallMethod；请在内联后的计算图上统计，"
            "那里每个方法调用都展开成了它的算子。"),
    Mistake("kind without namespace", lambda got, want, p: set(got) == {k.split("::", 1)[1] for k in want},
            "use the full kind string with its namespace (such as 'aten::relu'), as node.kind() returns it.",
            "请使用带命名空间的完整类型字符串（如 'aten::relu'），与 node.kind() 的返回值一致。"),
    Mistake("the kind method as a key", lambda got, want, p: any("bound method" in str(k) for k in got),
            "the keys are bound methods, not strings: a node's kind is the string its kind method returns.",
            "这些键是绑定方法，而不是字符串：节点的类型是它的 kind 方法返回的字符串。"),
    Mistake("counted prim:: nodes", lambda got, want, p: any(not str(k).startswith("aten::") for k in got),
            "count only kinds in the aten:: namespace (leave out prim::GetAttr, prim::Constant, …).",
            "只统计 aten:: 命名空间中的节点类型（不包括 prim::GetAttr、prim::Constant 等）。"),
    Mistake("cleaned the graph first", lambda got, want, p: got != want and got in _after_passes(p.args[0]),
            "the counts are those of a graph that was cleaned before counting (repeated computations merged, "
            "operators on constants folded away, or operators fused or split up, as the JIT's optimisation passes "
            "do): count every aten:: node the inlined graph holds, as the trace recorded it.",
            "计数不对，因为统计之前计算图被清理过（像 JIT 的优化 pass 那样合并了重复计算、把只作用于常量的算子折叠掉，"
            "或把算子融合、拆分了）：请按追踪记录下来的样子，统计内联后计算图中的每个 aten:: 节点。"),
    counted_once("kinds", "类型"),
    Mistake("one count per output value", lambda got, want, p: got == _per_output(p.args[0]) != want,
            "a node with two outputs (such as aten::max over a dim, which gives values and indices) is counted "
            "twice: count the nodes of each kind, not the values they produce.",
            "有两个输出的节点（例如按维度求 aten::max，会给出值和索引）被计了两次：请统计每种类型的节点个数，而不是它们产生的值的个数。"),
]


def _graph_text(traced: Any) -> str:
    """The traced module's (or function's) own graph as text, to see whether an answer edited it."""
    return str(traced.graph)


@task("lab01.1", "count the ATen operators of a traced model", "统计追踪模型中的 ATen 算子", hints=[
    ("A traced module's own graph calls its submodules; their operators are only visible once those calls "
     "are expanded. Count every operator node there, each once under its kind.",
     "追踪得到的模块自己的计算图只是调用子模块；只有把这些调用展开，才能看到其中的算子。请在展开后的图中统计每个算子节点，按类型各计一次。"),
    ("The expanded graph is the inlined graph; a node's kind is a string with a namespace, and only the "
     "aten:: namespace holds operators. Lecture course/01_torchscript_trace.ipynb, section "
     "'4 · `.graph`: typed values, GetAttr and CallMethod'.",
     "展开后的图就是 inlined graph；节点的类型是带命名空间的字符串，只有 aten:: 命名空间里是算子。"
     "见讲义 course/01_torchscript_trace.ipynb 第「4 · `.graph`：带类型的值、GetAttr 和 CallMethod」节。"),
])
def _count_aten(answer: Any) -> None:
    need_callable(answer, "aten_op_counts")

    probes = _aten_probes()
    labels = {id(p.args[0]): p.label for p in probes}

    def counted(traced: Any) -> Any:
        before = _graph_text(traced)
        with quiet(stderr=False):
            got = answer(traced)
        if isinstance(got, dict):  # a count may be any whole-number type (np.unique gives np.int64)
            got = {k: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
                   for k, v in got.items()}
        got = plain_counts(got)
        if _graph_text(traced) != before:
            raise Wrong("aten_op_counts changed the graph of the trace it was given (for example by inlining "
                        "traced.graph in place): read the inlined graph, which is a copy, and leave the trace as it was.",
                        "aten_op_counts 改动了传入的追踪结果自身的计算图（例如原地内联了 traced.graph）："
                        "请读取内联后的计算图（它是一份副本），不要改动追踪结果本身。",
                        tried=labels.get(id(traced), ""),
                        expected=("the trace's own graph unchanged", "追踪结果自身的计算图保持不变"),
                        got=("its .graph was rewritten", "它的 .graph 被改写了"))
        return {str(k): v for k, v in got.items()} if isinstance(got, dict) else got

    run_probes(counted, _kinds_reference, probes, mistakes=_ATEN_MISTAKES, what="aten_op_counts",
               generic=("a count is off: every aten:: node of the inlined graph counts once under its kind.",
                        "有计数不对：内联后计算图中的每个 aten:: 节点都按其类型计一次。"))


def _modes(model: nn.Module) -> dict[str, bool]:
    """{qualified name: training flag} of ``model`` and every submodule."""
    return {name: m.training for name, m in model.named_modules()}


def _require_modes(model: nn.Module, before: dict[str, bool], what: str, tried: Bilingual) -> None:
    """Raise :class:`Wrong` when ``what`` switched ``model`` (or a submodule) between train and eval mode."""
    after = _modes(model)
    if after == before:
        return
    name = next(n for n in before if after.get(n) != before[n])
    where = f"model.{name}" if name else "model"
    mode = ("training" if before[name] else "eval", "训练" if before[name] else "eval")
    now = ("training" if after.get(name) else "eval", "训练" if after.get(name) else "eval")
    raise Wrong(f"{what} changed the mode of the model it was given (model.eval() or model.train() switches the "
                "caller's model, and its BatchNorm and Dropout then behave differently for the caller): trace the "
                "model as it is, and leave its mode alone.",
                f"{what} 改变了传入模型的模式（model.eval() 或 model.train() 会切换调用方的模型，其中的 BatchNorm 和 "
                "Dropout 对调用方的行为随之改变）：请按原样追踪模型，不要改动它的模式。",
                tried=tried, expected=(f"{where} still in {mode[0]} mode", f"{where} 仍处于{mode[1]}模式"),
                got=(f"{where} in {now[0]} mode", f"{where} 处于{now[1]}模式"))


def _warning_of(exc: BaseException) -> Warning | None:
    """The warning raised as an error behind ``exc`` (itself, its cause or its context), else None."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            break
        if isinstance(seen, Warning):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


# -- lab01.2: trace_safely with check_inputs ----------------------------------------------------
class _Affine(nn.Module):
    """No control flow: its trace is valid for every batch size."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x)).view(x.shape[0], -1) * 2


class _WideOrNarrow(nn.Module):
    """An `if` on a size: warns while tracing, but every input here has 3 features."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 2:
            return x.cumsum(1)
        return x


class _SignSwitch(nn.Module):
    """An `if` on the data: the branch changes with the sign of the mean."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:
            return x * 3
        return x - 1


class _PerRow(nn.Module):
    """A loop over the batch: unrolled to the example's length, with no warning."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x[i] * (i + 1) for i in range(x.shape[0])])


class _AbsOrNeg(nn.Module):
    """Branches on the sign; on a negative input both branches give the same numbers."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x.abs()
        return -x


class _ScaleBy(nn.Module):
    """Two arguments, no control flow: valid for every input."""

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(w) - w


class _ThreeOrHalf(nn.Module):
    """Branches on the sign; both branches are one aten::mul by a constant (3 or 0.5)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 3
        return x * 0.5


class _ClampFiveOrSix(nn.Module):
    """Branches on the sign; both branches are one aten::clamp, with bounds ±5 or ±6: on inputs inside
    ±5 both give the same numbers, and the graphs differ only in those constants."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x.clamp(-5, 5)
        return x.clamp(-6, 6)


class _WrongWidth(nn.Module):
    """Multiplies by a 3 × 3 matrix: an input with 4 features cannot run, so tracing raises RuntimeError."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ torch.ones(3, 3)


class _TimesRows(nn.Module):
    """Multiplies by the number of rows turned into a Python float: a constant of the trace."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * float(x.shape[0]) + 1


class _NormedTrain(nn.Module):
    """A Linear and a BatchNorm1d, handed over in training mode (batch statistics)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.lin(x)))


class _SignSwitch2(nn.Module):
    """Two arguments and an `if` on both of them."""

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if (x * w).sum() > 0:
            return x + w
        return x * w


_TRACED = ("a traced module", "追踪得到的模块")
_CHECK_EVERY_TUPLE = ("lecture 01, section 7 shows how the tracer checks a trace against several inputs",
                      "第 01 讲第 7 节演示了追踪器如何用多组输入检查追踪结果")


@task("lab01.2", "trace only when check_inputs agree", "只在 check_inputs 一致时返回追踪结果", hints=[
    ("Let the tracer do the checking: it can re-trace on other inputs and compare the graphs, which is "
     "stronger than comparing outputs. Every tuple in inputs must take part.",
     "让追踪器自己做检查：它可以在其他输入上重新追踪并比较计算图，这比比较输出更可靠。inputs 中的每一组都必须参与检查。"),
    ("When the check fails, torch.jit.trace raises torch.jit.TracingCheckError; that exception, and only "
     "that one, means 'return None'. A TracerWarning alone does not. Lecture course/01_torchscript_trace.ipynb, "
     "section '7 · `check_trace` and `check_inputs`'.",
     "检查失败时 torch.jit.trace 会抛出 torch.jit.TracingCheckError；只有这个异常表示应返回 None，"
     "单有 TracerWarning 并不算。见讲义 course/01_torchscript_trace.ipynb 第「7 · `check_trace` 与 `check_inputs`」节。"),
])
def _trace_safely(answer: Any) -> None:
    need_callable(answer, "trace_safely")
    gen = torch.Generator().manual_seed(11)

    def pos(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=gen) + 0.1

    def neg(*shape: int) -> torch.Tensor:
        return -pos(*shape)

    def call(model: nn.Module, inputs: list[tuple[torch.Tensor, ...]], tried: Bilingual) -> Any:
        modes = _modes(model)
        with quiet(stderr=False):
            try:
                got = answer(model, [tuple(a.clone() for a in args) for args in inputs])
            except torch.jit.TracingCheckError as exc:
                raise Wrong("torch.jit.trace raised TracingCheckError and your function let it through: that error "
                            "is the signal to return None.",
                            "torch.jit.trace 抛出了 TracingCheckError，你的函数却让它传了出来：这个错误正是应返回 None 的信号。",
                            tried=tried, got=one_line_error(exc)) from None
            except (SystemError, Warning) as exc:
                warning = _warning_of(exc)
                if warning is None:
                    raise
                raise Wrong(f"a warning ({type(warning).__name__}) was turned into an error (a warnings filter set to "
                            "'error'), so tracing stopped at it, before the check could run. Tracing warns as it goes "
                            "(a TracerWarning only says the trace *might* be wrong); let warnings stay warnings and let "
                            "the check decide.",
                            f"一个警告（{type(warning).__name__}）被变成了错误（warnings 过滤器设成了 'error'），所以追踪在那里就中止了，"
                            "检查根本没有机会运行。追踪过程中本来就会发出警告（TracerWarning 只是说追踪结果*可能*不对）；"
                            "请让警告保持为警告，由检查来判断。",
                            tried=tried, got=one_line_error(warning)) from None
        _require_modes(model, modes, "trace_safely", tried)
        return got

    def shapes(inputs: list[tuple[torch.Tensor, ...]]) -> str:
        return str([tuple(tuple(a.shape) for a in args) if len(args) > 1 else tuple(args[0].shape) for args in inputs])

    # Valid traces: a traced module must come back, and be right on inputs it was not traced with.
    valid = [
        (built(_Affine, 12), [(pos(2, 3),), (neg(5, 3),), (pos(1, 3),)], [(neg(3, 3),)],
         ("an affine model without control flow", "没有控制流的仿射模型")),
        (_WideOrNarrow(), [(pos(2, 3),), (neg(4, 3),)], [(pos(6, 3) - 0.5,)],
         ("an `if x.shape[1] > 2` that every input satisfies", "含 `if x.shape[1] > 2` 的模型，每个输入都满足这个条件")),
        (_ScaleBy(), [(pos(2, 4), neg(2, 4)), (neg(3, 4), pos(3, 4))], [(pos(1, 4) - 0.5, neg(1, 4) + 0.5)],
         ("a model of two arguments without control flow", "两个参数、没有控制流的模型")),
        (built(_NormedTrain, 13, eval=False), [(pos(4, 3),), (neg(3, 3),), (pos(6, 3) - 0.5,)], [(neg(5, 3) + 0.5,)],
         ("a Linear and a BatchNorm1d in training mode, without control flow",
          "训练模式下的 Linear 加 BatchNorm1d，没有控制流")),
    ]
    for model, inputs, unseen, (what, what_zh) in valid:
        tried = (f"{what}; inputs of shapes {shapes(inputs)}", f"{what_zh}；inputs 的形状为 {shapes(inputs)}")
        got = call(model, inputs, tried)
        if got is None:
            if isinstance(model, _WideOrNarrow):
                raise Wrong("this model's trace is right on every input, but you returned None. A TracerWarning "
                            "only says the trace *might* be wrong; return None only when the check fails "
                            "(TracingCheckError).",
                            "这个模型的追踪结果在每个输入上都正确，你却返回了 None。TracerWarning 只是说追踪结果"
                            "*可能*不对；只有检查失败（TracingCheckError）时才返回 None。",
                            tried=tried, expected=_TRACED, got="None")
            raise Wrong("this model has no control flow, so its trace is valid: return the traced module.",
                        "这个模型没有控制流，它的追踪结果是有效的：请返回追踪得到的模块。",
                        tried=tried, expected=_TRACED, got="None")
        if got is model or not isinstance(got, torch.jit.ScriptModule):
            raise Wrong("return what torch.jit.trace returned (a ScriptModule), not the model itself.",
                        "请返回 torch.jit.trace 的结果（一个 ScriptModule），而不是模型本身。",
                        tried=tried, expected="torch.jit.ScriptModule", got=describe(got))
        for args in inputs + unseen:
            with torch.no_grad(), quiet(stderr=False):
                want, out = model(*args), got(*args)
            diff = differs(out, want)
            if diff:
                raise Wrong("the traced module gives another result than the model: trace the model with the first "
                            "tuple of inputs, all of its arguments.",
                            "追踪得到的模块与模型结果不同：请用 inputs 中的第一组参数（全部参数）追踪模型。",
                            tried=(f"{tried[0]}; then arguments of shapes {shapes([args])}",
                                   f"{tried[1]}；再用形状为 {shapes([args])} 的参数调用"),
                            expected=describe(want), got=diff)

    # Invalid traces: a check input takes another path, so the answer must be None.
    invalid = [
        (_SignSwitch(), [(pos(2, 4),), (pos(3, 4),), (neg(2, 4),)],
         ("an `if x.mean() > 0`; the last input has a negative mean", "含 `if x.mean() > 0` 的模型；最后一个输入的均值为负"),
         ("the trace of this model is wrong on inputs[2] (the other branch), yet you returned it: the trace was "
          "not checked against every tuple of inputs; " + _CHECK_EVERY_TUPLE[0] + ".",
          "这个模型的追踪结果在 inputs[2]（另一个分支）上是错的，你却返回了它：追踪结果没有用 inputs 中的每一组检查；"
          + _CHECK_EVERY_TUPLE[1] + "。")),
        (_SignSwitch(), [(pos(2, 4),), (neg(3, 4),), (pos(1, 4),)],
         ("an `if x.mean() > 0`; only the middle input has a negative mean",
          "含 `if x.mean() > 0` 的模型；只有中间那个输入的均值为负"),
         ("the graphs differ on inputs[1], a tuple in the middle of the list, yet you returned the trace: every "
          "tuple must be checked, not only the first or the last; " + _CHECK_EVERY_TUPLE[0] + ".",
          "计算图在 inputs[1]（列表中间的一组）上不同，你却返回了追踪结果：每一组都必须检查，而不只是第一组或最后一组；"
          + _CHECK_EVERY_TUPLE[1] + "。")),
        (_PerRow(), [(pos(2, 3),), (pos(4, 3),)],
         ("a loop over range(x.shape[0]); the inputs have 2 and 4 rows",
          "遍历 range(x.shape[0]) 的循环；两个输入分别有 2 行和 4 行"),
         ("the loop was unrolled to 2 rows, so the trace is wrong on 4 rows, yet you returned it: re-tracing on "
          "each check input and comparing the graphs would have caught it.",
          "循环被展开成了 2 行，追踪结果在 4 行输入上是错的，你却返回了它：在每组检查输入上重新追踪并比较计算图就能发现这一点。")),
        (_AbsOrNeg(), [(pos(2, 3),), (neg(2, 3),)],
         ("an `if x.sum() > 0` between abs(x) and -x; on inputs[1] both give the same numbers",
          "用 `if x.sum() > 0` 在 abs(x) 和 -x 之间选择；在 inputs[1] 上两者结果相同"),
         ("on inputs[1] the outputs happen to agree (abs(x) == -x for negative x), but a trace of inputs[1] "
          "records aten::neg where yours has aten::abs. Comparing outputs is not enough: the tracer's own check "
          "compares the graphs.",
          "在 inputs[1] 上输出碰巧一致（x 为负时 abs(x) == -x），但在 inputs[1] 上追踪得到的是 aten::neg，"
          "而你的追踪结果里是 aten::abs。只比较输出是不够的：追踪器自己的检查会比较计算图。")),
        (_ThreeOrHalf(), [(pos(2, 3),), (pos(3, 3),), (neg(2, 3),)],
         ("an `if x.sum() > 0` between x * 3 and x * 0.5; the last input has a negative sum",
          "用 `if x.sum() > 0` 在 x * 3 和 x * 0.5 之间选择；最后一个输入之和为负"),
         ("both branches hold the same kinds of nodes (one aten::mul), but by another constant (3 against 0.5), "
          "and you returned the trace: what you compared missed that constant (node kinds, or the code text, where "
          "a tensor constant prints as a name such as CONSTANTS.c0, look the same). The tracer's own check compares "
          "the whole graphs, constants included; " + _CHECK_EVERY_TUPLE[0] + ".",
          "两个分支的节点种类相同（都是一个 aten::mul），但乘的常量不同（3 和 0.5），你却返回了追踪结果：你比较的东西没有体现这个常量"
          "（节点种类一样；代码文本也一样，因为张量常量在其中只显示为 CONSTANTS.c0 这样的名字）。"
          "追踪器自己的检查会比较整张计算图，包括常量；" + _CHECK_EVERY_TUPLE[1] + "。")),
        (_ClampFiveOrSix(), [(pos(2, 3),), (neg(2, 3),)],
         ("an `if x.sum() > 0` between x.clamp(-5, 5) and x.clamp(-6, 6); inputs[1] has a negative sum, and every "
          "entry lies inside ±5",
          "用 `if x.sum() > 0` 在 x.clamp(-5, 5) 和 x.clamp(-6, 6) 之间选择；inputs[1] 之和为负，且每个元素都在 ±5 之内"),
         ("on inputs[1] the trace gives the right numbers and a trace of inputs[1] holds the same kinds of nodes "
          "(one aten::clamp), but with other bounds (±6 against ±5), yet you returned the trace: neither outputs "
          "nor node kinds show that. The tracer's own check compares the whole graphs, constants included; "
          + _CHECK_EVERY_TUPLE[0] + ".",
          "在 inputs[1] 上追踪结果的数值是对的，在 inputs[1] 上追踪得到的节点种类也相同（一个 aten::clamp），但上下界不同（±6 和 ±5），"
          "你却返回了追踪结果：比较输出或节点种类都发现不了这一点。追踪器自己的检查会比较整张计算图，包括常量；"
          + _CHECK_EVERY_TUPLE[1] + "。")),
        (_TimesRows(), [(pos(2, 3),), (pos(4, 3),)],
         ("x * float(x.shape[0]) + 1; the inputs have 2 and 4 rows",
          "x * float(x.shape[0]) + 1；两个输入分别有 2 行和 4 行"),
         ("the number of rows became the constant 2.0 of the trace, so it is wrong on 4 rows, yet you returned it: "
          "the graphs traced on the two inputs have the same kinds of nodes and differ only in that constant. The "
          "tracer's own check compares whole graphs, constants included; " + _CHECK_EVERY_TUPLE[0] + ".",
          "行数变成了追踪结果中的常量 2.0，所以它在 4 行输入上是错的，你却返回了它：在两个输入上追踪得到的计算图节点种类相同，"
          "只有这个常量不同。追踪器自己的检查会比较整张计算图，包括常量；" + _CHECK_EVERY_TUPLE[1] + "。")),
        (_SignSwitch2(), [(pos(2, 3), pos(2, 3)), (pos(2, 3), neg(2, 3)), (neg(2, 3), neg(2, 3))],
         ("a model of two arguments with an `if (x * w).sum() > 0`; inputs[1] takes the other branch",
          "两个参数、含 `if (x * w).sum() > 0` 的模型；inputs[1] 走另一个分支"),
         ("the graphs differ on inputs[1] (the other branch), yet you returned the trace: check against every "
          "tuple, with all of its arguments; " + _CHECK_EVERY_TUPLE[0] + ".",
          "计算图在 inputs[1]（另一个分支）上不同，你却返回了追踪结果：请用每一组（连同其全部参数）检查；"
          + _CHECK_EVERY_TUPLE[1] + "。")),
    ]
    for model, inputs, (what, what_zh), hint in invalid:
        tried = (f"{what}; inputs of shapes {shapes(inputs)}", f"{what_zh}；inputs 的形状为 {shapes(inputs)}")
        got = call(model, inputs, tried)
        if got is not None:
            raise Wrong(*hint, tried=tried, expected="None", got=describe(got))

    # A model that cannot run on its inputs: tracing raises RuntimeError, which is no failed check. Once on
    # inputs[0] (the trace itself fails) and once on a later tuple (the trace works, the check run fails).
    for which, inputs in (("inputs[0]", [(pos(2, 4),), (pos(3, 4),)]), ("inputs[1]", [(pos(2, 3),), (pos(2, 4),)])):
        tried = (f"x @ torch.ones(3, 3), which cannot run on 4 features; inputs of shapes {shapes(inputs)}",
                 f"x @ torch.ones(3, 3)，无法在 4 个特征的输入上运行；inputs 的形状为 {shapes(inputs)}")
        try:
            got = call(_WrongWidth(), inputs, tried)
        except RuntimeError:
            got = RuntimeError
        if got is not RuntimeError:
            stage = (("so torch.jit.trace raises a RuntimeError before any check",
                      "所以 torch.jit.trace 在任何检查之前就抛出了 RuntimeError") if which == "inputs[0]" else
                     ("so the check, running the model on it, raises a RuntimeError (the trace of inputs[0] itself "
                      "works)", "所以检查在它上面运行模型时抛出了 RuntimeError（inputs[0] 的追踪本身没有问题）"))
            raise Wrong(f"this model cannot run on {which} at all, {stage[0]}: that is not a failed check, and it must "
                        "reach the caller. Return None only when the check fails (TracingCheckError); let every other "
                        "error propagate.",
                        f"这个模型根本无法在 {which} 上运行，{stage[1]}：这不是检查失败，这个错误必须传给调用方。"
                        "只有检查失败（TracingCheckError）时才返回 None；其他错误请让它照常抛出。",
                        tried=tried, expected=("the RuntimeError, raised to the caller", "RuntimeError 被抛给调用方"),
                        got=describe(got))


# -- lab01.3: a loop over the batch, rewritten with tensor operations ----------------------------
class _RunningMean(nn.Module):
    """out[t] = mean(x[0], ..., x[t]) over the first dimension, with a Python loop."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = torch.zeros_like(x[0])
        out = []
        for t in range(x.shape[0]):
            total = total + x[t]
            out.append(total / (t + 1))
        return torch.stack(out)


def _running_mean_reference(x: torch.Tensor) -> torch.Tensor:
    if x.shape[0] > 2000:  # the loop takes seconds on a million rows: the same means, exact in float64
        counts = torch.arange(1, x.shape[0] + 1, dtype=torch.float64).view(-1, *[1] * (x.dim() - 1))
        return (x.double().cumsum(0) / counts).to(x.dtype)
    return _RunningMean()(x)


def _mean_along_dim1(x: torch.Tensor) -> torch.Tensor:
    return x.cumsum(1) / torch.arange(1, x.shape[1] + 1, dtype=x.dtype)


def _in_float32(x: torch.Tensor) -> torch.Tensor:
    """What computing in float32 and casting back gives for a float64 input."""
    return _RunningMean()(x.float()).to(x.dtype)


_EAGER_MEAN_MISTAKES = [
    Mistake("dtype changed", lambda got, want, p: isinstance(got, torch.Tensor) and got.shape == want.shape
            and got.dtype != want.dtype,
            "the values may be right, but the result's dtype is not the input's: a tensor of divisors made with "
            "another dtype promotes the result. Keep the input's dtype.",
            "数值也许是对的，但结果的 dtype 与输入不同：用另一种 dtype 构造的除数张量会把结果提升成那种类型。请保持输入的 dtype。"),
    Mistake("divided by the total", lambda got, want, p: close(got, p.args[0].cumsum(0) / p.args[0].shape[0]),
            "every row was divided by the total number of rows; out[t] is the mean of the t + 1 rows x[0] … x[t].",
            "每一行都除以了总行数；out[t] 是 x[0] … x[t] 这 t + 1 行的均值。"),
    Mistake("no division", lambda got, want, p: close(got, p.args[0].cumsum(0)),
            "that is the running sum; out[t] is the running sum divided by the number of rows so far (t + 1).",
            "这是累积和；out[t] 是累积和除以到目前为止的行数（t + 1）。"),
    Mistake("counted from 0", lambda got, want, p: isinstance(got, torch.Tensor) and got.shape == want.shape
            and not bool(torch.isfinite(got[0]).all()),
            "the first row is not finite: it was divided by 0. Row t holds the mean of t + 1 rows, so the divisors "
            "start at 1.",
            "第一行不是有限值：它被除以了 0。第 t 行是 t + 1 行的均值，所以除数从 1 开始。"),
    Mistake("computed in float32", lambda got, want, p: p.args[0].dtype == torch.float64
            and close(got, _in_float32(p.args[0]), rtol=1e-6, atol=1e-9),
            "the result has the input's dtype (float64), but its values were computed at float32 precision and "
            "cast back, so a large running sum loses its small parts. Compute in the input's own dtype.",
            "结果的 dtype 与输入相同（float64），但数值是按 float32 精度算出再转换回来的，所以较大的累积和丢掉了其中的小量。"
            "请直接用输入自己的 dtype 计算。"),
    Mistake("along the wrong dimension", lambda got, want, p: close(got, _mean_along_dim1(p.args[0])),
            "the mean runs along the columns; RunningMean runs along the first dimension (the rows).",
            "你的均值是沿着列方向累积的；RunningMean 沿第一维（行）累积。"),
]


#: Row counts of the first probes; the probes after them have many more rows.
_FEW_ROWS = 8
_MANY_ROWS = [(12, 3), (1100, 2), (1_000_000, 1)]


def _half_probe(eager_call: Any, x: torch.Tensor, generic: tuple[str, str]) -> None:
    """A float16 input of whole numbers: the result must be float16, within float16's rounding."""
    label = (f"TraceableRunningMean()(x), x of shape {tuple(x.shape)} in float16 (whole numbers)",
             f"TraceableRunningMean()(x)，x 的形状为 {tuple(x.shape)}，dtype 为 float16（取整数值）")
    want = _running_mean_reference(x.clone())
    with torch.no_grad():
        got = eager_call(x.clone())
    if isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype != want.dtype:
        en, zh = _EAGER_MEAN_MISTAKES[0].en, _EAGER_MEAN_MISTAKES[0].zh
        raise Wrong(en, zh, tried=label, expected=f"dtype {want.dtype}", got=f"dtype {got.dtype}")
    diff = differs(got, want, rtol=2e-3, atol=1e-3)
    if diff is not None:
        zh_diff = differs(got, want, rtol=2e-3, atol=1e-3, where="结果", expected="期望", lang="zh")
        raise Wrong(*generic, tried=label, expected=describe(want), got=(diff, zh_diff or diff))


@task("lab01.3", "a running mean that traces for every length", "对任意长度都能正确追踪的累积均值", hints=[
    ("A Python loop runs while tracing, so the trace holds one copy of its body per row of the example. "
     "Find tensor operations that compute every row at once: a running sum, divided by how many rows it holds.",
     "Python 循环在追踪时真的运行，所以追踪结果会为示例的每一行保留一份循环体。请找出能一次算出所有行的张量运算："
     "累积和，再除以其中包含的行数。"),
    ("The divisors depend on the number of rows. The tracer records a size only while it stays a tensor "
     "size; turned into a Python int (len(), int(), range(), .item()) it becomes a constant of the trace. "
     "Lecture course/01_torchscript_trace.ipynb, section '5 · Baked in: control flow, sizes and Python values'.",
     "除数取决于行数。只有当尺寸一直以张量尺寸的形式出现时，追踪器才会记录它；一旦变成 Python int（len()、int()、"
     "range()、.item()），它就成了追踪结果中的常量。见讲义 course/01_torchscript_trace.ipynb 第「5 · 被固化的东西：控制流、尺寸和 Python 值」节。"),
])
def _running_mean(answer: Any) -> None:
    try:
        model = answer() if isinstance(answer, type) else answer
    except TypeError as exc:
        raise Wrong("pass the class (or an instance) of an nn.Module whose constructor takes no arguments.",
                    "请传入一个构造函数无需参数的 nn.Module 类（或它的实例）。", got=one_line_error(exc)) from None
    if not isinstance(model, nn.Module):
        raise Wrong("pass the class TraceableRunningMean (or an instance of it).",
                    "请传入 TraceableRunningMean 类（或它的实例）。", got=describe(model))
    gen = torch.Generator().manual_seed(17)

    def rows(n: int, cols: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if dtype == torch.float16:  # whole numbers: float16 sums them exactly, in any order
            x = torch.randint(-8, 9, (n, cols), generator=gen).to(dtype)
        else:
            x = (torch.randn(n, cols, generator=gen, dtype=torch.float64) * 2).to(dtype)
        if n > 2:
            x[1] = 0.0  # a row of zeros among rows of both signs
        return x

    def eager_call(x: torch.Tensor) -> Any:
        try:
            return model(x)
        except NotImplementedError:
            raise  # the stub (NotImplementedError is a RuntimeError)
        except RuntimeError as exc:
            if x.shape[0] > _FEW_ROWS:
                raise Wrong(f"your module works on inputs of up to {_FEW_ROWS} rows but raised on {x.shape[0]} rows: "
                            "a tensor of fixed length (a table of divisors made in advance, sliced by the number of "
                            "rows) runs out. Build every size-dependent tensor from x.shape[0], for any length.",
                            f"你的模块在不超过 {_FEW_ROWS} 行的输入上能运行，在 {x.shape[0]} 行时却抛出了异常：长度固定的张量"
                            "（例如预先做好、再按行数切片的除数表）不够用了。请根据 x.shape[0] 构造所有与尺寸有关的张量，适用于任意长度。",
                            tried=(f"TraceableRunningMean()(x), x of shape {tuple(x.shape)}",
                                   f"TraceableRunningMean()(x)，x 的形状为 {tuple(x.shape)}"),
                            got=str(exc).strip().splitlines()[-1]) from None
            raise Wrong("in eager mode your module raised on an input RunningMean accepts: the rows are the first "
                        "dimension and the features the second, so a tensor with one entry per row must line up "
                        "with the rows.",
                        "在 eager 模式下，你的模块在 RunningMean 能接受的输入上抛出了异常：行是第一维、特征是第二维，"
                        "所以每行一个值的张量必须与行对齐。",
                        tried=(f"TraceableRunningMean()(x), x of shape {tuple(x.shape)}",
                               f"TraceableRunningMean()(x)，x 的形状为 {tuple(x.shape)}"),
                        got=str(exc).strip().splitlines()[-1]) from None

    eager = [Probe((f"TraceableRunningMean()(x), x of shape {(n, c)}", f"TraceableRunningMean()(x)，x 的形状为 {(n, c)}"),
                   (rows(n, c),)) for n, c in [(4, 3), (1, 2), (6, 5)]]
    eager.append(Probe(("TraceableRunningMean()(x), x of shape (5, 3) in float64",
                        "TraceableRunningMean()(x)，x 的形状为 (5, 3)，dtype 为 float64"), (rows(5, 3, torch.float64),)))
    big = rows(4, 2, torch.float64)
    big[0, 0], big[1, 0] = 1e8, -1e8 + 1  # the running sum of column 0 cancels to exactly 1
    eager.append(Probe(("TraceableRunningMean()(x), x of shape (4, 2) in float64 whose column 0 starts 1e8, -1e8 + 1",
                        "TraceableRunningMean()(x)，x 的形状为 (4, 2)，dtype 为 float64，第 0 列以 1e8、-1e8 + 1 开头"),
                       (big,)))
    eager += [Probe((f"TraceableRunningMean()(x), x of shape {(n, c)}", f"TraceableRunningMean()(x)，x 的形状为 {(n, c)}"),
                    (rows(n, c),)) for n, c in _MANY_ROWS]
    generic = ("in eager mode your module already differs from RunningMean: out[t] is the mean of x[0] … x[t].",
               "在 eager 模式下你的模块就与 RunningMean 不同：out[t] 是 x[0] … x[t] 的均值。")
    run_probes(eager_call, _running_mean_reference, eager, mistakes=_EAGER_MEAN_MISTAKES, what="TraceableRunningMean()",
               generic=generic)
    _half_probe(eager_call, rows(12, 3, torch.float16), generic)

    traced = _trace(model, rows(3, 4))
    kinds = [n.kind() for n in traced.inlined_graph.nodes()]
    unrolled = kinds.count("aten::select") >= 3 or "aten::unbind" in kinds or "aten::stack" in kinds
    for n, cols in [(5, 4), (1, 4), (8, 2), *_MANY_ROWS]:
        x = rows(n, cols)
        tried = (f"traced with x of shape (3, 4), called with x of shape ({n}, {cols})",
                 f"用形状为 (3, 4) 的 x 追踪，再用形状为 ({n}, {cols}) 的 x 调用")
        want = _running_mean_reference(x)
        diff: Bilingual | None
        with torch.no_grad(), quiet(stderr=False):
            try:
                diff = differs(traced(x), want)
            except RuntimeError as exc:
                # TorchScript puts its own traceback first; the cause is on the message's last line.
                cause = str(exc).strip().splitlines()[-1]
                diff = ("raised " + cause, "抛出了异常：" + cause)
        if diff is None:
            continue
        if unrolled:
            hint = ("the trace still holds one copy of the loop body per row of the example: a Python loop is "
                    "unrolled while tracing. Compute all rows at once with tensor operations.",
                    "追踪结果里仍然为示例的每一行保留了一份循环体：Python 循环在追踪时被展开了。请用张量运算一次算出所有行。")
        elif "aten::size" not in kinds:
            hint = ("the number of rows was baked into the trace as a constant: a size turned into a Python "
                    "number (len(), int(), range(), .item()) is recorded as that number. Keep it a tensor size.",
                    "行数被固化成了追踪结果中的常量：变成 Python 数字（len()、int()、range()、.item()）的尺寸会被"
                    "记录为那个数。请让它保持为张量尺寸。")
        else:
            hint = ("the trace is right for 3 rows but not for others: some size-dependent value was fixed while "
                    "tracing. Build every size-dependent tensor from the input's size inside forward.",
                    "追踪结果在 3 行时正确，换成其他行数就不对：某个与尺寸有关的值在追踪时被固定了。"
                    "请在 forward 中根据输入的尺寸构造所有与尺寸有关的张量。")
        raise Wrong(*hint, tried=tried, expected=(f"{describe(want)}, equal to RunningMean",
                                                  f"{describe(want)}，与 RunningMean 的结果相同"), got=diff)


# -- lab01.4: save and load through memory ------------------------------------------------------
class _Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Dropout(0.3))
        self.norm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.body(x)))


class _Pair(nn.Module):
    """Two inputs: a traced copy needs the whole tuple of example inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.drop(self.lin(x)) * torch.tanh(y)


def _tensors_of(module: nn.Module) -> list[torch.Tensor]:
    return list(module.parameters()) + list(module.buffers())


@contextlib.contextmanager
def _watching_load() -> Iterator[list[Any]]:
    """Record every module ``torch.jit.load`` returns while the answer runs (the function is put back after)."""
    loads: list[Any] = []
    original = torch.jit.load

    def load(*args: Any, **kwargs: Any) -> Any:
        module = original(*args, **kwargs)
        loads.append(module)
        return module

    torch.jit.load = load
    try:
        yield loads
    finally:
        torch.jit.load = original


@contextlib.contextmanager
def _watching_save() -> Iterator[list[Any]]:
    """Record every module given to ``torch.jit.save`` while the answer runs (the function is put back after)."""
    saved: list[Any] = []
    original = torch.jit.save

    def save(module: Any, *args: Any, **kwargs: Any) -> Any:
        saved.append(module)
        return original(module, *args, **kwargs)

    torch.jit.save = save
    try:
        yield saved
    finally:
        torch.jit.save = original


@contextlib.contextmanager
def _watching_script() -> Iterator[list[Any]]:
    """Record every object given to ``torch.jit.script`` while the answer runs (the function is put back after)."""
    scripted: list[Any] = []
    original = torch.jit.script

    def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
        scripted.append(obj)
        return original(obj, *args, **kwargs)

    torch.jit.script = script
    try:
        yield scripted
    finally:
        torch.jit.script = original


class _LogIfLarge(nn.Module):
    """A branch on the data: every input the checker gives takes the log branch (entries above 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.min() > 1:
            return self.lin(torch.log(x))
        return self.lin(x) - 1


_SAVE_LOAD = ("lecture 01, section 9 saves and loads a trace",
              "第 01 讲第 9 节演示了追踪结果的保存与加载")


@task("lab01.4", "save and load a trace through memory", "通过内存保存并加载追踪结果", hints=[
    ("Three steps: trace, save into a buffer that lives in memory instead of a file, load from that buffer. "
     "What you return is what loading gives back, a new module with its own copy of the weights.",
     "三步：追踪，保存到内存中的缓冲区（而不是文件），再从这个缓冲区加载。你要返回的是加载得到的模块，它拥有自己的一份权重。"),
    ("Saving writes at the buffer's current position and leaves it at the end; loading reads from the "
     "current position. The example inputs are a tuple: the model takes all of them. Lecture "
     "course/01_torchscript_trace.ipynb, section '9 · Saving and loading'.",
     "保存会从缓冲区的当前位置写入，并停在末尾；加载从当前位置开始读。示例输入是一个 tuple：模型要用到其中全部张量。"
     "见讲义 course/01_torchscript_trace.ipynb 第「9 · 保存与加载」节。"),
])
def _roundtrip(answer: Any) -> None:
    need_callable(answer, "roundtrip")
    gen = torch.Generator().manual_seed(23)
    cases = [
        (("roundtrip(<Linear, GELU, Dropout, LayerNorm, Linear>.eval(), (x of shape (2, 6),))",
          "roundtrip(<Linear、GELU、Dropout、LayerNorm、Linear>.eval(), (形状为 (2, 6) 的 x,))"),
         built(_Head, 23), lambda b: (torch.randn(b, 6, generator=gen),)),
        (("roundtrip(<a Linear and a Dropout on x, times tanh(y)>.eval(), (x of shape (2, 6), y of shape (2, 3)))",
          "roundtrip(<对 x 做 Linear 和 Dropout，再乘以 tanh(y)>.eval(), (形状为 (2, 6) 的 x, 形状为 (2, 3) 的 y))"),
         built(_Pair, 24), lambda b: (torch.randn(b, 6, generator=gen), torch.randn(b, 3, generator=gen))),
        (("roundtrip(<a Linear and a BatchNorm1d> in training mode, (x of shape (4, 3),))",
          "roundtrip(<Linear 加 BatchNorm1d>（训练模式）, (形状为 (4, 3) 的 x,))"),
         built(_NormedTrain, 25, eval=False), lambda b: (torch.randn(b, 3, generator=gen),)),
        (("roundtrip(<if x.min() > 1: Linear(log(x)), else Linear(x) - 1>.eval(), (x of shape (2, 4), entries above 2,))",
          "roundtrip(<若 x.min() > 1 则 Linear(log(x))，否则 Linear(x) - 1>.eval(), (形状为 (2, 4)、元素都大于 2 的 x,))"),
         built(_LogIfLarge, 26), lambda b: (2 + torch.rand(b, 4, generator=gen) * 3,)),
    ]
    for tried, model, make in cases:
        modes = _modes(model)
        flags = [p.requires_grad for p in model.parameters()]
        grad_mode = torch.is_grad_enabled()
        example = make(2)
        handed = [(a.requires_grad, a.detach().clone()) for a in example]
        with quiet(stderr=False), _watching_load() as loads, _watching_save() as saved, _watching_script() as scripted:
            try:
                loaded = answer(model, example)
            except AttributeError as exc:
                if "save" in str(exc):
                    raise Wrong("torch.jit.save needs a ScriptModule: trace the model first, then save the trace.",
                                "torch.jit.save 需要 ScriptModule：请先追踪模型，再保存追踪结果。",
                                tried=tried, got=one_line_error(exc)) from None
                raise
            except TypeError as exc:
                if "missing" in str(exc) and "argument" in str(exc):
                    raise Wrong("the model takes every tensor in example_inputs; trace it with the whole tuple.",
                                "模型要用到 example_inputs 中的每一个张量；请用整个 tuple 来追踪它。",
                                tried=tried, got=one_line_error(exc)) from None
                raise
            except RuntimeError as exc:
                if "Freezing" in str(exc) and model.training:
                    raise Wrong("torch.jit.freeze works only on a module in eval mode, and this model is handed over in "
                                "training mode: save the trace itself, without freezing, and leave the model's mode "
                                "as it is.",
                                "torch.jit.freeze 只能用于 eval 模式的模块，而这个模型是以训练模式交给你的：请直接保存追踪结果，"
                                "不要冻结，也不要改变模型的模式。",
                                tried=tried, got=one_line_error(exc)) from None
                if "istream" in str(exc) or "PytorchStreamReader" in str(exc):
                    raise Wrong("torch.jit.load found nothing to read: saving leaves the buffer's position at its "
                                "end, and loading reads from there. Go back to the start before loading.",
                                "torch.jit.load 读不到内容：保存后缓冲区的位置停在末尾，加载又从那里开始读。加载前请回到开头。",
                                tried=tried, got=one_line_error(exc)) from None
                raise
        _require_modes(model, modes, "roundtrip", tried)
        if torch.is_grad_enabled() != grad_mode:
            torch.set_grad_enabled(grad_mode)  # put the process back as it was before saying so
            raise Wrong("roundtrip switched gradient tracking off for the whole process (torch.set_grad_enabled(False) "
                        "called as a function, not used as a `with` block) and left it off: every later computation "
                        "of the caller loses its gradients. Tracing needs no change of grad mode; if you change it, "
                        "limit it to a `with` block.",
                        "roundtrip 把整个进程的梯度记录关掉了（把 torch.set_grad_enabled(False) 当函数调用，而不是放在 "
                        "`with` 块里），而且没有恢复：调用方之后的所有计算都不再有梯度。追踪不需要改变梯度模式；"
                        "如果要改，请限制在一个 `with` 块内。",
                        tried=tried, expected=("gradient mode as it was (enabled)", "梯度模式保持原样（开启）"),
                        got=("gradient mode left disabled", "梯度模式被关闭且未恢复"))
        if [p.requires_grad for p in model.parameters()] != flags:
            raise Wrong("roundtrip changed the requires_grad flag of the model's parameters (for example with "
                        "model.requires_grad_(False)): the caller's model no longer learns. Trace the model as it "
                        "is given; the loaded copy is separate anyway.",
                        "roundtrip 改变了模型参数的 requires_grad 标志（例如调用了 model.requires_grad_(False)）："
                        "调用方的模型因此无法再训练。请按原样追踪模型；加载得到的副本本来就是独立的。",
                        tried=tried, expected=("every parameter's requires_grad unchanged", "每个参数的 requires_grad 保持不变"),
                        got=("requires_grad changed on the model's parameters", "模型参数的 requires_grad 被改变了"))
        for i, (a, (grad, values)) in enumerate(zip(example, handed)):
            if a.requires_grad != grad or not torch.equal(a.detach(), values):
                what = ("requires_grad", "requires_grad") if a.requires_grad != grad else ("values", "数值")
                raise Wrong("roundtrip changed the example inputs it was given (their requires_grad flag or their "
                            "values, e.g. with requires_grad_() or an in-place operation): trace with them as they "
                            "are, and leave the caller's tensors as they were.",
                            "roundtrip 改动了传给它的示例输入（它们的 requires_grad 标志或数值，例如调用了 requires_grad_() "
                            "或原地运算）：请按原样用它们追踪，不要改动调用方的张量。",
                            tried=tried,
                            expected=(f"example_inputs[{i}] unchanged", f"example_inputs[{i}] 保持不变"),
                            got=(f"the {what[0]} of example_inputs[{i}] changed", f"example_inputs[{i}] 的{what[1]}被改变了"))
        if loaded is model or not isinstance(loaded, torch.jit.ScriptModule):
            raise Wrong("return the module that torch.jit.load gave back, not the model.",
                        "请返回 torch.jit.load 读回的模块，而不是原模型。",
                        tried=tried, expected="torch.jit.RecursiveScriptModule", got=describe(loaded))
        own = {t.data_ptr() for t in _tensors_of(model)}
        if isinstance(loaded, torch.jit._trace.TracedModule) or any(t.data_ptr() in own for t in _tensors_of(loaded)):
            raise Wrong("that module still shares its tensors with the model: it is the trace itself, not a copy "
                        f"that went through saving and loading; {_SAVE_LOAD[0]}.",
                        f"这个模块仍与原模型共享张量：它就是追踪结果本身，而不是经过保存和加载得到的副本；{_SAVE_LOAD[1]}。",
                        tried=tried, expected=("a loaded copy", "加载得到的副本"), got=describe(loaded))
        if not any(loaded is one for one in loads):
            raise Wrong("that module did not come out of torch.jit.load: it is a copy made in memory some other way "
                        f"(or a new trace), so it never went through saving and loading; {_SAVE_LOAD[0]}.",
                        f"这个模块不是 torch.jit.load 读回来的：它是用别的办法在内存中得到的副本（或重新追踪的结果），"
                        f"从未经过保存和加载；{_SAVE_LOAD[1]}。",
                        tried=tried, expected=("the module torch.jit.load returned", "torch.jit.load 返回的模块"),
                        got=describe(loaded))
        if scripted and any(isinstance(m, torch.jit.ScriptModule) and not isinstance(m, torch.jit._trace.TracedModule)
                            for m in saved):
            raise Wrong("what you saved was compiled with torch.jit.script, not traced: the task is to save a trace "
                        "(torch.jit.trace with the example inputs), which records the path those inputs take.",
                        "你保存的是用 torch.jit.script 编译的模块，而不是追踪结果：这个练习要保存的是追踪结果"
                        "（用示例输入调用 torch.jit.trace），它记录的是这些输入走过的路径。",
                        tried=tried, expected=("a saved trace", "保存的追踪结果"),
                        got=("a saved torch.jit.script module", "保存的 torch.jit.script 模块"))
        for batch in ((2, 5, 3) if model.training else (2, 5, 1)):  # batch statistics need 2 rows or more
            args = make(batch)
            shown = f"loaded({', '.join(f'tensor of shape {tuple(a.shape)}' for a in args)})"
            with torch.no_grad(), quiet(stderr=False):
                want = model(*args)
                got = called(loaded, args, tried=(f"{tried[0]}, then {shown}", f"{tried[1]}，然后调用 {shown}"),
                             errors=(RuntimeError,), en="the loaded module fails on a new input.",
                             zh="加载的模块在新输入上运行失败。")
            diff = differs(got, want)
            if diff and isinstance(model, _LogIfLarge):
                raise Wrong("the loaded module takes the other branch of the model's `if` on inputs like the example "
                            "ones: a trace records the path its example inputs take, so trace with the example inputs "
                            "you were given, not with new (random) tensors of the same shape.",
                            "在与示例输入相似的输入上，加载的模块走了模型 `if` 的另一个分支：追踪结果记录的是示例输入走过的路径，"
                            "所以请用传给你的示例输入来追踪，而不是用形状相同的新（随机）张量。",
                            tried=(f"{tried[0]}, then {shown}", f"{tried[1]}，然后调用 {shown}"),
                            expected=describe(want), got=diff)
            if diff:
                raise Wrong("the loaded module computes something else than the model: trace the model as it is "
                            "given (in its own mode), with the example inputs.",
                            "加载的模块与原模型计算结果不同：请按原样（保持它本来的模式）用示例输入追踪模型。",
                            tried=(f"{tried[0]}, then {shown}", f"{tried[1]}，然后调用 {shown}"),
                            expected=describe(want), got=diff)
