"""Rows for a TorchScript graph (``torch._C.Graph``): one per node, nested blocks indented.

A graph starts with its ``prim::Param`` node (the graph inputs) and ends with its
``prim::Return`` node, exactly as the IR holds them. The blocks of ``prim::If`` and
``prim::Loop`` follow their node as a ``blockN`` header row (the block's inputs), the
block's nodes one level deeper, and the block's own ``prim::Return``.
"""
from __future__ import annotations

import os
import re
from typing import Any, Callable, Iterable

import torch

__all__ = ["TS_COLUMNS", "TS_DEFAULT", "torchscript_rows"]

TS_DEFAULT = ("kind", "outputs", "inputs", "attributes")
TS_COLUMNS = (*TS_DEFAULT, "types", "source")

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_RANGE = re.compile(r'File "([^"]+)", line (\d+)')
_MARK = re.compile(r"^\s*~+\s*(<--- HERE)?\s*$")
# attribute kind -> the Node method that reads it (``is`` is a Python keyword)
_READERS = {"is": "is_"}

Row = tuple[list[str], str, int]  # cells, CSS class, depth


def torchscript_rows(graph: Any, columns: Iterable[str]) -> list[Row]:
    """Every row of ``graph`` (a ``torch._C.Graph``) with the requested columns."""
    cells = [_CELLS[c] for c in columns]
    rows: list[Row] = []
    _block(graph.param_node(), graph.nodes(), graph.return_node(), 0, cells, rows)
    return rows


def _block(param: Any, nodes: Iterable[Any], ret: Any, depth: int,
           cells: list[Callable[[Any], str]], rows: list[Row]) -> None:
    rows.append(([f(param) for f in cells], "ts-param", depth))
    for node in nodes:
        kind = node.kind()
        rows.append(([f(node) for f in cells], _css(kind), depth))
        for i, block in enumerate(node.blocks()):
            header = [_header(c, i, block) for c in cells]
            rows.append((header, "ts-block", depth + 1))
            _nested(block, depth + 2, cells, rows)
    rows.append(([f(ret) for f in cells], "ts-return", depth))


def _nested(block: Any, depth: int, cells: list[Callable[[Any], str]], rows: list[Row]) -> None:
    before = len(rows)
    _block(block.paramNode(), block.nodes(), block.returnNode(), depth, cells, rows)
    del rows[before]  # the block's inputs are already on its header row


def _header(cell: Callable[[Any], str], index: int, block: Any) -> str:
    """A block's header row: its name, and its inputs where a node shows its outputs."""
    if cell is _kind:
        return f"block{index}"
    if cell is _outputs:
        return _values(block.inputs())
    if cell is _types:
        return ", ".join([str(v.type()) for v in block.inputs()])
    return ""


def _css(kind: str) -> str:
    if kind in ("prim::If", "prim::Loop"):
        return "ts-control"
    return "ts-" + kind.split("::", 1)[0]


def _values(values: Iterable[Any]) -> str:
    return ", ".join(["%" + v.debugName() for v in values])


def _kind(node: Any) -> str:
    return node.kind()


def _outputs(node: Any) -> str:
    return _values(node.outputs())


def _inputs(node: Any) -> str:
    return _values(node.inputs())


def _types(node: Any) -> str:
    return ", ".join([_ADDRESS.sub("", str(v.type())) for v in node.outputs()])


def _attributes(node: Any) -> str:
    names = node.attributeNames()
    return ", ".join([f"{name}={attribute_text(node, name)}" for name in sorted(names)])


def attribute_text(node: Any, name: str) -> str:
    """One attribute's value; a TorchScript-internal failure shows as ``<kind>``."""
    kind = node.kindOf(name)
    try:
        value = getattr(node, _READERS.get(kind, kind))(name)
    except Exception:  # an attribute kind this torch release reads differently
        return f"<{kind}>"
    if kind == "s":
        return f'"{value}"'
    if isinstance(value, torch.Tensor):
        if value.dim() == 0:
            return f"tensor({value.item()!r})"
        dims = ", ".join(str(d) for d in value.shape)
        return f"tensor({str(value.dtype).removeprefix('torch.')}[{dims}])"
    if isinstance(value, torch._C.Graph):
        return "<graph>"
    return _ADDRESS.sub("", repr(value)).replace("\n", " ")


def _source(node: Any) -> str:
    """``file.py:LINE code`` from the node's source range, basename only."""
    try:
        text = node.sourceRange()
    except Exception:  # nodes without a source range
        return ""
    match = _RANGE.search(text or "")
    if not match:
        return ""
    lines = text.splitlines()
    code = ""
    for i in range(1, len(lines)):  # the first highlighted line sits above its ``~~~`` mark
        if _MARK.match(lines[i]):
            code = lines[i - 1].strip()
            break
    where = f"{os.path.basename(match.group(1))}:{match.group(2)}"
    return f"{where} {code}" if code else where


_CELLS: dict[str, Callable[[Any], str]] = {
    "kind": _kind, "outputs": _outputs, "inputs": _inputs, "attributes": _attributes,
    "types": _types, "source": _source,
}
