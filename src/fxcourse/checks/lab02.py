"""Checkers for labs/lab02_script_ir.ipynb (lecture course/02_torchscript_script_ir.ipynb).

The checkers script functions and modules defined here (the learner has not seen them), or parse
hand-written TorchScript IR, and compare the learner's answer with a reference computed from the
graph's nodes, with eager PyTorch, or with the unmodified graph run as a function.
"""
from __future__ import annotations

import re
import warnings
from collections import Counter
from typing import Any, Callable, Iterator, Optional

import torch
from torch import nn

from . import Wrong, task

# --------------------------------------------------------------------------- helpers


def _script(obj: Any) -> Any:
    """torch.jit.script without the DeprecationWarning of PyTorch 2.13."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(obj)


_SOURCE_LOCATION = re.compile(r"[ \t]*# .*:\d+:\d+$", re.M)
_CPP_LOCATION = re.compile(r' at "[^"]*":\d+')


def _clean(text: Any) -> str:
    """Graph text or an error message without source locations (absolute paths)."""
    return _CPP_LOCATION.sub("", _SOURCE_LOCATION.sub("", str(text))).strip()


def _nodes(block: Any) -> Iterator[Any]:
    """Every node of a graph or block, recursing into the blocks of control-flow nodes."""
    for node in block.nodes():
        yield node
        for sub in node.blocks():
            yield from _nodes(sub)


def _count(graph: Any) -> int:
    return sum(1 for _ in _nodes(graph))


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in _clean(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def _last_line(exc: BaseException) -> str:
    lines = [line.strip() for line in _clean(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def _show(d: dict[str, int]) -> str:
    return "{" + ", ".join(f"{k!r}: {v}" for k, v in sorted(d.items())) + "}"


# --------------------------------------------------------------------------- lab02.1: count kinds


def _nested_loops(x: torch.Tensor, n: int) -> torch.Tensor:
    for i in range(n):
        if bool(x.sum() > 0):
            for j in range(i):
                x = x - 0.5 * j
        else:
            x = torch.relu(x) + 1
    return x


def _while_with_if(x: torch.Tensor, limit: float) -> torch.Tensor:
    k = 0
    while bool(x.abs().sum() < limit) and k < 10:
        if k % 2 == 0:
            x = x * 2
        else:
            x = x + 1
        k += 1
    return x


def _straight(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.tanh(a) * b + a


class _Mixer(nn.Module):
    """A submodule call, an Optional argument and a loop: a module graph with blocks."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, gate: Optional[torch.Tensor] = None, rounds: int = 2) -> torch.Tensor:
        for _ in range(rounds):
            x = self.lin(x)
            if gate is not None:
                x = x * torch.sigmoid(gate)
        return x


def _kind_graphs() -> list[tuple[str, Any]]:
    return [
        ("torch.jit.script(<a module with a loop around an if>).graph", _script(_Mixer()).graph),
        ("torch.jit.script(<a loop, inside it an if, inside that a loop>).graph", _script(_nested_loops).graph),
        ("torch.jit.script(<a while loop around an if/else>).graph", _script(_while_with_if).graph),
        ("torch.jit.script(<a function without control flow>).graph", _script(_straight).graph),
    ]


def _top_level_kinds(graph: Any) -> dict[str, int]:
    return dict(Counter(node.kind() for node in graph.nodes()))


def _one_level_kinds(graph: Any) -> dict[str, int]:
    counts = Counter(node.kind() for node in graph.nodes())
    for node in graph.nodes():
        for sub in node.blocks():
            counts.update(inner.kind() for inner in sub.nodes())
    return dict(counts)


