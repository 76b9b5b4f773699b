"""Where the graph is inside whatever a learner passes to a viewer.

``graph_table`` and ``graph_diff`` accept the same kinds of object; this module finds the
fx or TorchScript graph in each, or says in an FxCourseError what to pass instead.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import fx

from .._lang import only
from ..errors import FxCourseError, describe

__all__ = ["Resolved", "describe_input", "resolve"]

_ACCEPTED = ("a torch.fx.GraphModule, a torch.fx.Graph, a TorchScript module, function or "
             "graph, a torch.export.ExportedProgram, or a captured graph (an object with .gm)")


class Resolved(NamedTuple):
    """What an accepted object holds: an fx graph or a TorchScript graph, and a label."""

    label: str
    fx_graph: fx.Graph | None = None
    ts_graph: Any = None
    input_kinds: dict[str, str] | None = None  # ExportedProgram placeholders


def resolve(obj: Any, where: str) -> Resolved:
    """Find the graph inside ``obj``, or raise FxCourseError saying what to pass instead."""
    if isinstance(obj, fx.GraphModule):
        return Resolved("fx.GraphModule", obj.graph)
    if isinstance(obj, fx.Graph):
        return Resolved("fx.Graph", obj)
    if isinstance(obj, torch.export.ExportedProgram):
        return Resolved("ExportedProgram", obj.graph_module.graph, None, _input_kinds(obj))
    if isinstance(obj, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        try:
            return Resolved(f"TorchScript {type(obj).__name__}", None, obj.graph)
        except Exception:  # a ScriptModule without forward has no .graph
            raise FxCourseError(got=describe_input(obj), accepted=_ACCEPTED, where=where,
                                fix="script a module that has a forward method",
                                zh=f"{where}：{describe_input(obj)} 没有计算图（没有 forward 方法的 "
                                   f"ScriptModule 没有 .graph）；请对带 forward 方法的模块调用 "
                                   f"torch.jit.script。") from None
    if isinstance(obj, torch._C.Graph):
        return Resolved("TorchScript graph", None, obj)
    gm = _gm_attribute(obj)
    if isinstance(gm, fx.GraphModule):
        return Resolved(f"{type(obj).__name__}.gm", gm.graph)
    fix, fix_zh = _fix_for(obj, gm)
    raise FxCourseError(got=describe_input(obj), accepted=_ACCEPTED, fix=fix,
                        where=where, zh=f"{where}：收到 {describe_input(obj)}；需要 {_ACCEPTED_ZH}。"
                                        f"修复：{fix_zh}。")


def describe_input(obj: Any) -> str:
    """``describe(obj)``, but one line for modules (their repr spans many lines)."""
    if isinstance(obj, torch.jit.ScriptModule):
        return f"TorchScript {type(obj).__name__}"
    if isinstance(obj, torch.nn.Module):
        return f"{type(obj).__name__} (an nn.Module, not a graph)"
    return describe(obj)


_ACCEPTED_ZH = ("torch.fx.GraphModule、torch.fx.Graph、TorchScript 的模块、函数或计算图、"
                "torch.export.ExportedProgram，或捕获到的计算图（带 .gm 的对象）")


def _gm_attribute(obj: Any) -> Any:
    try:
        return getattr(obj, "gm", None)
    except Exception:  # a property that fails is not a captured graph
        return None


def _graphs_attribute(obj: Any) -> list[Any] | None:
    """``obj.graphs`` when it is a list of captured graphs (objects with .gm), else None."""
    if isinstance(obj, torch.nn.Module):
        return None
    try:
        graphs = getattr(obj, "graphs", None)
    except Exception:
        return None
    if isinstance(graphs, list) and all(isinstance(_gm_attribute(g), fx.GraphModule) for g in graphs):
        return graphs
    return None


def _fix_for(obj: Any, gm: Any) -> tuple[str, str]:
    """How to fix ``obj``, in English and 中文."""
    if gm is not None:
        return (f"its .gm is {describe(gm)}; pass an object whose .gm is a torch.fx.GraphModule",
                f"它的 .gm 是 {describe(gm)}；请传入 .gm 为 torch.fx.GraphModule 的对象")
    graphs = _graphs_attribute(obj)
    if graphs is not None:  # a capture(...) result holds a list of graphs, one per piece
        if not graphs:
            return ("it captured no graph (Dynamo ran the function eagerly); see its skip reason",
                    "它没有捕获到任何计算图（Dynamo 以 eager 方式运行了函数）；请查看它的跳过原因")
        return (f"pass one of its {len(graphs)} graphs, e.g. cap.graphs[0]",
                f"传入它的 {len(graphs)} 个计算图之一，例如 cap.graphs[0]")
    if isinstance(obj, torch.nn.Module):
        return "trace the module first: torch.fx.symbolic_trace(m)", "先对模块做符号追踪：torch.fx.symbolic_trace(m)"
    if isinstance(obj, str):
        return "pass the graph object itself, not its printed text", "传入计算图对象本身，而不是它打印出来的文本"
    if callable(obj):
        return "trace the function first: torch.fx.symbolic_trace(fn)", "先对函数做符号追踪：torch.fx.symbolic_trace(fn)"
    return ("pass a traced graph, for example torch.fx.symbolic_trace(model)",
            "传入追踪得到的计算图，例如 torch.fx.symbolic_trace(model)")


_INPUT_KINDS = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant",
                "USER_INPUT": "user input", "CUSTOM_OBJ": "custom object", "TOKEN": "token"}
_INPUT_KINDS_ZH = {"PARAMETER": "模型参数", "BUFFER": "缓冲区", "CONSTANT_TENSOR": "常量",
                   "USER_INPUT": "用户输入", "CUSTOM_OBJ": "自定义对象", "TOKEN": "令牌"}


def _input_kinds(ep: Any) -> dict[str, str]:
    """Placeholder name -> ``parameter fc1.weight`` / ``buffer …`` / ``user input``."""
    kinds = {}
    for spec in ep.graph_signature.input_specs:
        name = getattr(spec.arg, "name", None)
        if name is None:
            continue
        kind = _INPUT_KINDS.get(spec.kind.name, spec.kind.name.lower().replace("_", " "))
        kind = only(kind, _INPUT_KINDS_ZH.get(spec.kind.name, kind))
        kinds[name] = f"{kind} {spec.target}" if spec.target else kind
    return kinds
