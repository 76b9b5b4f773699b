"""Labs are generated from solutions: ``solutions/labNN_x.ipynb`` → ``labs/labNN_x.ipynb``.

In a solution, each answer sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
inside a function or method body. The lab gets :data:`STUB` in its place, that cell's
outputs are cleared, and the whole lab is executed so its stored outputs show the
checker's "not yet implemented" feedback.

A generated lab records the hash of its cell sources in its metadata. Any later command
that would overwrite a lab whose sources no longer match that hash (the learner edited it)
first copies it to ``labs/.backups/`` and says where it went.
"""
from __future__ import annotations

import copy
import hashlib
import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

from .errors import FxCourseError

__all__ = ["STUB", "strip_solutions", "source_hash", "build", "out_of_date", "reset", "LabReport"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = 'raise NotImplementedError("replace this line with your code / 把这一行换成你的代码")'
_REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(\n|$)", re.M | re.S)


def strip_solutions(solution: nbformat.NotebookNode, name: str = "solution") -> nbformat.NotebookNode:
    """A copy of ``solution`` with every solution region replaced by :data:`STUB`.

    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    ...     "def f(x):\\n    ### BEGIN SOLUTION\\n    return x + 1\\n    ### END SOLUTION\\n")])
    >>> print(strip_solutions(nb).cells[0].source, end="")
    def f(x):
        raise NotImplementedError("replace this line with your code / 把这一行换成你的代码")
    """
    lab = copy.deepcopy(solution)
    for index, cell in enumerate(lab.cells):
        if cell.cell_type != "code" or BEGIN not in cell.source:
            if END in cell.source:
                raise _unbalanced(name, index)
            continue
        new = _REGION.sub(lambda m: f"{m.group(1)}{STUB}{m.group(2)}", cell.source)
        if BEGIN in new or END in new:
            raise _unbalanced(name, index)
        cell.source = new
        cell.outputs = []
        cell.execution_count = None
    lab.metadata.pop("fxcourse", None)
    return lab


def _unbalanced(name: str, index: int) -> FxCourseError:
    return FxCourseError(
        got=f"{name} cell {index} with an unmatched solution marker",
        accepted=f"each '{BEGIN}' followed by its own '{END}' in the same cell",
        fix="add the missing marker", where="labs build")


def source_hash(nb: nbformat.NotebookNode) -> str:
    """Hash of the cells' kinds and sources (not outputs): what a learner would edit."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\1")
    return digest.hexdigest()[:16]


@dataclass
class LabReport:
    name: str
    action: str  # "built", "up to date", "reset"
    backup: Path | None = None
    seconds: float = 0.0

    def __str__(self) -> str:
        text = f"{self.name}: {self.action}"
        if self.seconds:
            text += f" ({self.seconds:.1f} s)"
        if self.backup:
            text += f"; your edited copy was saved to {self.backup} / 你修改过的版本已备份到 {self.backup}"
        return text


def _lab_hashes(lab_path: Path) -> tuple[str | None, str | None]:
    """(hash recorded when the lab was generated, hash of its sources now); both None when
    there is no lab. The two differ when a learner edited the lab (or it has no record)."""
    if not lab_path.exists():
        return None, None
    nb = nbformat.read(lab_path, as_version=4)
    return nb.metadata.get("fxcourse", {}).get("source_hash"), source_hash(nb)


def _backup(lab_path: Path) -> Path:
    folder = lab_path.parent / ".backups"
    folder.mkdir(exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = folder / f"{lab_path.stem}.{stamp}.ipynb"
    n = 1
    while target.exists():
        n += 1
        target = folder / f"{lab_path.stem}.{stamp}-{n}.ipynb"
    shutil.copy2(lab_path, target)
    return target


def _install(lab: nbformat.NotebookNode, solution_path: Path, lab_path: Path, *,
             execute: bool) -> tuple[Path | None, float]:
    """Execute ``lab`` (already stripped), record its hash, and write it to ``lab_path``,
    first backing up a lab there that a learner edited. Returns (backup, seconds)."""
    from . import nbrun

    seconds = 0.0
    if execute:
        start = time.perf_counter()
        nbrun.execute(lab, lab_path.parent.resolve(), name=str(lab_path))
        seconds = time.perf_counter() - start
    lab.metadata["fxcourse"] = {"generated_from": f"solutions/{solution_path.name}",
                                "source_hash": source_hash(lab)}
    recorded, now = _lab_hashes(lab_path)
    backup = _backup(lab_path) if now is not None and recorded != now else None
    nbformat.write(lab, lab_path)
    return backup, seconds


def _stripped(solution_path: Path) -> nbformat.NotebookNode:
    return strip_solutions(nbformat.read(solution_path, as_version=4), name=str(solution_path))


def _solutions(root: Path, names: list[str] | None) -> list[Path]:
    folder = root / "solutions"
    found = sorted(folder.glob("lab*.ipynb"))
    if not names:
        return found
    chosen = []
    for name in names:
        stem = Path(name).stem
        match = [p for p in found if p.stem == stem or p.stem.startswith(stem + "_")]
        if not match:
            raise FxCourseError(got=repr(name), accepted=f"one of {', '.join(p.stem for p in found) or '(none)'}",
                                fix="name a lab that has a notebook in solutions/", where="labs")
        chosen.extend(match)
    return chosen


def out_of_date(root: str | Path = ".") -> list[str]:
    """Why ``labs/`` does not match what ``build`` would write (empty when in sync)."""
    root = Path(root)
    problems = []
    solutions = _solutions(root, None)
    for solution_path in solutions:
        lab_path = root / "labs" / solution_path.name
        if not lab_path.exists():
            problems.append(f"labs/{solution_path.name} is missing")
            continue
        recorded, now = _lab_hashes(lab_path)
        if now != source_hash(_stripped(solution_path)):
            problems.append(f"labs/{solution_path.name} differs from solutions/{solution_path.name}")
        elif recorded != now:
            problems.append(f"labs/{solution_path.name} has no build record (was it edited by hand?)")
    names = {p.name for p in solutions}
    for lab_path in sorted((root / "labs").glob("lab*.ipynb")):
        if lab_path.name not in names:
            problems.append(f"labs/{lab_path.name} has no solutions/{lab_path.name}")
    return problems


def build(root: str | Path = ".", names: list[str] | None = None, *, force: bool = False,
          execute: bool = True) -> list[LabReport]:
    """Write ``labs/`` from ``solutions/``, backing up any lab a learner edited."""
    root = Path(root)
    (root / "labs").mkdir(exist_ok=True)
    reports = []
    for solution_path in _solutions(root, names):
        lab_path = root / "labs" / solution_path.name
        lab = _stripped(solution_path)
        recorded, now = _lab_hashes(lab_path)
        if not force and recorded == now == source_hash(lab):
            reports.append(LabReport(lab_path.stem, "up to date"))
            continue
        backup, seconds = _install(lab, solution_path, lab_path, execute=execute)
        reports.append(LabReport(lab_path.stem, "built", backup, seconds))
    return reports


def reset(name: str, root: str | Path = ".") -> LabReport:
    """Restore a pristine ``labs/<name>``, first backing up the learner's edited copy."""
    root = Path(root)
    solution_path = _solutions(root, [name])[0]
    lab_path = root / "labs" / solution_path.name
    backup, seconds = _install(_stripped(solution_path), solution_path, lab_path, execute=True)
    return LabReport(lab_path.stem, "reset", backup, seconds)
