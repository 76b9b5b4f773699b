"""Run time, CPU time and peak memory of every lecture and lab, for planning a workshop.

Each notebook is copied into a temporary folder (course/, labs/ and solutions/ side by side,
as in the repository) and executed there top to bottom in a fresh kernel, as
``fxcourse nb run`` does; the repository's notebooks are not touched. While a notebook runs,
the kernel and every process it starts (Inductor's compile workers, a C++ build) are sampled
every 0.2 s:

- wall: seconds from the first cell to the last, what a learner waits for;
- cpu: user + system seconds of the kernel and its children, which does not grow when other
  work shares the machine (compare it with wall to see how loaded the machine was);
- peak RSS: the largest sum of resident memory of the kernel and its children.

Per-cell timings are grouped by the notebook's ``## `` headings (English cells), with the
English words of each section, so the instructor guide can plan minutes per section.
The load average before and after is printed with the table: the numbers are only as good as
the machine was quiet.

    python benchmarks/workshop_timings.py                 # course/, solutions/, labs/
    python benchmarks/workshop_timings.py course/05_fx_limits.ipynb --sections
    python benchmarks/workshop_timings.py --json timings.json --guide
    python benchmarks/workshop_timings.py --load timings.json --guide   # tables again, no run

Set TORCHINDUCTOR_CACHE_DIR to a warm cache to measure what a learner with a prepared
machine waits for (the course's set-up warms none: the first compile of a room is cold).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import nbformat
import psutil

from fxcourse.tooling import nbrun

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("course", "solutions", "labs")


class Sampler(threading.Thread):
    """Peak resident memory and CPU seconds of a process and its descendants."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.every = every
        self.peak_rss = 0
        self.peak_kernel_rss = 0  # the kernel process alone
        self.cpu: dict[int, float] = {}  # last CPU seconds seen per pid (children that exit keep theirs)
        self.done = threading.Event()

    def sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        rss = 0
        for proc in procs:
            try:
                with proc.oneshot():
                    rss += proc.memory_info().rss
                    if proc.pid == self.root.pid:
                        self.peak_kernel_rss = max(self.peak_kernel_rss, proc.memory_info().rss)
                    t = proc.cpu_times()
                    self.cpu[proc.pid] = t.user + t.system
                    if proc.pid == self.root.pid:  # children the kernel already waited for
                        self.cpu[-1] = t.children_user + t.children_system
            except psutil.NoSuchProcess:
                continue
        self.peak_rss = max(self.peak_rss, rss)

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.every)

    def stop(self) -> None:
        self.sample()
        self.done.set()
        self.join()


def sections(nb: nbformat.NotebookNode) -> list[dict]:
    """Cells grouped under the English ``#``/``##`` headings: words read and seconds run."""
    out: list[dict] = []
    current = {"title": "(top)", "words": 0, "code_cells": 0, "run_s": 0.0}
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if cell.cell_type == "markdown":
            if "lang-zh" in tags:
                continue
            for line in cell.source.splitlines():
                if re.match(r"#{1,2} ", line):
                    if current["words"] or current["code_cells"] or out:
                        out.append(current)
                    current = {"title": line.lstrip("#").strip(), "words": 0, "code_cells": 0, "run_s": 0.0}
            current["words"] += len(re.findall(r"\S+", cell.source))
        elif cell.cell_type == "code":
            current["code_cells"] += 1
            timing = cell.metadata.get("execution", {})
            start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
            if start and end:
                current["run_s"] += (_when(end) - _when(start)).total_seconds()
    out.append(current)
    return out


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def measure(path: Path, work: Path) -> dict:
    """Execute the copy of ``path`` in ``work``; return its timings, memory and sections."""
    from nbclient import NotebookClient

    copy = work / path.relative_to(ROOT)
    nb = nbrun.read(copy)
    kernel = nbrun.check_kernel(nb, copy)
    os.environ.update(nbrun.DETERMINISTIC_ENV)
    client = NotebookClient(nb, km=nbrun._kernel_manager(kernel), timeout=900, kernel_name=kernel,
                            record_timing=True, resources={"metadata": {"path": str(copy.parent)}})
    try:
        with client.setup_kernel():
            sampler = Sampler(client.km.provisioner.process.pid)
            sampler.start()
            start = time.perf_counter()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)
            wall = time.perf_counter() - start
            sampler.stop()
    finally:  # the client does not own a kernel manager it was given: stop the kernel here
        if client.km is not None and client.km.has_kernel:
            client.km.shutdown_kernel(now=True)
    return {"notebook": str(path.relative_to(ROOT)), "wall_s": round(wall, 1),
            "cpu_s": round(sum(sampler.cpu.values()), 1), "peak_rss_mb": round(sampler.peak_rss / 2**20),
            "peak_kernel_mb": round(sampler.peak_kernel_rss / 2**20),
            "code_cells": sum(c.cell_type == "code" for c in nb.cells), "sections": sections(nb)}


def notebooks(args: list[str]) -> list[Path]:
    if not args:
        return [p for folder in FOLDERS for p in sorted((ROOT / folder).glob("*.ipynb"))]
    return [Path(a).resolve() for a in args]


