"""Labs are generated from solutions: ``solutions/labNN_x.ipynb`` → ``labs/labNN_x.ipynb``.

In a solution, each answer sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION``
inside a function or method body. The lab gets :data:`STUB` in its place, that cell's
outputs are cleared, and the whole lab is executed so its stored outputs show the
checker's "not yet implemented" feedback.

A generated lab records the hash of its cell sources in its metadata. Any later command
that would overwrite a lab whose sources no longer match that hash (the learner edited it),
or a lab that can no longer be read (its JSON is broken), first copies it to the course's
``backups/`` folder and says where it went. That folder sits beside ``labs/`` so JupyterLab's
file browser shows it (it hides dot-folders; older versions wrote to ``labs/.backups/``,
which is left as it is).

The commands find the course from the current folder or any folder above it (the one
holding ``solutions/``), so they work from inside ``labs/`` too.
"""
from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .._lang import current, only, pick
from ..errors import FxCourseError
from .nbrun import source_hash

__all__ = ["BACKUPS", "STUB", "strip_solutions", "source_hash", "build", "find_root", "out_of_date", "reset",
           "LabReport"]

BACKUPS = "backups"  # beside labs/, visible in JupyterLab's file browser

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
        fix="add the missing marker", where="labs build",
        zh=f"labs build：{name} 第 {index} 个单元的答案标记不成对；每个 '{BEGIN}' 后面都要在同一单元里有 '{END}'。")


@dataclass
class LabReport:
    name: str
    action: str  # "built", "up to date", "reset"
    backup: Path | None = None
    seconds: float = 0.0
    broken: str | None = None  # why the lab that was replaced could not be read
    broken_zh: str = ""
    shown: str = ""  # the backup's path relative to the course, as printed

    def __str__(self) -> str:
        text = f"{self.name}: {only(self.action, _ACTIONS_ZH.get(self.action, self.action))}"
        if self.seconds:
            text += f" ({self.seconds:.1f} s)"
        if self.backup:
            where = self.shown or str(self.backup)
            text += "；" if current() == "zh" else "; "
            if self.broken:
                text += pick(f"labs/{self.name}.ipynb {self.broken}, so it was kept as {where} and replaced "
                             f"by a working lab (backups/ is in JupyterLab's file browser)",
                             f"labs/{self.name}.ipynb {self.broken_zh}，原文件已保存为 {where}，并换成了可用的"
                             f"实验（在 JupyterLab 文件浏览器的 backups/ 文件夹中）")
            else:
                text += pick(f"your edited copy was saved to {where} (backups/ is in JupyterLab's file browser)",
                             f"你修改过的版本已备份到 {where}（在 JupyterLab 文件浏览器的 backups/ 文件夹中）")
        return text


_ACTIONS_ZH = {"built": "已生成", "up to date": "已是最新", "reset": "已重置"}


def _lab_state(lab_path: Path) -> tuple[str | None, str | None, FxCourseError | None]:
    """(hash recorded when the lab was generated, hash of its sources now, read error).

    Hashes are None when there is no lab or it cannot be read (then the error says why).
    The two hashes differ when a learner edited the lab (or it has no record)."""
    from . import nbrun

    if not lab_path.exists():
        return None, None, None
    try:
        nb = nbrun.read(lab_path, where="labs")
    except FxCourseError as exc:
        return None, None, exc
    return nb.metadata.get("fxcourse", {}).get("source_hash"), source_hash(nb), None


def _backup(lab_path: Path, root: Path, *, broken: bool = False) -> Path:
    """Copy ``lab_path`` into ``root/backups/`` under a new, timestamped name. A broken file
    is kept as ``.txt`` so that JupyterLab opens it in its text editor."""
    from .nbrun import keep_copy

    return keep_copy(lab_path, root / BACKUPS, ".broken.txt" if broken else ".ipynb")


def _install(lab: nbformat.NotebookNode, solution_path: Path, lab_path: Path, root: Path, *,
             execute: bool, action: str) -> LabReport:
    """Execute ``lab`` (already stripped), record its hash, and write it to ``lab_path``,
    first backing up a lab there that a learner edited or that cannot be read."""
    from . import nbrun

    from .nbrun import kernel_language

    seconds = 0.0
    if execute:
        start = time.perf_counter()
        # a lab exported in one language runs in it (its first cell also says so)
        with kernel_language(lab.metadata.get("fxcourse_language")):
            nbrun.execute(lab, lab_path.parent.resolve(), name=f"labs/{lab_path.name}", where="labs")
        seconds = time.perf_counter() - start
    lab.metadata["fxcourse"] = {"generated_from": f"solutions/{solution_path.name}",
                                "source_hash": source_hash(lab)}
    recorded, now, error = _lab_state(lab_path)
    backup = None
    if error is not None or (now is not None and recorded != now):
        backup = _backup(lab_path, root, broken=error is not None)
    nbrun.write(lab, lab_path)
    report = LabReport(lab_path.stem, action, backup, seconds)
    if error is not None:
        report.broken = getattr(error, "reason", "cannot be read")
        report.broken_zh = getattr(error, "reason_zh", "无法读取")
    if backup is not None:
        report.shown = f"{BACKUPS}/{backup.name}"
    return report


