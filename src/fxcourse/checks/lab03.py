"""Checkers for labs/lab03_fx_ir.ipynb (lecture course/03_fx_tracing_ir.ipynb; exercise 3 uses
the ``Interpreter`` of course/04_fx_transforms.ipynb, section 2).

Each checker works on graphs the learner has not seen (torchvision's resnet18 and small models
defined here, each built to expose one common mistake), compares the whole answer with one
computed from ``gm.graph.nodes``, and names the mistake when the answer shows a known one.
"""
from __future__ import annotations

import functools
import operator
from collections import Counter
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import fx, nn

from . import Wrong, task
from .. import zoo
from ..viewers._node_text import qualified_name
from .._text import one_line_error
from ._probe import Mistake, Probe, built, describe, differs, need_callable, run_probes

# --------------------------------------------------------------------------- models


class _Twice(nn.Module):
    """A linear layer called twice, a method chain, ``x.shape`` and a functional call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.out = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc(x))
        h = self.fc(h).tanh().tanh()
        return self.out(h * x.shape[-1]) + torch.add(h, 1).sum(-1, keepdim=True)


class _Block(nn.Module):
    """Not a leaf (defined outside torch.nn): traced through, its conv is ``block.conv``."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class _SharedStem(nn.Module):
    """``shared`` is called twice; ``aux``'s output is unused, so dead-code elimination drops
    its node while the module stays attached; ``late`` is defined before ``early``."""

    def __init__(self) -> None:
        super().__init__()
        self.late = nn.Conv2d(4, 4, 1)
        self.early = nn.Conv2d(3, 4, 3, padding=1)
        self.shared = nn.Conv2d(4, 4, 1)
        self.aux = nn.Conv2d(4, 4, 1)
        self.block = _Block(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.shared(self.early(x))
        self.aux(x)  # result never used
        x = self.shared(self.block(x))
        x = self.late(x)
        return self.head(torch.flatten(self.pool(x), 1))


class _SplitHead(nn.Module):
    """A parameter (get_attr), a size read (an int node), a split (a tuple node)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(8))
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.fc(x) * self.scale
        h = h.view(h.size(0), 2, -1)
        a, b = h.split(2, dim=-1)
        return a + y, b.flatten(1)


class _Chain(nn.Module):
    """Returns one tensor, so the output node's value is a tensor too."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3, stride=2)
        self.fc = nn.Linear(5, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(x).mean(dim=(2, 3))
        return self.fc(h).softmax(-1)


class _Clash(nn.Module):
    """A top-level ``conv`` (a Conv1d) next to a nested ``block.conv`` (a Conv2d): a module looked up by
    the last part of its dotted path is the wrong one."""

    def __init__(self) -> None:
        super().__init__()
        self.block = _Block(4)
        self.conv = nn.Conv1d(4, 4, 1)
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv(self.block(x).flatten(2))
        return self.head(h.mean(-1))


class _Capitals(nn.Module):
    """Names with capital letters: an input ``X`` and a submodule ``Head`` (targets are case-sensitive)."""

    def __init__(self) -> None:
        super().__init__()
        self.Head = nn.Linear(4, 3)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.Head(X))


class _Scaled(nn.Module):
    """A submodule that holds a parameter: the graph reads it through the dotted get_attr target ``block.scale``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))


class _Nested(nn.Module):
    """A dotted get_attr target (``block.scale``) and a dotted call_module target (``block.fc``)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = _Scaled()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block.fc(x) * self.block.scale


class _MethodNamesake(nn.Module):
    """A submodule ``relu`` and a method call ``.relu()``: the call_method node's target is ``'relu'`` too."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.fc(x)).relu() + self.fc(x).relu()


def _clash_gm() -> fx.GraphModule:
    return fx.symbolic_trace(built(_Clash, 3))


def _dead_stem_gm() -> fx.GraphModule:
    """symbolic_trace keeps the unused ``aux`` call: a node with no users is still a node."""
    return fx.symbolic_trace(built(_SharedStem, 3))


def _shared_stem_gm() -> fx.GraphModule:
    """symbolic_trace keeps the unused ``aux`` call; DCE removes it, the module stays."""
    gm = fx.symbolic_trace(built(_SharedStem, 3))
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


@functools.lru_cache(maxsize=1)
def _resnet() -> nn.Module:
    """Built once per process (about a second); each checker traces it afresh."""
    return built(zoo.resnet18, 3)


def _resnet_gm() -> fx.GraphModule:
    return fx.symbolic_trace(_resnet())


# --------------------------------------------------------------------------- task 1


def _target_spellings(target: Any) -> set[str]:
    """Every accepted spelling of a node target."""
    if isinstance(target, str):
        return {target}
    names = {qualified_name(target)}
    module, name = getattr(target, "__module__", None), getattr(target, "__name__", None)
    if isinstance(module, str) and isinstance(name, str):
        names.add(f"{module}.{name}")
    try:
        from torch.fx.node import _get_qualified_name
        names.add(_get_qualified_name(target))
    except Exception:  # private torch API, or a target torch cannot name
        pass
    return names


def _canonical(node: fx.Node) -> tuple[str, str]:
    return node.op, node.target if isinstance(node.target, str) else qualified_name(node.target)


def _aliases(nodes: list[fx.Node]) -> dict[tuple[str, str], tuple[str, str]]:
    """Accepted spelling -> canonical key, without spellings that would name two targets."""
    alias: dict[tuple[str, str], tuple[str, str]] = {}
    clash: set[tuple[str, str]] = set()
    for n in nodes:
        for spelling in _target_spellings(n.target):
            key = (n.op, spelling)
            if alias.get(key, _canonical(n)) != _canonical(n):
                clash.add(key)
            alias[key] = _canonical(n)
    for key in clash:
        alias.pop(key, None)
    return alias


def _norm_gap(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    d = (x - y).abs()
    return torch.sqrt((d * d).sum(-1)) - d.max(-1).values + operator.mul(d, 2).mean()


def _histogram_probes() -> list[Probe]:
    return [
        Probe(("symbolic_trace(a model that calls self.fc twice)", "symbolic_trace(两次调用 self.fc 的模型)"),
              (fx.symbolic_trace(built(_Twice, 3)),)),
        Probe(("symbolic_trace(a function of two inputs)", "symbolic_trace(有两个输入的函数)"),
              (fx.symbolic_trace(_norm_gap),)),
        Probe(("symbolic_trace(a model with a parameter, view, size and split)",
               "symbolic_trace(含一个参数以及 view、size 和 split 的模型)"),
              (fx.symbolic_trace(built(_SplitHead, 3)),)),
        Probe(("symbolic_trace(a model with a conv call whose result is never used)",
               "symbolic_trace(含一次结果从未被使用的卷积调用的模型)"), (_dead_stem_gm(),)),
        Probe("symbolic_trace(torchvision resnet18)", (_resnet_gm(),)),
        Probe(("symbolic_trace(a model with an input X and a submodule Head)",
               "symbolic_trace(输入名为 X、子模块名为 Head 的模型)"), (fx.symbolic_trace(built(_Capitals, 3)),)),
        Probe(("symbolic_trace(a model that reads self.block.scale and calls self.block.fc)",
               "symbolic_trace(读取 self.block.scale 并调用 self.block.fc 的模型)"),
              (fx.symbolic_trace(built(_Nested, 3)),)),
    ]


def _histogram_of(gm: fx.GraphModule) -> dict[tuple[str, str], int]:
    return dict(Counter(_canonical(n) for n in gm.graph.nodes))


def _keys(got: Any) -> list[Any]:
    return list(got) if isinstance(got, dict) else []


def _unknown_keys(got: Any, gm: fx.GraphModule) -> list[Any]:
    alias = _aliases(list(gm.graph.nodes))
    return [k for k in _keys(got) if not (isinstance(k, tuple) and len(k) == 2 and k in alias)]


def _short_names(gm: fx.GraphModule) -> set[str]:
    return {getattr(n.target, "__name__", None) for n in gm.graph.nodes if n.op == "call_function"} - {None}


def _uses_node_names(got: Any, gm: fx.GraphModule) -> bool:
    names = {n.name for n in gm.graph.nodes}
    targets = {n.target for n in gm.graph.nodes if isinstance(n.target, str)}
    return any(k[1] in names - _short_names(gm) - targets for k in _unknown_keys(got, gm))


def _cut_dotted(got: Any, gm: fx.GraphModule) -> bool:
    """An unknown key whose target is a dotted target cut to one of its parts (``'block'`` for ``'block.scale'``)."""
    parts = {(n.op, part) for n in gm.graph.nodes if isinstance(n.target, str) and "." in n.target
             for part in n.target.split(".")}
    return any(isinstance(k[1], str) and (k[0], k[1]) in parts for k in _unknown_keys(got, gm))


def _case_changed(got: Any, gm: fx.GraphModule) -> bool:
    """An unknown key whose target is a real target spelled in other letter case."""
    alias = _aliases(list(gm.graph.nodes))
    lowered = {(op, str(t).lower()) for op, t in alias}
    return any(isinstance(k[1], str) and (k[0], k[1].lower()) in lowered for k in _unknown_keys(got, gm))


_HISTOGRAM_MISTAKES = [
    Mistake("dotted target cut", lambda got, want, p: _cut_dotted(got, p.args[0]),
            "a dotted target was cut to one of its parts (this model reads 'block.scale' and calls 'block.fc'): "
            "keep the whole target string as node.target spells it, dots included.",
            "有带点的 target 被截成了其中一段（这个模型读取 'block.scale'、调用 'block.fc'）：请保留 node.target "
            "的完整字符串，连同其中的点。"),
    Mistake("letter case changed", lambda got, want, p: _case_changed(got, p.args[0]),
            "a target string changed its letter case (this model has an input 'X' and a submodule 'Head'): "
            "names in a graph are case-sensitive, so keep each target exactly as node.target spells it.",
            "有的 target 字符串的大小写被改了（这个模型有输入 'X' 和子模块 'Head'）：计算图中的名字区分大小写，"
            "请让每个 target 与 node.target 的写法完全一致。"),
    Mistake("function objects as targets",
            lambda got, want, p: any(not isinstance(k[1], str) for k in _unknown_keys(got, p.args[0])),
            "a key holds the function object itself; the target must be a string: for call_function, "
            "the function's module, a dot and its name, as the exercise spells it.",
            "有的键里放的是函数对象本身；target 必须是字符串：对 call_function，写成函数所在模块名、一个点、"
            "再加函数名，即练习中说明的写法。"),
    Mistake("str() of a function",
            lambda got, want, p: any(str(k[1]).startswith("<") for k in _unknown_keys(got, p.args[0])),
            "str(node.target) of a function is its repr, like '<built-in function add>'; spell a "
            "call_function target as its module, a dot and its name (e.g. '_operator.add').",
            "函数的 str(node.target) 是它的 repr，比如 '<built-in function add>'；call_function 的 target "
            "要写成模块名、一个点、再加函数名（例如 '_operator.add'）。"),
    Mistake("node names", lambda got, want, p: _uses_node_names(got, p.args[0]),
            "some keys use node.name (like 'fc_1'); use node.target, so two calls of the same module or "
            "function count under one key.",
            "有些键用的是 node.name（比如 'fc_1'）；请用 node.target，这样同一个模块或函数的两次调用会计入同一个键。"),
    Mistake("bare function names",
            lambda got, want, p: any(k[0] == "call_function" and k[1] in _short_names(p.args[0])
                                     for k in _unknown_keys(got, p.args[0])),
            "a bare function name like 'add' is ambiguous (operator.add or torch.add?); include the "
            "module the function comes from.",
            "像 'add' 这样只有函数名是有歧义的（operator.add 还是 torch.add？）；请带上函数所在的模块名。"),
    Mistake("placeholder and output left out",
            lambda got, want, p: not _unknown_keys(got, p.args[0])
            and not any(k[0] in ("placeholder", "output") for k in got),
            "every node counts, including placeholder and output nodes.",
            "每个节点都要统计，包括 placeholder 和 output 节点。"),
]


def _without(want: dict[tuple[str, str], int], gm: fx.GraphModule,
             leave_out: Callable[[fx.Node], bool]) -> dict | None:
    """``want`` as an answer that skips the nodes ``leave_out`` picks would count it; None when this graph has no
    such node (then leaving them out is not what went wrong)."""
    if not any(leave_out(n) for n in gm.graph.nodes):
        return None
    return dict(Counter(_canonical(n) for n in gm.graph.nodes if not leave_out(n)))


def _int_counts(counts: dict) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in counts.values())


#: Known mistakes read on the answer's counts with every key spelled as the reference spells it.
_COUNT_MISTAKES = [
    Mistake("counts that are not ints", lambda got, want, p: not _int_counts(got) and set(got) == set(want)
            and all(got[k] == want[k] for k in want),
            "the counts have the right values but are not ints (e.g. 1.0 or True): each count is the number of "
            "nodes under that key, an int.",
            "计数的数值对了，但不是 int（例如 1.0 或 True）：每个计数是该键下的节点个数，应为 int。"),
    Mistake("output left out", lambda got, want, p: _int_counts(got)
            and got == _without(want, p.args[0], lambda n: n.op == "output"),
            "the output node is missing from your counts: it is a node of the graph like any other, with "
            "opcode 'output' (and target 'output'), so it adds 1 too.",
            "你的计数里少了 output 节点：它和其他节点一样是计算图中的节点，opcode 为 'output'（target 也是 "
            "'output'），同样要计 1。"),
    Mistake("placeholder left out",
            lambda got, want, p: _int_counts(got) and got == _without(want, p.args[0], lambda n: n.op == "placeholder"),
            "the placeholder nodes (the graph's inputs) are missing from your counts: every node counts, "
            "inputs included.",
            "你的计数里少了 placeholder 节点（计算图的输入）：每个节点都要统计，输入也不例外。"),
    Mistake("get_attr left out", lambda got, want, p: _int_counts(got)
            and got == _without(want, p.args[0], lambda n: n.op == "get_attr"),
            "the get_attr nodes (parameters the graph reads) are missing from your counts: they are nodes "
            "too and count under ('get_attr', attribute name).",
            "你的计数里少了 get_attr 节点（计算图读取的参数）：它们也是节点，要计在 ('get_attr', 属性名) 下。"),
    Mistake("dead nodes left out",
            lambda got, want, p: _int_counts(got)
            and got == _without(want, p.args[0], lambda n: n.op != "output" and not n.users),
            "a node whose result nothing uses (here a conv call whose output is thrown away) is missing from "
            "your counts: the histogram counts the nodes the graph holds, used or not; do not run dead-code "
            "elimination or skip nodes without users.",
            "你的计数里少了结果没有被任何节点使用的节点（这里是一次输出被丢弃的卷积调用）：直方图统计的是计算图中"
            "存在的节点，不管是否被使用；不要先做死代码消除，也不要跳过没有使用者的节点。"),
    Mistake("each key once", lambda got, want, p: set(got) == set(want) and all(v == 1 for v in got.values()),
            "every count is 1: your dict records which (opcode, target) pairs occur, not how many nodes have "
            "each one (a module called twice is two nodes).",
            "每个计数都是 1：你的 dict 只记录了出现过哪些 (opcode, target)，而不是每一对有多少个节点"
            "（一个模块调用两次就是两个节点）。"),
]


def _show(counts: Any) -> str:
    if not isinstance(counts, dict):
        return describe(counts)
    items = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: repr(kv[0]))
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in items) + "}"


@task("lab03.1", "count operations by (opcode, target)", "按 (opcode, target) 统计运算", hints=[
    ("Every node adds one to the count under its key. Print node.op and node.target for each node of "
     "the example graph: which targets are not strings?",
     "每个节点在自己的键下计 1。把示例计算图中每个节点的 node.op 和 node.target 打印出来：哪些 target 不是字符串？"),
    ("node.target is a string for five opcodes and the function object for call_function; the exercise "
     "says how to spell a function as a string. See lecture 03, section 4 (The six opcodes).",
     "五种 opcode 的 node.target 是字符串，call_function 的则是函数对象；练习里说明了如何把函数写成字符串。"
     "参见第 03 讲第 4 节（六种 opcode）。"),
])
def _op_histogram(answer: Any) -> None:
    need_callable(answer, "op_histogram")
    for probe in _histogram_probes():
        gm = probe.args[0]
        want = _histogram_of(gm)
        before = str(gm.graph)
        got = answer(gm)
        if str(gm.graph) != before:
            raise Wrong("op_histogram changed the graph it was given (a node was added, removed or rewired); "
                        "counting only reads the nodes.",
                        "op_histogram 修改了传给它的计算图（增加、删除或重连了节点）；统计只需读取节点。",
                        tried=probe.label, expected=("the graph unchanged", "计算图保持不变"),
                        got=("a changed graph", "计算图被改动了"))
        if not isinstance(got, dict):
            raise Wrong("return a dict from (opcode, target) to count.",
                        "请返回从 (opcode, target) 到数量的 dict。",
                        tried=probe.label, expected=_show(want), got=describe(got))
        bad = [k for k in got if not (isinstance(k, tuple) and len(k) == 2)]
        if bad:
            raise Wrong("each key is a pair (node.op, target string), e.g. ('call_module', 'fc').",
                        "每个键是一个二元组 (node.op, target 字符串)，例如 ('call_module', 'fc')。",
                        tried=probe.label, expected=_show(want), got=(f"key {bad[0]!r}", f"键 {bad[0]!r}"))
        alias = _aliases(list(gm.graph.nodes))
        translated: dict[tuple[str, str], Any] = {}
        for key, count in got.items():
            if isinstance(count, int) and not isinstance(count, bool) and count == 0:
                continue  # a Counter may keep keys at zero
            canon = alias.get(key, key)
            translated[canon] = translated[canon] + count if canon in translated else count
        diff = differs(translated, want)
        if diff is None:
            continue
        for mistake in _COUNT_MISTAKES:
            try:
                matched = mistake.matches(translated, want, probe)
            except Exception:  # a predicate that cannot read this answer does not match it
                matched = False
            if matched:
                raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=_show(want), got=_show(got))
        for mistake in _HISTOGRAM_MISTAKES:
            try:
                matched = mistake.matches(got, want, probe)
            except Exception:  # a predicate that cannot read this answer does not match it
                matched = False
            if matched:
                raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=_show(want), got=_show(got))
        raise Wrong("each node adds 1 under (node.op, target string); compare your counts with the "
                    "expected ones.",
                    "每个节点在 (node.op, target 字符串) 下计 1；请把你的计数与期望值对照。",
                    tried=probe.label, expected=_show(want), got=f"{_show(got)} ({diff})")


# --------------------------------------------------------------------------- task 2


def _calls_of(gm: fx.GraphModule, kind: type) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(str(n.target)), kind)]


def _attached(gm: fx.GraphModule, kind: type) -> set[str]:
    return {name for name, m in gm.named_modules() if name and isinstance(m, kind)}


def _by_last_part(gm: fx.GraphModule, kind: type) -> list[list[str]]:
    """What an answer that looks a call_module target up by the last part of its dotted path finds:
    a dict of named_modules keyed by that part (the last or the first module of that name wins), or a
    top-level attribute of that name."""
    last_wins: dict[str, nn.Module] = {}
    first_wins: dict[str, nn.Module] = {}
    for name, m in gm.named_modules():
        last_wins[name.rsplit(".", 1)[-1]] = m
        first_wins.setdefault(name.rsplit(".", 1)[-1], m)
    top = dict(gm.named_children())
    found = []
    for lookup in (last_wins, first_wins, top):
        found.append([str(n.target) for n in gm.graph.nodes if n.op == "call_module"
                      and isinstance(lookup.get(str(n.target).rsplit(".", 1)[-1], gm.get_submodule(str(n.target))),
                                     kind)])
    return found


def _any_opcode(gm: fx.GraphModule, kind: type) -> list[str]:
    """What an answer finds that looks every node's string target up as a module, whatever its opcode."""
    found = []
    for n in gm.graph.nodes:
        try:
            m = gm.get_submodule(n.target) if isinstance(n.target, str) else None
        except AttributeError:
            m = None
        if isinstance(m, kind):
            found.append(str(n.target))
    return found


def _find_mistakes(gm: fx.GraphModule, kind: type) -> list[Mistake]:
    node_names = {n.name for n in gm.graph.nodes}
    live = [str(n.target) for n in gm.graph.nodes if n.op == "call_module" and n.users
            and isinstance(gm.get_submodule(str(n.target)), kind)]
    return [
        Mistake("not only call_module nodes", lambda got, want, p: list(got) == _any_opcode(gm, kind) != want,
                "your list has an entry for a node that is not a call_module node: here x.relu() is a call_method "
                "node whose target 'relu' is also the name of the submodule relu. Keep only call_module nodes; a "
                "method or attribute with a module's name is not a call of that module.",
                "你的列表里有一项来自不是 call_module 的节点：这里 x.relu() 是一个 call_method 节点，它的 target 'relu' "
                "恰好也是子模块 relu 的名字。请只保留 call_module 节点；与模块同名的方法或属性并不是对该模块的调用。"),
        Mistake("node names", lambda got, want, p: bool(got) and all(s in node_names for s in got)
                and bool(set(got) - set(want)),
                "those are node names (like 'layer1_0_conv1'); return node.target, the module's dotted "
                "path (like 'layer1.0.conv1').",
                "这些是节点名（比如 'layer1_0_conv1'）；请返回 node.target，即模块的点分路径（比如 'layer1.0.conv1'）。"),
        Mistake("attached, not called", lambda got, want, p: bool(set(got) - set(want))
                and set(got) <= _attached(gm, kind),
                "your list names a module that no node calls (it is still attached to the GraphModule): "
                "that is what the modules a GraphModule holds gives you. Walk the graph's nodes instead "
                "and keep call_module nodes.",
                "你的列表里有一个没有任何节点调用的模块（它仍挂在 GraphModule 上）：GraphModule 持有的模块列表给出的"
                "就是这些。请改为遍历计算图的节点，只保留 call_module 节点。"),
        Mistake("exact type instead of isinstance", lambda got, want, p: not got and bool(want)
                and kind is nn.Module,
                "with nn.Module every call_module node matches: a subclass counts, so ask whether the "
                "module is an instance of module_type, not whether its type is exactly module_type.",
                "传入 nn.Module 时每个 call_module 节点都应匹配：子类也算，所以要判断模块是否是 module_type 的实例，"
                "而不是它的类型是否恰好等于 module_type。"),
        Mistake("one entry per module", lambda got, want, p: set(got) == set(want) and len(got) < len(want),
                "a module called twice must appear twice, once per call_module node (the modules a "
                "GraphModule holds list each module only once).",
                "一个模块被调用两次就要出现两次，每个 call_module 节点一次（GraphModule 持有的模块列表中每个模块只出现一次）。"),
        Mistake("last part of the path", lambda got, want, p: list(got) in _by_last_part(gm, kind),
                "a module was looked up by the last part of its dotted target: this model has a top-level `conv` "
                "and a nested `block.conv` of another type, so 'block.conv' found the wrong module. Look a target "
                "up by its whole dotted path (the GraphModule method the exercise names does that).",
                "有模块是按带点 target 的最后一段查找的：这个模型既有顶层的 `conv`，又有嵌套的、类型不同的 `block.conv`，"
                "于是 'block.conv' 找到的是错误的模块。请按完整的带点路径查找 target（练习中提到的 GraphModule 方法就是这样做的）。"),
        Mistake("unused calls left out", lambda got, want, p: list(got) == live and live != want,
                "a call_module node whose output nothing uses is missing (here the `aux` conv): it is still a call "
                "the graph makes, so it belongs in the list; do not eliminate dead code or skip nodes without users.",
                "缺少一个输出没有被任何节点使用的 call_module 节点（这里是卷积 `aux`）：它仍然是计算图发起的一次调用，"
                "应当列出；不要做死代码消除，也不要跳过没有使用者的节点。"),
        Mistake("order", lambda got, want, p: sorted(got) == sorted(want),
                "right entries, wrong order: list them in graph order (the order of gm.graph.nodes).",
                "条目对了但顺序不对：请按计算图中的顺序（gm.graph.nodes 的顺序）列出。"),
    ]


@task("lab03.2", "find every call of a module type", "找出某种模块类型的每一次调用", hints=[
    ("A module called twice is two nodes but one attached module. Which of the two does the exercise "
     "ask for, and which collection lists it?",
     "一个被调用两次的模块对应两个节点，却只是一个挂在模块上的子模块。练习要的是哪一种？哪个集合会列出它？"),
    ("call_module nodes name their module by a dotted target; a GraphModule looks a target up for you. "
     "See lecture 03, sections 3 (`Graph`, `Node` and `GraphModule`) and 4 (The six opcodes).",
     "call_module 节点用带点的 target 指明它的模块；GraphModule 可以替你按 target 查到模块。参见第 03 讲第 3 节"
     "（`Graph`、`Node` 与 `GraphModule`）和第 4 节（六种 opcode）。"),
])
def _find_modules(answer: Any) -> None:
    need_callable(answer, "find_modules")
    stem = (("symbolic_trace(a model whose conv `shared` is called twice) after dead-code elimination",
             "symbolic_trace(卷积 `shared` 被调用两次的模型)，再做死代码消除"), _shared_stem_gm)
    resnet = ("symbolic_trace(torchvision resnet18)", _resnet_gm)
    clash = (("symbolic_trace(a model with a top-level `conv`, an nn.Conv1d, and a nested `block.conv`, an nn.Conv2d)",
              "symbolic_trace(既有顶层 `conv`（nn.Conv1d）又有嵌套 `block.conv`（nn.Conv2d）的模型)"), _clash_gm)
    dead = (("symbolic_trace(a model whose conv `aux` is called but its output never used)",
             "symbolic_trace(卷积 `aux` 被调用、但输出从未被使用的模型)"), _dead_stem_gm)
    namesake = (("symbolic_trace(a model with a submodule relu that also calls the method .relu())",
                 "symbolic_trace(有子模块 relu、又调用了 .relu() 方法的模型)"),
                lambda: fx.symbolic_trace(built(_MethodNamesake, 3)))
    cases = [(resnet, nn.Conv2d), (stem, nn.Conv2d), (stem, nn.BatchNorm2d), (resnet, nn.Linear),
             (stem, nn.Module), (stem, nn.Linear), (clash, nn.Conv2d), (clash, nn.Conv1d), (dead, nn.Conv2d),
             (namesake, nn.ReLU)]
    for (label, build), kind in cases:
        gm = build()
        want = _calls_of(gm, kind)
        en, zh = label if isinstance(label, tuple) else (label, label)
        shown = f"find_modules({en}, nn.{kind.__name__})"
        probe = Probe(shown if en == zh else (shown, f"find_modules({zh}, nn.{kind.__name__})"), (gm, kind))
        got = answer(gm, kind)
        if isinstance(got, tuple):
            got = list(got)  # a tuple of targets is a fine answer too
        if not isinstance(got, list) or not all(isinstance(s, str) for s in got):
            raise Wrong("return a list of strings: node.target of each matching call_module node.",
                        "请返回字符串列表：每个匹配的 call_module 节点的 node.target。",
                        tried=probe.label, expected=repr(want), got=describe(got))
        if differs(got, want) is None:
            continue
        for mistake in _find_mistakes(gm, kind):
            if mistake.matches(got, want, probe):
                raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=repr(want), got=repr(got))
        raise Wrong("keep every call_module node whose module is an instance of module_type, once per "
                    "call, in graph order.",
                    "保留所有模块是 module_type 实例的 call_module 节点，每次调用一项，按图中顺序。",
                    tried=probe.label, expected=repr(want), got=repr(got))


