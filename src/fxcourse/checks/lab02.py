"""Checkers for labs/lab02_script_ir.ipynb (lecture course/02_torchscript_script_ir.ipynb).

The checkers script functions and modules defined here (the learner has not seen them), or parse
hand-written TorchScript IR, and compare the learner's answer with a reference computed from the
graph's nodes, with eager PyTorch, or with the unmodified graph run as a function.
"""
from __future__ import annotations

import contextlib
import inspect
import re
import warnings
from collections import Counter
from typing import Any, Callable, Iterator, Optional

import torch
from torch import nn

from . import Wrong, task
from ._probe import (Mistake, Probe, built, close, counted_once, describe, differs, need_callable,
                     plain_counts, run_probes)
from .. import zoo
from .._lang import Bilingual

# --------------------------------------------------------------------------- helpers


def _script(obj: Any) -> Any:
    """torch.jit.script without its warnings (the deprecation, whatever its category)."""
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


def _guarded(x: torch.Tensor) -> torch.Tensor:
    """A prim::RaiseException (a node without outputs) inside an if."""
    if bool(x.abs().max() > 100):
        raise ValueError("x is too large")
    return x * 2


def _message_like_a_node(x: torch.Tensor) -> torch.Tensor:
    """A string constant whose text reads like a node: only the printed graph shows an aten::relu."""
    if bool(x.sum() > 0):
        raise ValueError("bad = aten::relu(x)")
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


#: Hand-written IR with unused nodes at the top level, in a loop's body and in an if's branch: script never
#: leaves dead code, parse_ir keeps it (so counting after DCE, or cleaning without it, shows).
_IR_DEAD_IN_BLOCKS = """
graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %dead : Tensor = aten::exp(%x)
  %r : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %h : Tensor):
      %unused : Tensor = aten::sin(%h)
      %c : bool = aten::gt(%i, %one)
      %h2 : Tensor = prim::If(%c)
        block0():
          %u2 : Tensor = aten::cos(%h)
          %a : Tensor = aten::add(%h, %h, %one)
          -> (%a)
        block1():
          -> (%h)
      -> (%true, %h2)
  return (%r)
"""
_DEAD_LABEL = ("parse_ir(<unused aten::exp, aten::sin and aten::cos: at the top level, in a loop, in an if inside it>)",
               "parse_ir(<无人使用的 aten::exp、aten::sin 和 aten::cos：分别在顶层、循环里、循环内的 if 里>)")


def _cos_squared_plus_ramp(x: torch.Tensor) -> torch.Tensor:
    """cos(x) twice (CSE merges them) and an arange times 0.5 on constants (constant propagation folds it)."""
    return torch.cos(x) * torch.cos(x) + torch.arange(3.0) * 0.5


#: Hand-written IR with two equal int constants (constant pooling merges them) and cos(x) twice (CSE merges them).
_IR_REPEATS = """
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %one2 : int = prim::Constant[value=1]()
  %a : Tensor = aten::cos(%x)
  %b : Tensor = aten::cos(%x)
  %c : Tensor = aten::add(%a, %b, %one)
  %d : Tensor = aten::add(%c, %x, %one2)
  return (%d)
"""


def _kind_graphs() -> list[tuple[Bilingual, Any]]:
    return [
        (_DEAD_LABEL, torch._C.parse_ir(_IR_DEAD_IN_BLOCKS)),
        (("torch.jit.script(<a module with a loop around an if>).graph",
          "torch.jit.script(<循环里套着 if 的模块>).graph"), _script(_Mixer()).graph),
        (("torch.jit.script(<a loop, inside it an if, inside that a loop>).graph",
          "torch.jit.script(<循环里有 if，if 里又有循环>).graph"), _script(_nested_loops).graph),
        (("torch.jit.script(<a while loop around an if/else>).graph",
          "torch.jit.script(<while 循环里套着 if/else>).graph"), _script(_while_with_if).graph),
        (("torch.jit.script(<an if that raises an exception (a node without outputs)>).graph",
          "torch.jit.script(<一个会抛出异常的 if（没有输出的节点）>).graph"), _script(_guarded).graph),
        (("torch.jit.script(<a function without control flow>).graph",
          "torch.jit.script(<没有控制流的函数>).graph"), _script(_straight).graph),
        (("torch.jit.script(lambda x: torch.cos(x) * torch.cos(x) + torch.arange(3.0) * 0.5).graph",
          "torch.jit.script(lambda x: torch.cos(x) * torch.cos(x) + torch.arange(3.0) * 0.5).graph"),
         _script(_cos_squared_plus_ramp).graph),
        (("torch.jit.script(<an if that raises ValueError(\"bad = aten::relu(x)\"), a message that reads like a node>).graph",
          "torch.jit.script(<一个抛出 ValueError(\"bad = aten::relu(x)\") 的 if，其消息读起来像一个节点>).graph"),
         _script(_message_like_a_node).graph),
        (("parse_ir(<two equal prim::Constant[value=1], aten::cos(x) twice>)",
          "parse_ir(<两个相同的 prim::Constant[value=1]、两次 aten::cos(x)>)"), torch._C.parse_ir(_IR_REPEATS)),
    ]