def _stripped(solution_path: Path) -> nbformat.NotebookNode:
    from . import nbrun

    solution = nbrun.read(solution_path, where="labs", fix=(
        "restore it from version control (git checkout -- FILE); labs are generated from it",
        "请从版本库恢复它（git checkout -- FILE）；实验由它生成"))
    return strip_solutions(solution, name=str(solution_path))


def _not_a_course(start: Path) -> FxCourseError:
    return FxCourseError(
        got=f"the folder {start}, which is not inside the course (no solutions/ folder there or above it)",
        accepted="the course folder (the one holding labs/ and solutions/) or a folder inside it",
        fix="cd into the course folder first, then run the command again", where="labs",
        zh=f"labs：{start} 不在课程目录中（它和它的上级目录里都没有 solutions/）；"
           "请先 cd 到课程目录（包含 labs/ 和 solutions/ 的那个文件夹），再运行命令。")


def find_root(start: str | Path = ".") -> Path:
    """The course folder: ``start`` or the nearest folder above it holding ``solutions/lab*.ipynb``.

    >>> import tempfile
    >>> find_root(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxcourse.errors.FxCourseError: labs: got the folder ..., which is not inside the course ...
    """
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / "solutions").is_dir() and any((folder / "solutions").glob("lab*.ipynb")):
            return folder
    raise _not_a_course(start)


def _solutions(root: Path, names: list[str] | None) -> list[Path]:
    folder = root / "solutions"
    if not folder.is_dir():
        raise _not_a_course(root)
    found = sorted(folder.glob("lab*.ipynb"))
    if not names:
        return found
    chosen = []
    for name in names:
        stem = Path(name).stem
        match = [p for p in found if p.stem == stem or p.stem.startswith(stem + "_")]
        if not match:
            raise FxCourseError(got=repr(name), accepted=f"one of {', '.join(p.stem for p in found) or '(none)'}",
                                fix="name a lab that has a notebook in solutions/", where="labs",
                                zh=f"labs：没有名为 {name!r} 的实验；请从上面列出的实验名中选一个。")
        chosen.extend(match)
    return chosen


def out_of_date(root: str | Path = ".") -> list[str]:
    """Why ``labs/`` does not match what ``build`` would write (empty when in sync)."""
    root = Path(root)
    problems = []
    solutions = _solutions(root, None)
    for solution_path in solutions:
        lab_path = root / "labs" / solution_path.name
        lab, sol = f"labs/{solution_path.name}", f"solutions/{solution_path.name}"
        if not lab_path.exists():
            problems.append(only(f"{lab} is missing", f"缺少 {lab}"))
            continue
        recorded, now, error = _lab_state(lab_path)
        if error is not None:
            problems.append(pick(f"{lab} {getattr(error, 'reason', 'cannot be read')}; run "
                                 f"`fxcourse labs reset {lab_path.stem}` to restore it (the broken file is kept "
                                 f"in {BACKUPS}/)", f"{lab} {getattr(error, 'reason_zh', '无法读取')}；运行 "
                                 f"`fxcourse labs reset {lab_path.stem}` 恢复（损坏的文件会保存在 {BACKUPS}/）"))
        elif now != source_hash(_stripped(solution_path)):
            problems.append(only(f"{lab} differs from {sol}", f"{lab} 与 {sol} 不一致"))
        elif recorded != now:
            problems.append(only(f"{lab} has no build record (was it edited by hand?)",
                                 f"{lab} 没有生成记录（是不是手动改过？）"))
    names = {p.name for p in solutions}
    for lab_path in sorted((root / "labs").glob("lab*.ipynb")):
        if lab_path.name not in names:
            problems.append(only(f"labs/{lab_path.name} has no solutions/{lab_path.name}",
                                 f"labs/{lab_path.name} 没有对应的 solutions/{lab_path.name}"))
    return problems


def build(root: str | Path = ".", names: list[str] | None = None, *, force: bool = False,
          execute: bool = True) -> list[LabReport]:
    """Write ``labs/`` from ``solutions/``, backing up any lab a learner edited (or that
    cannot be read) into ``backups/``."""
    root = Path(root)
    chosen = _solutions(root, names)
    (root / "labs").mkdir(exist_ok=True)
    reports = []
    for solution_path in chosen:
        lab_path = root / "labs" / solution_path.name
        lab = _stripped(solution_path)
        recorded, now, error = _lab_state(lab_path)
        if not force and error is None and recorded == now == source_hash(lab):
            reports.append(LabReport(lab_path.stem, "up to date"))
            continue
        reports.append(_install(lab, solution_path, lab_path, root, execute=execute, action="built"))
    return reports


