"""Checkers for labs/lab00_warmup.ipynb (lecture course/00_overview.ipynb)."""
from __future__ import annotations

import warnings
from collections import Counter
from typing import Any

import torch
from torch import fx, nn

from . import Wrong, task
from .. import zoo


def _hidden_graphs() -> list[tuple[str, fx.GraphModule]]:
    """Graphs the learner has not seen: zoo models plus a function using methods."""

    def scaled_norm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x + y).norm(dim=-1).clamp(min=1e-3)

    out = []
    for name in ("mlp", "clamp_linear", "conv_bn_relu"):
        model, _ = zoo.example(name)
        out.append((f"symbolic_trace(zoo.{name})", fx.symbolic_trace(model)))
    out.append(("symbolic_trace(scaled_norm)", fx.symbolic_trace(scaled_norm)))
    return out


@task("lab00.1", "count nodes by opcode", "按 opcode 统计节点数")
def _count_by_opcode(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab00.1', count_by_opcode).",
                    "请传入函数本身，例如 check('lab00.1', count_by_opcode)。", got=type(answer).__name__)
    for label, gm in _hidden_graphs():
        want = dict(Counter(node.op for node in gm.graph.nodes))
        got = answer(gm)
        if not isinstance(got, dict):
            raise Wrong("return a dict from opcode to count.", "请返回从 opcode 到数量的 dict。",
                        tried=label, expected=repr(want), got=type(got).__name__)
        got = {k: v for k, v in got.items() if v}
        if got == want:
            continue
        targets = {str(node.target) for node in gm.graph.nodes}
        if set(map(str, got)) & targets - set(want):
            hint = ("the keys look like node targets; count node.op (placeholder, call_module, …), "
                    "not node.target.",
                    "键看起来是 node.target；应统计 node.op（placeholder、call_module 等）。")
        elif sum(got.values()) == len(dict(gm.named_modules())):
            hint = ("that counts modules; walk gm.graph.nodes instead.",
                    "这统计的是子模块；应遍历 gm.graph.nodes。")
        else:
            hint = ("every node counts once under its opcode, including placeholder and output.",
                    "每个节点按其 opcode 计一次，placeholder 和 output 也要算。")
        raise Wrong(*hint, tried=label, expected=repr(want), got=repr(got))


def _gate_inputs(gate: nn.Module) -> list[torch.Tensor]:
    """One input that takes each branch of zoo.Gate: x along ±(column sums of W)."""
    with torch.no_grad():
        direction = gate.linear.weight.sum(0)
        direction = direction / direction.norm()
        return [10.0 * direction.expand(2, -1).clone(), -10.0 * direction.expand(2, -1).clone()]


def _same_on_both_branches(label: str, fn: Any, gate: nn.Module) -> None:
    for x, branch in zip(_gate_inputs(gate), ("sum > 0", "sum <= 0")):
        with torch.no_grad():
            want = gate(x)
            got = fn(x)
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
            shown = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise Wrong(
                f"on an input where {branch} the result differs from the eager model.",
                f"在 {branch} 的输入上，结果与 eager 模型不一致。",
                tried=f"{label} on x with {branch}", expected=f"tensor of shape {tuple(want.shape)}",
                got=f"{shown}" if not isinstance(got, torch.Tensor) or got.shape != want.shape
                else f"max abs difference {float((got - want).abs().max()):.3g}",
            )


@task("lab00.2", "capture a model so both branches survive", "捕获模型并保留两个分支")
def _both_branches(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab00.2', capture_gate).",
                    "请传入函数本身，例如 check('lab00.2', capture_gate)。", got=type(answer).__name__)
    gate, _ = zoo.example("gate", seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = answer(gate)
    if captured is gate or type(captured) is type(gate):
        raise Wrong("that is the eager model itself; return what a capture API produced.",
                    "这是 eager 模型本身；请返回捕获 API 生成的对象。", got=type(captured).__name__)
    if isinstance(captured, torch.jit.TopLevelTracedModule):
        raise Wrong("torch.jit.trace recorded only the branch your example input took; "
                    "use an API that keeps control flow.",
                    "torch.jit.trace 只记录了示例输入走过的那个分支；请使用能保留控制流的 API。",
                    got="a traced module (torch.jit.trace)")
    if not isinstance(captured, (torch.jit.ScriptModule, torch.jit.ScriptFunction)) and not hasattr(
        captured, "_orig_mod"
    ):
        raise Wrong("return a torch.jit.ScriptModule or a torch.compile'd module.",
                    "请返回 torch.jit.ScriptModule 或经 torch.compile 编译的模块。",
                    got=type(captured).__name__)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_on_both_branches("your captured model", captured, gate)


@task("lab00.3", "a Gate that symbolic_trace accepts", "让 symbolic_trace 接受的 Gate")
def _traceable_gate(answer: Any) -> None:
    model = answer() if isinstance(answer, type) else answer
    if not isinstance(model, nn.Module):
        raise Wrong("pass the class TraceableGate (or an instance of it).",
                    "请传入 TraceableGate 类（或它的实例）。", got=type(model).__name__)
    gate, _ = zoo.example("gate", seed=11)
    try:
        model.load_state_dict(gate.state_dict())
    except RuntimeError as exc:
        raise Wrong("keep Gate's parameters (self.linear) so the weights can be compared.",
                    "请保留 Gate 的参数（self.linear），以便比较权重。",
                    got=str(exc).splitlines()[0]) from None
    model.eval()
    try:
        gm = fx.symbolic_trace(model)
    except fx.proxy.TraceError as exc:
        raise Wrong("symbolic_trace still refuses it: an `if` on a tensor's value cannot be traced; "
                    "compute both results and choose with torch.where.",
                    "symbolic_trace 仍然拒绝：无法追踪依赖张量取值的 `if`；请同时计算两个结果并用 torch.where 选择。",
                    got=f"TraceError: {str(exc).splitlines()[0]}") from None
    _same_on_both_branches("symbolic_trace(TraceableGate())", gm, gate)
