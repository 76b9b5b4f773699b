"""A memory-bound pointwise chain: eager vs Inductor vs a plain copy of the same bytes.

The chain reads ``x`` once and writes ``out`` once (five elementwise ops in between), so the
least memory traffic it can have is that of ``out.copy_(x)``: the copy is the limit on this
machine. Eager runs each op as its own pass over memory; Inductor fuses the five into one
loop. Each version writes into a preallocated ``out`` (allocating a fresh large tensor costs
more than the arithmetic). GB/s counts the bytes the result needs (read x + write out), the
same for all three. The versions run in interleaved rounds; each prints its best round.

The order within a round changes from one round to the next: the rounds go through all six
orders of the three versions in turn, so over each six rounds every version runs, within a
round, right after every other one equally often (twice). A fixed order is unfair: whatever runs right after
eager pays for the operating system reclaiming the large temporaries eager has just freed,
and with a fixed order that is always the same version (merely rotating the order does not
help: it keeps eager's successor). ``--order fixed`` keeps the old fixed order, to see the
difference. The last line is ``compiled/copy: R``. Taught in
course/09_aot_inductor.ipynb, section 8.

    python benchmarks/inductor_bandwidth.py                   # 2**24 floats, 12 rounds
    python benchmarks/inductor_bandwidth.py --numel 4194304 --rounds 6
    python benchmarks/inductor_bandwidth.py --order fixed      # the unfair fixed order
"""
from __future__ import annotations

import argparse
import itertools
import time
from typing import Callable

import torch


def chain(x: torch.Tensor, out: torch.Tensor) -> None:
    """Five elementwise ops (mul, add, relu, mul, sub), written into ``out``."""
    out.copy_(torch.relu(x * 1.5 + 0.5) * 2.0 - 1.0)


def copy(x: torch.Tensor, out: torch.Tensor) -> None:
    out.copy_(x)


def best_seconds(
    fns: dict[str, Callable[[], None]], rounds: int, calls: int, permute: bool = True
) -> dict[str, float]:
    """Best time per call of each function over ``rounds`` interleaved rounds.

    With ``permute`` round ``r`` uses the ``r``-th of all orders of the functions (cycling),
    so that over a multiple of ``len(fns)!`` rounds each function runs right after each other
    one equally often. Without it every round uses the order of ``fns``.
    """
    orders = list(itertools.permutations(fns)) if permute else [tuple(fns)]
    best = {name: float("inf") for name in fns}
    for r in range(rounds):
        for name in orders[r % len(orders)]:
            fn = fns[name]
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=2**24, help="elements of x (float32)")
    parser.add_argument("--rounds", type=int, default=12, help="best a multiple of 6")
    parser.add_argument(
        "--order", choices=["permute", "fixed"], default="permute",
        help="go through all orders, one per round (fair), or keep eager, compiled, copy (unfair)",
    )
    parser.add_argument("--calls", type=int, default=3, help="calls per round")
    args = parser.parse_args()

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(args.numel, generator=gen)
    out = torch.empty_like(x)
    compiled = torch.compile(chain, fullgraph=True)
    compiled(x, out)  # compile once, outside the timing
    expected = torch.empty_like(x)
    chain(x, expected)
    torch.testing.assert_close(out, expected)

    fns = {"eager": lambda: chain(x, out), "compiled": lambda: compiled(x, out), "copy": lambda: copy(x, out)}
    permute = args.order == "permute"
    best_seconds(fns, 6, args.calls, permute)  # warm up caches and thread pools
    best = best_seconds(fns, args.rounds, args.calls, permute)
    moved = 2 * x.numel() * x.element_size()  # read x, write out
    print(f"{args.numel} float32 elements, {moved / 1e6:.0f} MB moved per call, {torch.get_num_threads()} threads, order: {args.order}")
    for name, seconds in best.items():
        print(f"{name:>8}: {seconds * 1e3:7.2f} ms  {moved / seconds / 1e9:6.1f} GB/s")
    print(f"compiled/copy: {best['copy'] / best['compiled']:.2f}")


if __name__ == "__main__":
    main()