def _top_level_kinds(graph: Any) -> dict[str, int]:
    return dict(Counter(node.kind() for node in graph.nodes()))


def _one_level_kinds(graph: Any) -> dict[str, int]:
    counts = Counter(node.kind() for node in graph.nodes())
    for node in graph.nodes():
        for sub in node.blocks():
            counts.update(inner.kind() for inner in sub.nodes())
    return dict(counts)


def _kinds_reference(graph: Any) -> dict[str, int]:
    return dict(Counter(node.kind() for node in _nodes(graph)))


_KIND_MISTAKES = [
    Mistake("not a dict", lambda got, want, p: not isinstance(got, dict),
            "return a dict from node kind (a string such as 'aten::add') to count.",
            "请返回从节点 kind（如 'aten::add' 这样的字符串）到数量的 dict。"),
    Mistake("read from the printed graph", lambda got, want, p: isinstance(got, dict)
            and any(k not in want and re.search(re.escape(k) + r"\b", _clean(str(p.args[0]))) for k in map(str, got)),
            "a kind that no node has was counted: it appears only in the printed text of the graph (here inside a "
            "string constant, the message of an exception). Counting from the text confuses such strings with "
            "nodes; walk the node objects and ask each for its kind.",
            "统计到了一个没有任何节点具有的 kind：它只出现在计算图的打印文本中（这里是在一个字符串常量、即异常消息里）。"
            "从文本统计会把这样的字符串误当成节点；请遍历节点对象，逐个读取它的 kind。"),
    Mistake("top level only", lambda got, want, p: got == _top_level_kinds(p.args[0]),
            "graph.nodes() only yields the top-level block: the nodes inside prim::If and prim::Loop live in the "
            "blocks of those nodes. Visit every block of every node.",
            "graph.nodes() 只给出顶层 block 的节点：prim::If 和 prim::Loop 内部的节点在这些节点的 block 里。"
            "请访问每个节点的每个 block。"),
    Mistake("one level down", lambda got, want, p: got == _one_level_kinds(p.args[0]),
            "you went one level down, but blocks can contain nodes with blocks of their own (a loop inside an if "
            "inside a loop): recurse, don't just loop twice.",
            "你只往下走了一层，但 block 里的节点还可能有自己的 block（循环里的 if 里的循环）：请用递归，而不是两层循环。"),
    Mistake("counted Param and Return", lambda got, want, p: any(k in got for k in ("prim::Param", "prim::Return"))
            and not any(k in want for k in ("prim::Param", "prim::Return")),
            "count the nodes that a block's nodes() yields; the hidden prim::Param / prim::Return nodes of each "
            "block are not among them.",
            "只统计 block 的 nodes() 给出的节点；每个 block 隐藏的 prim::Param / prim::Return 节点不在其中。"),
    counted_once("kinds", " kind "),
    Mistake("dead code removed first", lambda got, want, p: got == _kinds_reference(_dce(p.args[0])) != want,
            "the unused nodes are missing from your counts (the graph was cleaned, e.g. by dead-code elimination, "
            "before counting): count every node the graph holds, used or not, and leave the graph as it is.",
            "你的计数里少了无人使用的节点（统计之前计算图被清理过，例如做了死代码消除）：请统计计算图中的每个节点，"
            "无论是否被使用，并保持计算图不变。"),
    Mistake("cleaned the graph first", lambda got, want, p: got != want and got in _cleaned_counts(p.args[0]),
            "nodes are missing from your counts because the graph was cleaned before counting (repeated "
            "computations merged, equal constants pooled, or operations on constants folded, as the JIT's "
            "optimisation passes do): count every node the graph holds, as it is.",
            "你的计数里少了节点，因为统计之前计算图被清理过（像 JIT 的优化 pass 那样合并了重复计算、合并了相同的常量，"
            "或把只作用于常量的运算折叠掉了）：请按计算图现在的样子统计其中的每个节点。"),
]


def _dce(graph: Any) -> Any:
    g = graph.copy()
    torch._C._jit_pass_dce(g)
    return g


_CLEANUPS = (("cse",), ("constant_propagation",), ("constant_pooling",), ("constant_propagation", "cse"),
             ("cse", "constant_propagation"), ("constant_propagation", "constant_pooling"))


def _cleaned_counts(graph: Any) -> list[dict[str, int]]:
    """The counts after clean-up passes (CSE, constant propagation, constant pooling) on a copy of ``graph``."""
    out = []
    for passes in _CLEANUPS:
        g = graph.copy()
        for name in passes:
            getattr(torch._C, f"_jit_pass_{name}")(g)
        out.append(_kinds_reference(g))
    return out