# --------------------------------------------------------------------------- task 3


class _Reference(fx.Interpreter):
    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.shapes: dict[str, tuple[int, ...]] = {}

    def run_node(self, n: fx.Node) -> Any:
        value = super().run_node(n)
        if isinstance(value, torch.Tensor):
            self.shapes[n.name] = tuple(value.shape)
        return value


def _shape_probes() -> list[Probe]:
    split = fx.symbolic_trace(built(_SplitHead, 3))
    chain = fx.symbolic_trace(built(_Chain, 3))
    gen = torch.Generator().manual_seed(5)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    return [
        Probe(("symbolic_trace(a model that returns one tensor) on x of shape (2, 3, 9, 9)",
               "symbolic_trace(返回单个张量的模型)，输入 x 的形状为 (2, 3, 9, 9)"),
              (chain, randn(2, 3, 9, 9))),
        Probe(("symbolic_trace(a model with a parameter, a size read and a split) on x (3, 8), y (3, 2, 2)",
               "symbolic_trace(含一个参数、读取尺寸并做 split 的模型)，输入 x (3, 8)、y (3, 2, 2)"),
              (split, randn(3, 8), randn(3, 2, 2))),
        Probe(("the same model on x (5, 8), y (5, 2, 2)", "同一个模型，输入 x (5, 8)、y (5, 2, 2)"),
              (split, randn(5, 8), randn(5, 2, 2))),
        Probe(("symbolic_trace(torchvision resnet18) on x (1, 3, 32, 32)",
               "symbolic_trace(torchvision resnet18)，输入 x (1, 3, 32, 32)"), (_resnet_gm(), randn(1, 3, 32, 32))),
    ]


