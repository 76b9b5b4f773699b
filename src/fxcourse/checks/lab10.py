"""Checkers for labs/lab10_export_mlir.ipynb (lecture course/10_export_mlir.ipynb).

Every checker uses models of its own (other sizes, other ops) and inputs the lab does not show,
exports or compiles the learner's answer, and compares with eager PyTorch. torch-mlir and IREE
are imported only when task lab10.3 runs.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from . import Wrong, task
from .._text import one_line_error, quiet
from ._probe import describe, differs, need_callable, seeded

_L = "course/10_export_mlir.ipynb"


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    with quiet(), torch.no_grad():
        return fn(*args)


# -- exercise 1: one dynamic batch shared by two inputs --------------------------------------

class _ScaleShift(nn.Module):
    """out = linear(x) * sigmoid(y): x and y must share their batch."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(5, 2)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * torch.sigmoid(y)


class _Concat(nn.Module):
    """out = linear(cat([x, y], dim=1)): the batch sizes must agree for cat."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(7, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(torch.cat([x, y], dim=1)))


_ONE_ERRORS = [
    ("must always be equal",
     "export refused your dynamic_shapes: you gave x and y a Dim each, but the model needs their batch sizes "
     "to be equal. Read the error's 'Suggested fixes' line (lecture 10, section 3 'Dynamic shapes').",
     "export 拒绝了你的 dynamic_shapes：你给 x 和 y 各用了一个 Dim，但模型要求它们的批大小相等。"
     "请阅读错误信息中的 “Suggested fixes” 一行（第 10 讲第 3 节）。"),
    ("specialized it to be a constant",
     "export refused your dynamic_shapes: a dimension you marked dynamic is fixed by the model (a feature "
     "size the weights decide). Only the batch, dimension 0, may vary (lecture 10, section 3 'Dynamic shapes').",
     "export 拒绝了你的 dynamic_shapes：你标记为动态的某个维度被模型固定了（由权重决定的特征维度）。"
     "只有批维度（第 0 维）可以变化（第 10 讲第 3 节）。"),
]


def _export_or_named(answer: Callable[..., Any], model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                     label: str) -> Any:
    try:
        return _call(answer, model, x, y)
    except Exception as exc:
        text = str(exc)
        for needle, en, zh in _ONE_ERRORS:
            if needle in text:
                raise Wrong(en, zh, tried=label, got=one_line_error(exc)) from None
        raise


@task("lab10.1", "Export with one dynamic batch for two inputs", "为两个输入导出共享的动态批维度",
      hints=[("Both inputs' dimension 0 is the same size whatever the batch; how do you tell export that two "
              "dimensions are one?",
              "无论批大小是多少，两个输入的第 0 维总是同样大；怎样告诉 export 这两个维度其实是同一个？"),
             ("A Dim object names a size; the dynamic_shapes dict is keyed by forward's argument names. Lecture 10, "
              "section 3 'Dynamic shapes' reads the error that separate Dims give.",
              "Dim 对象代表一个尺寸；dynamic_shapes 字典的键是 forward 的参数名。第 10 讲第 3 节"
              "（Dynamic shapes）解读了各用一个 Dim 时得到的错误。")])
def _check_shared_batch(answer: Any) -> None:
    need_callable(answer, "export_shared_batch")
    cases = [("_ScaleShift (x: (4, 5), y: (4, 2))", seeded(_ScaleShift(), 101), _randn(1, 4, 5), _randn(2, 4, 2)),
             ("_Concat (x: (3, 4), y: (3, 3))", seeded(_Concat(), 102), _randn(3, 3, 4), _randn(4, 3, 3))]
    for label, model, x, y in cases:
        program = _export_or_named(answer, model, x, y, label)
        if not isinstance(program, torch.export.ExportedProgram):
            raise Wrong("return the ExportedProgram itself (what torch.export.export returns), not a module made "
                        "from it or a compiled function.",
                        "请返回 ExportedProgram 本身（torch.export.export 的返回值），而不是由它得到的模块或编译后的函数。",
                        tried=label, got=describe(program))
        for batch in (2, 5, 9):
            bx, by = _randn(10 + batch, batch, x.shape[1]), _randn(20 + batch, batch, y.shape[1])
            tried = (f"{label}, exported, then called with batch {batch}", f"{label}，导出后以批大小 {batch} 调用")
            want = _call(model, bx, by)
            try:
                got = _call(program.module(), bx, by)
            except Exception as exc:
                raise Wrong("the exported program only accepts the example's batch size: the batch was "
                            "specialised. Mark dimension 0 of both inputs dynamic (lecture 10, section 3 "
                            "'Dynamic shapes').",
                            "导出的程序只接受示例的批大小：批维度被特化了。请把两个输入的第 0 维都标为动态（第 10 讲第 3 节）。",
                            tried=tried, got=one_line_error(exc)) from None
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff:
                raise Wrong("the exported program gives other values than the model: export the model you were "
                            "given, with its own weights.",
                            "导出的程序与模型的结果不同：请导出传给你的那个模型，使用它自己的权重。", tried=tried, got=diff)
        symbols = {str(k) for k in program.range_constraints}
        if len(symbols) != 1:
            raise Wrong("the program should have exactly one size symbol, the shared batch.",
                        "程序中应当恰好有一个尺寸符号，即共享的批维度。", tried=label,
                        got=(f"range_constraints with {len(symbols)} symbols", f"range_constraints 中有 {len(symbols)} 个符号"))


# -- exercise 2: a data-dependent branch with torch.cond --------------------------------------

def _gate_reference(linear: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """zoo.Gate's forward: relu(y) if y.sum() > 0 else -y."""
    y = linear(x)
    return torch.relu(y) if bool(y.sum() > 0) else -y


