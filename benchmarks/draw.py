"""draw() vs torch.fx.passes.graph_drawer.FxGraphDrawer, side by side in one run.

Graphs: torchvision resnet152 (symbolic_trace, 517 nodes), resnet50 (177 nodes) and a
generated 500-node graph of small modules. For each: our full drawing (``max_nodes=None``,
every node), our default drawing (a graph of 300 nodes or more collapses by module), the
time ``dot`` alone takes on our source (the floor: the rest is ours), and FxGraphDrawer
(which needs pydot; without it that column says so). Every time is the best of a few
repeats of building the picture and rendering it to SVG.

    python benchmarks/draw.py
"""
from __future__ import annotations

import subprocess
import timeit
import warnings

import torch
import torchvision
from torch import fx, nn

from fxcourse import draw

REPEAT = 3


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        for _ in range(4):
            y = torch.relu(y) + x
        return y


def best(fn, repeat: int = REPEAT) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def fx_graph_drawer():
    try:
        import pydot  # noqa: F401
        from torch.fx.passes.graph_drawer import FxGraphDrawer
    except ImportError:
        return None
    return FxGraphDrawer


def measure(name: str, gm: fx.GraphModule) -> list[str]:
    source = draw(gm, max_nodes=None).to_text().encode()
    t_full = best(lambda: draw(gm, max_nodes=None).to_svg())
    t_default = best(lambda: draw(gm).to_svg())
    t_dot = best(lambda: subprocess.run(["dot", "-Tsvg"], input=source, capture_output=True, check=True))
    drawer = fx_graph_drawer()
    if drawer is None:
        theirs = "pydot missing"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_theirs = best(lambda: drawer(gm, name).get_dot_graph().create_svg())
        theirs = f"{t_theirs:.2f}"
    shown = draw(gm).nodes
    return [name, str(len(gm.graph.nodes)), f"{t_full:.2f}", f"{t_default:.2f} ({shown} boxes)",
            f"{t_dot:.2f}", theirs]


def main() -> None:
    torch.manual_seed(0)
    graphs = [
        ("resnet152", fx.symbolic_trace(torchvision.models.resnet152())),
        ("resnet50", fx.symbolic_trace(torchvision.models.resnet50())),
        ("56 blocks", fx.symbolic_trace(nn.Sequential(*[Block() for _ in range(56)]))),
    ]
    header = ["graph", "nodes", "draw, every node (s)", "draw, default (s)", "dot alone (s)",
              "FxGraphDrawer (s)"]
    rows = [measure(name, gm) for name, gm in graphs]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print(f"(best of {REPEAT}; {subprocess.run(['dot', '-V'], capture_output=True, text=True).stderr.strip()}; "
          f"torch {torch.__version__})")


if __name__ == "__main__":
    main()