def _attr(gm: fx.GraphModule, target: str) -> Any:
    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _missing_ops(got: Any, want: dict, gm: fx.GraphModule) -> set[str]:
    by_op = {n.name: n.op for n in gm.graph.nodes}
    return {by_op[name] for name in set(want) - set(got)}


def _is_target_spelling(key: Any, gm: fx.GraphModule) -> bool:
    """``key`` is some node's target: the object itself, its str(), or a module-dot-name spelling."""
    for n in gm.graph.nodes:
        if key is n.target or (isinstance(key, str) and (key == str(n.target) or key in _target_spellings(n.target))):
            return True
    return False


def _other_probe_names(gm: fx.GraphModule) -> set[str]:
    """Node names of the checker's other probe graphs (what a dict shared by every recorder keeps)."""
    own = {n.name for n in gm.graph.nodes}
    return {n.name for p in _shape_probes() for n in p.args[0].graph.nodes} - own


def _shape_mistakes(gm: fx.GraphModule) -> list[Mistake]:
    names = {n.name for n in gm.graph.nodes}
    return [
        Mistake("Node objects as keys", lambda got, want, p: any(isinstance(k, fx.Node) for k in got),
                "the keys of self.shapes are Node objects; key it by node.name, the node's name as a string.",
                "self.shapes 的键是 Node 对象；请用 node.name（节点名字符串）作为键。"),
        Mistake("lists", lambda got, want, p: any(isinstance(v, list) for v in got.values()),
                "record each shape as a tuple (a torch.Size is fine too), not a list.",
                "请把每个形状记录为 tuple（torch.Size 也可以），而不是 list。"),
        Mistake("Parameters skipped", lambda got, want, p: _missing_ops(got, want, gm) == {"get_attr"}
                and all(isinstance(_attr(gm, n.target), nn.Parameter)
                        for n in gm.graph.nodes if n.op == "get_attr" and n.name not in got),
                "the get_attr nodes have no shape: their value is an nn.Parameter, and a Parameter is a torch.Tensor "
                "(a subclass), though its type is not exactly torch.Tensor. Record every value that is an instance "
                "of torch.Tensor.",
                "get_attr 节点没有形状：它们的值是 nn.Parameter，而 Parameter 是 torch.Tensor（的子类），只是它的类型"
                "不恰好是 torch.Tensor。请记录所有是 torch.Tensor 实例的值。"),
        Mistake("call nodes only", lambda got, want, p: bool(_missing_ops(got, want, gm)
                                                              & {"placeholder", "get_attr", "output"}),
                "the placeholder, get_attr or output nodes have no shape: record every node whose value is "
                "a tensor, not only call_* nodes (run_node runs for every node).",
                "placeholder、get_attr 或 output 节点没有形状：请记录所有值为张量的节点，而不只是 call_* 节点"
                "（run_node 对每个节点都会运行）。"),
        Mistake("keyed by target", lambda got, want, p: bool(set(got) - set(want) - names)
                and all(_is_target_spelling(k, gm) for k in set(got) - set(want)),
                "some keys are node targets (a function, its name as a string, or a module path); key self.shapes "
                "by node.name, the name each node has in the graph (two calls of one function are two nodes with "
                "two names, but one target).",
                "有些键是节点的 target（函数、函数名字符串或模块路径）；self.shapes 的键应是 node.name，即节点在计算图中"
                "的名字（同一个函数调用两次是两个名字不同的节点，但 target 只有一个）。"),
        Mistake("entries from another graph", lambda got, want, p: bool(set(got) - set(want) - names)
                and set(got) - set(want) - names <= _other_probe_names(gm),
                "self.shapes names nodes that this graph does not have: they were left from another recorder's run. "
                "Each recorder needs its own dict, made in __init__, not one dict shared by every instance.",
                "self.shapes 里有本计算图中不存在的节点名：它们是另一个记录器运行时留下的。"
                "每个记录器都需要在 __init__ 中创建自己的 dict，而不是所有实例共用一个 dict。"),
        Mistake("keys that are not node names", lambda got, want, p: bool(set(got) - set(want) - names),
                "some keys of self.shapes are not names of this graph's nodes: key each entry by node.name.",
                "self.shapes 中有些键不是本计算图节点的名字：请用 node.name 作为每一项的键。"),
        Mistake("non-tensor values", lambda got, want, p: bool(set(got) - set(want)),
                "self.shapes has entries for nodes whose value is not a tensor (an int, a tuple of tensors); "
                "record tensors only.",
                "self.shapes 中有值不是张量的节点（int、张量组成的 tuple）；只记录张量。"),
    ]


