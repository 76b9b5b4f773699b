"""An fx graph as dot: one box per node, labels from graph_table's columns, edges from args.

A graph of ``max_nodes`` nodes or more is drawn collapsed: nodes are grouped by the module
that made them (``nn_module_stack``, the ``call_module`` target, the ``get_attr`` owner),
at the deepest module level that keeps the picture small, and each group is one box.
``focus`` draws one module's nodes, with the nodes feeding it and fed by it outside.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from torch import fx

from ._dot import Dot, cut, lines
from .._lang import only, pick
from ..viewers._node_text import arg_text, dtype_text, meta_value, shape_text, target_text
from ..viewers._graph_source import _INPUT_KINDS, _INPUT_KINDS_ZH
from ..errors import FxCourseError

__all__ = ["fx_dot", "module_path"]

GROUPS = 40  # a collapsed picture shows at most this many boxes
_KIND = {"parameter": "parameter", "buffer": "buffer", "constant": "constant",
         "user input": "user input"}


def fx_dot(dot: Dot, graph: fx.Graph, *, max_nodes: int | None, focus: str | None, shapes: bool,
           input_kinds: dict[str, str] | None = None, owner: Any = None,
           prefix: str = "") -> tuple[str, str]:
    """Write ``graph`` into ``dot``; returns the ids of its first and last drawn nodes."""
    nodes = list(graph.nodes)
    if focus is not None:
        return _focused(dot, nodes, focus, max_nodes, shapes, input_kinds or {}, owner, prefix)
    if max_nodes is not None and len(nodes) >= max_nodes:
        return _collapsed(dot, nodes, shapes, input_kinds or {}, owner, prefix, max_nodes)
    return _full(dot, nodes, shapes, input_kinds or {}, owner, prefix)


def _full(dot: Dot, nodes: Sequence[fx.Node], shapes: bool, input_kinds: dict[str, str],
          owner: Any, prefix: str) -> tuple[str, str]:
    cache: dict[int, str] = {}
    for n in nodes:
        dot.node(prefix + n.name, node_label(n, cache, shapes, input_kinds, owner), node_kind(n, input_kinds))
    for n in nodes:
        for arg in n.all_input_nodes:
            dot.edge(prefix + arg.name, prefix + n.name)
    return prefix + nodes[0].name, prefix + nodes[-1].name


def node_kind(n: fx.Node, input_kinds: dict[str, str]) -> str:
    """The legend entry of ``n``: its opcode, or its input kind in an ExportedProgram."""
    if n.op == "placeholder" and input_kinds:
        label = input_kinds.get(n.name, "")
        for key, en in _INPUT_KINDS.items():  # the label is in the reader's language
            for word in (en, _INPUT_KINDS_ZH.get(key, en)):
                if label == word or label.startswith(word + " "):
                    return _KIND.get(en, "other input")
        return "other input"
    return n.op


def node_label(n: fx.Node, cache: dict[int, str], shapes: bool = True,
               input_kinds: dict[str, str] | None = None, owner: Any = None) -> str:
    """``name`` / ``opcode target`` / ``shape dtype``: the graph_table row of ``n``."""
    target = target_text(n.target, cache)
    if n.op == "call_module" and owner is not None:
        sub = _submodule(owner, str(n.target))
        if sub is not None:
            target = f"{target} ({type(sub).__name__})"
    if n.op in ("placeholder", "output"):
        second = n.op
        kind = (input_kinds or {}).get(n.name, "")
        if kind:
            second = f"{n.op}: {kind}"
    else:
        second = f"{n.op} {target}"
    third = ""
    if shapes:
        value = meta_value(n.meta)
        third = " ".join(p for p in (shape_text(value), dtype_text(value)) if p)
    return lines([n.name, second, _literal_args(n), third])


def _literal_args(n: fx.Node) -> str:
    """The node's args (and kwargs) when they hold a value written into the graph
    (``(fc, 2.0)``, ``{'min': 0.0}``); "" when every argument is an arrow already."""
    if n.op in ("placeholder", "output", "get_attr") or not (_has_literal(n.args) or _has_literal(n.kwargs)):
        return ""
    text = arg_text(n.args)
    return f"{text} {arg_text(n.kwargs)}" if n.kwargs else text


def _has_literal(value: Any) -> bool:
    if isinstance(value, fx.Node):
        return False
    if isinstance(value, (tuple, list)):
        return any(_has_literal(v) for v in value)
    if isinstance(value, dict):
        return any(_has_literal(v) for v in value.values())
    return True


def _submodule(owner: Any, target: str) -> Any:
    try:
        return owner.get_submodule(target)
    except Exception:  # a target the owner does not hold (a graph drawn on its own)
        return None


def module_path(n: fx.Node, input_kinds: dict[str, str] | None = None) -> str:
    """The dotted path of the module that made ``n`` ("" for the root). An ExportedProgram's
    parameter and buffer inputs belong to the module that owns them."""
    if n.op == "call_module":
        return str(n.target)
    kind = (input_kinds or {}).get(n.name, "")
    if n.op == "placeholder" and kind.startswith(("parameter ", "buffer ", "constant ")):
        return kind.split(" ", 1)[1].rpartition(".")[0]
    stack = n.meta.get("nn_module_stack")
    if stack:
        path = list(stack.values())[-1]
        path = path[0] if isinstance(path, tuple) else str(path)
        return _tidy_path(str(path))
    if n.op == "get_attr":
        return str(n.target).rpartition(".")[0]
    return ""


def _tidy_path(path: str) -> str:
    """``L['self'].layer1.0`` (Dynamo's spelling) → ``layer1.0``; ``@1`` suffixes dropped."""
    path = path.split("@", 1)[0]
    for head in ("L['self'].", "L['self']", "self."):
        if path.startswith(head):
            path = path[len(head):]
    path = path.replace("['", ".").replace("']", "").replace("[", ".").replace("]", "")
    return path.strip(".")


def _key(path: str, depth: int) -> str:
    return ".".join(path.split(".")[:depth]) if path else ""


def _grouping(nodes: Sequence[fx.Node], base: int = 0,
              input_kinds: dict[str, str] | None = None) -> tuple[dict[str, str], int]:
    """node name -> group (module path cut at the chosen depth, "" for ungrouped)."""
    paths = {n.name: module_path(n, input_kinds) for n in nodes}
    deepest = max((len(p.split(".")) for p in paths.values() if p), default=0)
    best = base + 1
    for depth in range(base + 1, deepest + 1):
        keys = {_key(p, depth) for p in paths.values() if p}
        loose = sum(1 for p in paths.values() if not p)
        if len(keys) + loose > GROUPS:
            break
        best = depth
    return {name: _key(p, best) for name, p in paths.items()}, best


def _collapsed(dot: Dot, nodes: Sequence[fx.Node], shapes: bool, input_kinds: dict[str, str],
               owner: Any, prefix: str, max_nodes: int, base: int = 0,
               focus: str = "") -> tuple[str, str]:
    group_of, depth = _grouping(nodes, base, input_kinds)
    sizes: dict[str, int] = defaultdict(int)
    for n in nodes:
        sizes[group_of[n.name]] += 1
    items = {n.name: (f"module:{g}" if (g := group_of[n.name]) and sizes[g] > 1 else n.name) for n in nodes}
    distinct = len(set(items.values()))
    if distinct >= max_nodes:  # nothing to group by: draw the first nodes and say so
        return _truncated(dot, nodes, shapes, input_kinds, owner, prefix, max_nodes)
    members: dict[str, list[fx.Node]] = defaultdict(list)
    for n in nodes:
        members[items[n.name]].append(n)
    cache: dict[int, str] = {}
    for item, group in members.items():
        if item.startswith("module:"):
            path = item[len("module:"):]
            kind_text = _stack_type(group, path) or _owner_type(owner, path)
            dot.node(prefix + item, lines([path, kind_text, f"{len(group)} nodes"]), "module")
        else:
            n = group[0]
            dot.node(prefix + item, node_label(n, cache, shapes, input_kinds, owner), node_kind(n, input_kinds))
    seen: set[tuple[str, str]] = set()
    for n in nodes:
        for arg in n.all_input_nodes:
            if arg.name not in items:  # outside the focused module
                items[arg.name] = arg.name
                dot.node(prefix + arg.name, lines([arg.name, f"{arg.op} {target_text(arg.target, cache)}"]),
                         "outside")
            pair = (items[arg.name], items[n.name])
            if pair[0] != pair[1] and pair not in seen:
                seen.add(pair)
                dot.edge(prefix + pair[0], prefix + pair[1])
    where = f"in {focus} " if focus else ""
    groups = sorted((-len(v), k) for k, v in members.items() if k.startswith("module:"))
    example = groups[0][1][len("module:"):] if groups else "layer1"
    dot.note = pick(f"{len(nodes)} nodes {where}collapsed into {distinct} boxes, one per module at depth {depth}; "
                    f"draw(..., focus={example!r}) shows one module, max_nodes=None every node",
                    f"{len(nodes)} 个节点按第 {depth} 层模块折叠为 {distinct} 个方框；"
                    f"用 focus={example!r} 查看一个模块，max_nodes=None 画出全部节点", sep="\n")
    first, last = items[nodes[0].name], items[nodes[-1].name]
    return prefix + first, prefix + last


def _stack_type(group: Sequence[fx.Node], path: str) -> str:
    """The class name ``nn_module_stack`` records for the module at ``path``, if any."""
    for n in group:
        for value in (n.meta.get("nn_module_stack") or {}).values():
            if isinstance(value, tuple) and len(value) > 1 and _tidy_path(str(value[0])) == path:
                kind = value[1]
                return getattr(kind, "__name__", None) or str(kind).rsplit(".", 1)[-1].strip("'>")
    return ""


def _owner_type(owner: Any, path: str) -> str:
    sub = _submodule(owner, path) if owner is not None else None
    name = type(sub).__name__ if sub is not None else ""
    return "" if name == "Module" else name  # symbolic_trace keeps only empty containers


def _truncated(dot: Dot, nodes: Sequence[fx.Node], shapes: bool, input_kinds: dict[str, str],
               owner: Any, prefix: str, max_nodes: int) -> tuple[str, str]:
    shown = list(nodes[: max_nodes - 1])
    names = {n.name for n in shown}
    cache: dict[int, str] = {}
    for n in shown:
        dot.node(prefix + n.name, node_label(n, cache, shapes, input_kinds, owner), node_kind(n, input_kinds))
    for n in shown:
        for arg in n.all_input_nodes:
            dot.edge(prefix + arg.name, prefix + n.name)
    rest = len(nodes) - len(shown)
    more = prefix + "more"
    dot.node(more, only(f"… {rest} more nodes", f"… 另有 {rest} 个节点"), "more")
    for n in shown:
        if any(user.name not in names for user in n.users):
            dot.edge(prefix + n.name, more, 'style="dashed"')
    dot.note = pick(f"the first {len(shown)} of {len(nodes)} nodes (no modules to group them by); "
                    f"max_nodes=None draws every node",
                    f"只画出前 {len(shown)} 个节点（共 {len(nodes)} 个，没有可折叠的模块）；max_nodes=None 画出全部",
                    sep="\n")
    return prefix + shown[0].name, more


def _focused(dot: Dot, nodes: Sequence[fx.Node], focus: str, max_nodes: int | None, shapes: bool,
             input_kinds: dict[str, str], owner: Any, prefix: str) -> tuple[str, str]:
    focus = _tidy_path(focus)
    inside = [n for n in nodes if _within(module_path(n, input_kinds), focus)]
    if not inside:
        paths = sorted({_key(module_path(n, input_kinds), 1) for n in nodes if module_path(n, input_kinds)})
        raise FxCourseError(got=f"focus={focus!r}", where="draw",
                            accepted=f"a module path of this graph: {', '.join(paths[:12]) or '(none)'}",
                            fix="pick a path from that list (or from the collapsed picture)",
                            zh=f"draw：这张图里没有模块 {focus!r}；可选：{', '.join(paths[:12]) or '（无）'}。")
    names = {n.name for n in inside}
    if max_nodes is not None and len(inside) >= max_nodes:
        return _collapsed(dot, inside, shapes, input_kinds, owner, prefix, max_nodes,
                          base=len(focus.split(".")), focus=focus)
    cache: dict[int, str] = {}
    outside: dict[str, None] = {}
    for n in inside:
        for arg in n.all_input_nodes:
            if arg.name not in names:
                outside.setdefault(arg.name, None)
        for user in n.users:
            if user.name not in names:
                outside.setdefault(user.name, None)
    dot.cluster(f"{focus}", 'style="rounded" color="#3f8a3f"')
    for n in inside:
        dot.node(prefix + n.name, node_label(n, cache, shapes, input_kinds, owner), node_kind(n, input_kinds))
    dot.end()
    by_name = {n.name: n for n in nodes}
    for name in outside:
        n = by_name[name]
        dot.node(prefix + name, lines([name, cut(f"{n.op} {target_text(n.target, cache)}")]), "outside")
    for n in inside:
        for arg in n.all_input_nodes:
            dot.edge(prefix + arg.name, prefix + n.name)
        for user in n.users:
            if user.name not in names:
                dot.edge(prefix + n.name, prefix + user.name)
    dot.note = pick(f"{len(inside)} of {len(nodes)} nodes: module {focus}; dashed boxes are outside it",
                    f"模块 {focus} 的 {len(inside)} 个节点（共 {len(nodes)} 个）；虚线框在模块之外", sep="\n")
    return prefix + inside[0].name, prefix + inside[-1].name


def _within(path: str, focus: str) -> bool:
    return path == focus or path.startswith(focus + ".")