def _branch_inputs(linear: nn.Linear, d: int, seed: int) -> dict[tuple[str, str], torch.Tensor]:
    """One input per branch, keyed by its (English, 中文) name (found by drawing from a seeded
    generator), batch sizes 3 and 6."""
    gen = torch.Generator().manual_seed(seed)
    found: dict[tuple[str, str], torch.Tensor] = {}
    while len(found) < 2:
        batch = 3 if not found else 6
        x = torch.randn(batch, d, generator=gen) * 3
        with torch.no_grad():
            key = (("relu(y) branch (y.sum() > 0)", "relu(y) 分支（y.sum() > 0）") if bool(linear(x).sum() > 0)
                   else ("-y branch (y.sum() <= 0)", "-y 分支（y.sum() <= 0）"))
        found.setdefault(key, x)
    return found


@task("lab10.2", "Export zoo.Gate with torch.cond", "用 torch.cond 导出 zoo.Gate",
      hints=[("export cannot follow a Python if on a tensor's value: the branch must become part of the graph.",
              "export 无法跟随依赖张量取值的 Python if：分支必须成为计算图的一部分。"),
             ("torch.cond takes a boolean tensor, two functions and a tuple of operands; both functions get the "
              "same operands. Lecture 10, section 5 'zoo.Gate exported at last' does it.",
              "torch.cond 接受一个布尔张量、两个函数和一个操作数元组；两个函数拿到相同的操作数。"
              "第 10 讲第 5 节（zoo.Gate exported at last）正是这样做的。")], time_limit=120)
