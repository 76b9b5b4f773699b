"""Execute notebooks in place, top to bottom, in a fresh kernel, deterministically.

Authors regenerate stored outputs with ``fxcourse nb run course/00_overview.ipynb``.
The kernel starts in the notebook's folder with ``PYTHONHASHSEED=0``; per-cell timing
metadata is not recorded, so re-running an unchanged notebook changes no bytes that matter.
"""
from __future__ import annotations

import os
import re
import time
from pathlib import Path

import nbformat

from .errors import FxCourseError

__all__ = ["execute", "run"]

DETERMINISTIC_ENV = {"PYTHONHASHSEED": "0", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}


def execute(nb: nbformat.NotebookNode, cwd: Path, *, name: str = "notebook", timeout: int = 600) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in a fresh kernel started in ``cwd``; return ``nb`` with outputs."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    old = {k: os.environ.get(k) for k in DETERMINISTIC_ENV}
    os.environ.update(DETERMINISTIC_ENV)
    try:
        client = NotebookClient(
            nb, timeout=timeout, kernel_name=kernel, record_timing=False,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.execute()
    except CellExecutionError as exc:
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()
        raise FxCourseError(
            got=f"an error while running {name}: {first[-1] if first else type(exc).__name__}",
            accepted="a notebook whose cells all run (deliberate failures tagged raises-exception)",
            fix="run the notebook in JupyterLab, fix the failing cell, or tag it raises-exception",
            where="nb run",
        ) from None
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def run(path: str | Path, *, timeout: int = 600) -> float:
    """Execute the notebook at ``path`` in place; return the seconds it took."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise FxCourseError(got=str(path), accepted="the path of an existing .ipynb file",
                            fix="check the path, e.g. fxcourse nb run course/00_overview.ipynb",
                            where="nb run")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    execute(nb, path.parent.resolve(), name=str(path), timeout=timeout)
    nbformat.write(nb, path)
    return time.perf_counter() - start