@task("lab02.1", "count node kinds through nested blocks", "穿过嵌套 block 统计节点 kind", hints=[
    ("A node such as prim::If or prim::Loop owns blocks, and a block holds nodes that may own blocks again. "
     "Counting means visiting all of them, however deep.",
     "prim::If、prim::Loop 这样的节点拥有 block，而 block 中的节点又可能拥有 block。统计就要访问所有这些节点，无论嵌套多深。"),
    ("A function that counts the nodes of one block and calls itself on every block of each node reaches every "
     "depth. Lecture course/02_torchscript_script_ir.ipynb, section '5 · Blocks: `prim::If`, `prim::Loop` and "
     "`with`'.",
     "一个统计某个 block 中的节点、并对每个节点的每个 block 调用自身的函数，就能到达任意深度。"
     "见讲义 course/02_torchscript_script_ir.ipynb 第「5 · Block：`prim::If`、`prim::Loop` 与 `with`」节。"),
])
def _count_kinds(answer: Any) -> None:
    need_callable(answer, "count_kinds")
    probes = [Probe(label, (graph,)) for label, graph in _kind_graphs()]
    run_probes(lambda graph: plain_counts(answer(graph.copy()), text_keys=True), _kinds_reference, probes,
               mistakes=_KIND_MISTAKES, what="count_kinds",
               generic=("a count is off: every node counts once under node.kind(), wherever it sits: top level "
                        "or inside any block at any depth.",
                        "有计数不对：每个节点按 node.kind() 计一次，无论它在顶层还是在任意深度的 block 里。"))


# --------------------------------------------------------------------------- lab02.2: make it script


def _pool_probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(23)
    x = torch.randn(5, 6, generator=gen) * 2
    mask = torch.rand(5, 6, generator=gen) > 0.4
    x3, mask3 = torch.randn(2, 3, 6, generator=gen), torch.rand(2, 3, 6, generator=gen) > 0.5
    return [
        Probe(("model(x), x of shape (5, 6)", "model(x)，x 的形状为 (5, 6)"), (x,)),
        Probe(("model(x, mask), a boolean mask of shape (5, 6)", "model(x, mask)，mask 是形状为 (5, 6) 的布尔张量"), (x, mask)),
        Probe("model(x, scale=2.5)", (x,), {"scale": 2.5}),
        Probe("model(x, mask=mask, scale=-0.25)", (x,), {"mask": mask, "scale": -0.25}),
        Probe("model(x, None, 1.0)", (x, None, 1.0)),
        Probe(("model(x, mask, None): scale passed as None", "model(x, mask, None)：scale 传入 None"), (x, mask, None)),
        Probe("model(x, scale=0.0)", (x,), {"scale": 0.0}),
        Probe(("model(x, mask), x and mask of shape (2, 3, 6)", "model(x, mask)，x 和 mask 的形状为 (2, 3, 6)"), (x3, mask3)),
        Probe(("model(x, mask) with a mask that is False everywhere", "model(x, mask)，mask 处处为 False"),
              (x, torch.zeros(5, 6, dtype=torch.bool))),
        Probe((_NON_FINITE_LABEL[0], _NON_FINITE_LABEL[1]), _non_finite(x)),
    ]


_NON_FINITE_LABEL = ("model(x, mask): x[0, 0] is inf and x[1, 2] is NaN, and mask is False on all of rows 0 and 1",
                     "model(x, mask)：x[0, 0] 为 inf、x[1, 2] 为 NaN，且 mask 在第 0、1 行处处为 False")