def _shapes_text(shapes: Any) -> str:
    if not isinstance(shapes, dict):
        return describe(shapes)
    return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in sorted(shapes.items(), key=lambda kv: str(kv[0]))) + "}"


@task("lab03.3", "record every node's shape with an Interpreter", "用 Interpreter 记录每个节点的形状", hints=[
    ("run_node is called once for every node, placeholders and output included, and what it returns is "
     "what the later nodes receive.",
     "run_node 对每个节点都会调用一次，包括 placeholder 和 output；它返回的值就是后续节点收到的输入。"),
    ("Override one method and let the base class do the work, as lecture 04, section 2 (`Interpreter`: "
     "run a graph one node at a time) does when it records each node's range; store a shape where that "
     "example stores a range.",
     "只重写一个方法，让基类去完成实际计算——第 04 讲第 2 节（`Interpreter`：逐个节点地运行计算图）记录每个节点"
     "取值范围时就是这样做的；在那个例子存放范围的地方，改为存放形状。"),
])
def _shape_recorder(answer: Any) -> None:
    if not (isinstance(answer, type) and issubclass(answer, fx.Interpreter)):
        raise Wrong("pass the class ShapeRecorder itself (a subclass of torch.fx.Interpreter).",
                    "请传入 ShapeRecorder 类本身（torch.fx.Interpreter 的子类）。",
                    got=answer.__name__ if isinstance(answer, type) else describe(answer))
    for probe in _shape_probes():
        gm, args = probe.args[0], probe.args[1:]
        reference = _Reference(gm)
        with torch.no_grad():
            want_out = reference.run(*args)
        want = reference.shapes
        recorder = answer(gm)
        try:
            with torch.no_grad():
                out = recorder.run(*args)
        except (TypeError, AttributeError, RuntimeError) as exc:
            if "NoneType" not in str(exc):
                raise
            raise Wrong("run_node returned None, so a later node received None as its input: run_node "
                        "must return the node's value, as the base class's run_node does.",
                        "run_node 返回了 None，于是后面的节点收到的输入是 None：run_node 必须像基类的 run_node "
                        "那样返回节点的值。", tried=probe.label, got=one_line_error(exc)) from None
        diff = differs(out, want_out)
        if diff is not None:
            raise Wrong("run(...) must return what the graph returns: run_node must return the node's "
                        "value unchanged.",
                        "run(...) 必须返回计算图的返回值：run_node 要原样返回节点的值。",
                        tried=probe.label, expected=describe(want_out), got=diff)
        got = getattr(recorder, "shapes", None)
        if not isinstance(got, dict):
            raise Wrong("store the shapes in self.shapes, a dict {node name: shape as a tuple}.",
                        "请把形状存进 self.shapes，一个 {节点名: 形状元组} 的 dict。",
                        tried=probe.label, expected=_shapes_text(want), got=describe(got))
        if not got and want:
            raise Wrong("self.shapes is still empty after run(...): run_node must record the shape of "
                        "every tensor value into self.shapes (node.meta is not where the checker looks).",
                        "run(...) 之后 self.shapes 仍是空的：run_node 要把每个张量值的形状记进 self.shapes"
                        "（检查器不看 node.meta）。",
                        tried=probe.label, expected=_shapes_text(want), got="{}")
        comparable = {k: tuple(v) if isinstance(v, torch.Size) else v for k, v in got.items()}
        diff = differs(comparable, want, where="self.shapes")
        if diff is None:
            continue
        for mistake in _shape_mistakes(gm):
            try:
                matched = mistake.matches(comparable, want, probe)
            except Exception:  # a predicate that cannot read this answer does not match it
                matched = False
            if matched:
                raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=_shapes_text(want),
                            got=_shapes_text(got))
        raise Wrong("some shapes differ: record the shape of the value this run computed, for every "
                    "node whose value is a tensor.",
                    "有些形状不对：请为每个值为张量的节点记录本次运行算出的值的形状。",
                    tried=probe.label, expected=_shapes_text(want), got=diff)
    _run_twice(answer)