@task("lab02.1", "count node kinds through nested blocks", "穿过嵌套 block 统计节点 kind")
def _count_kinds(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab02.1', count_kinds).",
                    "请传入函数本身，例如 check('lab02.1', count_kinds)。", got=type(answer).__name__)
    for label, graph in _kind_graphs():
        want = dict(Counter(node.kind() for node in _nodes(graph)))
        got = answer(graph.copy())
        if not isinstance(got, dict):
            raise Wrong("return a dict from node kind (a string such as 'aten::add') to count.",
                        "请返回从节点 kind（如 'aten::add' 这样的字符串）到数量的 dict。",
                        tried=label, expected=_show(want), got=type(got).__name__)
        got = {str(k): v for k, v in got.items() if v}
        if got == want:
            continue
        if got == _top_level_kinds(graph):
            hint = ("graph.nodes() only yields the top-level block: the nodes inside prim::If and prim::Loop "
                    "live in node.blocks(). Recurse into every block of every node.",
                    "graph.nodes() 只给出顶层 block 的节点：prim::If 和 prim::Loop 内部的节点在 node.blocks() 里。"
                    "请递归进入每个节点的每个 block。")
        elif got == _one_level_kinds(graph):
            hint = ("you went one level down, but blocks can contain nodes with blocks of their own "
                    "(a loop inside an if inside a loop): recurse, don't just loop twice.",
                    "你只往下走了一层，但 block 里的节点还可能有自己的 block（循环里的 if 里的循环）："
                    "请用递归，而不是两层循环。")
        elif any(k in got for k in ("prim::Param", "prim::Return")) and not any(
            k in want for k in ("prim::Param", "prim::Return")
        ):
            hint = ("count the nodes that block.nodes() yields; the hidden prim::Param / prim::Return nodes "
                    "of each block are not among them.",
                    "只统计 block.nodes() 给出的节点；每个 block 隐藏的 prim::Param / prim::Return 节点不在其中。")
        else:
            hint = ("every node counts once under node.kind(), wherever it sits: top level or inside any "
                    "block at any depth.",
                    "每个节点按 node.kind() 计一次，无论它在顶层还是在任意深度的 block 里。")
        raise Wrong(*hint, tried=label, expected=_show(want), got=_show(got))


# --------------------------------------------------------------------------- lab02.2: make it script


class MaskedPool(nn.Module):
    """The lab's broken model: ``**unused`` refuses to script; untyped ``None`` defaults script wrongly."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, mask=None, scale=None, **unused):
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale


def _pool_calls() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    gen = torch.Generator().manual_seed(23)
    x = torch.randn(5, 6, generator=gen)
    mask = torch.rand(5, 6, generator=gen) > 0.4
    return [
        ("model(x)", (x,), {}),
        ("model(x, mask)", (x, mask), {}),
        ("model(x, scale=2.5)", (x,), {"scale": 2.5}),
        ("model(x, mask=mask, scale=0.25)", (x,), {"mask": mask, "scale": 0.25}),
        ("model(x, None, 1.0)", (x, None, 1.0), {}),
    ]


_UNTYPED_NONE = re.compile(r"undefined|proper Tensor|Unable to cast|to Tensor|expected a value of type", re.I)


@task("lab02.2", "make MaskedPool script correctly", "让 MaskedPool 正确地 script")
def _fixed_pool(answer: Any) -> None:
    made = answer
    if callable(made) and not isinstance(made, (type, nn.Module)):
        made = made()  # the lab's make_fixed_pool(): a function returning the class
    model = made() if isinstance(made, type) else made
    if not isinstance(model, nn.Module):
        raise Wrong("make_fixed_pool() should return your class (a subclass of MaskedPool or nn.Module).",
                    "make_fixed_pool() 应当返回你的类（MaskedPool 或 nn.Module 的子类）。",
                    got=type(model).__name__)
    torch.manual_seed(31)
    reference = MaskedPool().eval()
    try:
        model.load_state_dict(reference.state_dict())
    except RuntimeError as exc:
        raise Wrong("keep MaskedPool's parameters (self.proj = nn.Linear(6, 6)) so the weights can be loaded.",
                    "请保留 MaskedPool 的参数（self.proj = nn.Linear(6, 6)），以便加载权重。",
                    got=_first_line(exc)) from None
    model.eval()
    try:
        scripted = _script(model)
    except NotImplementedError:
        raise
    except Exception as exc:
        message = _first_line(exc)
        if "variable number of arguments" in message:
            hint = ("torch.jit.script still refuses it: a compiled forward cannot take **kwargs; remove "
                    "**unused.", "torch.jit.script 仍然拒绝：编译后的 forward 不能接收 **kwargs；请删掉 **unused。")
        else:
            hint = ("torch.jit.script still refuses it; read the first line of the error.",
                    "torch.jit.script 仍然拒绝；请阅读报错的第一行。")
        raise Wrong(*hint, tried=f"torch.jit.script({type(model).__name__}())", got=message) from None
    schema = str(scripted.forward.schema)
    for label, args, kwargs in _pool_calls():
        with torch.no_grad():
            want = reference(*args, **kwargs)
            try:
                got = scripted(*args, **kwargs)
            except NotImplementedError:
                raise
            except Exception as exc:
                if _UNTYPED_NONE.search(str(exc)):
                    raise Wrong(
                        "it scripts, but an argument whose default is None has no Optional annotation. "
                        "Unannotated arguments are Tensors, so mask=None became an undefined tensor (and "
                        "`mask is not None` is always true); annotate mask: Optional[torch.Tensor] and "
                        "scale: Optional[float].",
                        "能 script 了，但默认值为 None 的参数没有 Optional 注解。没有注解的参数是 Tensor，所以 "
                        "mask=None 变成了未定义张量（`mask is not None` 恒为真）；请注解 "
                        "mask: Optional[torch.Tensor] 和 scale: Optional[float]。",
                        tried=f"scripted {label}", expected=f"tensor of shape {tuple(want.shape)}",
                        got=f"schema {schema}; the call raised: {_last_line(exc)}",
                    ) from None
                raise Wrong("the scripted model raised on a call the original accepts.",
                            "script 后的模型在原模型能接受的调用上抛出了异常。",
                            tried=f"scripted {label}", expected=f"tensor of shape {tuple(want.shape)}",
                            got=f"schema {schema}; the call raised: {_first_line(exc)}") from None
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or not torch.allclose(got, want, atol=1e-5):
            shown = (f"max abs difference {float((got - want).abs().max()):.3g}"
                     if isinstance(got, torch.Tensor) and got.shape == want.shape
                     else (tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__))
            raise Wrong("the scripted model computes something different from MaskedPool; keep its "
                        "behaviour (mask fills with 0, the default scale is 1 / last dimension).",
                        "script 后的模型与 MaskedPool 的计算结果不同；请保持原有行为（mask 处填 0，"
                        "默认 scale 为 1 / 最后一维）。",
                        tried=f"scripted {label}", expected=f"tensor of shape {tuple(want.shape)}",
                        got=str(shown))


# --------------------------------------------------------------------------- lab02.3: passes


def _loop_with_repeats(x: torch.Tensor, n: int) -> torch.Tensor:
    base = torch.arange(4.0) * 2 + 1
    for _ in range(n):
        x = torch.sin(x) * torch.sin(x) + base
    return x


def _branch_with_repeats(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    s = (x * y).sum()
    t = (x * y).sum()
    w = torch.zeros(3) + torch.ones(3) * 4
    if bool(s > 0):
        out = torch.exp(x) + torch.exp(x) + w
    else:
        out = torch.exp(x) - w
    return out * (s + t)


_IR_WITH_SIDE_EFFECT = """
graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %a : Tensor = aten::mul(%x, %y)
  %unused : Tensor = aten::exp(%a)
  %s : int = aten::add(%one, %two)
  %c : Tensor = aten::add(%a, %a, %s)
  %ignored : Tensor = aten::mul_(%y, %two)
  return (%c)
