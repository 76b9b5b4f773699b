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
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

from ._lang import pick
from .errors import FxCourseError
from .labs import BEGIN, STUB, find_root

__all__ = ["POINTS", "Written", "add_grading_cells", "export_course"]

#: Points for each task's autograded test.
POINTS = 1
_CHECK = re.compile(r'^\s*check\(\s*"(lab\d+\.\d+)"\s*,\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\)\s*$', re.M)

CONFIG = '''# nbgrader settings for the fxcourse labs (written by `fxcourse grading`).
c = get_config()  # noqa: F821
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
        return pick(en, zh)


def _backup(what: Path, out: Path) -> Path:
    """Move ``what`` (a file or folder under ``out``) to ``out/backups/``, under its path with a
    timestamp, and return where it went."""
    relative = what.relative_to(out)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = out / "backups" / relative.parent / f"{relative.name}.{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = out / "backups" / relative.parent / f"{relative.name}.{stamp}-{n}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(what), str(target))
    return target


def _only(folder: Path, name: str, text: str) -> bool:
    """Whether ``folder`` holds exactly the file ``name`` with exactly ``text`` (what we write)."""
    try:
        entries = list(folder.iterdir())
        return [e.name for e in entries] == [name] and (folder / name).read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def export_course(out: str | Path, labs: list[str] | None = None, root: str | Path | None = None) -> list[Written]:
    """Write the nbgrader course folder ``out`` from the course's ``solutions/``.

    ``labs`` picks some labs (``["lab00", "lab03"]``); the default is every lab. Run again, it
    rewrites ``source/<lab>/`` and ``nbgrader_config.py``; where they hold anything it did not
    write (an edited notebook or settings, an added data file), that is first moved to
    ``out/backups/`` and the returned entry says where. Graded submissions, the gradebook and
    released versions beside them are left alone.
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
    out.mkdir(parents=True, exist_ok=True)
    written = []
    config, config_text = out / "nbgrader_config.py", CONFIG.format(stub=STUB)
    config_backup = None
    if config.exists():
        try:
            same = config.read_text(encoding="utf-8") == config_text
        except (OSError, UnicodeDecodeError):
            same = False
        if not same:  # the instructor's settings: keep them
            config_backup = _backup(config, out)
    config.write_text(config_text, encoding="utf-8")
    if config_backup is not None:
        written.append(Written(config, None, config_backup))
    for path in solutions:
        lab = path.name.split("_")[0]
        nb = add_grading_cells(nbformat.read(path, as_version=4), lab)
        for cell in nb.cells:  # a source notebook carries no stale outputs
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        folder = out / "source" / lab
        text = nbformat.writes(nb)
        text += "" if text.endswith("\n") else "\n"
        backup = None
        if folder.exists() and not _only(folder, path.name, text):
            backup = _backup(folder, out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / path.name).write_text(text, encoding="utf-8")
        written.append(Written(folder / path.name, sum("nbgrader-test" in c.metadata.get("tags", []) for c in nb.cells),
                               backup))
    return written