def _run_twice(answer: type) -> None:
    """One recorder run on batch 2, then on batch 7: self.shapes must hold the second run's shapes."""
    gm = fx.symbolic_trace(built(_SplitHead, 3))
    gen = torch.Generator().manual_seed(6)
    runs = [(torch.randn(b, 8, generator=gen), torch.randn(b, 2, 2, generator=gen)) for b in (2, 7)]
    label = ("one recorder, run(x (2, 8), y (2, 2, 2)) and then run(x (7, 8), y (7, 2, 2)) on the model with a split",
             "同一个记录器，先 run(x (2, 8), y (2, 2, 2))，再 run(x (7, 8), y (7, 2, 2))，模型为含 split 的那个")
    wants = []
    for args in runs:
        reference = _Reference(gm)
        with torch.no_grad():
            reference.run(*args)
        wants.append(reference.shapes)
    recorder = answer(gm)
    with torch.no_grad():
        for args in runs:
            recorder.run(*args)
    got = getattr(recorder, "shapes", None)
    comparable = ({k: tuple(v) if isinstance(v, torch.Size) else v for k, v in got.items()}
                  if isinstance(got, dict) else got)
    if differs(comparable, wants[1], where="self.shapes") is None:
        return
    stale = isinstance(comparable, dict) and any(comparable.get(k) == v != wants[1][k] for k, v in wants[0].items())
    if stale:
        raise Wrong("after the second run self.shapes still holds shapes of the first run: an entry that is already "
                    "there must be overwritten, so that after each run(...) self.shapes describes that run.",
                    "第二次运行之后，self.shapes 里仍是第一次运行的形状：已有的条目也要覆盖，这样每次 run(...) 之后，"
                    "self.shapes 描述的都是这一次运行。",
                    tried=label, expected=_shapes_text(wants[1]), got=_shapes_text(got))
    raise Wrong("after a second run on inputs of another shape, self.shapes is not the shapes of that run.",
                "用另一种形状的输入再运行一次之后，self.shapes 不是这一次运行的形状。",
                tried=label, expected=_shapes_text(wants[1]), got=_shapes_text(got))


