"""``graph_table``: a graph as a table you can print, test, restyle and show as HTML.

It replaces ``Graph.print_tabular``, which prints and returns None. The table is built from
what the graph already holds; nothing runs the model.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from torch import fx

from ._graph_source import resolve
from .._lang import only, pick
from ._node_text import arg_text, dtype_text, meta_value, shape_text, source_text, target_text
from .._render import HTML_MAX_ROWS, Table, TableView, table_style
from ._torchscript_rows import TS_COLUMNS, TS_DEFAULT, torchscript_rows
from ..errors import FxCourseError, describe

__all__ = ["GraphTable", "graph_table"]

MAX_ROWS = HTML_MAX_ROWS  # rows shown by default; the middle of a longer table is left out
_FOLD_EN = "… {n} more rows not shown: graph_table(..., max_rows=None) shows every row"
_FOLD_ZH = "省略 {n} 行：用 graph_table(..., max_rows=None) 显示全部 …"
_ALL = object()  # to_text/to_html: "use the table's own max_rows"

FX_DEFAULT = ("opcode", "name", "target", "args", "kwargs")
FX_COLUMNS = (*FX_DEFAULT, "shape", "dtype", "users", "source")
#: What a 中文 reader sees as each column's header (the names you pass stay English).
HEADERS_ZH = {
    "opcode": "操作码", "name": "名称", "target": "目标", "args": "位置参数", "kwargs": "关键字参数",
    "shape": "形状", "dtype": "数据类型", "users": "使用者数", "source": "源码位置",
    "input_kind": "输入类别", "kind": "节点种类", "outputs": "输出", "inputs": "输入",
    "attributes": "属性", "types": "类型",
}

_STYLE = table_style("fxcourse-graph-table", {
    "op-placeholder,ts-param": "background:#e8f1fb",
    "op-get_attr": "background:#f3ecfa",
    "op-call_method": "background:#fdf6e3",
    "op-call_module": "background:#eaf7ea",
    "op-output,ts-return": "background:#fbe9e7",
    "ts-control": "background:#fff3cd;font-weight:bold",
    "ts-block": "color:#777",
    "ts-prim": "color:#555",
    "fold": "color:#555;font-style:italic",
})


class GraphTable(TableView):
    """One row per graph node; ``to_text()``, ``to_html()``, ``.rows``, ``.columns``.

    Introduced in course/03_fx_tracing_ir.ipynb.

    >>> import torch
    >>> t = graph_table(torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    >>> len(t), t.columns
    (4, ('opcode', 'name', 'target', 'args', 'kwargs'))
    >>> t.rows[1]
    ('call_function', 'relu', 'torch.relu', '(x,)', '{}')
    """

    def __init__(self, table: Table, source: str, max_rows: int | None = MAX_ROWS) -> None:
        self._table = table
        self.source = source
        self.max_rows = _check_max_rows(max_rows)

    def __len__(self) -> int:
        return len(self._table.rows)

    def _limit(self, max_rows: Any) -> int | None:
        return self.max_rows if max_rows is _ALL else _check_max_rows(max_rows)

    def to_text(self, width: int | None = None, max_rows: Any = _ALL) -> str:
        """Aligned columns fitted to ``width`` (default: the terminal's), long cells cut
        with ``…``; beyond ``max_rows`` rows (default: the table's) only the first and last
        are shown, and one line (``… N more rows …``) says how many were left out."""
        return self._table.to_text(width=width, max_rows=self._limit(max_rows))

    def to_html(self, max_rows: Any = _ALL) -> str:
        """An HTML table, rows coloured by opcode; beyond ``max_rows`` rows (default: the
        table's) only the first and last are sent, and one row says how many were left out."""
        return self._table.to_html(max_rows=self._limit(max_rows), style=_STYLE, fold_note=_fold_text())

    def __repr__(self) -> str:
        return f"<GraphTable of {self.source}: {len(self)} rows × {len(self.columns)} columns>"


def _fold_text() -> str:
    """The row that stands for the rows left out: both languages in 'both', else one."""
    return pick(_FOLD_EN, _FOLD_ZH)


def _headers(names: Sequence[str]) -> list[str]:
    """Header labels in the reader's language (English in 'en' and 'both')."""
    return [only(n, HEADERS_ZH.get(n, n)) for n in names]


def _check_max_rows(max_rows: Any) -> int | None:
    if max_rows is None or (isinstance(max_rows, int) and not isinstance(max_rows, bool) and max_rows >= 1):
        return max_rows
    raise FxCourseError(got=f"max_rows={describe(max_rows)}", where="graph_table",
                        accepted="a whole number of rows, 1 or more, or None for every row",
                        fix=f"pass max_rows={MAX_ROWS} (the default) or max_rows=None to see every row",
                        zh=f"graph_table：max_rows={describe(max_rows)} 不可用；max_rows 应为不小于 1 的整数，或 None（显示全部行）；"
                           f"请传 max_rows={MAX_ROWS}（默认值）或 max_rows=None。")


def graph_table(obj: Any, columns: Sequence[str] | str | None = None,
                max_rows: int | None = MAX_ROWS) -> GraphTable:
    """Tabulate a graph: fx (GraphModule, Graph, ExportedProgram, captured) or TorchScript.

    ``columns`` chooses what to show. ``None`` gives the defaults (fx: opcode, name,
    target, args, kwargs, plus input_kind for an ExportedProgram; TorchScript: kind,
    outputs, inputs, attributes). Names prefixed with ``+`` are added to the defaults
    (``["+shape", "+dtype"]``); plain names replace them (``["name", "shape"]``).
    Optional fx columns: shape, dtype (from ``node.meta``), users, source (innermost
    frame of ``node.meta["stack_trace"]``); optional TorchScript columns: types, source.

    A graph longer than ``max_rows`` (default 200) shows its first and last rows and one
    line saying how many it left out, so a 1,500-node graph stays a small output;
    ``max_rows=None`` shows every row.

    Introduced in course/03_fx_tracing_ir.ipynb.

    >>> import torch
    >>> gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    >>> print(graph_table(gm, columns=["+users"]).to_text(width=80))
    fx.GraphModule, 4 nodes
    opcode         name    target        args       kwargs  users
    -------------  ------  ------------  ---------  ------  -----
    placeholder    x       x             ()         {}      1
    call_function  relu    torch.relu    (x,)       {}      1
    call_function  add     operator.add  (relu, 1)  {}      1
    output         output  output        (add,)     {}      0
    """
    _check_max_rows(max_rows)
    resolved = resolve(obj, "graph_table")
    if resolved.fx_graph is None:
        names = _choose(columns, TS_DEFAULT, TS_COLUMNS, resolved.label)
        rows = torchscript_rows(resolved.ts_graph, names)
        table = Table(list(names), [r[0] for r in rows], [r[1] for r in rows],
                      [r[2] for r in rows])
    else:
        default, accepted = FX_DEFAULT, FX_COLUMNS
        if resolved.input_kinds is not None:  # an ExportedProgram says what each input is
            default = ("opcode", "name", "input_kind", "target", "args", "kwargs")
            accepted = (*FX_COLUMNS, "input_kind")
        names = _choose(columns, default, accepted, resolved.label)
        table = _fx_table(resolved.fx_graph, names, resolved.input_kinds or {})
    count = sum(1 for c in table.row_classes if c != "ts-block")
    table.css_class = "fxcourse-graph-table"
    table.caption = only(f"{resolved.label}, {count} nodes", f"{resolved.label}，{count} 个节点")
    table.labels = _headers(table.columns)
    return GraphTable(table, resolved.label, max_rows)


def _choose(columns: Sequence[str] | str | None, default: tuple[str, ...],
            accepted: tuple[str, ...], label: str) -> tuple[str, ...]:
    """The column names to show: defaults, defaults plus ``+name``s, or exactly ``names``."""
    if columns is None:
        return default
    if not isinstance(columns, str) and not (isinstance(columns, Iterable) and not isinstance(columns, Mapping)):
        raise FxCourseError(got=f"columns={describe(columns)}", where="graph_table",
                            accepted="None, a list of column names, or one string of names ('name, shape')",
                            fix="pass e.g. columns=['name', 'shape'] or columns='+users'",
                            zh=f"graph_table：columns={describe(columns)} 不可用；需要 None、列名列表，"
                               "或一个由列名组成的字符串（'name, shape'），例如 columns=['name', 'shape']。")
    names = columns.replace(",", " ").split() if isinstance(columns, str) else list(columns)
    if not all(isinstance(n, str) for n in names):
        odd = next(n for n in names if not isinstance(n, str))
        raise FxCourseError(got=f"column {describe(odd)}", where="graph_table", accepted="column names as str",
                            fix="pass e.g. columns=['name', 'shape']",
                            zh=f"graph_table：列 {describe(odd)} 不是字符串；列名要写成字符串，例如 ['name', 'shape']。")
    added = [n[1:] for n in names if isinstance(n, str) and n.startswith("+")]
    if added and len(added) != len(names):
        raise FxCourseError(got=f"columns={names!r}", where="graph_table",
                            accepted="either all names prefixed with '+' or none",
                            fix="write ['+shape'] to add to the defaults, ['name', 'shape'] "
                                "to replace them",
                            zh=f"graph_table：columns={names!r} 不可用；列名要么全部以 '+' 开头（在默认列之后追加），要么都不带 '+'"
                               "（替换默认列），例如 ['+shape'] 或 ['name', 'shape']。")
    chosen = [*default, *(n for n in added if n not in default)] if added else names
    bad = [n for n in chosen if n not in accepted]
    if bad or not chosen:
        raise FxCourseError(got=f"column {bad[0]!r}" if bad else f"no columns (columns={columns!r})",
                            where="graph_table",
                            accepted=f"columns for a {label}: {', '.join(accepted)}",
                            fix="pick column names from that list",
                            zh=f"graph_table：{label} 没有列 {bad[0]!r}；可选的列：{', '.join(accepted)}。"
                            if bad else f"graph_table：columns={columns!r} 中没有列名，至少要选一列；可选的列：{', '.join(accepted)}。")
    return tuple(chosen)


def _fx_table(graph: fx.Graph, names: Sequence[str], input_kinds: dict[str, str]) -> Table:
    """One row per node, built a column at a time (each column one pass over the nodes)."""
    nodes = list(graph.nodes)
    cache: dict[int, str] = {}
    columns: dict[str, Callable[[], list[str]]] = {
        "opcode": lambda: [n.op for n in nodes],
        "name": lambda: [n.name for n in nodes],
        "target": lambda: [target_text(n.target, cache) for n in nodes],
        "args": lambda: [arg_text(n.args) for n in nodes],
        "kwargs": lambda: [arg_text(n.kwargs) if n.kwargs else "{}" for n in nodes],
        "shape": lambda: [shape_text(meta_value(n.meta)) for n in nodes],
        "dtype": lambda: [dtype_text(meta_value(n.meta)) for n in nodes],
        "users": lambda: [str(len(n.users)) for n in nodes],
        "source": lambda: [source_text(n.meta.get("stack_trace")) for n in nodes],
        "input_kind": lambda: [input_kinds.get(n.name, "") for n in nodes],
    }
    cells = [columns[name]() for name in names]
    rows = [list(row) for row in zip(*cells)]
    return Table(list(names), rows, ["op-" + n.op for n in nodes])
