"""Conv + BN fusion on torchvision resnet18: eager vs torch's fuse vs lab 04's pass.

The pass measured is the one in solutions/lab04_fx_passes.ipynb (its ``fuse_conv_bn`` cell
is executed here), so the numbers are those of the lab's reference answer. resnet18 gets
random weights and trained-looking BatchNorm statistics; outputs are checked against eager
first. The versions run in interleaved rounds, in a new shuffled order each round (seeded), so no
version is always timed right after the same neighbour; one thread (torch.utils.benchmark.Timer's
default), and each prints its best round. The target: the lab's pass within 5% of ``fuse``.

    python benchmarks/fx_fusion.py                 # 1x3x224x224, 15 rounds
    python benchmarks/fx_fusion.py --size 112 --rounds 5
"""
from __future__ import annotations

import argparse
import copy
import logging
import random
from pathlib import Path
from typing import Any, Callable

import nbformat
import torch
from torch import fx, nn
from torch.fx.experimental.optimization import fuse

from fxcourse import graph_diff, zoo

SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "lab04_fx_passes.ipynb"


def lab_pass() -> Callable[[fx.GraphModule], fx.GraphModule]:
    """``fuse_conv_bn`` as defined in the lab's solution notebook."""
    nb = nbformat.read(SOLUTION, as_version=4)
    source = next(c.source for c in nb.cells
                  if c.cell_type == "code" and c.source.startswith("def fuse_conv_bn("))
    namespace: dict[str, Any] = {"copy": copy, "torch": torch, "fx": fx, "nn": nn}
    exec(compile(source, f"{SOLUTION.name}: fuse_conv_bn", "exec"), namespace)
    return namespace["fuse_conv_bn"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="image height and width")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds; best one is kept")
    parser.add_argument("--number", type=int, default=2, help="calls per measurement")
    args = parser.parse_args()

    logging.disable(logging.WARNING)  # the benchmark module logs a CUDA note on CPU-only machines
    from torch.utils import benchmark
    logging.disable(logging.NOTSET)

    model, _ = zoo.example("resnet18")
    zoo.pretend_trained(model)
    img = torch.randn(1, 3, args.size, args.size)
    versions = {"eager": model, "torch fuse": fuse(model),
                "lab04 fuse_conv_bn": lab_pass()(fx.symbolic_trace(model))}
    with torch.no_grad():
        want = model(img)
        for name, m in versions.items():
            torch.testing.assert_close(m(img), want, rtol=1e-4, atol=1e-4, msg=name)
    print("graphs: lab04 vs torch fuse:", graph_diff(versions["torch fuse"], versions["lab04 fuse_conv_bn"]).summary)

    timers = {name: benchmark.Timer("m(img)", globals={"m": m, "img": img}) for name, m in versions.items()}
    best = {name: float("inf") for name in versions}
    order = list(timers)
    with torch.no_grad():
        for round_ in range(args.rounds):
            random.Random(round_).shuffle(order)  # no version always follows the same one
            for name in order:
                best[name] = min(best[name], timers[name].timeit(args.number).mean)
    print(f"resnet18, 1x3x{args.size}x{args.size}, {torch.get_num_threads()} thread(s) available, "
          f"Timer on 1 thread, best of {args.rounds} rounds x {args.number} calls, shuffled order per round")
    print(f"{'version':20} {'ms':>7} {'vs eager':>9} {'vs fuse':>8}")
    for name, seconds in best.items():
        print(f"{name:20} {seconds * 1e3:7.2f} {best['eager'] / seconds:8.3f}x "
              f"{seconds / best['torch fuse']:8.3f}")
    ratio = best["lab04 fuse_conv_bn"] / best["torch fuse"]
    print(f"lab04 / torch fuse = {ratio:.3f} ({'within' if ratio <= 1.05 else 'NOT within'} 5%)")


if __name__ == "__main__":
    main()