def _non_finite(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x with an inf and a NaN in rows that the mask hides entirely: MaskedPool gives 0 for those rows."""
    x = x.clone()
    x[0, 0], x[1, 2] = float("inf"), float("nan")
    mask = torch.ones(x.shape, dtype=torch.bool)
    mask[:2] = False
    mask[3, 1] = False
    return x, mask


def _arg_types(scripted: Any) -> dict[str, str]:
    """{argument name: TorchScript type} of the scripted forward (without self)."""
    return {a.name: str(a.type) for a in scripted.forward.schema.arguments if a.name != "self"}


def _pool_mistakes(reference: nn.Module) -> list[Mistake]:
    def call(p: Probe, **change: Any) -> torch.Tensor:
        names = ("x", "mask", "scale")
        kwargs = {**dict(zip(names, p.args)), **p.kwargs}
        kwargs.update(change)
        with torch.no_grad():
            return reference(**kwargs)

    def given(p: Probe, name: str) -> Any:
        names = ("x", "mask", "scale")
        return {**dict(zip(names, p.args)), **p.kwargs}.get(name)

    def scaled(got: Any, want: torch.Tensor) -> bool:
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            return False
        c = float((got * want).sum() / (want * want).sum())
        return abs(c - 1.0) > 1e-3 and bool(torch.allclose(got, c * want, atol=1e-5))

    return [
        Mistake("dtype changed", lambda got, want, p: isinstance(got, torch.Tensor) and got.shape == want.shape
                and got.dtype != want.dtype,
                "the result has another dtype than MaskedPool's: keep the dtype of the computation (float32 here).",
                "结果的 dtype 与 MaskedPool 的不同：请保持计算本来的 dtype（这里是 float32）。"),
        Mistake("default scale changed", lambda got, want, p: given(p, "scale") is None and scaled(got, want),
                "without scale, the result is off by a constant factor: MaskedPool's default scale is 1 divided by "
                "the size of the last dimension.",
                "不传 scale 时结果差了一个常数倍：MaskedPool 默认的 scale 是 1 除以最后一维的大小。"),
        Mistake("mask inverted", lambda got, want, p: given(p, "mask") is not None
                and close(got, call(p, mask=~given(p, "mask"))),
                "the mask is applied the other way round: MaskedPool zeroes the entries where mask is False and "
                "keeps those where it is True.",
                "mask 用反了：MaskedPool 把 mask 为 False 的位置置零，保留为 True 的位置。"),
        Mistake("masked by multiplying", lambda got, want, p: p.label == _NON_FINITE_LABEL
                and isinstance(got, torch.Tensor) and got.shape == want.shape
                and bool((torch.isnan(got) & ~torch.isnan(want)).any()),
                "a row whose entries are all masked holds an inf or a NaN, and your result is NaN there: multiplying "
                "by the mask gives 0 · inf = NaN and 0 · NaN = NaN. MaskedPool replaces the masked entries with 0, "
                "whatever they held.",
                "有一行的元素全被 mask 遮住，但其中含 inf 或 NaN，而你的结果在这一行是 NaN：乘以 mask 会得到 "
                "0 · inf = NaN 和 0 · NaN = NaN。MaskedPool 则是把被遮住的元素直接替换为 0，不管它们原来是什么。"),
        Mistake("mask ignored", lambda got, want, p: given(p, "mask") is not None and close(got, call(p, mask=None)),
                "the mask made no difference: the entries where mask is False must be zeroed before the sum.",
                "mask 没有起作用：求和之前，mask 为 False 的位置必须置零。"),
    ]


_OPTIONAL_HINT = ("lecture 02, section 2 shows what an unannotated argument with a None default becomes",
                  "第 02 讲第 2 节演示了默认值为 None 却没有注解的参数会变成什么")


def _diagnose_call(types: dict[str, str], label: str, exc: BaseException) -> Wrong:
    """Why a scripted call that MaskedPool accepts raised, read from the argument types script chose."""
    got = (f"forward{_signature(types)}; the call raised: {_last_line(exc)}",
           f"forward{_signature(types)}；调用时抛出：{_last_line(exc)}")
    tried = (f"scripted {label}", f"script 后的 {label}")
    if list(types)[:3] != ["x", "mask", "scale"]:
        return Wrong("the scripted forward takes other arguments than MaskedPool's forward: keep x, mask and scale, "
                     "in that order, so every call MaskedPool accepts still works.",
                     "script 后的 forward 与 MaskedPool 的 forward 参数不同：请保留 x、mask、scale 三个参数及其顺序，"
                     "使 MaskedPool 接受的每种调用仍然可用。", tried=tried, got=got)
    for name, holds in (("mask", ("a boolean tensor", "布尔张量")), ("scale", ("a Python float", " Python float "))):
        if not types[name].startswith("Optional["):
            return Wrong(f"it scripts, but TorchScript typed {name} as {types[name]}, which can never be None, so a "
                         f"call that leaves {name} out (or passes None) fails. {name} holds {holds[0]} or None: give "
                         f"it a type that says so; {_OPTIONAL_HINT[0]}.",
                         f"能 script 了，但 TorchScript 把 {name} 的类型定为 {types[name]}，它永远不会是 None，"
                         f"所以不传 {name}（或传 None）的调用会失败。{name} 的取值是{holds[1]}或 None：请给它一个能表达这一点的类型；"
                         f"{_OPTIONAL_HINT[1]}。", tried=tried, got=got)
    if types["scale"] != "Optional[float]":
        return Wrong(f"TorchScript typed scale as {types['scale']}, but scale is a Python float (or None), as in "
                     "the calls MaskedPool accepts.",
                     f"TorchScript 把 scale 的类型定为 {types['scale']}，但 scale 是 Python float（或 None），"
                     "与 MaskedPool 接受的调用一致。", tried=tried, got=got)
    return Wrong("the scripted model raised on a call the original accepts.",
                 "script 后的模型在原模型能接受的调用上抛出了异常。", tried=tried, got=got)


def _signature(types: dict[str, str]) -> str:
    return "(" + ", ".join(f"{name}: {t}" for name, t in types.items()) + ")"


@task("lab02.2", "make MaskedPool script correctly", "让 MaskedPool 正确地 script", hints=[
    ("There are two problems. One stops torch.jit.script at compile time; once it is gone, the model compiles, "
     "but a call without mask or scale goes wrong. After the first fix, look at the types script gave each "
     "argument (the scripted forward's schema).",
     "这里有两个问题。一个让 torch.jit.script 在编译时就失败；解决它之后模型能编译，但不传 mask 或 scale 的调用会出错。"
     "修好第一个问题后，请查看 script 给每个参数定的类型（script 后 forward 的 schema）。"),
    ("TorchScript is statically typed: a compiled forward has a fixed list of arguments, and an argument "
     "without an annotation is a Tensor, never None. mask holds a boolean tensor or None; scale a Python float "
     "or None. Lecture course/02_torchscript_script_ir.ipynb, section '2 · What does not script'.",
     "TorchScript 是静态类型的：编译后的 forward 参数列表是固定的，没有注解的参数是 Tensor，永远不会是 None。"
     "mask 的取值是布尔张量或 None；scale 是 Python float 或 None。见讲义 course/02_torchscript_script_ir.ipynb 第「2 · 哪些代码无法 script」节。"),
])
def _fixed_pool(answer: Any) -> None:
    made = answer
    if callable(made) and not isinstance(made, (type, nn.Module)):
        made = made()  # the lab's make_fixed_pool(): a function returning the class
    model = made() if isinstance(made, type) else made
    if not isinstance(model, nn.Module):
        raise Wrong("make_fixed_pool() should return your class (a subclass of MaskedPool or nn.Module).",
                    "make_fixed_pool() 应当返回你的类（MaskedPool 或 nn.Module 的子类）。", got=describe(model))
    reference = built(zoo.MaskedPool, 31)
    try:
        model.load_state_dict(reference.state_dict())
    except RuntimeError as exc:
        raise Wrong("keep MaskedPool's parameters (self.proj, a Linear(6, 6)) so a MaskedPool's weights can be loaded.",
                    "请保留 MaskedPool 的参数（self.proj，一个 Linear(6, 6)），以便加载 MaskedPool 的权重。",
                    got=_first_line(exc)) from None
    model.eval()
    try:
        scripted = _script(model)
    except NotImplementedError:
        raise
    except Exception as exc:
        message = _first_line(exc)
        kinds = {prm.kind for prm in inspect.signature(type(model).forward).parameters.values()}
        if "variable number of arguments" in message and inspect.Parameter.VAR_KEYWORD not in kinds \
                and inspect.Parameter.KEYWORD_ONLY in kinds:
            hint = ("torch.jit.script refuses keyword-only arguments that have defaults (the ones after a bare `*`). "
                    "Make them ordinary arguments: callers can still pass them by keyword.",
                    "torch.jit.script 不接受带默认值的仅限关键字参数（单独的 `*` 之后的参数）。请把它们改成普通参数："
                    "调用方仍然可以按关键字传入。")
        elif "variable number of arguments" in message:
            hint = ("torch.jit.script still refuses it: a compiled forward cannot take **kwargs, so the catch-all "
                    "argument has to go.",
                    "torch.jit.script 仍然拒绝：编译后的 forward 不能接收 **kwargs，所以这个兜底参数必须去掉。")
        elif "default value of type" in message or "Expected a default value" in message:
            hint = ("torch.jit.script refuses a default that does not fit the argument's type: None fits only a type "
                    f"that allows None; {_OPTIONAL_HINT[0]}.",
                    f"torch.jit.script 拒绝与参数类型不符的默认值：None 只适合允许 None 的类型；{_OPTIONAL_HINT[1]}。")
        else:
            hint = ("torch.jit.script still refuses it; read the first line of the error.",
                    "torch.jit.script 仍然拒绝；请阅读报错的第一行。")
        raise Wrong(*hint, tried=f"torch.jit.script({type(model).__name__}())", got=message) from None
    if not isinstance(getattr(scripted, "forward", None), torch._C.ScriptMethod):
        raise Wrong("torch.jit.script returned without compiling forward: it is marked to be left out of the "
                    "compilation (@torch.jit.ignore or @torch.jit.unused), so the scripted model has no TorchScript "
                    "forward and calls back into Python (or raises). Fix forward so that it compiles, and leave "
                    "it unmarked.",
                    "torch.jit.script 返回了，但没有编译 forward：它被标记为不参与编译（@torch.jit.ignore 或 "
                    "@torch.jit.unused），所以 script 后的模型没有 TorchScript 的 forward，调用时会回到 Python（或直接报错）。"
                    "请修改 forward 使它能够编译，并且不要给它加这类标记。",
                    tried=f"torch.jit.script({type(model).__name__}())",
                    expected=("a compiled forward (a ScriptMethod)", "编译好的 forward（ScriptMethod）"),
                    got=describe(getattr(scripted, "forward", None)))
    types = _arg_types(scripted)

    def run(*args: Any, **kwargs: Any) -> Any:
        label = "(" + ", ".join([describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()]) + ")"
        try:
            return scripted(*args, **kwargs)
        except NotImplementedError:
            raise
        except Exception as exc:
            raise _diagnose_call(types, f"model{label}", exc) from None

    run_probes(run, reference, _pool_probes(), mistakes=_pool_mistakes(reference), what="torch.jit.script(make_fixed_pool()())",
               generic=("the scripted model computes something different from MaskedPool; keep its behaviour (zero "
                        "where mask is False, sum over the last dimension, times scale; by default 1 / last "
                        "dimension).",
                        "script 后的模型与 MaskedPool 的计算结果不同；请保持原有行为（mask 为 False 处置零，沿最后一维求和，"
                        "再乘以 scale；默认为 1 / 最后一维）。"))


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


#: Hand-written IR on a typed input: DCE removes the unused aten::exp, but x * 1 and x.dim() are left alone by
#: the three passes (the peephole pass, which knows x is a 1-d float tensor, would fold them).
_IR_PEEPHOLE = """
graph(%x : Float(3, strides=[1], requires_grad=0, device=cpu)):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::mul(%x, %one)
  %d : int = aten::dim(%x)
  %unused : Tensor = aten::exp(%x)
  %z : Tensor = aten::add(%y, %d, %one)
  return (%z)
"""


#: Hand-written IR with an equal int constant in each branch of an if and an unused aten::exp: the three passes
#: remove the exp and leave both constants (constant pooling would hoist them into one).
_IR_CONSTANTS_IN_BRANCHES = """
graph(%x : Tensor, %c : bool):
  %r : Tensor = prim::If(%c)
    block0():
      %two : int = prim::Constant[value=2]()
      %a : Tensor = aten::mul(%x, %two)
      -> (%a)
    block1():
      %two2 : int = prim::Constant[value=2]()
      %b : Tensor = aten::div(%x, %two2)
      -> (%b)
  %unused : Tensor = aten::exp(%x)
  return (%r)
"""

#: Hand-written IR that packs two tensors into a tuple and unpacks them again, and an unused aten::exp: the three
#: passes remove the exp and keep both tuple nodes (lowering tuples would remove them).
_IR_TUPLE_ROUND_TRIP = """
graph(%x : Tensor, %y : Tensor):
  %t : (Tensor, Tensor) = prim::TupleConstruct(%x, %y)
  %a : Tensor, %b : Tensor = prim::TupleUnpack(%t)
  %one : int = prim::Constant[value=1]()
  %z : Tensor = aten::add(%a, %b, %one)
  %unused : Tensor = aten::exp(%z)
  return (%z)
"""


def _pass_cases() -> list[tuple[tuple[str, str], Any, Callable[[torch.Generator], tuple[Any, ...]]]]:
    """(label, graph, make_inputs): scripted functions and hand-written IR the learner has not seen."""
    return [
        (("torch.jit.script(<a loop with sin(x) * sin(x) and constant tensors>).graph",
          "torch.jit.script(<含 sin(x) * sin(x) 和常量张量的循环>).graph"),
         _script(_loop_with_repeats).graph, lambda g: (torch.randn(4, generator=g), 3)),
        (("torch.jit.script(<an if/else, (x * y).sum() twice, constant tensors>).graph",
          "torch.jit.script(<一个 if/else、两次 (x * y).sum()、常量张量>).graph"),
         _script(_branch_with_repeats).graph,
         lambda g: (torch.randn(3, generator=g), torch.randn(3, generator=g))),
        (("parse_ir(<unused aten::exp, int constants to fold, in-place aten::mul_ on an input>)",
          "parse_ir(<无人使用的 aten::exp、可折叠的 int 常量、对一个输入原地执行的 aten::mul_>)"),
         torch._C.parse_ir(_IR_WITH_SIDE_EFFECT),
         lambda g: (torch.randn(3, generator=g), torch.randn(3, generator=g))),
        (("parse_ir(<a prim::If on a constant False, an unused aten::sigmoid>)",
          "parse_ir(<条件为常量 False 的 prim::If、无人使用的 aten::sigmoid>)"),
         torch._C.parse_ir(_IR_CONSTANT_IF), lambda g: (torch.randn(3, generator=g),)),
        (("parse_ir(<nothing to fold or merge; unused aten::exp, aten::sin and aten::cos, two of them in blocks>)",
          "parse_ir(<没有可折叠或合并的节点；无人使用的 aten::exp、aten::sin 和 aten::cos，其中两个在 block 里>)"),
         torch._C.parse_ir(_IR_DEAD_IN_BLOCKS), lambda g: (torch.randn(3, generator=g), 3)),
        (("parse_ir(<x * 1, x.dim() and an unused aten::exp on an input typed Float(3)>)",
          "parse_ir(<对类型为 Float(3) 的输入计算 x * 1、x.dim() 和一个无人使用的 aten::exp>)"),
         torch._C.parse_ir(_IR_PEEPHOLE), lambda g: (torch.randn(3, generator=g),)),
        (("parse_ir(<a prim::If with an equal prim::Constant[value=2] in each branch, an unused aten::exp>)",
          "parse_ir(<两个分支里各有一个相同的 prim::Constant[value=2] 的 prim::If、无人使用的 aten::exp>)"),
         torch._C.parse_ir(_IR_CONSTANTS_IN_BRANCHES), lambda g: (torch.randn(3, generator=g), True)),
        (("parse_ir(<two tensors packed with prim::TupleConstruct and unpacked with prim::TupleUnpack before an add, "
          "an unused aten::exp>)",
          "parse_ir(<两个张量先用 prim::TupleConstruct 打包、再用 prim::TupleUnpack 拆开，然后相加；无人使用的 aten::exp>)"),
         torch._C.parse_ir(_IR_TUPLE_ROUND_TRIP), lambda g: (torch.randn(3, generator=g), torch.randn(3, generator=g))),
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


def _fewest(graph: Any) -> int:
    """The fewest nodes the three passes leave, in any order, each order run twice over."""
    import itertools
    counts = []
    for order in itertools.permutations([run for _, run in _PASSES]):
        g = graph.copy()
        for run in order * 2:
            run(g)
        counts.append(_count(g))
    return min(counts)


@contextlib.contextmanager
def _watching_passes() -> Iterator[list[tuple[str, Any]]]:
    """Record (pass name, graph) for every call of the three passes while the answer runs (put back after).
    An answer that imported a pass by name before the check is not seen; the feedback then stays general."""
    calls: list[tuple[str, Any]] = []
    originals = {name: getattr(torch._C, name.rsplit(".", 1)[1]) for name, _ in _PASSES}

    def watched(name: str, run: Callable[..., Any]) -> Callable[..., Any]:
        def call(graph: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append((name, graph))
            return run(graph, *args, **kwargs)
        return call

    for name, run in originals.items():
        setattr(torch._C, name.rsplit(".", 1)[1], watched(name, run))
    try:
        yield calls
    finally:
        for name, run in originals.items():
            setattr(torch._C, name.rsplit(".", 1)[1], run)


def _unchanged(calls: list[tuple[str, Any]], result: Any) -> tuple[str, str]:
    """Why a returned graph has all its nodes still, from the passes seen running."""
    if any(graph is not result for _, graph in calls):
        return ("the returned graph is unchanged, but passes ran on another graph. If you ran the passes on "
                "graph.copy(), return that copy: passes change the graph they are given, not the one you return.",
                "返回的计算图没有任何变化，pass 却运行在另一张图上。如果你是在 graph.copy() 上运行的 pass，就应返回那份副本："
                "pass 修改的是传给它的图，而不是你返回的图。")
    ran = sorted({name for name, _ in calls})
    if ran:
        missing = [name for name, _ in _PASSES if name not in ran]
        return (f"you returned the graph, but only {', '.join(ran)} ran on it, and on this graph that changes "
                f"nothing: {', '.join(missing)} would. Apply all three passes.",
                f"你返回的计算图没错，但只在它上面运行了 {'、'.join(ran)}，而在这张图上它什么也没改变；"
                f"{'、'.join(missing)} 才有活可干。请把三个 pass 都用上。")
    return ("the returned graph is unchanged: no pass changed it. Run the three passes on the graph you were given "
            "and return it (if you ran them on graph.copy(), return that copy).",
            "返回的计算图没有任何变化：没有哪个 pass 改动过它。请在传给你的图上运行三个 pass，再把它返回"
            "（如果你是在 graph.copy() 上运行的，就返回那份副本）。")


def _run(graph: Any, inputs: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
    """Run a copy of ``graph`` on clones of ``inputs``; return the result and the (possibly mutated) inputs."""
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in inputs)
    fn = torch._C._create_function_from_graph("lab02_graph", graph.copy())
    return fn(*args), args


@task("lab02.3", "clean a graph with DCE, CSE and constant propagation",
      "用 DCE、CSE 和常量传播清理计算图", hints=[
    ("Each pass changes the graph it is given and returns nothing. Run all three on that graph, then hand "
     "back the graph itself.",
     "每个 pass 都原地修改传给它的计算图，并且不返回任何东西。请在这张图上运行全部三个 pass，然后把这张图本身返回。"),
    ("CSE merges repeated pure nodes, constant propagation evaluates nodes whose inputs are all constants, "
     "dead-code elimination removes unused nodes without side effects (a node that writes into an input stays). "
     "Lecture course/02_torchscript_script_ir.ipynb, section '6 · Passes by hand: DCE, CSE, constant propagation'.",
     "CSE 合并重复的纯节点，常量传播计算所有输入都是常量的节点，死代码消除删除结果无人使用且没有副作用的节点"
     "（原地写入输入的节点会保留）。见讲义 course/02_torchscript_script_ir.ipynb 第「6 · 亲手运行 pass：DCE、CSE、常量传播」节。"),
])
def _run_passes(answer: Any) -> None:
    need_callable(answer, "run_passes")
    for label, original, make_inputs in _pass_cases():
        given = original.copy()
        before = _count(given)
        want = _count(_reference(original))
        graph_of = (f"a torch.Graph with {want} nodes", f"有 {want} 个节点的 torch.Graph")
        nodes_of = (f"{want} nodes (from {before})", f"{want} 个节点（原有 {before} 个）")
        unseen = (f"{label[0]} on unseen inputs", f"{label[1]}，在未见过的输入上运行")
        with _watching_passes() as calls:
            result = answer(given)
        if result is None:
            raise Wrong("return the graph. The _jit_pass_* functions change the graph in place and return None, "
                        "so `return torch._C._jit_pass_dce(graph)` returns None.",
                        "请返回计算图。_jit_pass_* 函数原地修改计算图并返回 None，所以 "
                        "`return torch._C._jit_pass_dce(graph)` 返回的是 None。",
                        tried=label, expected=graph_of, got="None")
        if not isinstance(result, torch._C.Graph):
            raise Wrong("return a torch.Graph (the graph you were given, after the passes).",
                        "请返回一个 torch.Graph（即传给你的那张计算图，经过这些 pass 之后）。",
                        tried=label, expected=graph_of, got=type(result).__name__)
        try:
            result.lint()
        except RuntimeError as exc:
            raise Wrong("the returned graph is not well formed (graph.lint() failed).",
                        "返回的计算图不合法（graph.lint() 失败）。", tried=label, got=_first_line(exc)) from None
        got = _count(result)
        if got == before and want < before:
            raise Wrong(*_unchanged(calls, result),
                        tried=label, expected=nodes_of, got=(f"{got} nodes (unchanged)", f"{got} 个节点（没有变化）"))
        gen = torch.Generator().manual_seed(5)
        inputs = make_inputs(gen)
        want_out, want_args = _run(original, inputs)
        try:
            got_out, got_args = _run(result, inputs)
        except Exception as exc:
            raise Wrong("the returned graph no longer runs.", "返回的计算图已无法运行。",
                        tried=unseen, got=_first_line(exc)) from None
        diff = differs(got_out, want_out)
        if diff:
            raise Wrong("the returned graph computes a different result from the original; a pass must not "
                        "change what the graph computes.",
                        "返回的计算图与原图的计算结果不同；pass 不应改变计算图计算的内容。",
                        tried=unseen, expected=describe(want_out), got=diff)
        diff = differs(got_args, want_args, where="inputs after the call")
        if diff:
            raise Wrong("the original graph changes one of its inputs in place (aten::mul_), and the returned "
                        "graph no longer does: a node with a side effect was deleted although its result is "
                        "unused. The dead-code pass of the lecture keeps such nodes; the one that deletes them "
                        "does not.",
                        "原图会原地修改一个输入（aten::mul_），返回的计算图却不再这样做：一个有副作用的节点"
                        "因为结果没人使用而被删除了。讲义中的死代码消除 pass 会保留这类节点；会删除它们的那个 pass 则不会。",
                        tried=unseen, got=diff)
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
                        f"{got - _count(probe)} 个节点。请把三个 pass（CSE、常量传播、DCE）都用上。",
                        tried=label, expected=nodes_of, got=(f"{got} nodes", f"{got} 个节点"))
            raise Wrong("the returned graph has more nodes than the three passes leave.",
                        "返回的计算图比三个 pass 处理后的节点更多。",
                        tried=label, expected=nodes_of, got=(f"{got} nodes", f"{got} 个节点"))
        if got < want and got < _fewest(original):
            raise Wrong("the returned graph has fewer nodes than CSE, constant propagation and DCE leave, in any "
                        "order: another pass ran as well (such as peephole, constant pooling or tuple lowering) and rewrote more. "
                        "The task is these three passes, and only them.",
                        "返回的计算图比 CSE、常量传播和 DCE（无论顺序如何）处理后的节点还少：还运行了别的 pass"
                        "（例如 peephole、常量池化或拆除元组的 lower_all_tuples），改写了更多内容。这道题只要求这三个 pass，不多不少。",
                        tried=label, expected=nodes_of, got=(f"{got} nodes", f"{got} 个节点"))
