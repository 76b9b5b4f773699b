"""``graph_diff``: what a pass changed between two fx graphs.

Nodes are matched by name first. Nodes left over on both sides are paired as *renamed*
when they share opcode and target and the pairing is unambiguous (as many left over on
each side, paired in order). Then every pair is compared:

- ``retargeted``: same name, different opcode or target (``torch.relu`` → ``torch.sigmoid``)
- ``rewired``: same name and target, different args or kwargs
- ``renamed``: a different name for the same opcode and target

Whatever stays unpaired was ``added`` (only in ``after``) or ``removed`` (only in
``before``). Node order alone is not compared, and neither are the modules a
``call_module`` node names: conv-bn fusion folds ``bn`` into ``conv`` in place, so only
the graph edits around it show (``bn`` removed, ``relu`` rewired).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from torch import fx

from ._node_text import arg_text, target_text
from ._graph_source import describe_input, resolve
from .graph_table import HEADERS_ZH
from .._lang import only
from .._render import HTML_MAX_ROWS, Table, TableView, esc, table_style
from ..errors import FxCourseError

__all__ = ["Change", "GraphDiff", "graph_diff"]

COLUMNS = ("", "name", "opcode", "target", "args", "kwargs")
ARROW = " → "
_KINDS = ("retargeted", "rewired", "renamed")
_WORDS_ZH = {"added": "新增", "removed": "删除", "retargeted": "改了目标", "rewired": "改了连线",
             "renamed": "改了名"}
_STYLE = table_style("fxcourse-graph-diff", {
    "diff-add": "background:#e6ffec",
    "diff-remove": "background:#ffebe9;text-decoration:line-through",
    "diff-change": "background:#fff8c5",
    "diff-same": "color:#666",
    "diff-skip": "color:#999",
})
_CSS = {"+": "diff-add", "-": "diff-remove", "~": "diff-change", " ": "diff-same",
        "⋮": "diff-skip"}


@dataclass(frozen=True)
class Change:
    """One node present on both sides that differs: ``kind`` is retargeted, rewired or
    renamed; ``before``/``after`` read like ``call_function torch.relu (x,)``."""

    kind: str
    name: str
    before: str
    after: str
    old_name: str


class _Node:
    """The comparable text of one node; ``args``/``kwargs`` are filled after matching."""

    __slots__ = ("node", "name", "op", "target", "args", "kwargs")

    def __init__(self, node: fx.Node, cache: dict[int, str]) -> None:
        self.node, self.name, self.op = node, node.name, node.op
        self.target = target_text(node.target, cache)
        self.args = arg_text(node.args)
        self.kwargs = arg_text(node.kwargs)

    def cells(self) -> list[str]:
        return [self.name, self.op, self.target, self.args, self.kwargs]

    def text(self) -> str:
        kwargs = f" {self.kwargs}" if self.kwargs != "{}" else ""
        return f"{self.op} {self.target} {self.args}{kwargs}"


class GraphDiff(TableView):
    """The changes between two graphs; ``to_text()``, ``to_html()``, ``.added``,
    ``.removed``, ``.changed``, ``.summary``; ``len()`` counts the changes.

    Introduced in course/04_fx_transforms.ipynb.

    >>> import torch
    >>> f = lambda x: torch.relu(x)
    >>> d = graph_diff(torch.fx.symbolic_trace(f), torch.fx.symbolic_trace(f))
    >>> len(d), d.summary
    (0, 'no change: the graphs are equivalent (3 nodes)')
    """

    def __init__(self, table: Table, summary: str, added: list[str], removed: list[str],
                 changed: list[Change]) -> None:
        self._table = table
        self.summary = summary
        self.added = added
        self.removed = removed
        self.changed = changed
        self.graphs: tuple[fx.Graph, fx.Graph] | None = None  # (before, after), set by graph_diff

    def __len__(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)

    def to_text(self, width: int | None = None) -> str:
        """The summary, then ``+`` added, ``-`` removed and ``~`` changed nodes with a
        little unchanged context; a changed cell reads ``before → after``."""
        if not self:
            return self.summary
        return self._table.to_text(width=width)

    def to_html(self, max_rows: int | None = None) -> str:
        """The same rows as HTML, coloured by kind of change."""
        if not self:
            return f'<div class="fxcourse-graph-diff"><p>{esc(self.summary)}</p></div>'
        return self._table.to_html(max_rows=max_rows or HTML_MAX_ROWS, style=_STYLE)

    def __repr__(self) -> str:
        return f"<GraphDiff: {self.summary}>"


def graph_diff(before: Any, after: Any, context: int = 2) -> GraphDiff:
    """Compare two fx graphs (GraphModule, Graph, ExportedProgram or captured graph).

    ``context`` unchanged nodes are kept around each change; longer unchanged runs fold
    into one ``⋮`` row. To diff a pass that edits a graph in place, keep a copy first:
    ``before = copy.deepcopy(gm)``.

    Introduced in course/04_fx_transforms.ipynb.

    >>> import torch
    >>> before = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> after = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> relu = next(n for n in after.graph.nodes if n.name == "relu")
    >>> relu.target = torch.sigmoid
    >>> d = graph_diff(before, after)
    >>> d.changed[0].kind, d.changed[0].after
    ('retargeted', 'call_function torch.sigmoid (x,)')
    >>> print(d.to_text(width=80))
    graph_diff: 1 retargeted (4 nodes before, 4 after)
       name    opcode         target                      args       kwargs
       ------  -------------  --------------------------  ---------  ------
       x       placeholder    x                           ()         {}
    ~  relu    call_function  torch.relu → torch.sigmoid  (x,)       {}
       add     call_function  operator.add                (relu, 1)  {}
       output  output         output                      (add,)     {}
    """
    if not isinstance(context, int) or isinstance(context, bool) or context < 0:
        raise FxCourseError(got=f"context={context!r}", accepted="an int of 0 or more",
                            fix="pass context=2 (unchanged nodes shown around each change)",
                            where="graph_diff",
                            zh=f"graph_diff：context={context!r} 不可用；context 是每处改动前后显示的"
                               f"未改动节点数，须为不小于 0 的整数，例如 context=2。")
    old_graph, new_graph = _fx_graph(before, "before"), _fx_graph(after, "after")
    cache: dict[int, str] = {}
    old = [_Node(n, cache) for n in old_graph.nodes]
    new = [_Node(n, cache) for n in new_graph.nodes]
    pairs = _match(old, new)  # new name -> old node
    renames = {name: o.name for name, o in pairs.items() if o.name != name}
    if renames:  # compare args as if the renamed nodes kept their old names
        for n in new:
            n.args, n.kwargs = arg_text(n.node.args, renames), arg_text(n.node.kwargs, renames)
    kinds = {n.name: _kind(pairs[n.name], n) if n.name in pairs else "+" for n in new}
    if renames:  # show the names the after-graph really uses
        for n in new:
            n.args, n.kwargs = arg_text(n.node.args), arg_text(n.node.kwargs)
    changed = [Change(kinds[n.name], n.name, pairs[n.name].text(), n.text(), pairs[n.name].name)
               for n in new if kinds[n.name] not in ("", "+")]
    marks = {name: "+" if k == "+" else "~" if k else " " for name, k in kinds.items()}
    paired = {o.name for o in pairs.values()}
    removed = [o.name for o in old if o.name not in paired]
    added = [n.name for n in new if marks[n.name] == "+"]
    summary = _summary(len(old), len(new), added, removed, changed, old_graph is new_graph)
    rows = _rows(old, new, pairs, marks, paired)
    table = Table(list(COLUMNS), *_fold(rows, context), css_class="fxcourse-graph-diff",
                  caption=f"graph_diff: {summary}",
                  labels=[only(c, HEADERS_ZH.get(c, c)) for c in COLUMNS])
    diff = GraphDiff(table, summary, added, removed, changed)
    diff.graphs = (old_graph, new_graph)  # draw() needs both graphs to mark the edges
    return diff


def _fx_graph(obj: Any, which: str) -> fx.Graph:
    resolved = resolve(obj, f"graph_diff ({which})")
    if resolved.fx_graph is None:
        raise FxCourseError(
            got=describe_input(obj), where=f"graph_diff ({which})",
            accepted="an fx graph: GraphModule, Graph, ExportedProgram or captured graph",
            fix="compare fx graphs (torch.fx.symbolic_trace the model); "
                "view a TorchScript graph with graph_table instead",
            zh=f"graph_diff（{which}）：收到 {describe_input(obj)}，它是 TorchScript 计算图；graph_diff 只比较 "
               "fx 计算图（GraphModule、Graph、ExportedProgram 或捕获到的计算图）。修复：先用 "
               "torch.fx.symbolic_trace 对模型做符号追踪；TorchScript 计算图请用 graph_table 查看。")
    return resolved.fx_graph


def _match(old: list[_Node], new: list[_Node]) -> dict[str, _Node]:
    """Pair nodes by name, then leftovers by (opcode, target) where the counts agree."""
    by_name = {o.name: o for o in old}
    pairs = {n.name: by_name[n.name] for n in new if n.name in by_name}
    left_old: dict[tuple[str, str], list[_Node]] = defaultdict(list)
    left_new: dict[tuple[str, str], list[_Node]] = defaultdict(list)
    for o in old:
        if o.name not in pairs:
            left_old[o.op, o.target].append(o)
    for n in new:
        if n.name not in pairs:
            left_new[n.op, n.target].append(n)
    for key, news in left_new.items():
        olds = left_old.get(key, [])
        if len(olds) == len(news):
            pairs.update({n.name: o for n, o in zip(news, olds)})
    return pairs


def _kind(o: _Node, n: _Node) -> str:
    if (o.op, o.target) != (n.op, n.target):
        return "retargeted"
    if o.name != n.name:
        return "renamed"
    if (o.args, o.kwargs) != (n.args, n.kwargs):
        return "rewired"
    return ""


def _summary(n_old: int, n_new: int, added: list[str], removed: list[str],
             changed: list[Change], same_object: bool) -> str:
    if not (added or removed or changed):
        text = only(f"no change: the graphs are equivalent ({n_new} nodes)",
                    f"没有改动：两个计算图等价（{n_new} 个节点）")
        if same_object:
            text += only("; before and after are the same graph object, so copy it before an "
                         "in-place pass (copy.deepcopy(gm))",
                         "；before 和 after 是同一个计算图对象，原地修改的 pass 之前请先复制一份"
                         "（copy.deepcopy(gm)）")
        return text
    counts = [(len(added), "added"), (len(removed), "removed")]
    counts += [(sum(c.kind == k for c in changed), k) for k in _KINDS]
    parts = ", ".join(f"{count} {what}" for count, what in counts if count)
    parts_zh = "，".join(f"{_WORDS_ZH[what]} {count} 个" for count, what in counts if count)
    return only(f"{parts} ({n_old} nodes before, {n_new} after)",
                f"{parts_zh}（之前 {n_old} 个节点，之后 {n_new} 个）")


def _rows(old: list[_Node], new: list[_Node], pairs: dict[str, _Node],
          marks: dict[str, str], paired: set[str]) -> list[list[str]]:
    """Rows in after-graph order; a removed node follows its last kept predecessor."""
    position = {o.name: i for i, n in enumerate(new) if (o := pairs.get(n.name)) is not None}
    keyed: list[tuple[int, int, int, list[str]]] = []
    for i, n in enumerate(new):
        mark = marks[n.name]
        cells = _changed_cells(pairs[n.name], n) if mark == "~" else n.cells()
        keyed.append((i, 0, 0, [mark, *cells]))
    anchor = -1
    for j, o in enumerate(old):
        if o.name in paired:
            anchor = position[o.name]
        else:
            keyed.append((anchor, 1, j, ["-", *o.cells()]))
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]


def _changed_cells(o: _Node, n: _Node) -> list[str]:
    return [a if a == b else f"{a}{ARROW}{b}" for a, b in zip(o.cells(), n.cells())]


def _fold(rows: list[list[str]], context: int) -> tuple[list[list[str]], list[str]]:
    """Keep changed rows and ``context`` rows around each; fold longer unchanged runs
    into one ``⋮`` row that says how many it stands for. Returns rows and CSS classes."""
    keep = [False] * len(rows)
    for i, row in enumerate(rows):
        if row[0] != " ":
            for k in range(max(0, i - context), min(len(rows), i + context + 1)):
                keep[k] = True
    out: list[list[str]] = []
    run: list[list[str]] = []
    for row, kept in zip(rows, keep):
        if kept:
            out.extend(_folded(run))
            run = []
            out.append(row)
        else:
            run.append(row)
    out.extend(_folded(run))
    return out, [_CSS[row[0]] for row in out]


def _folded(run: list[list[str]]) -> list[list[str]]:
    if len(run) <= 1:  # a fold row would take as much room as the row itself
        return run
    return [["⋮", only(f"{len(run)} unchanged", f"{len(run)} 个未改动"), "", "", "", ""]]
