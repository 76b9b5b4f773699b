"""Writing dot source: quoting, node and edge lines, clusters, one legend per picture.

Every picture ``draw`` makes goes through :class:`Dot`, so quoting and styling live in one
place. Labels are plain dot strings (``"``, ``\\`` and newlines escaped); the legend is an
HTML-like label (``<``, ``>``, ``&`` escaped).
"""
from __future__ import annotations

import html
from typing import Iterable

from .._lang import only

__all__ = ["Dot", "STYLES", "quote"]

FONT = "Helvetica"
LABEL_WIDTH = 48  # characters per label line; longer lines are cut with …

# kind -> (node attributes, legend text in English and 中文). Fills follow graph_table's row colours.
STYLES: dict[str, tuple[str, tuple[str, str]]] = {
    "placeholder": ('fillcolor="#e8f1fb" color="#4a78b0"', ("an input", "输入")),
    "get_attr": ('fillcolor="#f3ecfa" color="#7a55a8"', ("reads an attribute: parameter, buffer, constant", "读取属性：参数、缓冲区、常量")),
    "call_function": ('fillcolor="#ffffff" color="#555555"', ("calls a free function (torch.relu, operator.add)", "调用普通函数（torch.relu、operator.add）")),
    "call_method": ('fillcolor="#fdf6e3" color="#a0802a"', ("calls a method on a value (x.sum())", "调用值上的方法（x.sum()）")),
    "call_module": ('fillcolor="#eaf7ea" color="#3f8a3f"', ("calls a submodule", "调用子模块")),
    "output": ('fillcolor="#fbe9e7" color="#b0493a"', ("what the graph returns", "计算图的返回值")),
    "module": ('fillcolor="#eaf7ea" color="#3f8a3f" peripheries=2', ("a collapsed module (its node count)", "折叠起来的模块（显示节点数）")),
    "outside": ('fillcolor="#f4f4f4" color="#999999" style="rounded,filled,dashed" fontcolor="#666666"',
                ("outside the focused module", "在聚焦的模块之外")),
    "more": ('shape=note fillcolor="#fff8c5" color="#a0802a"', ("nodes not drawn (see the note)", "未画出的节点（见说明）")),
    # ExportedProgram inputs
    "parameter": ('fillcolor="#f3ecfa" color="#7a55a8"', ("input: a parameter", "输入：参数")),
    "buffer": ('fillcolor="#fdeaf3" color="#a8557a"', ("input: a buffer", "输入：缓冲区")),
    "constant": ('fillcolor="#eeeeee" color="#777777"', ("input: a constant tensor", "输入：常量张量")),
    "user input": ('fillcolor="#e8f1fb" color="#4a78b0"', ("input: a user input", "输入：用户输入")),
    "other input": ('fillcolor="#e8f1fb" color="#4a78b0" style="rounded,filled,dashed"',
                    ("input: another kind (token, custom object)", "输入：其他类型（令牌、自定义对象）")),
    # TorchScript
    "ts-param": ('fillcolor="#e8f1fb" color="#4a78b0"', ("graph input (prim::Param)", "图的输入（prim::Param）")),
    "ts-node": ('fillcolor="#ffffff" color="#555555"', ("an aten:: or prim:: node", "aten:: 或 prim:: 节点")),
    "ts-constant": ('shape=plain style="" fontcolor="#666666" fontsize=9', ("prim::Constant (grey text)", "prim::Constant（灰色文字）")),
    "ts-control": ('fillcolor="#fff3cd" color="#a0802a" penwidth=2', ("prim::If / prim::Loop; blocks boxed", "prim::If / prim::Loop；块用方框围起")),
    "ts-return": ('fillcolor="#fbe9e7" color="#b0493a"', ("return (graph or block output)", "返回（图或块的输出）")),
    # capture
    "break": ('shape=octagon fillcolor="#ffe0e0" color="#c0392b" penwidth=2 style="filled"',
              ("graph break: reason and your source line", "图中断：原因和你的源代码行")),
    # graph_diff
    "added": ('fillcolor="#d8f5dd" color="#1a7f37" penwidth=2', ("added node / edge (green)", "新增的节点 / 边（绿色）")),
    "removed": ('fillcolor="#ffebe9" color="#cf222e" style="rounded,filled,dashed" fontcolor="#8a1c24"',
                ("removed node / edge (red, dashed)", "删除的节点 / 边（红色虚线）")),
    "changed": ('fillcolor="#fff8c5" color="#9a6700" penwidth=2', ("changed node: retargeted, renamed", "改动的节点：换了目标或改了名")),
    "rewired": ('fillcolor="#ffffff" color="#bc4c00" penwidth=2', ("rewired: new inputs (orange edges)", "重新连线：新的输入（橙色的边）")),
    "same": ('fillcolor="#ffffff" color="#999999" fontcolor="#555555"', ("unchanged", "未改变")),
}
# the swatch's word for a kind that is not an identifier (an opcode, a TorchScript kind), in 中文
_SWATCH_ZH = {"parameter": "参数", "buffer": "缓冲区", "constant": "常量", "user input": "用户输入",
              "other input": "其他输入", "module": "模块", "outside": "范围外", "more": "更多",
              "break": "图中断", "added": "新增", "removed": "删除", "changed": "改动",
              "rewired": "重新连线", "same": "未变"}