# --------------------------------------------------------------------------- task 4


def _parts(features: int, seed: int) -> zoo.GraphParts:
    """A GraphParts whose weights (both signs) come from the checker's own generator."""
    parts = zoo.GraphParts(features)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in parts.parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    return parts


def _computes(root: nn.Module) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """What the hand-built graph must compute, straight from the parts."""
    def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return root.proj(x - y) * root.scale
    return reference


def _inputs(features: int, seed: int) -> list[Probe]:
    gen = torch.Generator().manual_seed(seed)
    x, y = torch.randn(3, features, generator=gen), torch.randn(3, features, generator=gen)
    y[0] = 0.0  # a row where y is zero: x - y and y - x differ only in sign there
    big = torch.randn(2, 5, features, generator=gen) * 3
    return [Probe((f"gm(x, y) with x, y of shape (3, {features}), both signs, a zero row in y",
                   f"gm(x, y)，x、y 的形状为 (3, {features})，正负值都有，y 中有一行全为零"), (x, y)),
            Probe((f"gm(x, y) with x, y of shape (2, 5, {features})", f"gm(x, y)，x、y 的形状为 (2, 5, {features})"),
                  (big, -big.flip(0)))]


def _root_problem(exc: BaseException) -> bool:
    text = str(exc)
    return "not provided in ``root``" in text or (isinstance(exc, AttributeError) and "has no attribute" in text)


