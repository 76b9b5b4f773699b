"""The capstone's matrix outside the notebook: every zoo model through every capture and
compile path, with compile time and steady-state latency, written as one Markdown table.

For each model, ``fxcourse.compare_capture(..., paths="all", latency=True)`` tries the six
capture systems and the three compiled paths (Inductor, export + AOTInductor, export +
IREE), checks each on an input it never saw, and times eager and every path that matched
eager in balanced orders (every path runs right after every other equally often; see
``fxcourse.viewers._latency``), with the thread count fixed. Everything runs under
``torch.no_grad()``, as inference does (and as the capstone lecture does), so each compile
time is that of the graph that is then timed. Speed-up is eager's median time over the path's. The numbers are this machine's: the header says which.

    python benchmarks/zoo.py                       # all five models, 1 thread
    python benchmarks/zoo.py --models mlp gate --threads 2 --out build/zoo.md
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

from fxcourse import compare_capture, zoo

MODELS = ("mlp", "gate", "char_gpt", "mobilenet", "resnet18")


def second_input(name: str, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...] | None:
    """An input the paths never saw: token ids drawn again for the GPT; other models get
    compare_capture's default (floating-point inputs sign-flipped)."""
    if name == "char_gpt":
        gen = torch.Generator().manual_seed(1)
        return (torch.randint(0, 65, args[0].shape, generator=gen),)
    return None


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    return (f"{platform.system()} {cpu}, {os.cpu_count()} logical CPUs, torch {torch.__version__}, "
            f"Python {platform.python_version()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=zoo.names())
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    opts = parser.parse_args(argv)
    lines = [f"# Capture and compile paths on the zoo ({machine()}; {opts.threads} thread(s))", "",
             "| model | path | works | graphs | breaks | matches eager | compile s | ms per call | "
             "speed-up | why (first line) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in opts.models:
        model, args = zoo.example(name)
        start = time.perf_counter()
        with torch.no_grad():  # inference: each path compiles the graph that is then timed
            table = compare_capture(model, *args, second_args=second_input(name, args), paths="all",
                                    latency=True, threads=opts.threads)
        print(f"{name}: {time.perf_counter() - start:.0f} s; eager {table.eager.ms()} ms",
              file=sys.stderr)
        for row in table.rows:
            ratio = table.speedup(row.method)
            cells = [name, row.method, "yes" if row.worked else "no", _n(row.graphs), _n(row.breaks),
                     _n(row.matches), f"{row.seconds:.1f}", row.latency.ms() if row.latency else "-",
                     f"{ratio:.2f}×" if ratio else "-", row.reason.splitlines()[0][:90].replace("|", "/")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append(f"| {name} | eager | yes | - | - | - | - | {table.eager.ms()} | 1.00× | |")
    text = "\n".join(lines) + "\n"
    print(text)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(text, encoding="utf-8")
    return 0


def _n(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


if __name__ == "__main__":
    raise SystemExit(main())
