"""``draw``: a graph as a picture, rendered by Graphviz's ``dot``.

``draw`` accepts what ``graph_table`` accepts (an fx GraphModule or Graph, a TorchScript
module, function or graph, an ExportedProgram, a captured graph) and also a ``capture``
result (each graph a cluster, the graph breaks between them) and a ``graph_diff`` (added,
removed and rewired parts marked). It returns a :class:`Drawing`: ``to_text()`` is the dot
source, ``to_svg()`` the picture, and JupyterLab and the HTML book show it as SVG.

The SVG is the same bytes from run to run: the comments and ids ``dot`` writes are removed,
and node names, not addresses, name the nodes.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from ._dot import Dot
from .._lang import only
from ..errors import FxCourseError, need_flag

__all__ = ["Drawing", "dot_missing_message", "draw"]

MAX_NODES = 300  # larger graphs collapse by module
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)
_PROLOG = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*", re.S)
_ID = re.compile(r' id="[^"]*"')
_INSTALL = ("install Graphviz: Debian/Ubuntu `sudo apt-get install graphviz`, conda "
            "`conda install -c conda-forge graphviz`, macOS `brew install graphviz` "
            "(or run scripts/setup.sh again)")
_INSTALL_ZH = ("请安装 Graphviz：Debian/Ubuntu 用 `sudo apt-get install graphviz`，conda 用 "
               "`conda install -c conda-forge graphviz`，macOS 用 `brew install graphviz`"
               "（或重新运行 scripts/setup.sh）")


def dot_missing_message() -> tuple[str, str]:
    """How to install ``dot``, in English and 中文 (``draw`` and ``fxcourse doctor`` say it)."""
    return _INSTALL, _INSTALL_ZH


class Drawing:
    """A rendered graph: ``to_svg()``, ``to_html()``, ``to_text()`` (the dot source).

    ``.nodes`` and ``.edges`` count what the picture shows; ``.note`` says what was
    collapsed or left out and how to see it (empty when the picture shows everything).

    Introduced in course/00_overview.ipynb.

    >>> import torch
    >>> d = draw(torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    >>> d
    <Drawing of fx.GraphModule: 4 nodes, 3 edges>
    >>> d.to_svg().startswith("<svg")
    True
    """

    def __init__(self, dot: Dot, source: str) -> None:
        self._dot = dot
        self.source = source
        self.nodes = dot.node_count
        self.edges = dot.edge_count
        self.note = dot.note
        self._svg: str | None = None

    def to_text(self) -> str:
        """The dot source: paste it into any Graphviz tool, or diff it."""
        return self._dot.source()

    def to_svg(self) -> str:
        """The picture as an ``<svg>`` element (no XML prolog, comments or ids)."""
        if self._svg is None:
            self._svg = _clean(_render(self.to_text()))
        return self._svg

    def to_html(self) -> str:
        """The SVG in a ``<div class="fxcourse-drawing">``, for a web page."""
        return f'<div class="fxcourse-drawing">{self.to_svg()}</div>'

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        note = f"; {self.note.splitlines()[0]}" if self.note else ""
        return only(f"<Drawing of {self.source}: {self.nodes} nodes, {self.edges} edges{note}>",
                    f"<Drawing：{self.source}，{self.nodes} 个节点，{self.edges} 条边{note}>")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def draw(obj: Any, *, max_nodes: int | None = MAX_NODES, focus: str | None = None,
         shapes: bool = True) -> Drawing:
    """Draw a graph, a ``capture`` result or a ``graph_diff``.

    Node labels follow ``graph_table``'s columns: the node's name, opcode and target, and
    its shape and dtype when the graph records them (``shapes=False`` leaves those out).
    Colours follow the table's opcode colours; each picture has one legend. An
    ExportedProgram colours each input by kind (parameter, buffer, constant, user input);
    a TorchScript graph draws the blocks of ``prim::If``/``prim::Loop`` as nested boxes.

    A graph of ``max_nodes`` (default 300) nodes or more collapses each module into one box
    (``focus="layer1"`` draws that module's nodes instead; ``max_nodes=None`` draws every
    node). Raises FxCourseError, saying how to install it, when Graphviz's ``dot`` is missing.

    Introduced in course/00_overview.ipynb.

    >>> import torch
    >>> d = draw(torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1))
    >>> print(d.to_text().splitlines()[0])
    digraph G {
    """
    if max_nodes is not None and (not isinstance(max_nodes, int) or isinstance(max_nodes, bool)
                                  or max_nodes < 2):
        raise FxCourseError(got=f"max_nodes={max_nodes!r}", where="draw",
                            accepted="a whole number of 2 or more, or None for every node",
                            fix=f"pass max_nodes={MAX_NODES} (the default) or max_nodes=None",
                            zh=f"draw：max_nodes={max_nodes!r} 不可用；max_nodes 应为不小于 2 的整数，或 None（画出全部节点）；"
                               f"请传 max_nodes={MAX_NODES}（默认值）或 max_nodes=None。")
    if focus is not None and not isinstance(focus, str):
        raise FxCourseError(got=f"focus={focus!r}", where="draw",
                            accepted="a module path such as 'layer1' or 'layer1.0', or None",
                            fix="pass the dotted path of one submodule, as named in the collapsed picture",
                            zh=f"draw：focus={focus!r} 不可用；focus 应为子模块的路径（如 'layer1'），或 None。")
    need_flag(shapes, "shapes", "draw", "pass shapes=False to leave shapes and dtypes out of the labels, else leave it out",
              "传 shapes=False 可在标签中省略形状和 dtype，否则不传")
    _require_dot()
    dot, source = _build(obj, max_nodes, focus, shapes)
    return Drawing(dot, source)


def _build(obj: Any, max_nodes: int | None, focus: str | None, shapes: bool) -> tuple[Dot, str]:
    from ._marks import capture_dot, diff_dot, is_capture, is_diff

    if is_capture(obj):
        return capture_dot(obj, max_nodes, shapes), only(f"capture of {_name(obj.fn)}", f"capture {_name(obj.fn)}")
    if is_diff(obj):
        return diff_dot(obj, shapes), "graph_diff"
    from ..viewers._graph_source import resolve

    resolved = resolve(obj, "draw")
    if resolved.fx_graph is not None and not len(resolved.fx_graph.nodes):
        raise FxCourseError(got="an FX graph with no nodes", where="draw",
                            accepted="a graph with at least its inputs and its output",
                            fix="trace or build the graph first (torch.fx.symbolic_trace(model).graph)",
                            zh="draw：这张 FX 计算图一个节点也没有，无可绘制；请先追踪或构建计算图"
                               "（例如 torch.fx.symbolic_trace(model).graph）。")
    if resolved.fx_graph is not None:
        from ._fx import fx_dot

        dot = Dot()
        fx_dot(dot, resolved.fx_graph, max_nodes=max_nodes, focus=focus, shapes=shapes,
               input_kinds=resolved.input_kinds, owner=_owner(obj))
        return dot.finish(), resolved.label
    from ._torchscript import ts_dot

    return ts_dot(resolved.ts_graph, max_nodes), resolved.label


def _owner(obj: Any) -> Any:
    """The module whose submodules a graph's call_module nodes name (for their type)."""
    import torch

    if isinstance(obj, torch.fx.GraphModule):
        return obj
    gm = getattr(obj, "gm", None) or getattr(obj, "graph_module", None)
    return gm if isinstance(gm, torch.nn.Module) else None


def _name(fn: Any) -> str:
    import torch

    if isinstance(fn, torch.nn.Module):
        return type(fn).__name__
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _dot_path() -> str | None:
    return shutil.which("dot")


def _require_dot() -> None:
    if _dot_path() is None:
        raise FxCourseError(got="no Graphviz `dot` program on PATH", where="draw",
                            accepted="Graphviz installed, so that `dot -V` runs", fix=_INSTALL,
                            zh=f"draw：找不到 Graphviz 的 `dot` 程序。{_INSTALL_ZH}。")


def _render(source: str) -> str:
    """``dot -Tsvg`` on ``source``: through the graphviz package when it is installed."""
    data = source.encode("utf-8")
    try:
        import graphviz
    except ImportError:  # the package is optional: call dot directly
        graphviz = None
    try:
        if graphviz is not None:
            out = graphviz.pipe("dot", "svg", data, quiet=True)
        else:
            out = subprocess.run([_dot_path() or "dot", "-Tsvg"], input=data, capture_output=True,
                                 check=True).stdout
    except Exception as exc:  # ExecutableNotFound, CalledProcessError, OSError
        _require_dot()
        raise FxCourseError(got=f"dot failing: {str(exc).splitlines()[0][:200]}", where="draw",
                            accepted="a Graphviz installation that can write SVG",
                            fix=f"check `dot -V` and `echo 'digraph{{a}}' | dot -Tsvg`; {_INSTALL}",
                            zh=f"draw：dot 运行失败。{_INSTALL_ZH}。") from None
    return out.decode("utf-8")


def _clean(svg: str) -> str:
    """The ``<svg>`` element alone: prolog, doctype, comments and ids removed."""
    svg = _PROLOG.sub("", svg)
    svg = _COMMENT.sub("", svg)
    svg = _ID.sub("", svg)
    return svg.strip() + "\n"