def _opcodes(gm: fx.GraphModule, op: str) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == op]


def _graph_mistakes(root: nn.Module, gm: fx.GraphModule) -> list[Mistake]:
    return [
        Mistake("another root", lambda got, want, p: getattr(gm, "proj", None) is not root.proj
                and getattr(gm, "scale", None) is not root.scale,
                "the GraphModule does not hold the parts of the root it was given: it took proj and scale "
                "from another module. Build it on the root passed to build_graph, so the graph uses that "
                "module's weights.",
                "这个 GraphModule 持有的不是传入的 root 的部件：它从别的模块取了 proj 和 scale。请用传给 build_graph "
                "的 root 来构建，这样计算图用的才是这个模块的权重。"),
        Mistake("operands swapped", lambda got, want, p: differs(got, _computes(root)(p.args[1], p.args[0])) is None,
                "the result is proj(y - x) * scale: the subtraction's operands are swapped. A node's args are "
                "passed in the order they are listed, and the placeholders' order is forward's argument "
                "order (x first, then y).",
                "结果是 proj(y - x) * scale：减法的两个操作数交换了。节点的 args 按列出的顺序传入，而 placeholder "
                "的创建顺序就是 forward 参数的顺序（先 x，后 y）。"),
        Mistake("tuple output", lambda got, want, p: isinstance(got, (tuple, list)) and len(got) == 1
                and differs(got[0], want) is None,
                "the graph returns a sequence of one tensor; the output node should return the tensor "
                "itself.",
                "计算图返回的是只含一个张量的序列；output 节点应当直接返回这个张量。"),
    ]


