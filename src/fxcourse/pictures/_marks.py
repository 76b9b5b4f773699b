"""Pictures with marks on them: a ``capture`` (graphs and the breaks between them) and a
``graph_diff`` (what a pass added, removed and rewired).

A capture is read only through ``Capture``'s public attributes (``graphs``, ``breaks``,
``recompiles``, ``fn``). Breaks are placed in Dynamo's order: a graph that ended with a
graph break is the one compiled at the next break in the log; a break with no graph before
it (no tensor op since the last break) stands alone.
"""
from __future__ import annotations

import re
from typing import Any

from ._dot import Dot, lines
from .._lang import current, only, pick
from ._fx import fx_dot, node_kind, node_label

__all__ = ["capture_dot", "diff_dot", "is_capture", "is_diff"]


def is_capture(obj: Any) -> bool:
    from ..viewers.capture import Capture

    return isinstance(obj, Capture)


def is_diff(obj: Any) -> bool:
    from ..viewers.graph_diff import GraphDiff

    return isinstance(obj, GraphDiff)


def _sequence(graphs: list[Any], breaks: list[Any]) -> list[tuple[str, Any]]:
    """The first call's graphs and breaks interleaved in the order Dynamo met them."""
    pending = [g for g in graphs if g.call == 1]
    out: list[tuple[str, Any]] = []
    for b in breaks:
        if pending and pending[0].ended_by == "graph break":
            out.append(("graph", pending.pop(0)))
        out.append(("break", b))
    out += [("graph", g) for g in pending]
    return out


def capture_dot(cap: Any, max_nodes: int | None, shapes: bool) -> Dot:
    """Each graph a cluster; each break an octagon between the graphs, with reason and line."""
    graphs, breaks = cap.graphs, cap.breaks
    dot = Dot(title=_headline(cap, graphs, breaks))
    previous = None
    notes = []
    for i, (what, item) in enumerate(_sequence(graphs, breaks)):
        if what == "graph":
            first, last = _graph_cluster(dot, item, max_nodes, shapes, "")
            if dot.note:
                notes.append(f"graph {item.index}: {dot.note.splitlines()[0]}")
                dot.note = ""
            if previous is not None:
                dot.edge(previous, first, 'color="#c0392b" style="bold" arrowsize=0.8')
            previous = last
        else:
            node_id = f"break{i}"
            number = breaks.index(item) + 1
            # a Jupyter cell's file is a number (ipykernel names it after a hash of the code)
            location = re.sub(r"^\d{5,}\.py:(\d+)$", only(r"notebook cell, line \1", r"notebook 单元格第 \1 行"),
                              item.location)
            where = (only(f"{location} in {item.function}", f"{location}，{item.function} 中")
                     if item.function else location)
            label = lines([pick(f"graph break {number}", f"图中断 {number}"), where, item.line, item.reason], width=72)
            dot.node(node_id, label, "break")
            if previous is not None:
                dot.edge(previous, node_id, 'color="#c0392b" style="bold" arrowsize=0.8')
            previous = node_id
    later = [g for g in graphs if g.call != 1]
    for g in later:
        reason = next((r.reason for r in cap.recompiles if r.call == g.call), "")
        _graph_cluster(dot, g, max_nodes, shapes,
                       only(f"recompiled on call {g.call}: {reason}", f"第 {g.call} 次调用时重新编译：{reason}"))
    if not graphs and not breaks:
        dot.node("nothing", lines([only("no graph captured", "没有捕获到计算图"), cap.skip_reason]), "more")
    dot.note = "\n".join(notes)
    return dot.finish()


def _headline(cap: Any, graphs: list[Any], breaks: list[Any]) -> str:
    first = sum(1 for g in graphs if g.call == 1)
    plural = lambda n, w: f"{n} {w}" if n == 1 else f"{n} {w}s"  # noqa: E731
    name = getattr(cap.fn, "__qualname__", None) or type(cap.fn).__name__
    zh = f"捕获到 {first} 张图、{len(breaks)} 处图中断"
    if current() == "zh":
        return f"{name}：{zh}"
    return pick(f"capture of {name}: {plural(first, 'graph')}, {plural(len(breaks), 'graph break')}",
                zh, sep="  ·  ")


def _graph_cluster(dot: Dot, g: Any, max_nodes: int | None, shapes: bool, extra: str) -> tuple[str, str]:
    ended = {"graph break": "图中断", "return": "返回"}.get(g.ended_by, g.ended_by)
    label = only(f"graph {g.index} (ends with {g.ended_by})", f"计算图 {g.index}（结束于{ended}）")
    if extra:
        label = lines([label, extra])
    dot.cluster(label, 'style="rounded" color="#4a78b0" penwidth=1.5')
    first, last = fx_dot(dot, g.gm.graph, max_nodes=max_nodes, focus=None, shapes=shapes,
                         owner=g.gm, prefix=f"g{g.index}_")
    dot.end()
    return first, last


def diff_dot(diff: Any, shapes: bool) -> Dot:
    """The union of both graphs: added green, removed red and dashed, changed yellow,
    rewired edges orange."""
    before, after = diff.graphs
    changed = {c.name: c for c in diff.changed}
    old_name = {n.name: (changed[n.name].old_name if n.name in changed else n.name)
                for n in after.nodes if n.name not in set(diff.added)}
    new_of_old = {old: new for new, old in old_name.items()}
    removed = set(diff.removed)

    def old_id(name: str) -> str:
        return new_of_old.get(name, f"removed:{name}")

    dot = Dot(title=f"graph_diff: {diff.summary}")
    cache: dict[int, str] = {}
    for n in after.nodes:
        label = node_label(n, cache, shapes)
        if n.name in changed:
            c = changed[n.name]
            kind = "rewired" if c.kind == "rewired" else "changed"
            detail = f"was {c.old_name}" if c.kind == "renamed" else f"was: {c.before}"
            dot.node(n.name, lines([f"~ {c.kind}", label, detail]), kind)
        elif n.name in set(diff.added):
            dot.node(n.name, lines(["+ added", label]), "added")
        else:
            dot.node(n.name, label, "same" if node_kind(n, {}) != "placeholder" else "placeholder")
    for n in before.nodes:
        if n.name in removed:
            dot.node(f"removed:{n.name}", lines(["− removed", node_label(n, cache, shapes)]), "removed")
    old_edges = {(old_id(a.name), old_id(n.name)) for n in before.nodes for a in n.all_input_nodes}
    new_edges = [(a.name, n.name) for n in after.nodes for a in n.all_input_nodes]
    added = set(diff.added)
    for tail, head in new_edges:
        if (tail, head) in old_edges:
            dot.edge(tail, head)
        elif tail in added or head in added:
            dot.edge_kind("added")
            dot.edge(tail, head, 'color="#1a7f37" penwidth=2')
        else:
            dot.edge_kind("rewired")
            dot.edge(tail, head, 'color="#bc4c00" penwidth=2 label="rewired" fontcolor="#bc4c00"')
    kept = set(new_edges)
    for tail, head in sorted(old_edges - kept):
        dot.edge_kind("removed")
        dot.edge(tail, head, 'color="#cf222e" style="dashed" constraint=false'
                 if tail in new_of_old.values() and head in new_of_old.values()
                 else 'color="#cf222e" style="dashed"')
    return dot.finish()
