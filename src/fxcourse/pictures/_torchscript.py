"""A TorchScript graph as dot: nodes by kind, edges from values, blocks as nested boxes.

``prim::If`` and ``prim::Loop`` become a box holding their header node, one box per block
(``then``/``else``, ``body``) and a join node standing for the node's outputs, so the
picture reads cond → If → both blocks → result. A loop's body also has a dashed edge back
to its start (the loop-carried values). Constants are grey text, not boxes.
"""
from __future__ import annotations

from typing import Any

from ._dot import Dot, lines
from ..viewers._torchscript_rows import attribute_text

__all__ = ["ts_dot"]

_BLOCK_NAMES = {"prim::If": ("then", "else"), "prim::Loop": ("body",)}


class _Writer:
    def __init__(self, dot: Dot, max_nodes: int | None) -> None:
        self.dot = dot
        self.max_nodes = max_nodes
        self.producer: dict[int, str] = {}  # Value.unique() -> node id
        self.count = 0
        self.total = 0
        self.stopped = False

    def new_id(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def full(self) -> bool:
        if self.max_nodes is not None and self.dot.node_count >= self.max_nodes:
            self.stopped = True
        return self.stopped

    def inputs_to(self, node: Any, node_id: str) -> None:
        for value in node.inputs():
            source = self.producer.get(value.unique())
            if source is not None:
                self.dot.edge(source, node_id)

    def nodes(self, nodes: Any) -> None:
        for node in nodes:
            self.total += 1
            if self.full():
                continue
            kind = node.kind()
            if kind in _BLOCK_NAMES and list(node.blocks()):
                self.control(node, kind)
            elif kind == "prim::Constant":
                node_id = self.new_id()
                value = attribute_text(node, "value") if node.hasAttribute("value") else "None"
                self.dot.node(node_id, f"{_values(node.outputs())} = {value}", "ts-constant")
                self.defines(node, node_id)
            else:
                node_id = self.new_id()
                attrs = ", ".join(f"{a}={attribute_text(node, a)}" for a in sorted(node.attributeNames()))
                self.dot.node(node_id, lines([kind, _typed(node.outputs()), attrs]), "ts-node")
                self.inputs_to(node, node_id)
                self.defines(node, node_id)

    def defines(self, node: Any, node_id: str) -> None:
        for value in node.outputs():
            self.producer[value.unique()] = node_id

    def control(self, node: Any, kind: str) -> None:
        head = self.new_id()
        self.dot.cluster(kind, 'style="rounded,dashed" color="#a0802a"')
        self.dot.node(head, lines([kind, f"inputs: {_values(node.inputs())}"]), "ts-control")
        self.inputs_to(node, head)
        join = self.new_id()
        names = _BLOCK_NAMES[kind]
        returns = []
        for i, block in enumerate(node.blocks()):
            name = names[i] if i < len(names) else f"block{i}"
            self.dot.cluster(f"block{i} ({name})", 'style="rounded" color="#bbbbbb"')
            start = None
            if list(block.inputs()):  # a loop body's inputs: the iteration and carried values
                start = self.new_id()
                self.dot.node(start, lines([f"block{i}", _typed(block.inputs())]), "ts-param")
                for value in block.inputs():
                    self.producer[value.unique()] = start
            mark = self.count
            self.nodes(block.nodes())
            ret = self.new_id()
            first = start or f"t{mark + 1}"  # the block's first node (its return when empty)
            self.dot.edge(head, first, f'style="dashed" label="{name}"')
            self.dot.node(ret, lines(["return", _values(block.outputs()) or "nothing"]), "ts-return")
            self.inputs_to(block.returnNode(), ret)
            if kind == "prim::Loop":
                self.dot.edge(ret, first, 'style="dashed" constraint=false label="next iteration"')
            returns.append(ret)
            self.dot.end()
        outputs = _typed(node.outputs())
        self.dot.node(join, lines([f"{kind} result", outputs or "no outputs"]), "ts-control")
        for ret in returns:
            self.dot.edge(ret, join, 'style="dashed"')
        self.dot.end()
        self.defines(node, join)


def _values(values: Any) -> str:
    return ", ".join("%" + v.debugName() for v in values)


def _typed(values: Any) -> str:
    return ", ".join(f"%{v.debugName()} : {v.type()}" for v in values)


def ts_dot(graph: Any, max_nodes: int | None) -> Dot:
    """The dot picture of a ``torch._C.Graph``."""
    dot = Dot()
    writer = _Writer(dot, max_nodes)
    for value in graph.inputs():
        node_id = writer.new_id()
        dot.node(node_id, lines([f"%{value.debugName()}", f"graph input : {value.type()}"]), "ts-param")
        writer.producer[value.unique()] = node_id
    writer.nodes(graph.nodes())
    ret = writer.new_id()
    dot.node(ret, lines(["return", _values(graph.outputs())]), "ts-return")
    writer.inputs_to(graph.return_node(), ret)
    if writer.stopped:
        dot.note = (f"the first nodes only: {writer.total} nodes in all; draw(..., max_nodes=None) "
                    f"draws every node\n只画出前面的节点（共 {writer.total} 个）；max_nodes=None 画出全部")
    return dot.finish()
