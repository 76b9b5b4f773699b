"""How much does fxcourse.capture cost next to torch._dynamo.explain?

Runs both on the same models in one process, alternating (which one goes first swaps every
repeat), each starting from a Dynamo reset and a garbage collection, and prints the best of
a few repeats and the ratio capture / explain. The target is a ratio of at most 1.1.

    python benchmarks/capture.py            # zoo models, resnet18, resnet50
    python benchmarks/capture.py --quick    # zoo models only
"""
from __future__ import annotations

import argparse
import gc
import time
from typing import Any, Callable

import torch
import torch._dynamo

from fxcourse import zoo
from fxcourse import capture


def _fn_with_break(x: torch.Tensor) -> torch.Tensor:
    x = x + 1
    torch._dynamo.graph_break()
    return x * 2


def cases(quick: bool) -> list[tuple[str, Callable[..., Any], tuple[Any, ...]]]:
    out: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = []
    for name in ["mlp", "gate", "item_break", "wrapped_split", "conv_bn_relu"]:
        model, args = zoo.example(name)
        out.append((name, model, args))
    out.append(("graph_break", _fn_with_break, (torch.randn(4),)))
    if not quick:
        import torchvision

        for name in ["resnet18", "resnet50"]:
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)(weights=None).eval()
            out.append((name, model, (torch.randn(1, 3, 64, 64),)))
    return out


def best_of(repeats: int, run: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeats):
        torch._dynamo.reset()
        gc.collect()  # so that freeing the previous run's graphs is not charged to this one
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="zoo models only")
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    # warm up imports and Dynamo's one-off initialisation outside the timings
    warm_model, warm_args = zoo.example("mlp")
    torch._dynamo.explain(warm_model)(*warm_args)
    capture(warm_model, *warm_args)

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, best of {opts.repeats}")
    print(f"{'model':<14}{'explain s':>11}{'capture s':>11}{'ratio':>8}")
    worst = 0.0
    for name, fn, args in cases(opts.quick):
        explain_s = capture_s = float("inf")
        for repeat in range(opts.repeats):
            # interleave so that drift hits both equally, and swap which goes first every
            # repeat so that neither always pays for the other's leftovers
            explain_first = repeat % 2 == 0
            for which in ("explain", "capture") if explain_first else ("capture", "explain"):
                if which == "explain":
                    explain_s = min(explain_s, best_of(1, lambda: torch._dynamo.explain(fn)(*args)))
                else:
                    capture_s = min(capture_s, best_of(1, lambda: capture(fn, *args)))
        ratio = capture_s / explain_s
        worst = max(worst, ratio)
        print(f"{name:<14}{explain_s:>11.3f}{capture_s:>11.3f}{ratio:>8.2f}")
    print(f"worst ratio {worst:.2f} (target <= 1.10)")


if __name__ == "__main__":
    main()