# Planning rule of thumb (course/INSTRUCTORS.md explains it): an instructor talks through the
# English prose at about WORDS_PER_MINUTE, spends CELL_MINUTES on each code cell (run it, point at
# what to notice in the output), and the room waits for the CPU time the cells take; a lab adds
# EXERCISE_MINUTES per checked exercise for learners to solve it.
WORDS_PER_MINUTE = 110
CELL_MINUTES = 0.75
EXERCISE_MINUTES = 10


def plan_minutes(words: int, code_cells: int, run_s: float, exercises: int = 0) -> float:
    return words / WORDS_PER_MINUTE + CELL_MINUTES * code_cells + run_s / 60 + EXERCISE_MINUTES * exercises


def exercises_in(notebook: str) -> int:
    """Checked exercises of a lab: the sections called Exercise N."""
    nb = nbformat.read(ROOT / notebook, as_version=4)
    return sum(1 for c in nb.cells if c.cell_type == "markdown" and "lang-en" in c.metadata.get("tags", [])
               for line in c.source.splitlines() if re.match(r"## Exercise \d", line))


def lecture_minutes(r: dict) -> float:
    """A notebook's planned minutes: its words, code cells and measured CPU time (and, for a lab,
    its exercises)."""
    words = sum(s["words"] for s in r["sections"])
    ex = exercises_in(r["notebook"]) if not r["notebook"].startswith("course/") else 0
    return plan_minutes(words, r["code_cells"], r["cpu_s"], ex)


def section_minutes(r: dict) -> list[tuple[str, float]]:
    """(title, planned minutes) per section of a lecture. A section's share of the run is its share of
    the cells' wall-clock time, scaled to the notebook's CPU time, so the sections add up to the
    notebook's plan exactly."""
    total = sum(s["run_s"] for s in r["sections"])
    scale = r["cpu_s"] / total if total else 0.0
    return [(s["title"], plan_minutes(s["words"], s["code_cells"], s["run_s"] * scale)) for s in r["sections"]]


def print_guide(results: list[dict]) -> None:
    """Minutes per lecture and lab, and per section of each lecture, by the rule above."""
    print("\n| notebook | code cells | run (CPU) min | plan min |\n|---|---:|---:|---:|")
    for r in results:
        print(f"| {r['notebook']} | {r['code_cells']} | {r['cpu_s'] / 60:.1f} | {lecture_minutes(r):.0f} |")
    for r in results:
        if not r["notebook"].startswith("course/"):
            continue
        print(f"\n{r['notebook']}\n\n| section | min |\n|---|---:|")
        for title, minutes in section_minutes(r):
            print(f"| {title} | {minutes:.0f} |")
        print(f"| **total** | **{lecture_minutes(r):.0f}** |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="notebooks (default: every lecture, solution and lab)")
    parser.add_argument("--sections", action="store_true", help="also print seconds and words per section")
    parser.add_argument("--guide", action="store_true", help="also print planned minutes (INSTRUCTORS.md)")
    parser.add_argument("--json", help="also write every number to this file")
    parser.add_argument("--load", metavar="JSON", help="print the tables of an earlier --json run; run nothing")
    args = parser.parse_args()
    if args.load:
        saved = json.loads(Path(args.load).read_text())
        load_before, load_after, results = saved["load_before"], saved["load_after"], saved["results"]
    else:
        load_before, load_after, results = run_all(notebooks(args.paths))
    print(f"cores: {psutil.cpu_count()}, memory: {psutil.virtual_memory().total / 2**30:.0f} GiB, "
          f"load average (1/5/15 min) before: {' '.join(f'{x:.1f}' for x in load_before)}, "
          f"after: {' '.join(f'{x:.1f}' for x in load_after)}")
    print()
    print("| notebook | code cells | wall s | cpu s | peak RSS MiB (kernel + children) | kernel alone |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['notebook']} | {r['code_cells']} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mb']} | "
              f"{r.get('peak_kernel_mb', '-')} |")
    if args.sections:
        for r in results:
            print(f"\n{r['notebook']}\n\n| section | words (EN) | code cells | run s |\n|---|---:|---:|---:|")
            for s in r["sections"]:
                print(f"| {s['title']} | {s['words']} | {s['code_cells']} | {s['run_s']:.1f} |")
    if args.guide:
        print_guide(results)
    if args.json and not args.load:
        import torch

        Path(args.json).write_text(json.dumps({
            "torch": torch.__version__.split("+")[0], "cores": psutil.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30), "inductor_cache": "warm" if os.environ.get(
                "TORCHINDUCTOR_CACHE_DIR") else "default", "load_before": load_before, "load_after": load_after,
            "results": results}, indent=1, ensure_ascii=False) + "\n")


def run_all(paths: list[Path]) -> tuple[tuple, tuple, list[dict]]:
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="fxcourse-timings-") as tmp:
        work = Path(tmp)
        for folder in FOLDERS:
            shutil.copytree(ROOT / folder, work / folder, ignore=shutil.ignore_patterns("build", ".backups"))
        for path in paths:
            result = measure(path, work)
            results.append(result)
            print(f"{result['notebook']:<40} wall {result['wall_s']:6.1f} s  cpu {result['cpu_s']:6.1f} s  "
                  f"peak {result['peak_rss_mb']:5d} MiB  (load {os.getloadavg()[0]:.1f})", flush=True)
    print()
    return load_before, os.getloadavg(), results


if __name__ == "__main__":
    main()
