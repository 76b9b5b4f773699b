"""Steady-state latency of several ways to run one model, timed fairly side by side.

Whatever runs right after a memory-hungry run pays for the operating system reclaiming
that run's freed memory, so a fixed order (eager, then compiled, then ...) favours or
penalises whoever comes second; merely rotating the order does not help, since each runner
keeps the same predecessor. :func:`fair_latency` times every runner once per round and
takes the rounds' orders from a balanced (Williams) design: over one full design every
runner comes right after every other runner equally often within a round (once for an even
number of runners, in n rounds; twice for an odd number, in 2n rounds). The result per
runner is the median and interquartile range over the rounds, each round being
``torch.utils.benchmark``'s mean over a block of calls, with the thread count fixed.

>>> import torch
>>> x = torch.randn(64, 64)
>>> result = fair_latency({"add": lambda: x + x, "mm": lambda: x @ x}, min_run_time=0.001)
>>> sorted(result), result["add"].rounds, result["add"].threads
(['add', 'mm'], 2, 1)
>>> balanced_orders(4)
[[0, 1, 3, 2], [1, 2, 0, 3], [2, 3, 1, 0], [3, 0, 2, 1]]
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable

import torch

__all__ = ["Latency", "balanced_orders", "fair_latency"]


@dataclass(frozen=True)
class Latency:
    """One runner's steady-state time per call, in seconds."""

    median: float
    iqr: float
    rounds: int
    number: int  # calls per round
    threads: int

    def ms(self) -> str:
        """``median ± iqr/2`` in milliseconds, for a table."""
        return f"{self.median * 1e3:.3g} ± {self.iqr * 5e2:.2g}"


def balanced_orders(n: int) -> list[list[int]]:
    """A Williams design for ``n`` runners: orders in which every runner comes immediately
    after every other one equally often (n orders if n is even; 2n, each order and its
    reverse, if n is odd)."""
    if n <= 1:
        return [list(range(n))]
    first, low, high = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        low += 1
        if len(first) < n:
            first.append(high)
            high -= 1
    rows = [[(k + r) % n for k in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def fair_latency(runners: dict[str, Callable[[], Any]], rounds: int | None = None, threads: int = 1,
                    min_run_time: float = 0.05) -> dict[str, Latency]:
    """Time each zero-argument ``runners[name]`` in ``rounds`` rounds (default: one full
    balanced design, :func:`balanced_orders`), the order changing every round.

    Each runner is warmed up (two calls), then called ``number`` times per round, where
    ``number`` makes a block last about ``min_run_time`` seconds. Gradients are not recorded
    while timing.
    """
    from torch.utils.benchmark import Timer

    names = list(runners)
    timers = {name: Timer(stmt="run()", globals={"run": runners[name]}, num_threads=threads)
              for name in names}
    numbers: dict[str, int] = {}
    samples: dict[str, list[float]] = {name: [] for name in names}
    with torch.no_grad():
        for name in names:
            timers[name].timeit(2)  # warm-up: first-call work (allocations, lazy loads) is not timed
            once = max(timers[name].timeit(1).median, 1e-7)
            numbers[name] = max(1, math.ceil(min_run_time / once))
        orders = balanced_orders(len(names))
        rounds = len(orders) if rounds is None else rounds
        for r in range(rounds):
            for k in orders[r % len(orders)]:
                samples[names[k]].append(timers[names[k]].timeit(numbers[names[k]]).median)
    return {name: Latency(statistics.median(samples[name]), _iqr(samples[name]), rounds,
                          numbers[name], threads) for name in names}


def _iqr(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1