_SWATCH = {"call_function": "#ffffff", "ts-node": "#ffffff", "same": "#ffffff", "rewired": "#ffffff",
           "ts-constant": "#ffffff", "break": "#ffe0e0"}


def quote(text: str) -> str:
    """``text`` as a quoted dot string; ``\\n`` in ``text`` becomes a line break.

    >>> quote('<built-in function add> "x" \\\\ y')
    '"<built-in function add> \\\\"x\\\\" \\\\\\\\ y"'
    """
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "")
    return '"' + text.replace("\n", "\\n") + '"'


def cut(text: str, width: int = LABEL_WIDTH) -> str:
    """One label line, at most ``width`` characters (``…`` marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class Dot:
    """A dot document under construction: ``node``, ``edge``, ``cluster``/``end``, ``finish``."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.note = ""
        self.node_count = 0
        self.edge_count = 0
        self._lines: list[str] = []
        self._edges: list[str] = []
        self._kinds: dict[str, None] = {}  # legend entries in first-use order
        self._depth = 1
        self._clusters = 0
        self._done: str | None = None

    def use(self, kind: str) -> str:
        """The attributes of ``kind``, recording it for the legend."""
        self._kinds.setdefault(kind, None)
        return STYLES[kind][0]

    def node(self, node_id: str, label: str, kind: str, extra: str = "") -> None:
        attrs = self.use(kind)
        self._lines.append(f"{'  ' * self._depth}{quote(node_id)} [label={quote(label)} {attrs}{extra}]")
        self.node_count += 1

    def edge(self, tail: str, head: str, attrs: str = "") -> None:
        # Edges are written at the top level: an edge inside a cluster would pull both of
        # its ends into that cluster.
        tail_head = f"{quote(tail)} -> {quote(head)}"
        self._edges.append(f"  {tail_head}{f' [{attrs}]' if attrs else ''}")
        self.edge_count += 1

    def edge_kind(self, kind: str) -> None:
        """Record an edge style (``added``, ``removed``) for the legend."""
        self._kinds.setdefault(kind, None)

    def cluster(self, label: str, attrs: str = 'style="rounded" color="#888888"') -> None:
        pad = "  " * self._depth
        self._lines.append(f"{pad}subgraph cluster_{self._clusters} {{")
        self._lines.append(f"{pad}  label={quote(label)} labeljust=l {attrs}")
        self._clusters += 1
        self._depth += 1

    def end(self) -> None:
        self._depth -= 1
        self._lines.append(f"{'  ' * self._depth}}}")

    def raw(self, line: str) -> None:
        self._lines.append(f"{'  ' * self._depth}{line}")

    def finish(self) -> "Dot":
        """Add the title, the note and the legend (one HTML-like graph label above the
        picture, so the legend never stretches the layout); the source is fixed from here on."""
        if self._done is None:
            label = self._graph_label()
            head = [
                "digraph G {",
                f'  graph [rankdir=TB fontname="{FONT}" fontsize=11 nodesep=0.25 ranksep=0.3'
                f' labelloc=t labeljust=l charset="UTF-8"' + (f" label=<{label}>" if label else "") + "]",
                f'  node [shape=box style="rounded,filled" fontname="{FONT}" fontsize=10'
                ' margin="0.08,0.03" height=0.3]',
                f'  edge [color="#666666" arrowsize=0.6 fontname="{FONT}" fontsize=9]',
            ]
            self._done = "\n".join([*head, *self._lines, *self._edges, "}"]) + "\n"
        return self

    def source(self) -> str:
        return self.finish()._done or ""

    def _graph_label(self) -> str:
        rows = []
        if self.title:
            rows.append(f'<tr><td align="left"><b>{_html(self.title)}</b></td></tr>')
        for line in self.note.splitlines():
            rows.append(f'<tr><td align="left"><font point-size="10">{_html(line)}</font></td></tr>')
        if self._kinds:
            legend = "".join(_legend_row(kind) for kind in self._kinds)
            title = only("legend", "图例")
            rows.append('<tr><td align="left"><table border="0" cellborder="1" cellspacing="0" '
                        f'cellpadding="2"><tr><td colspan="2"><font point-size="9"><b>{title}</b></font></td></tr>'
                        f"{legend}</table></td></tr>")
        if not rows:
            return ""
        return f'<table border="0" cellborder="0" cellspacing="0" cellpadding="1">{"".join(rows)}</table>'


def _html(text: str) -> str:
    return html.escape(text, quote=True)


def _legend_row(kind: str) -> str:
    attrs, (en, zh) = STYLES[kind]
    text = only(en, zh)
    fill = _SWATCH.get(kind) or attrs.split('fillcolor="', 1)[-1].split('"', 1)[0]
    if not fill.startswith("#"):
        fill = "#ffffff"
    word = only(kind, _SWATCH_ZH.get(kind, kind))
    return (f'<tr><td bgcolor="{fill}"><font point-size="9">{_html(word)}</font></td>'
            f'<td align="left"><font point-size="9">{_html(text)}</font></td></tr>')


def lines(parts: Iterable[str], width: int = LABEL_WIDTH) -> str:
    """Non-empty label lines joined with newlines, each cut to ``width`` characters."""
    return "\n".join(cut(p, width) for p in parts if p)
