"""``fxcourse grading OUT``: the labs as an nbgrader course, for an instructor who grades.

``solutions/`` stays the single source. This writes an nbgrader course folder::

    OUT/nbgrader_config.py          nbgrader's settings (the stub our labs use, the database)
    OUT/source/labNN/labNN_x.ipynb  each solution, with nbgrader cell metadata

so that nbgrader's own commands work unchanged: ``nbgrader generate_assignment labNN``
(the student version, identical in its stubs to ``labs/``), ``nbgrader autograde labNN``,
``nbgrader generate_feedback labNN``. In each source notebook:

- a cell holding ``### BEGIN SOLUTION`` is an nbgrader *solution* cell (nbgrader replaces the
  answer by the course's stub, as ``fxcourse labs build`` does);
- after each ``check("labNN.k", answer)`` cell comes a locked, *autograded* test cell worth
  :data:`POINTS` points: ``assert check("labNN.k", answer).passed``. nbgrader scores a test cell
  by whether it raises, and ``check()`` never raises, so the test asserts; its message says which
  task failed and to run the check cell above for the reason, never the answer.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import nbformat

from .._lang import pick
from ..errors import FxCourseError
from .labs import BEGIN, STUB, find_root
from .nbrun import read

__all__ = ["POINTS", "Written", "add_grading_cells", "export_course"]

#: Points for each task's autograded test.
POINTS = 1
_CHECK = re.compile(r'^\s*check\(\s*"(lab\d+\.\d+)"\s*,\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)\s*$', re.M)

CONFIG = '''# nbgrader settings for the fxcourse labs (written by `fxcourse grading`).
c = get_config()  # noqa: F821
# nbgrader runs `alembic` by name: find it beside the Python running nbgrader, even when that
# environment's bin folder is not on PATH (nbgrader called by its full path).
_os, _sys = __import__("os"), __import__("sys")
if _os.path.dirname(_sys.executable) not in _os.environ.get("PATH", "").split(_os.pathsep):
    _os.environ["PATH"] = _os.path.dirname(_sys.executable) + _os.pathsep + _os.environ.get("PATH", "")
c.CourseDirectory.root = __import__("os").path.dirname(__import__("os").path.abspath(__file__))
c.CourseDirectory.db_url = "sqlite:///" + c.CourseDirectory.root + "/gradebook.db"
# The stub our own labs use, so a generated assignment reads like labs/.
c.ClearSolutions.code_stub = {{"python": {stub!r}}}
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
# Checks compile with Inductor on a CPU: give each cell time.
c.ExecutePreprocessor.timeout = 600
'''


def _meta(grade_id: str, *, solution: bool, grade: bool, locked: bool, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def add_grading_cells(solution: nbformat.NotebookNode, lab: str) -> nbformat.NotebookNode:
    """A copy of ``solution`` with nbgrader metadata and one autograded test per checked task.

    >>> nb = nbformat.v4.new_notebook(cells=[
    ...     nbformat.v4.new_code_cell("def f(x):\\n    ### BEGIN SOLUTION\\n    return x\\n    ### END SOLUTION"),
    ...     nbformat.v4.new_code_cell('check("lab00.1", f)')])
    >>> out = add_grading_cells(nb, "lab00")
    >>> [c.metadata.nbgrader["grade_id"] for c in out.cells if "nbgrader" in c.metadata]
    ['lab00-answer-1', 'lab00_1-test']
    >>> print(out.cells[2].source)
    # Autograded: lab00.1 (1 point). / 自动评分：lab00.1（1 分）。
    assert check("lab00.1", f).passed, "lab00.1 does not pass yet: run the check cell above to see why / lab00.1 还未通过：运行上面的检查单元查看原因"
    """
    nb = copy.deepcopy(solution)
    cells, answers = [], 0
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            answers += 1
            cell.metadata["nbgrader"] = _meta(f"{lab}-answer-{answers}", solution=True, grade=False, locked=False)
        for task, answer in _CHECK.findall(cell.source):
            message = (f"{task} does not pass yet: run the check cell above to see why / "
                       f"{task} 还未通过：运行上面的检查单元查看原因")
            test = nbformat.v4.new_code_cell(
                f"# Autograded: {task} ({POINTS} point). / 自动评分：{task}（{POINTS} 分）。\n"
                f'assert check("{task}", {answer}).passed, "{message}"')
            test.metadata["nbgrader"] = _meta(f"{task.replace('.', '_')}-test", solution=False, grade=True, locked=True, points=POINTS)
            test.metadata["tags"] = ["nbgrader-test"]
            test.id = f"{task.replace('.', '-')}-test"  # the same on every export: a rerun can tell an edit
            cells.append(test)
    nb.cells = cells
    return nb


@dataclass(frozen=True)
class Written:
    """A file ``export_course`` wrote; ``backup`` is where what it replaced went, if anything
    there was not what it would write itself (an instructor's edit, an added file)."""

    path: Path
    tests: int | None  # autograded tests in a source notebook; None for the settings file
    backup: Path | None = None

    def __str__(self) -> str:
        if self.tests is None:
            en, zh = f"{self.path}", f"{self.path}"
        else:
            en, zh = f"{self.path} ({self.tests} autograded tests)", f"{self.path}（{self.tests} 个自动评分测试）"
        if self.backup is not None:
            en += f"; what was there before is kept in {self.backup}"
            zh += f"；原来的内容保存在 {self.backup}"
        return en if en == zh else pick(en, zh)


MANIFEST = ".fxcourse-grading.json"  # what the last export wrote: path -> sha256 of its bytes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _no_link_on_the_way(out: Path, folder: Path) -> None:
    """Refuse when a folder between ``out`` and ``folder`` is a link: writing through it would
    put the instructor's copies somewhere else than the line says."""
    here = out
    for part in folder.relative_to(out).parts:
        here = here / part
        if here.is_symlink():
            raise FxCourseError(
                got=f"{here}, a link to {os.readlink(here)}", where="grading",
                accepted="a real folder where the export keeps copies", fix=f"move or remove the link {here}",
                zh=f"grading：{here} 是一个指向 {os.readlink(here)} 的链接；导出需要一个真实的文件夹来保存副本，请移走或删除这个链接。")


def _aside(what: Path, out: Path, *, move: bool) -> Path:
    """Put ``what`` (under ``out``) into ``out/backups/`` under its own path with a timestamp:
    moved (a link is moved as a link, never followed, and keeps pointing where it pointed) or
    copied; return where it went."""
    relative = what.relative_to(out)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = out / "backups" / relative.parent / f"{relative.name}.{stamp}"
    n = 1
    while target.exists() or target.is_symlink():
        n += 1
        target = out / "backups" / relative.parent / f"{relative.name}.{stamp}-{n}"
    _no_link_on_the_way(out, target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    _no_link_on_the_way(out, target.parent)
    if what.is_symlink():  # re-made from the real folder it sits in, so a relative link still resolves
        pointed = os.path.join(os.path.realpath(what.parent), os.readlink(what))
        os.symlink(pointed, target)
        os.unlink(what)
    elif move:
        os.rename(what, target)
    else:
        shutil.copy2(what, target, follow_symlinks=False)
    return target


def _mode_for(target: Path) -> int:
    """The replaced file's permissions, or what a new file gets under the current umask
    (``mkstemp`` makes its file readable by its owner only)."""
    try:
        if target.is_file() and not target.is_symlink():
            return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        pass
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _replace(target: Path, data: bytes) -> None:
    """Write ``data`` to a new file and rename it over ``target``: a hard link to the old file
    keeps its content, and a run stopped half-way leaves no half-written file. The new file's
    name is one no other file has (``mkstemp``)."""
    # in the folder the path really leads to (a text-tidied `link/..` would be another folder)
    handle, temporary = tempfile.mkstemp(dir=os.path.realpath(target.parent), prefix=f".{target.name}.",
                                         suffix=".writing")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, _mode_for(target))
        os.replace(temporary, target)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


class _Writer:
    """Writes files under ``out``; keeps what it would replace, unless it wrote that itself."""

    def __init__(self, out: Path, report: Callable[[Written], None] | None) -> None:
        self.out, self.report = out, report
        self.manifest_path = out / MANIFEST
        manifest: Any = {}
        if self.manifest_path.is_symlink() or (self.manifest_path.exists() and not self.manifest_path.is_file()):
            self._said(Written(self.manifest_path, None, _aside(self.manifest_path, out, move=True)))
        else:
            try:
                manifest = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                manifest = {}  # no record: every file that differs is copied before it is replaced
        self.manifest: dict[str, str] = manifest if isinstance(manifest, dict) else {}

    def _said(self, written: Written) -> Written:
        if self.report is not None:
            self.report(written)
        return written

    def folder(self, folder: Path) -> Written | None:
        """Make ``folder`` a real folder; a file or a link in its place is moved aside first."""
        written = None
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            written = self._said(Written(folder, None, _aside(folder, self.out, move=True)))
        folder.mkdir(parents=True, exist_ok=True)
        return written

    def write(self, target: Path, text: str, tests: int | None) -> Written:
        data = text.encode("utf-8")
        key = target.relative_to(self.out).as_posix()
        backup = None
        if target.is_symlink() or (target.exists() and not target.is_file()):
            backup = _aside(target, self.out, move=True)
        elif target.exists():
            current = target.read_bytes()
            if current != data and _sha(current) != self.manifest.get(key):  # not what we wrote last time
                backup = _aside(target, self.out, move=False)
        try:
            _replace(target, data)
        except OSError as exc:
            kept, kept_zh = (f"; a copy of what was there is in {backup}", f"；原来内容的副本在 {backup}") if backup \
                else ("", "")
            raise FxCourseError(
                got=f"{target}, which cannot be written ({exc.strerror}){kept}", where="grading",
                accepted="an OUT folder you can write to", fix="make it writable (chmod -R u+w OUT) or choose another OUT",
                zh=f"grading：无法写入 {target}（{exc.strerror}）{kept_zh}。请让它可写（chmod -R u+w OUT），或换一个输出文件夹。",
            ) from exc
        written = Written(target, tests, backup)
        try:  # recorded first, so a report that fails (a closed pipe) cannot make the next run copy it
            self.manifest[key] = _sha(data)
            _replace(self.manifest_path, (json.dumps(self.manifest, indent=1, sort_keys=True) + "\n").encode("utf-8"))
        finally:  # and said even when the record cannot be written: the copy's place is never lost
            self._said(written)
        return written


def export_course(out: str | Path, labs: list[str] | None = None, root: str | Path | None = None,
                  report: Callable[[Written], None] | None = None) -> list[Written]:
    """Write the nbgrader course folder ``out`` from the course's ``solutions/``.

    ``labs`` picks some labs (``["lab00", "lab03"]``); the default is every lab. Run again, it
    rewrites ``nbgrader_config.py`` and each ``source/<lab>/<lab>_*.ipynb``, nothing else: a file
    it would replace that is not what it wrote last time (recorded in ``out/.fxcourse-grading.json``),
    such as an edited notebook or edited settings, is first copied to ``out/backups/``, and the
    entry for it says where. Files added beside a notebook, graded submissions, the gradebook and
    released versions stay where they are. A link in the place of a file or folder it writes is
    moved aside, never followed. ``report`` is called with each entry as soon as it is written,
    so a run stopped half-way has still said where every copy went.
    """
    course = find_root(root or Path.cwd())
    out = Path(out)
    if out.resolve() == course.resolve() or course.resolve() in (out.resolve(), *out.resolve().parents):
        raise FxCourseError(got=f"OUT {out}, inside the course folder {course}", where="grading",
                            accepted="a folder outside the course", fix="choose e.g. ../fxcourse-grading",
                            zh=f"grading：输出文件夹 {out} 位于课程目录 {course} 之内；请换一个课程之外的文件夹，"
                               "例如 ../fxcourse-grading。")
    solutions = sorted((course / "solutions").glob("lab*.ipynb"))
    if labs:
        wanted = {name.split("_")[0] for name in labs}
        known = {p.name.split("_")[0] for p in solutions}
        unknown = sorted(wanted - known)
        if unknown:
            raise FxCourseError(got=", ".join(unknown), accepted=f"labs of this course: {', '.join(sorted(known))}",
                                fix="use a lab's number, e.g. lab00", where="grading",
                                zh=f"grading：没有实验 {', '.join(unknown)}；可选：{', '.join(sorted(known))}。")
        solutions = [p for p in solutions if p.name.split("_")[0] in wanted]
    # every solution read and marked before anything is written: a broken one stops the export cleanly
    graded = [(path.name.split("_")[0], path, add_grading_cells(read(path, where="grading"), path.name.split("_")[0]))
              for path in solutions]
    out.mkdir(parents=True, exist_ok=True)
    writer = _Writer(out, report)
    written = [w for w in [writer.folder(out / "source")] if w is not None]
    written.append(writer.write(out / "nbgrader_config.py", CONFIG.format(stub=STUB), None))
    for lab, path, nb in graded:
        for cell in nb.cells:  # a source notebook carries no stale outputs
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        moved = writer.folder(out / "source" / lab)
        if moved is not None:
            written.append(moved)
        text = nbformat.writes(nb)
        text += "" if text.endswith("\n") else "\n"
        tests = sum("nbgrader-test" in c.metadata.get("tags", []) for c in nb.cells)
        written.append(writer.write(out / "source" / lab / path.name, text, tests))
    return written
