"""graph_table vs Graph.print_tabular, side by side in one run.

Graphs: torchvision resnet50 (symbolic_trace) and generated chains of 1,000 to 10,000
nodes, to show that the time grows linearly. Each time is the best of several repeats;
print_tabular's printing goes to a StringIO so the terminal is not what is measured.

    python benchmarks/graph_table.py
"""
from __future__ import annotations

import contextlib
import io
import operator
import timeit

import torch
from torch import fx

from fxcourse import graph_table

WIDTH = 160


def chain(n: int) -> fx.Graph:
    """A generated graph of ``n`` nodes: functions, methods, modules, attrs and kwargs."""
    g = fx.Graph()
    x = g.placeholder("x")
    last = x
    steps = [
        lambda v: g.call_function(torch.add, (v, x), {"alpha": 2}),
        lambda v: g.call_function(operator.mul, (v, 0.5)),
        lambda v: g.call_method("relu", (v,)),
        lambda v: g.call_module("block.linear", (v,)),
        lambda v: g.call_function(torch.cat, ([v, x],), {"dim": -1}),
        lambda v: g.get_attr("block.weight"),
    ]
    for i in range(n - 2):
        out = steps[i % len(steps)](last)
        if out.op != "get_attr":
            last = out
    g.output(last)
    return g


def best(fn, repeat: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def measure(name: str, graph: fx.Graph, repeat: int) -> list[str]:
    def tabular() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            graph.print_tabular()

    t_tab = best(tabular, repeat)
    t_text = best(lambda: graph_table(graph).to_text(width=WIDTH), repeat)
    t_html = best(lambda: graph_table(graph).to_html(), repeat)
    n = len(graph.nodes)
    return [name, f"{n:,}", f"{t_tab * 1e3:.1f}", f"{t_text * 1e3:.1f}", f"{t_html * 1e3:.1f}",
            f"{t_tab / t_text:.1f}x", f"{t_tab / t_html:.1f}x", f"{t_text / n * 1e6:.1f}"]


def main() -> None:
    import torchvision

    resnet = fx.symbolic_trace(torchvision.models.resnet50(weights=None)).graph
    rows = [measure("resnet50", resnet, repeat=20)]
    for n in (1_000, 2_500, 5_000, 10_000):
        rows.append(measure(f"chain {n:,}", chain(n), repeat=5 if n < 10_000 else 3))
    header = ["graph", "nodes", "print_tabular ms", "text ms", "html ms",
              "text speed-up", "html speed-up", "text µs/node"]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


if __name__ == "__main__":
    main()
