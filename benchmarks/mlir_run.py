"""Lecture 10's lowered path against eager, in one run: export + torch-mlir lowering, IREE compile
and per-call time for the compiled module beside eager PyTorch, on zoo.MLP and resnet18.

    .venv/bin/python benchmarks/mlir_run.py [--threads N] [--repeat R]

Numbers depend on the machine and its load; every model is also checked against eager. Eager
and IREE calls are interleaved, in an order that alternates from one call pair to the next.
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
import torch
from torch.export import Dim

from fxcourse import lowering, zoo


def per_call_ms(fns: dict, arg, repeat: int) -> dict[str, float]:
    """Median ms per call of each function; the calls are interleaved and the order of the
    functions alternates from one repeat to the next, so that neither always runs first."""
    for fn in fns.values():
        fn(arg)  # warm up
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            fns[name](arg)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.set_num_threads(args.threads)
    import iree.compiler as ireec
    import iree.runtime as ireert

    mlp, (x_mlp,) = zoo.example("mlp")
    net = zoo.resnet18().eval()
    cases = [("zoo.MLP, batch 64 (dynamic batch)", mlp, torch.randn(64, 4), {"x": {0: Dim("batch")}}),
             ("resnet18, 1x3x64x64 (static)", net, torch.randn(1, 3, 64, 64), None)]
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeat} calls")
    print(f"{'model':38} {'lower s':>8} {'iree-compile s':>15} {'eager ms':>9} {'IREE ms':>8}")
    for label, model, x, dynamic in cases:
        start = time.perf_counter()
        low = lowering(model, x, dynamic_shapes=dynamic, stages=("linalg-on-tensors",))
        lower_s = time.perf_counter() - start
        start = time.perf_counter()
        vmfb = ireec.compile_str(low.stage("linalg-on-tensors").text, target_backends=["llvm-cpu"],
                                 extra_args=["--iree-llvmcpu-target-cpu=host"])
        compile_s = time.perf_counter() - start
        # local-sync runs on the calling thread; local-task uses IREE's own thread pool
        module = ireert.load_vm_flatbuffer(vmfb, driver="local-task" if args.threads > 1 else "local-sync")

        def run(t: torch.Tensor) -> np.ndarray:
            return np.asarray(module.main(t.numpy()).to_host())

        with torch.no_grad():
            want = model(x)
            torch.testing.assert_close(torch.from_numpy(run(x)), want, rtol=1e-4, atol=1e-4)
            ms = per_call_ms({"eager": model, "iree": run}, x, args.repeat)
        eager_ms, iree_ms = ms["eager"], ms["iree"]
        print(f"{label:38} {lower_s:8.2f} {compile_s:15.2f} {eager_ms:9.3f} {iree_ms:8.3f}")


if __name__ == "__main__":
    main()