@task("lab03.4", "build a graph by hand with the Graph API", "用 Graph API 亲手构建计算图", hints=[
    ("Create the nodes in the order forward would run them: the two inputs first (their order is the "
     "order of forward's arguments), then each operation, then the node that returns the result.",
     "按 forward 的执行顺序创建节点：先是两个输入（它们的顺序就是 forward 参数的顺序），再是每个运算，最后是返回结果的节点。"),
    ("Lecture 03, the section on building a graph by hand: one Graph method per opcode; call_module and "
     "get_attr name a target that the GraphModule then looks up in the root it is built on.",
     "第 03 讲讲解亲手构建计算图的那一节：每种 opcode 对应 Graph 的一个方法；call_module 和 get_attr 给出一个 "
     "target 名字，GraphModule 会在构建它时传入的 root 中查找这个名字。"),
    ("x - y is not y - x: a call_function node passes its args to the function in the order you list "
     "them. And a graph without an output node returns None.",
     "x - y 不等于 y - x：call_function 节点按你列出的顺序把 args 传给函数。另外，没有 output 节点的计算图返回 None。"),
])
def _build_graph(answer: Any) -> None:
    need_callable(answer, "build_graph")
    for features, seed in ((4, 11), (6, 12)):
        root = _parts(features, seed)
        label = (f"build_graph(zoo.GraphParts({features}) with other weights)",
                 f"build_graph(换了权重的 zoo.GraphParts({features}))")
        try:
            gm = answer(root)
        except NotImplementedError as exc:
            if 'required "forward"' not in str(exc):
                raise  # the stub, or the learner's own NotImplementedError
            raise Wrong("GraphParts has no forward of its own, so there is nothing to trace: create the "
                        "graph's nodes yourself with the torch.fx.Graph API.",
                        "GraphParts 自己没有 forward，所以没有东西可以追踪：请用 torch.fx.Graph API 亲手创建计算图的节点。",
                        tried=label, got=one_line_error(exc)) from None
        except (AttributeError, RuntimeError) as exc:
            if not _root_problem(exc):
                raise
            raise Wrong("building the GraphModule failed: each call_module and get_attr target is looked up "
                        "in the root you pass, and that root lacks it. Pass the root build_graph was given, "
                        "which holds proj and scale.",
                        "构建 GraphModule 失败：每个 call_module 和 get_attr 的 target 都会在你传入的 root 里查找，"
                        "而那个 root 里没有它。请传入 build_graph 收到的 root，它持有 proj 和 scale。",
                        tried=label, got=one_line_error(exc)) from None
        if not isinstance(gm, fx.GraphModule):
            hint = (("that is the Graph; a Graph cannot run: wrap it in a GraphModule together with the root.",
                     "这是 Graph；Graph 本身不能运行：请把它和 root 一起包装成 GraphModule。")
                    if isinstance(gm, fx.Graph) else
                    ("return a torch.fx.GraphModule built from your graph and the root.",
                     "请返回由你的计算图和 root 构建的 torch.fx.GraphModule。"))
            raise Wrong(*hint, tried=label, got=describe(gm))
        if not _opcodes(gm, "output"):
            raise Wrong("the graph has no output node, so its forward returns None: end the graph with "
                        "the node that returns the result.",
                        "计算图没有 output 节点，所以它的 forward 返回 None：请用返回结果的节点结束计算图。",
                        tried=label, expected=("a graph ending in an output node", "以 output 节点结尾的计算图"),
                        got=("no output node", "没有 output 节点"))
        if getattr(gm.graph, "_tracer_cls", None) is not None:
            raise Wrong("this graph was recorded by a tracer (symbolic_trace of a module you wrote), not built: "
                        "create each node yourself with the torch.fx.Graph API.",
                        "这张计算图是追踪器记录下来的（对你写的模块做了 symbolic_trace），而不是构建出来的："
                        "请用 torch.fx.Graph API 亲手创建每个节点。",
                        tried=label, expected=("a graph built node by node", "逐个节点亲手构建的计算图"),
                        got=("a traced graph", "追踪得到的计算图"))
        shape = {"placeholder": len(_opcodes(gm, "placeholder")), "call_module": _opcodes(gm, "call_module"),
                 "get_attr": _opcodes(gm, "get_attr"), "call_function": len(_opcodes(gm, "call_function")),
                 "call_method": len(_opcodes(gm, "call_method"))}
        want_shape = {"placeholder": 2, "call_module": ["proj"], "get_attr": ["scale"], "call_function": 2,
                      "call_method": 0}
        diff = differs(shape, want_shape, where="nodes")
        if diff is not None:
            raise Wrong("the graph should have two placeholder nodes (x, y), one call_module node for proj, "
                        "one get_attr node for scale (the parameter is read, not copied into the graph) and two "
                        "call_function nodes, the subtraction and the product (not call_method nodes).",
                        "计算图应有两个 placeholder 节点（x、y）、一个调用 proj 的 call_module 节点、一个读取 "
                        "scale 的 get_attr 节点（参数是读出来的，而不是复制进计算图），以及两个 call_function 节点："
                        "减法和乘法（不是 call_method 节点）。",
                        tried=label, expected=repr(want_shape), got=diff)
        names = _opcodes(gm, "placeholder")
        if names != ["x", "y"] and sorted(names) != ["x", "y"]:
            raise Wrong("the placeholders are not named x and y: forward's arguments take the placeholders' names, "
                        "and the exercise asks for forward(x, y), so gm(x=..., y=...) must work too.",
                        "placeholder 的名字不是 x 和 y：forward 的参数名就取自 placeholder 的名字，而练习要求的是 "
                        "forward(x, y)，所以 gm(x=..., y=...) 也必须能用。",
                        tried=label, expected="placeholders ['x', 'y']", got=f"placeholders {names}")
        run_probes(gm, _computes(root), _inputs(features, seed), mistakes=_graph_mistakes(root, gm),
                   what="build_graph(root)",
                   generic=("gm(x, y) differs from root.proj(x - y) * root.scale: check each call_function node's "
                            "function and the order of its args, and that the output returns the product.",
                            "gm(x, y) 与 root.proj(x - y) * root.scale 不同：请检查每个 call_function 节点的函数和 args "
                            "的顺序，以及 output 返回的是否是乘积。"))
        held = {id(t) for t in (*root.parameters(), *root.buffers())}
        copies = [name for name, t in (*gm.named_parameters(), *gm.named_buffers()) if id(t) not in held]
        if copies:
            raise Wrong("the GraphModule holds copies of the root's weights, not the root's own (a change to "
                        "root's weights, as training makes, would not reach it): build it on the root you were "
                        "given, not on a copy.",
                        "这个 GraphModule 持有的是 root 权重的副本，而不是 root 自己的权重（训练等对 root 权重的修改"
                        "不会传到它那里）：请用传给你的 root 本身来构建，而不是它的副本。",
                        tried=label, expected=("the root's own proj and scale", "root 自己的 proj 和 scale"),
                        got=(f"a copy of {copies[0]!r}", f"{copies[0]!r} 的副本"))