def reset(name: str, root: str | Path = ".") -> LabReport:
    """Restore a pristine ``labs/<name>``, first backing up the learner's edited (or broken)
    copy into ``backups/``."""
    root = Path(root)
    solution_path = _solutions(root, [name])[0]
    lab_path = root / "labs" / solution_path.name
    (root / "labs").mkdir(exist_ok=True)
    return _install(_stripped(solution_path), solution_path, lab_path, root, execute=True, action="reset")


# -- a learners' bundle: labs/ (and course/) without solutions/ -------------------------------------

#: paths in backticks in a notebook's prose, which a learner may look for in the bundle
_MENTIONED = re.compile(r"`((?:course|labs|solutions|scripts|benchmarks|src)/[\w./-]+)`")


def find_bundle(start: str | Path = ".") -> Path | None:
    """The nearest folder at or above ``start`` holding ``labs/lab*.ipynb`` but no ``solutions/``: a
    learners' bundle (``i18n export`` of course/ and labs/), or None."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if any((folder / "labs").glob("lab*.ipynb")):
            return None if (folder / "solutions").is_dir() else folder
    return None


def bundle_problems(root: str | Path) -> tuple[list[str], str]:
    """What is wrong with a learners' bundle at ``root`` (empty when nothing), and a one-line summary of
    what was checked: every lab opens and is as it was built; run top to bottom in a fresh kernel (on a
    copy), every check cell says "not yet implemented" for a task this fxcourse knows; and every path the
    notebooks' prose names is there (``tests/`` aside: a bundle leaves the course's tests out on purpose)."""
    import shutil
    import tempfile

    from . import nbrun

    root = Path(root)
    problems: list[str] = []
    checked = 0
    labs = sorted((root / "labs").glob("lab*.ipynb"))
    with tempfile.TemporaryDirectory(prefix="fxcourse-bundle-") as tmp:
        for folder in ("course", "labs"):
            if (root / folder).is_dir():
                shutil.copytree(root / folder, Path(tmp) / folder)
        for lab_path in labs:
            lab = f"labs/{lab_path.name}"
            recorded, now, error = _lab_state(lab_path)
            if error is not None:
                problems.append(only(f"{lab} {getattr(error, 'reason', 'cannot be read')}",
                                     f"{lab} {getattr(error, 'reason_zh', '无法读取')}"))
                continue
            if recorded is None or recorded != now:
                problems.append(only(f"{lab} was edited after it was built (or has no build record): hand out "
                                     "the lab as the course built it", f"{lab} 在生成之后被改动过（或没有生成记录）："
                                     "请分发课程生成的原始实验"))
            try:
                nb = nbrun.execute(nbrun.read(lab_path, where="labs"), Path(tmp) / "labs", name=lab,
                                   where="labs check")
            except FxCourseError as exc:
                problems.append(only(f"{lab} does not run: {exc}", f"{lab} 无法运行：{exc}"))
                continue
            for cell in nb.cells:
                if cell.cell_type != "code" or not re.match(r"\s*check\(", cell.source):
                    continue
                html = "".join(str(o.get("data", {}).get("text/html", "")) for o in cell.outputs)
                found = re.findall(r'fxcourse-check-(\w+)" data-task="([^"]+)"', html)
                if not found or any(status != "not_implemented" for status, _ in found):
                    shown = ", ".join(f"{task}: {status}" for status, task in found) or "no check result"
                    problems.append(only(f"{lab}: `{cell.source.strip()}` gives {shown}, not 'not yet implemented'",
                                         f"{lab}：`{cell.source.strip()}` 给出 {shown}，而不是“尚未完成”"))
                checked += len(found)
    for folder in ("course", "labs"):
        for path in sorted((root / folder).glob("*.ipynb")):
            nb = nbrun.read(path, where="labs")
            named = {m for cell in nb.cells if cell.cell_type == "markdown" for m in _MENTIONED.findall(cell.source)}
            for target in sorted(named):
                if not (root / target).exists():
                    problems.append(only(f"{folder}/{path.name} names {target}, which the bundle does not hold",
                                         f"{folder}/{path.name} 提到了 {target}，但课程包里没有它"))
    summary = pick(f"the bundle in {root}: {len(labs)} labs open as built and run; their {checked} checks say "
                   "'not yet implemented'; every path the notebooks name is there",
                   f"{root} 中的课程包：{len(labs)} 个实验都能打开、与生成时一致并能运行；其中 {checked} 项检查都给出"
                   "“尚未完成”；笔记本提到的路径都存在")
    return problems, summary