def _check_cond_gate(answer: Any) -> None:
    need_callable(answer, "ExportableGate", classes=True)
    if not (isinstance(answer, type) and issubclass(answer, nn.Module)):
        raise Wrong("pass the class ExportableGate itself (a subclass of zoo.Gate).",
                    "请传入 ExportableGate 类本身（zoo.Gate 的子类）。", got=describe(answer))
    for d, seed in ((5, 201), (3, 202)):
        model = answer(d)
        seeded(model, seed)
        linear = model.linear
        label = (f"ExportableGate({d}) with seeded weights", f"ExportableGate({d})，权重取固定的随机值")
        probes = _branch_inputs(linear, d, seed)
        example = next(iter(probes.values()))
        try:
            with quiet():
                program = torch.export.export(model, (example,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
        except Exception as exc:
            if "data-dependent" in str(exc) or "GuardOnDataDependent" in type(exc).__name__:
                raise Wrong("export stopped at a branch on a tensor's value (a data-dependent expression): a "
                            "Python if or bool() on a tensor cannot be exported. Put the branch in the graph "
                            "(lecture 10, section 5 'zoo.Gate exported at last').",
                            "export 停在依赖张量取值的分支上（数据相关的表达式）：对张量做 Python if 或 bool() 无法导出。"
                            "请把分支放进计算图（第 10 讲第 5 节）。",
                            tried=(f"torch.export.export({label[0]}, dynamic batch)",
                                   f"torch.export.export，模型为 {label[1]}，批维度为动态"),
                            got=one_line_error(exc)) from None
            raise
        conds = [n for n in program.graph.nodes if n.op == "call_function" and n.target is torch.ops.higher_order.cond]
        ops = sorted({str(n.target) for n in program.graph.nodes if n.op == "call_function"})
        for branch, x in probes.items():
            want = _call(lambda t: _gate_reference(linear, t), x)
            got = _call(program.module(), x)
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff:
                other = _call(lambda t: -linear(t) if bool(linear(t).sum() > 0) else torch.relu(linear(t)), x)
                if differs(got, other, rtol=1e-4, atol=1e-5) is None:
                    raise Wrong("the two branches are swapped: torch.cond runs its first function when the "
                                "condition is true (zoo.Gate: relu(y) when y.sum() > 0).",
                                "两个分支弄反了：条件为真时 torch.cond 运行第一个函数（zoo.Gate：y.sum() > 0 时返回 relu(y)）。",
                                tried=(f"{label[0]}, {branch[0]}", f"{label[1]}，{branch[1]}"), got=diff)
                raise Wrong("the exported program differs from zoo.Gate on this input.",
                            "导出的程序在这个输入上与 zoo.Gate 的结果不同。",
                            tried=(f"{label[0]}, {branch[0]}", f"{label[1]}，{branch[1]}"), got=diff)
        if not conds:
            raise Wrong("the values are right, but the exported graph has no cond node: both branches are "
                        "computed and one is picked (as torch.where does). The exercise asks for torch.cond, which "
                        "runs only the branch taken.",
                        "数值正确，但导出的计算图中没有 cond 节点：两个分支都计算了，再从中挑一个（像 torch.where 那样）。"
                        "本练习要求使用 torch.cond，它只运行被选中的分支。", tried=label,
                        got=(f"ops: {ops}", f"算子：{ops}"))


# -- exercise 3: compile with torch-mlir + IREE and run ---------------------------------------

class _TanhNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 10), nn.Linear(10, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


class _Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.sigmoid(self.fc(x)) * 2


@task("lab10.3", "Compile with torch-mlir and IREE, run on the CPU", "用 torch-mlir 和 IREE 编译并在 CPU 上运行",
      hints=[("Three steps: export with a dynamic batch and lower to an MLIR text, compile the text for llvm-cpu, "
              "load it and wrap the call so it takes and returns tensors.",
              "三步：以动态批维度导出并下降成 MLIR 文本，把文本编译到 llvm-cpu，加载它并包装调用，使其接收并返回张量。"),
             ("Lecture 10, section 9 'Run it' compiles a linalg-on-tensors module and calls it with NumPy arrays; "
              "section 9 also shows which stages IREE 3.13 cannot compile with a dynamic batch.",
              "第 10 讲第 9 节（Run it）编译了一个 linalg-on-tensors 模块并用 NumPy 数组调用它；"
              "该节还展示了 IREE 3.13 在动态批维度下无法编译哪些阶段。")], time_limit=180)
def _check_iree(answer: Any) -> None:
    need_callable(answer, "compile_with_iree")
    for label, model, features, seed in (("_TanhNet (Linear 6→10, tanh, Linear 10→2)", seeded(_TanhNet(), 301), 6, 31),
                                         ("_Residual (x + 2·sigmoid(Linear 3→3))", seeded(_Residual(), 302), 3, 32)):
        probes = {batch: _randn(seed + batch, batch, features) for batch in (3, 7, 16)}
        wants = {batch: _call(model, x) for batch, x in probes.items()}
        example = _randn(seed, 4, features)
        try:
            with quiet():
                run = answer(model, example)
        except Exception as exc:
            if "dynamic_broadcast_in_dim" in str(exc):
                raise Wrong("IREE 3.13 cannot compile a StableHLO module with a dynamic batch "
                            "(stablehlo.dynamic_broadcast_in_dim). Lower to another stage (lecture 10, section 9 "
                            "'Run it').",
                            "IREE 3.13 无法编译带动态批维度的 StableHLO 模块（stablehlo.dynamic_broadcast_in_dim）。"
                            "请下降到另一个阶段（第 10 讲第 9 节）。",
                            tried=(f"compile_with_iree({label}, example of batch 4)",
                                   f"compile_with_iree({label}, 批大小为 4 的示例)"), got=one_line_error(exc)) from None
            raise
        if not callable(run):
            raise Wrong("return a function that takes a tensor and returns a tensor.",
                        "请返回一个接收张量并返回张量的函数。", tried=label, got=describe(run))
        with torch.no_grad():  # the compiled module froze the weights; eager now gives other values
            for p in model.parameters():
                p.add_(1.0)
        for batch, x in probes.items():
            tried = (f"{label}: compiled on a batch of 4, called with batch {batch}",
                     f"{label}：以批大小 4 编译，以批大小 {batch} 调用")
            try:
                with quiet():
                    got = run(x.clone())
            except Exception as exc:
                raise Wrong("the compiled module rejects this batch size: it was exported with a static batch. "
                            "Export with dimension 0 dynamic before lowering (lecture 10, section 9 'Run it').",
                            "编译出的模块拒绝这个批大小：导出时批维度是静态的。请在下降之前把第 0 维设为动态再导出（第 10 讲第 9 节）。",
                            tried=tried, got=one_line_error(exc)) from None
            if not isinstance(got, torch.Tensor):
                raise Wrong("return a torch.Tensor, not the runtime's array or a NumPy array: convert the result.",
                            "请返回 torch.Tensor，而不是运行时的数组或 NumPy 数组：转换一下结果。",
                            tried=tried, got=describe(got))
            diff = differs(got, wants[batch], rtol=1e-4, atol=1e-5)
            if diff:
                if differs(got, _call(model, x), rtol=1e-4, atol=1e-5) is None:
                    raise Wrong("your function runs the PyTorch model (it follows a change of the weights made "
                                "after compiling): call the compiled IREE module instead.",
                                "你的函数运行的是 PyTorch 模型（编译之后修改权重，它的结果也跟着变）：请改为调用 IREE 编译出的模块。",
                                tried=tried, got=diff)
                raise Wrong("the compiled module's output differs from eager PyTorch.",
                            "编译出的模块的输出与 eager 模式的 PyTorch 不同。", tried=tried, got=diff)
