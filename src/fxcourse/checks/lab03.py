"""Checkers for labs/lab03_fx_ir.ipynb (lecture course/03_fx_tracing_ir.ipynb).

Each checker traces models the learner has not seen (torchvision's resnet18 and small models
defined here, built to expose one common mistake each) and compares with an answer computed
from ``gm.graph.nodes``.
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
from .._node_text import qualified_name

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


def _seeded(build: Callable[[], nn.Module], seed: int = 3) -> nn.Module:
    torch.manual_seed(seed)
    return build().eval()


def _shared_stem_gm() -> fx.GraphModule:
    """symbolic_trace keeps the unused ``aux`` call; DCE removes it, the module stays."""
    gm = fx.symbolic_trace(_seeded(_SharedStem))
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


@functools.lru_cache(maxsize=1)
def _resnet() -> nn.Module:
    """Built once per process (about a second); each checker traces it afresh."""
    return _seeded(zoo.resnet18)


def _resnet_gm() -> fx.GraphModule:
    return fx.symbolic_trace(_resnet())


def _not_callable(task_id: str, name: str, answer: Any) -> Wrong:
    return Wrong(f"pass the function itself, e.g. check('{task_id}', {name}).",
                 f"请传入函数本身，例如 check('{task_id}', {name})。", got=type(answer).__name__)


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


def _histogram_graphs() -> list[tuple[str, fx.GraphModule]]:
    def norm_gap(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        d = (x - y).abs()
        return torch.sqrt((d * d).sum(-1)) - d.max(-1).values + operator.mul(d, 2).mean()

    return [
        ("symbolic_trace(a model that calls self.fc twice)", fx.symbolic_trace(_seeded(_Twice))),
        ("symbolic_trace(a function of two inputs)", fx.symbolic_trace(norm_gap)),
        ("symbolic_trace(torchvision resnet18)", _resnet_gm()),
    ]


@task("lab03.1", "count operations by (opcode, target)", "按 (opcode, target) 统计运算")
def _op_histogram(answer: Any) -> None:
    if not callable(answer):
        raise _not_callable("lab03.1", "op_histogram", answer)
    for label, gm in _histogram_graphs():
        nodes = list(gm.graph.nodes)
        want = Counter((n.op, qualified_name(n.target) if not isinstance(n.target, str) else n.target)
                       for n in nodes)
        # spelling -> canonical key, dropping spellings that would name two different targets
        alias: dict[tuple[str, str], tuple[str, str]] = {}
        clash: set[tuple[str, str]] = set()
        for n in nodes:
            canon = (n.op, n.target if isinstance(n.target, str) else qualified_name(n.target))
            for spelling in _target_spellings(n.target):
                key = (n.op, spelling)
                if alias.get(key, canon) != canon:
                    clash.add(key)
                alias[key] = canon
        for key in clash:
            alias.pop(key, None)

        got = answer(gm)
        if not isinstance(got, dict):
            raise Wrong("return a dict from (opcode, target) to count.",
                        "请返回从 (opcode, target) 到数量的 dict。",
                        tried=label, expected=_show(want), got=type(got).__name__)
        bad_keys = [k for k in got if not (isinstance(k, tuple) and len(k) == 2)]
        if bad_keys:
            raise Wrong("each key is a pair (node.op, target string), e.g. ('call_module', 'fc').",
                        "每个键是一个二元组 (node.op, target 字符串)，例如 ('call_module', 'fc')。",
                        tried=label, expected=_show(want), got=f"key {bad_keys[0]!r}")
        translated: Counter[tuple[str, str]] = Counter()
        unknown = []
        for key, count in got.items():
            if not count:
                continue
            canon = alias.get((str(key[0]), key[1]) if isinstance(key[1], str) else key)
            if canon is None:
                unknown.append(key)
            else:
                translated[canon] += count
        if not unknown and translated == want:
            continue
        raise Wrong(*_histogram_hint(unknown, nodes, translated, want), tried=label,
                    expected=_show(want), got=_show(got))


def _histogram_hint(unknown: list, nodes: list[fx.Node], got: Counter, want: Counter) -> tuple[str, str]:
    seconds = [k[1] for k in unknown]
    if any(not isinstance(s, str) for s in seconds):
        return ("the target must be a string: for call_function write "
                "f\"{t.__module__}.{t.__name__}\", not the function object.",
                "target 必须是字符串：对 call_function 请写 f\"{t.__module__}.{t.__name__}\"，而不是函数对象本身。")
    if any(s.startswith("<") for s in seconds):
        return ("str(node.target) of a function is its repr, like '<built-in function add>'; "
                "for call_function use f\"{t.__module__}.{t.__name__}\", e.g. '_operator.add'.",
                "函数的 str(node.target) 是它的 repr，比如 '<built-in function add>'；"
                "对 call_function 请用 f\"{t.__module__}.{t.__name__}\"，例如 '_operator.add'。")
    short = {getattr(n.target, "__name__", None) for n in nodes if n.op == "call_function"}
    targets = {n.target for n in nodes if isinstance(n.target, str)}
    if any(k[1] in {n.name for n in nodes} - short - targets for k in unknown):
        return ("some keys use node.name (like 'fc_1'); use node.target, so two calls of the same "
                "module or function count under one key.",
                "有些键用的是 node.name（比如 'fc_1'）；请用 node.target，这样同一个模块或函数的两次调用会计入同一个键。")
    if any(k[0] == "call_function" and k[1] in short for k in unknown):
        return ("a bare function name like 'add' is ambiguous (operator.add or torch.add?); "
                "include the module: f\"{t.__module__}.{t.__name__}\".",
                "像 'add' 这样只有函数名是有歧义的（operator.add 还是 torch.add？）；"
                "请带上模块名：f\"{t.__module__}.{t.__name__}\"。")
    if not unknown and {k for k in want if k[0] in ("placeholder", "output")} - set(got):
        return ("every node counts, including placeholder and output nodes.",
                "每个节点都要统计，包括 placeholder 和 output 节点。")
    return ("each node adds 1 under (node.op, target string); compare your counts with the expected ones.",
            "每个节点在 (node.op, target 字符串) 下计 1；请把你的计数与期望值对照。")


def _show(counts: dict) -> str:
    items = sorted(((k, v) for k, v in counts.items() if v), key=lambda kv: repr(kv[0]))
    return "{" + ", ".join(f"{k!r}: {v}" for k, v in items) + "}"


# --------------------------------------------------------------------------- task 2


def _calls_of(gm: fx.GraphModule, kind: type) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(str(n.target)), kind)]


@task("lab03.2", "find every call of a module type", "找出某种模块类型的每一次调用")
def _find_modules(answer: Any) -> None:
    if not callable(answer):
        raise _not_callable("lab03.2", "find_modules", answer)
    stem = ("symbolic_trace(a model whose conv `shared` is called twice) after dead-code elimination",
            _shared_stem_gm)
    resnet = ("symbolic_trace(torchvision resnet18)", _resnet_gm)
    cases = [(resnet, nn.Conv2d), (stem, nn.Conv2d), (stem, nn.BatchNorm2d), (resnet, nn.Linear),
             (stem, nn.Module)]
    for (label, build), kind in cases:
        gm = build()
        want = _calls_of(gm, kind)
        tried = f"find_modules({label}, {'nn.' + kind.__name__})"
        got = answer(gm, kind)
        if isinstance(got, tuple):
            got = list(got)
        if not isinstance(got, list) or not all(isinstance(s, str) for s in got):
            raise Wrong("return a list of strings: node.target of each matching call_module node.",
                        "请返回字符串列表：每个匹配的 call_module 节点的 node.target。",
                        tried=tried, expected=repr(want), got=repr(got))
        if got == want:
            continue
        raise Wrong(*_find_hint(gm, kind, got, want), tried=tried, expected=repr(want), got=repr(got))


def _find_hint(gm: fx.GraphModule, kind: type, got: list[str], want: list[str]) -> tuple[str, str]:
    node_names = {n.name for n in gm.graph.nodes}
    if got and all(s in node_names for s in got) and set(got) - set(want):
        return ("those are node names (like 'layer1_0_conv1'); return node.target, the module's "
                "dotted path (like 'layer1.0.conv1').",
                "这些是节点名（比如 'layer1_0_conv1'）；请返回 node.target，即模块的点分路径（比如 'layer1.0.conv1'）。")
    called = set(want)
    attached = {name for name, m in gm.named_modules() if isinstance(m, kind)}
    if set(got) - called and set(got) <= attached:
        return ("your list names a module that no node calls (it is still attached to the "
                "GraphModule). That is what gm.named_modules() lists; walk gm.graph.nodes and keep "
                "call_module nodes.",
                "你的列表里有一个没有任何节点调用的模块（它仍挂在 GraphModule 上）。gm.named_modules() 列出的就是这些；"
                "请遍历 gm.graph.nodes，只保留 call_module 节点。")
    if not got and want and kind is nn.Module:
        return ("with nn.Module every call_module node matches: test isinstance(module, module_type), "
                "not type(module) is module_type.",
                "传入 nn.Module 时每个 call_module 节点都应匹配：请用 isinstance(module, module_type) 判断，"
                "而不是 type(module) is module_type。")
    if set(got) == called and len(got) < len(want):
        return ("a module called twice must appear twice, once per call_module node "
                "(gm.named_modules() lists each module only once).",
                "一个模块被调用两次就要出现两次，每个 call_module 节点一次（gm.named_modules() 只列出每个模块一次）。")
    if sorted(got) == sorted(want):
        return ("right entries, wrong order: list them in graph order (the order of gm.graph.nodes).",
                "条目对了但顺序不对：请按计算图中的顺序（gm.graph.nodes 的顺序）列出。")
    return ("keep every call_module node whose module (gm.get_submodule(node.target)) is an instance "
            "of module_type, in graph order.",
            "保留所有 call_module 节点中、其模块（gm.get_submodule(node.target)）是 module_type 实例的那些，按图中顺序。")


# --------------------------------------------------------------------------- task 3


def _reference_shapes(gm: fx.GraphModule, args: tuple) -> tuple[dict[str, tuple[int, ...]], Any]:
    shapes: dict[str, tuple[int, ...]] = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            value = super().run_node(n)
            if isinstance(value, torch.Tensor):
                shapes[n.name] = tuple(value.shape)
            return value

    with torch.no_grad():
        out = Recorder(gm).run(*args)
    return shapes, out


def _shape_cases() -> list[tuple[str, fx.GraphModule, tuple]]:
    split = fx.symbolic_trace(_seeded(_SplitHead))
    chain = fx.symbolic_trace(_seeded(_Chain))
    torch.manual_seed(5)
    return [
        ("symbolic_trace(a model that returns one tensor) on x of shape (2, 3, 9, 9)", chain,
         (torch.randn(2, 3, 9, 9),)),
        ("symbolic_trace(a model with a parameter, a size read and a split) on x (3, 8), y (3, 2, 2)",
         split, (torch.randn(3, 8), torch.randn(3, 2, 2))),
        ("the same model on x (5, 8), y (5, 2, 2)", split, (torch.randn(5, 8), torch.randn(5, 2, 2))),
        ("symbolic_trace(torchvision resnet18) on x (1, 3, 32, 32)", _resnet_gm(),
         (torch.randn(1, 3, 32, 32),)),
    ]


@task("lab03.3", "record every node's shape with an Interpreter", "用 Interpreter 记录每个节点的形状")
def _shape_recorder(answer: Any) -> None:
    if not (isinstance(answer, type) and issubclass(answer, fx.Interpreter)):
        raise Wrong("pass the class ShapeRecorder itself (a subclass of torch.fx.Interpreter).",
                    "请传入 ShapeRecorder 类本身（torch.fx.Interpreter 的子类）。",
                    got=type(answer).__name__ if not isinstance(answer, type) else answer.__name__)
    for label, gm, args in _shape_cases():
        want, want_out = _reference_shapes(gm, args)
        recorder = answer(gm)
        try:
            with torch.no_grad():
                out = recorder.run(*args)
        except NotImplementedError:
            raise
        except Exception:
            env = getattr(recorder, "env", None)
            if isinstance(env, dict) and any(v is None for n, v in env.items()
                                             if getattr(n, "op", None) == "placeholder"):
                raise Wrong("run_node returned None, so the next node received None as input: "
                            "end run_node with `return value` (the result of super().run_node(n)).",
                            "run_node 返回了 None，于是下一个节点收到的输入是 None：run_node 最后要 "
                            "`return value`（即 super().run_node(n) 的结果）。", tried=label) from None
            raise
        got = getattr(recorder, "shapes", None)
        if not isinstance(got, dict):
            raise Wrong("store the shapes in self.shapes, a dict {node.name: tuple(shape)}.",
                        "请把形状存进 self.shapes，一个 {node.name: tuple(shape)} 的 dict。",
                        tried=label, expected=_show_shapes(want), got=type(got).__name__)
        if not _same_output(out, want_out):
            raise Wrong("run(...) must return what the graph returns: return the value of "
                        "super().run_node(n) from run_node.",
                        "run(...) 必须返回计算图的返回值：run_node 中要返回 super().run_node(n) 的结果。",
                        tried=label, expected="the model's output", got=_describe(out))
        if not got and want:
            raise Wrong("self.shapes is still empty after run(...): in run_node, store "
                        "self.shapes[n.name] = tuple(value.shape) for every tensor value.",
                        "run(...) 之后 self.shapes 仍是空的：请在 run_node 中对每个张量值执行 "
                        "self.shapes[n.name] = tuple(value.shape)。",
                        tried=label, expected=_show_shapes(want), got="{}")
        listed = [k for k, v in got.items() if isinstance(v, list)]
        if listed:
            raise Wrong("record tuple(value.shape) (a torch.Size is fine too), not a list.",
                        "请记录 tuple(value.shape)（torch.Size 也可以），而不是 list。",
                        tried=label, expected=f"{listed[0]!r}: {want.get(listed[0])!r}",
                        got=f"{listed[0]!r}: {got[listed[0]]!r}")
        relevant = {k: v for k, v in got.items() if k in want}
        if relevant == want:
            continue
        missing = set(want) - set(got)
        by_op = {n.name: n.op for n in gm.graph.nodes}
        ops = {by_op.get(name) for name in missing}
        if missing and ops & {"placeholder", "get_attr", "output"}:
            kinds = ", ".join(sorted(op for op in ops if op))
            hint = (f"no shape for the {kinds} node(s): record every node whose value is a tensor, "
                    "not only call_* nodes (run_node runs for every node, placeholders and output "
                    "included).",
                    f"{kinds} 节点没有形状：请记录所有值为张量的节点，而不只是 call_* 节点（run_node 对每个节点都会运行，"
                    "包括 placeholder 和 output）。")
        elif missing:
            hint = ("some tensor-valued nodes have no shape; record every node whose value is a tensor.",
                    "有些值为张量的节点没有记录形状；请记录所有值为张量的节点。")
        else:
            hint = ("some shapes differ: record tuple(value.shape) of the value this run computed.",
                    "有些形状不对：请记录本次运行算出的值的 tuple(value.shape)。")
        shown = {k: got.get(k, "missing") for k in sorted(want)}
        raise Wrong(*hint, tried=label, expected=_show_shapes(want),
                    got="{" + ", ".join(f"{k!r}: {v!r}" for k, v in shown.items()) + "}")


def _same_output(out: Any, want: Any) -> bool:
    if isinstance(want, torch.Tensor):
        return isinstance(out, torch.Tensor) and out.shape == want.shape and torch.allclose(out, want)
    if isinstance(want, (tuple, list)):
        return (isinstance(out, (tuple, list)) and len(out) == len(want)
                and all(_same_output(a, b) for a, b in zip(out, want)))
    return out == want


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def _show_shapes(shapes: dict[str, tuple[int, ...]]) -> str:
    return "{" + ", ".join(f"{k!r}: {tuple(v)!r}" for k, v in sorted(shapes.items())) + "}"
