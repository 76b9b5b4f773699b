"""Checkers for labs/lab01_trace.ipynb (lecture course/01_torchscript_trace.ipynb).

Every task hands the learner's code models defined here, which the learner has not seen, and runs
the result on new inputs (other batch sizes, other signs). ``torch.jit`` warns on every call in
2.13 and traces warn about baked-in values; the checkers silence both so feedback stays readable.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch import nn

from . import Wrong, task
from .._text import one_line_error, quiet


def _need_callable(answer: Any, name: str) -> None:
    if not callable(answer) or isinstance(answer, type):
        raise Wrong(f"pass the function itself, e.g. check(..., {name}).",
                    f"请传入函数本身，例如 check(..., {name})。", got=type(answer).__name__)


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


@task("lab01.1", "count the ATen operators of a traced model", "统计追踪模型中的 ATen 算子")
def _count_aten(answer: Any) -> None:
    _need_callable(answer, "aten_op_counts")
    torch.manual_seed(3)
    cases = [
        ("torch.jit.trace(TinyCNN().eval(), x)", _TinyCNN().eval(), (torch.randn(1, 3, 6, 6),)),
        ("torch.jit.trace(GRUCellNet(), x)", _Gru().eval(), (torch.randn(2, 3),)),
        ("torch.jit.trace(scaled_softmax, x)", _scaled_softmax, (torch.randn(2, 5),)),
    ]
    for tried, model, example in cases:
        traced = _trace(model, *example)
        want = dict(_aten_kinds(traced.inlined_graph))
        with quiet(stderr=False):
            got = answer(traced)
        if not isinstance(got, dict):
            raise Wrong("return a dict from node kind (e.g. 'aten::relu') to count.",
                        "请返回从节点类型（例如 'aten::relu'）到数量的 dict。",
                        tried=tried, expected=repr(want), got=type(got).__name__)
        got = {str(k): v for k, v in got.items() if v}
        if got == want:
            continue
        top = dict(_aten_kinds(traced.graph))
        if got == top:
            hint = ("that counts only the top-level graph, where each submodule is one prim::CallMethod; "
                    "use traced.inlined_graph, which inlines every method call.",
                    "这只统计了顶层计算图，那里每个子模块只是一个 prim::CallMethod；"
                    "请使用 traced.inlined_graph，它把所有方法调用都内联展开了。")
        elif set(got) == {k.split("::", 1)[1] for k in want}:
            hint = ("use the full kind string, e.g. 'aten::relu', as node.kind() returns it.",
                    "请使用完整的类型字符串，例如 node.kind() 返回的 'aten::relu'。")
        elif any(not k.startswith("aten::") for k in got):
            hint = ("count only kinds that start with 'aten::' (leave out prim::GetAttr, prim::Constant, …).",
                    "只统计以 'aten::' 开头的节点类型（不包括 prim::GetAttr、prim::Constant 等）。")
        else:
            hint = ("walk traced.inlined_graph.nodes() and count node.kind() for every aten:: node.",
                    "遍历 traced.inlined_graph.nodes()，对每个 aten:: 节点统计 node.kind()。")
        raise Wrong(*hint, tried=tried, expected=repr(dict(sorted(want.items()))),
                    got=repr(dict(sorted(got.items()))))


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


def _pos(*shape: int) -> torch.Tensor:
    return torch.rand(*shape) + 0.1


def _neg(*shape: int) -> torch.Tensor:
    return -_pos(*shape)


@task("lab01.2", "trace only when check_inputs agree", "只在 check_inputs 一致时返回追踪结果")
def _trace_safely(answer: Any) -> None:
    _need_callable(answer, "trace_safely")
    torch.manual_seed(11)

    def call(model: nn.Module, inputs: list[tuple[torch.Tensor, ...]], tried: str) -> Any:
        with quiet(stderr=False):
            try:
                return answer(model, inputs)
            except torch.jit.TracingCheckError as exc:
                raise Wrong("torch.jit.trace raised TracingCheckError: catch it and return None.",
                            "torch.jit.trace 抛出了 TracingCheckError：请捕获它并返回 None。",
                            tried=tried, got=one_line_error(exc)) from None

    # Valid traces: a traced module must come back, and be right on inputs it was not traced with.
    valid = [
        (_Affine().eval(), [(_pos(2, 3),), (_neg(5, 3),), (_pos(1, 3),)], "an affine model without control flow"),
        (_WideOrNarrow(), [(_pos(2, 3),), (_neg(4, 3),)], "an `if x.shape[1] > 2` that every input satisfies"),
    ]
    for model, inputs, what in valid:
        tried = f"{what}; inputs of shapes {[tuple(a[0].shape) for a in inputs]}"
        got = call(model, inputs, tried)
        if got is None:
            if isinstance(model, _WideOrNarrow):
                raise Wrong("this model's trace is right on every input, but you returned None. A TracerWarning "
                            "only says the trace *might* be wrong; return None only when the check fails "
                            "(TracingCheckError).",
                            "这个模型的追踪结果在每个输入上都正确，你却返回了 None。TracerWarning 只是说追踪结果"
                            "*可能*不对；只有检查失败（TracingCheckError）时才返回 None。",
                            tried=tried, expected="a traced module", got="None")
            raise Wrong("this model has no control flow, so its trace is valid: return the traced module.",
                        "这个模型没有控制流，它的追踪结果是有效的：请返回追踪得到的模块。",
                        tried=tried, expected="a traced module", got="None")
        if got is model or not isinstance(got, torch.jit.ScriptModule):
            raise Wrong("return what torch.jit.trace returned (a ScriptModule), not the model itself.",
                        "请返回 torch.jit.trace 的结果（一个 ScriptModule），而不是模型本身。",
                        tried=tried, expected="torch.jit.ScriptModule", got=type(got).__name__)
        for args in inputs + [(_neg(3, 3),)]:
            with torch.no_grad(), quiet(stderr=False):
                want, out = model(*args), got(*args)
            if out.shape != want.shape or not torch.allclose(out, want, atol=1e-5):
                raise Wrong("the traced module gives another result than the model; trace with the first "
                            "input tuple, e.g. torch.jit.trace(model, inputs[0], check_inputs=inputs).",
                            "追踪得到的模块与模型结果不同；请用第一组输入追踪，例如 "
                            "torch.jit.trace(model, inputs[0], check_inputs=inputs)。",
                            tried=f"{tried}; then x of shape {tuple(args[0].shape)}",
                            expected=f"shape {tuple(want.shape)}", got=f"shape {tuple(out.shape)}")

    # Invalid traces: the check inputs take another path, so the answer must be None.
    invalid = [
        (_SignSwitch(), [(_pos(2, 4),), (_pos(3, 4),), (_neg(2, 4),)],
         "an `if x.mean() > 0`; the last input has a negative mean",
         ("the trace of this model is wrong on inputs[2] (the other branch), yet you returned it. Pass the inputs "
          "to the check: torch.jit.trace(model, inputs[0], check_inputs=inputs).",
          "这个模型的追踪结果在 inputs[2]（另一个分支）上是错的，你却返回了它。请把输入交给检查："
          "torch.jit.trace(model, inputs[0], check_inputs=inputs)。")),
        (_PerRow(), [(_pos(2, 3),), (_pos(4, 3),)],
         "a loop over range(x.shape[0]); the inputs have 2 and 4 rows",
         ("the loop was unrolled to 2 rows, so the trace fails on 4 rows, yet you returned it. Use check_inputs: "
          "torch.jit.trace re-traces on each of them and compares the graphs.",
          "循环被展开成了 2 行，追踪结果在 4 行输入上会出错，你却返回了它。请使用 check_inputs："
          "torch.jit.trace 会在每组输入上重新追踪并比较计算图。")),
        (_AbsOrNeg(), [(_pos(2, 3),), (_neg(2, 3),)],
         "an `if x.sum() > 0` between abs(x) and -x; on inputs[1] both give the same numbers",
         ("on inputs[1] the outputs happen to agree (abs(x) == -x for negative x), but a trace of inputs[1] "
          "records aten::neg where yours has aten::abs. Comparing outputs is not enough: check_inputs compares "
          "the graphs.",
          "在 inputs[1] 上输出碰巧一致（x 为负时 abs(x) == -x），但在 inputs[1] 上追踪得到的是 aten::neg，"
          "而你的追踪结果里是 aten::abs。只比较输出是不够的：check_inputs 会比较计算图。")),
    ]
    for model, inputs, what, hint in invalid:
        tried = f"{what}; inputs of shapes {[tuple(a[0].shape) for a in inputs]}"
        got = call(model, inputs, tried)
        if got is not None:
            raise Wrong(*hint, tried=tried, expected="None", got=type(got).__name__)


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


@task("lab01.3", "a running mean that traces for every length", "对任意长度都能正确追踪的累积均值")
def _running_mean(answer: Any) -> None:
    try:
        model = answer() if isinstance(answer, type) else answer
    except TypeError as exc:
        raise Wrong("pass the class (or an instance) of an nn.Module whose constructor takes no arguments.",
                    "请传入一个构造函数无需参数的 nn.Module 类（或它的实例）。", got=one_line_error(exc)) from None
    if not isinstance(model, nn.Module):
        raise Wrong("pass the class TraceableRunningMean (or an instance of it).",
                    "请传入 TraceableRunningMean 类（或它的实例）。", got=type(model).__name__)
    reference = _RunningMean()
    torch.manual_seed(17)
    for shape in [(4, 3), (1, 2), (6, 5)]:
        x = torch.randn(*shape)
        with torch.no_grad():
            want, got = reference(x), model(x)
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
            shown = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
            if isinstance(got, torch.Tensor) and got.shape == want.shape:
                shown = f"max abs difference {float((got - want).abs().max()):.3g}"
            raise Wrong("in eager mode your module already differs from RunningMean: out[t] is the mean of "
                        "x[0] … x[t], i.e. a cumulative sum divided by t + 1.",
                        "在 eager 模式下你的模块就与 RunningMean 不同：out[t] 是 x[0] … x[t] 的均值，"
                        "即累积和除以 t + 1。",
                        tried=f"x of shape {shape}", expected=f"shape {tuple(want.shape)}", got=shown)
    example = torch.randn(3, 4)
    traced = _trace(model, example)
    kinds = [n.kind() for n in traced.inlined_graph.nodes()]
    for rows, cols in [(5, 4), (1, 4), (8, 2)]:
        x = torch.randn(rows, cols)
        tried = f"traced with x of shape (3, 4), called with x of shape ({rows}, {cols})"
        with torch.no_grad():
            want = reference(x)
            try:
                got = traced(x)
                error = None
            except RuntimeError as exc:
                got, error = None, exc
        if got is not None and got.shape == want.shape and torch.allclose(got, want, atol=1e-5):
            continue
        # TorchScript puts its own traceback first; the cause is on the message's last line.
        shown = str(error).strip().splitlines()[-1] if error is not None else f"shape {tuple(got.shape)}"
        if kinds.count("aten::select") >= 3 or kinds.count("aten::unbind") or kinds.count("aten::stack"):
            hint = ("the trace still holds one copy of the loop body per row of the example: a Python loop is "
                    "unrolled. Compute all rows at once, e.g. x.cumsum(0) divided by the row numbers.",
                    "追踪结果里仍然为示例的每一行保留了一份循环体：Python 循环被展开了。请一次算出所有行，"
                    "例如用 x.cumsum(0) 除以行号。")
        elif "aten::size" not in kinds:
            hint = ("the number of rows was baked in as a constant. len(x), int(...) and .item() turn it into a "
                    "Python number; use x.shape[0] (or x.size(0)) directly, e.g. torch.arange(1, x.shape[0] + 1).",
                    "行数被固化成了常量。len(x)、int(...) 和 .item() 会把它变成 Python 数字；请直接使用 "
                    "x.shape[0]（或 x.size(0)），例如 torch.arange(1, x.shape[0] + 1)。")
        else:
            hint = ("the trace is right for 3 rows but not for others; build every size-dependent tensor from "
                    "x.shape[0] inside forward.",
                    "追踪结果在 3 行时正确，换成其他行数就不对；请在 forward 中用 x.shape[0] 构造所有与尺寸有关的张量。")
        raise Wrong(*hint, tried=tried, expected=f"shape {tuple(want.shape)}, equal to RunningMean", got=shown)


# -- lab01.4: save and load through memory ------------------------------------------------------
class _Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Dropout(0.3))
        self.norm = nn.LayerNorm(8)
        self.out = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(self.body(x)))


def _tensors_of(module: nn.Module) -> list[torch.Tensor]:
    return list(module.parameters()) + list(module.buffers())


@task("lab01.4", "save and load a trace through memory", "通过内存保存并加载追踪结果")
def _roundtrip(answer: Any) -> None:
    _need_callable(answer, "roundtrip")
    torch.manual_seed(23)
    model = _Head().eval()
    example = torch.randn(2, 6)
    tried = "roundtrip(Head().eval(), (x of shape (2, 6),))"
    with quiet(stderr=False):
        try:
            loaded = answer(model, (example,))
        except AttributeError as exc:
            if "save_to_buffer" in str(exc) or "save" in str(exc):
                raise Wrong("torch.jit.save needs a ScriptModule: trace the model first, then save the trace.",
                            "torch.jit.save 需要 ScriptModule：请先追踪模型，再保存追踪结果。",
                            tried=tried, got=one_line_error(exc)) from None
            raise
        except RuntimeError as exc:
            if "istream" in str(exc) or "PytorchStreamReader" in str(exc):
                raise Wrong("torch.jit.load read from the end of the buffer: call buffer.seek(0) after saving.",
                            "torch.jit.load 从缓冲区末尾开始读取：保存之后请调用 buffer.seek(0)。",
                            tried=tried, got=one_line_error(exc)) from None
            raise
    if loaded is model or not isinstance(loaded, torch.jit.ScriptModule):
        raise Wrong("return the module that torch.jit.load gave back, not the model.",
                    "请返回 torch.jit.load 读回的模块，而不是原模型。",
                    tried=tried, expected="torch.jit.RecursiveScriptModule", got=type(loaded).__name__)
    own = {t.data_ptr() for t in _tensors_of(model)}
    if isinstance(loaded, torch.jit._trace.TracedModule) or any(t.data_ptr() in own for t in _tensors_of(loaded)):
        raise Wrong("that module still shares its tensors with the model: it is the trace itself. Save it with "
                    "torch.jit.save into an io.BytesIO, rewind, and return torch.jit.load(buffer).",
                    "这个模块仍与原模型共享张量：它就是追踪结果本身。请用 torch.jit.save 存入 io.BytesIO，"
                    "把位置移回开头，再返回 torch.jit.load(buffer)。",
                    tried=tried, expected="a loaded copy", got=type(loaded).__name__)
    for batch in (2, 5, 1):
        x = torch.randn(batch, 6)
        with torch.no_grad(), quiet(stderr=False):
            want = model(x)
            try:
                got = loaded(x)
            except RuntimeError as exc:
                raise Wrong("the loaded module fails on a new input.", "加载的模块在新输入上运行失败。",
                            tried=f"loaded(x of shape ({batch}, 6))", got=one_line_error(exc)) from None
        if got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
            raise Wrong("the loaded module computes something else than the model: trace the model as it is "
                        "given (in eval mode), with the example inputs.",
                        "加载的模块与原模型计算结果不同：请按原样（推理模式）用示例输入追踪模型。",
                        tried=f"loaded(x of shape ({batch}, 6))", expected="the model's output",
                        got=f"shape {tuple(got.shape)}" if got.shape != want.shape
                        else f"max abs difference {float((got - want).abs().max()):.3g}")