"""

_IR_CONSTANT_IF = """
graph(%x : Tensor):
  %false : bool = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %r : Tensor = prim::If(%false)
    block0():
      %t : Tensor = aten::neg(%x)
      -> (%t)
    block1():
      %e : Tensor = aten::add(%x, %x, %one)
      -> (%e)
  %unused : Tensor = aten::sigmoid(%r)
  return (%r)
"""


def _pass_cases() -> list[tuple[str, Any, Callable[[torch.Generator], tuple[Any, ...]]]]:
    """(label, graph, make_inputs): scripted functions and hand-written IR the learner has not seen."""
    return [
        ("torch.jit.script(<a loop with sin(x) * sin(x) and constant tensors>).graph",
         _script(_loop_with_repeats).graph, lambda g: (torch.randn(4, generator=g), 3)),
        ("torch.jit.script(<an if/else, (x * y).sum() twice, constant tensors>).graph",
         _script(_branch_with_repeats).graph,
         lambda g: (torch.randn(3, generator=g), torch.randn(3, generator=g))),
        ("parse_ir(<unused aten::exp, int constants to fold, in-place aten::mul_ on an input>)",
         torch._C.parse_ir(_IR_WITH_SIDE_EFFECT),
         lambda g: (torch.randn(3, generator=g), torch.randn(3, generator=g))),
        ("parse_ir(<a prim::If on a constant False, an unused aten::sigmoid>)",
         torch._C.parse_ir(_IR_CONSTANT_IF), lambda g: (torch.randn(3, generator=g),)),
    ]


_PASSES: list[tuple[str, Callable[[Any], None]]] = [
    ("torch._C._jit_pass_cse", torch._C._jit_pass_cse),
    ("torch._C._jit_pass_constant_propagation", torch._C._jit_pass_constant_propagation),
    ("torch._C._jit_pass_dce", torch._C._jit_pass_dce),
]


def _reference(graph: Any) -> Any:
    g = graph.copy()
    for _, run in _PASSES:
        run(g)
    return g


def _run(graph: Any, inputs: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """Run a copy of ``graph`` on clones of ``inputs``; return the result and the (possibly mutated) inputs."""
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in inputs)
    fn = torch._C._create_function_from_graph("lab02_graph", graph.copy())
    return fn(*args), args


@task("lab02.3", "clean a graph with DCE, CSE and constant propagation",
      "用 DCE、CSE 和常量传播清理计算图")
def _run_passes(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab02.3', run_passes).",
                    "请传入函数本身，例如 check('lab02.3', run_passes)。", got=type(answer).__name__)
    for label, original, make_inputs in _pass_cases():
        given = original.copy()
        before = _count(given)
        want = _count(_reference(original))
        result = answer(given)
        if result is None:
            raise Wrong("return the graph. The _jit_pass_* functions change the graph in place and return None, "
                        "so `return torch._C._jit_pass_dce(graph)` returns None.",
                        "请返回计算图。_jit_pass_* 函数原地修改计算图并返回 None，所以 "
                        "`return torch._C._jit_pass_dce(graph)` 返回的是 None。",
                        tried=label, expected=f"a torch.Graph with {want} nodes", got="None")
        if not isinstance(result, torch._C.Graph):
            raise Wrong("return a torch.Graph (the graph you were given, after the passes).",
                        "请返回一个 torch.Graph（即传给你的那张计算图，经过变换之后）。",
                        tried=label, expected=f"a torch.Graph with {want} nodes", got=type(result).__name__)
        try:
            result.lint()
        except RuntimeError as exc:
            raise Wrong("the returned graph is not well formed (graph.lint() failed).",
                        "返回的计算图不合法（graph.lint() 失败）。", tried=label, got=_first_line(exc)) from None
        got = _count(result)
        if got == before and want < before:
            raise Wrong("the returned graph is unchanged. If you ran the passes on graph.copy(), return that "
                        "copy: passes change the graph they are given, not the one you return.",
                        "返回的计算图没有任何变化。如果你是在 graph.copy() 上运行的变换，就应返回那份副本："
                        "变换修改的是传给它的图，而不是你返回的图。",
                        tried=label, expected=f"{want} nodes (from {before})", got=f"{got} nodes (unchanged)")
        gen = torch.Generator().manual_seed(5)
        inputs = make_inputs(gen)
        want_out, want_args = _run(original, inputs)
        try:
            got_out, got_args = _run(result, inputs)
        except Exception as exc:
            raise Wrong("the returned graph no longer runs.", "返回的计算图已无法运行。",
                        tried=f"{label} on unseen inputs", got=_first_line(exc)) from None
        if not torch.allclose(got_out, want_out, atol=1e-5):
            raise Wrong("the returned graph computes a different result from the original; a pass must not "
                        "change what the graph computes.",
                        "返回的计算图与原图的计算结果不同；变换不应改变计算图计算的内容。",
                        tried=f"{label} on unseen inputs", expected=str(want_out), got=str(got_out))
        for w, g in zip(want_args, got_args):
            if isinstance(w, torch.Tensor) and not torch.equal(w, g):
                raise Wrong("the original graph changes one of its inputs in place (aten::mul_), and the returned "
                            "graph no longer does: a node with a side effect was deleted although its result is "
                            "unused. Use torch._C._jit_pass_dce, which keeps such nodes.",
                            "原图会原地修改一个输入（aten::mul_），返回的计算图却不再这样做：一个有副作用的节点"
                            "因为结果没人使用而被删除了。请使用会保留这类节点的 torch._C._jit_pass_dce。",
                            tried=f"{label} on unseen inputs", expected=f"input after the call: {w}",
                            got=f"input after the call: {g}")
        if got > want:
            for name, run in _PASSES:
                probe = result.copy()
                run(probe)
                if _count(probe) < got:
                    raise Wrong(
                        f"your graph still has work left for {name}: running it on your result removes "
                        f"{got - _count(probe)} more node(s). Apply all three passes (CSE, constant propagation, "
                        "DCE).",
                        f"你的计算图还有可供 {name} 处理的内容：在你的结果上运行它，还能再删掉 "
                        f"{got - _count(probe)} 个节点。请把三个变换（CSE、常量传播、DCE）都用上。",
                        tried=label, expected=f"{want} nodes (from {before})", got=f"{got} nodes")
            raise Wrong("the returned graph has more nodes than the three passes leave.",
                        "返回的计算图比三个变换处理后的节点更多。",
                        tried=label, expected=f"{want} nodes (from {before})", got=f"{got} nodes")
