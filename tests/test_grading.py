"""The labs as an nbgrader course: nbgrader generates the student version and autogrades it."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from fxcourse import FxCourseError
from fxcourse.tooling.grading import add_grading_cells, export_course
from fxcourse.tooling.labs import STUB

from commands import into_closed_pipe

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LAB = "lab03"  # four tasks, FX only: quick to execute


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    # as an instructor types it: nbgrader by its full path, the environment's bin folder not on PATH
    # (nbgrader runs `alembic` by name; the config `fxcourse grading` writes makes it findable)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p).resolve() != BIN.resolve()]
    env = {**os.environ, "PATH": os.pathsep.join(path)}
    assert shutil.which("alembic", path=env["PATH"]) is None
    run = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0 and "ERROR" not in run.stderr, run.stderr[-3000:]
    return run


def _unsolve_first_answer(nb: nbformat.NotebookNode) -> None:
    for cell in nb.cells:
        if "### BEGIN SOLUTION" in cell.source:
            cell.source = re.sub(r"(?ms)^([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[^\n]*",
                                 lambda m: m.group(1) + STUB, cell.source, count=1)
            return


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = tmp_path_factory.mktemp("grading")
    written = export_course(course, [LAB], root=REPO)
    assert [(w.path.name, w.tests) for w in written] == [("nbgrader_config.py", None), (f"{LAB}_fx_ir.ipynb", 4)]
    _nbgrader(course, "generate_assignment", LAB, "--force")
    source = next((course / "source" / LAB).glob("*.ipynb"))
    released = next((course / "release" / LAB).glob("*.ipynb"))
    partial = nbformat.read(source, as_version=4)
    _unsolve_first_answer(partial)
    for student, nb in (("solved", nbformat.read(source, as_version=4)), ("unsolved", nbformat.read(released, 4)),
                        ("three", partial)):
        folder = course / "submitted" / student / LAB
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / source.name)
    _nbgrader(course, "autograde", LAB, "--create", "--force")
    _nbgrader(course, "generate_feedback", LAB, "--force")
    return course, source.name


def test_the_student_version_is_our_lab(graded):
    course, name = graded
    released = nbformat.read(course / "release" / LAB / name, as_version=4)
    ours = nbformat.read(REPO / "labs" / name, as_version=4)
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code" and "nbgrader-test" not in
                       c.metadata.get("tags", [])]
    assert code(released) == code(ours)  # nbgrader's stubs are exactly labs/'s
    tests = [c for c in released.cells if "nbgrader-test" in c.metadata.get("tags", [])]
    assert len(tests) == 4 and all(c.metadata.nbgrader["locked"] and c.metadata.nbgrader["points"] == 1 for c in tests)
    assert "### BEGIN SOLUTION" not in nbformat.writes(released)


def test_scores_are_what_each_submission_earned(graded):
    from nbgrader.api import Gradebook

    course, _ = graded
    with Gradebook(f"sqlite:///{course}/gradebook.db") as book:
        scores = {s: (book.find_submission(LAB, s).score, book.find_submission(LAB, s).max_score)
                  for s in ("solved", "unsolved", "three")}
    assert scores == {"solved": (4.0, 4.0), "unsolved": (0.0, 4.0), "three": (3.0, 4.0)}


def test_feedback_names_the_task_not_the_answer(graded):
    course, name = graded
    import html as html_lib

    page = next((course / "feedback" / "three" / LAB).glob("*.html")).read_text(encoding="utf-8")
    shown = html_lib.unescape(re.sub(r"<[^>]+>", "", page))  # the page as a reader sees it
    assert f"AssertionError: {LAB}.1 does not pass yet: run the check cell above to see why / {LAB}.1 还未通过" in shown
    for other in (2, 3, 4):  # the other three tests passed
        assert f"AssertionError: {LAB}.{other}" not in shown


def test_grading_cells_follow_each_check_and_bad_targets_are_refused(tmp_path):
    nb = add_grading_cells(nbformat.read(REPO / "solutions" / "lab00_warmup.ipynb", as_version=4), "lab00")
    tests = [i for i, c in enumerate(nb.cells) if "nbgrader-test" in c.metadata.get("tags", [])]
    assert [nb.cells[i].metadata.nbgrader["grade_id"] for i in tests] == ["lab00_1-test", "lab00_2-test", "lab00_3-test"]
    assert all('check("lab00.' in nb.cells[i - 1].source for i in tests)
    with pytest.raises(FxCourseError, match="inside the course"):
        export_course(REPO / "build" / "grading", root=REPO)
    with pytest.raises(FxCourseError, match="lab99"):
        export_course(tmp_path, ["lab99"], root=REPO)


def test_a_second_export_keeps_what_the_instructor_changed(tmp_path):
    """A second `fxcourse grading OUT` used to delete source/<lab>/ and rewrite the settings."""
    course = tmp_path / "grading"
    said = []
    first = export_course(course, [LAB], root=REPO, report=said.append)
    assert said == first and [w.backup for w in first] == [None, None]
    again = export_course(course, [LAB], root=REPO)  # nothing changed: nothing to keep
    assert [w.backup for w in again] == [None, None] and not (course / "backups").exists()

    settings, source = first[0].path, first[1].path
    edited = source.read_text(encoding="utf-8").replace("check(", "check( ", 1)
    source.write_text(edited, encoding="utf-8")
    (source.parent / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")  # the release needs it
    settings.write_text(settings.read_text(encoding="utf-8") + "c.Exchange.course_id = 'room-7'\n", encoding="utf-8")
    gradebook = course / "gradebook.db"
    gradebook.write_bytes(b"grades")

    third = {w.path: w for w in export_course(course, [LAB], root=REPO)}
    kept_notebook, kept_settings = third[source].backup, third[settings].backup
    assert kept_notebook.read_text(encoding="utf-8") == edited
    assert "room-7" in kept_settings.read_text(encoding="utf-8") and "room-7" not in settings.read_text(encoding="utf-8")
    assert kept_notebook.is_relative_to(course / "backups") and kept_settings.is_relative_to(course / "backups")
    assert source.read_text(encoding="utf-8") != edited
    assert (source.parent / "data.csv").read_text(encoding="utf-8") == "x,y\n1,2\n"  # added files stay
    assert gradebook.read_bytes() == b"grades"
    assert "kept in" in str(third[source]) and str(kept_notebook) in str(third[source])


def test_what_the_last_export_wrote_is_replaced_without_a_copy(tmp_path):
    """A course update changes what the export writes; that is not the instructor's work."""
    import json

    course = tmp_path / "grading"
    source = export_course(course, [LAB], root=REPO)[1].path
    older = source.read_text(encoding="utf-8").replace("check(", "check(  ", 1)  # as an older course wrote it
    source.write_text(older, encoding="utf-8")
    manifest = course / ".fxcourse-grading.json"
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    recorded[f"source/{LAB}/{source.name}"] = hashlib.sha256(older.encode("utf-8")).hexdigest()
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    assert [w.backup for w in export_course(course, [LAB], root=REPO)] == [None, None]
    assert not (course / "backups").exists()


def test_links_are_moved_aside_never_followed(tmp_path):
    course, elsewhere = tmp_path / "grading", tmp_path / "elsewhere"
    course.mkdir()
    (course / "nbgrader_config.py").symlink_to(elsewhere / "settings.py")  # a dangling link
    (course / "source").mkdir()
    (course / "source" / LAB).symlink_to(elsewhere)
    written = export_course(course, [LAB], root=REPO)
    assert not elsewhere.exists()  # nothing written through a link
    moved = [w for w in written if w.backup is not None]
    assert {w.path.name for w in moved} == {"nbgrader_config.py", LAB}
    assert all(w.backup.is_symlink() for w in moved)
    assert not (course / "nbgrader_config.py").is_symlink() and (course / "source" / LAB).is_dir()




def test_a_file_that_cannot_be_written_is_named_with_its_copy(tmp_path, monkeypatch):
    course = tmp_path / "grading"
    source = export_course(course, [LAB], root=REPO)[1].path
    source.write_text(source.read_text(encoding="utf-8") + " ", encoding="utf-8")  # the instructor's edit
    import fxcourse.tooling.grading as grading

    real_replace = grading._replace

    def refuse(target, data):
        if target == source:
            raise PermissionError(13, "Permission denied", str(target))
        return real_replace(target, data)
    monkeypatch.setattr(grading, "_replace", refuse)  # as a read-only folder would (root ignores modes)
    with pytest.raises(FxCourseError) as info:
        export_course(course, [LAB], root=REPO)
    message = str(info.value)
    assert str(source) in message and "Permission denied" in message and "a copy of what was there is in" in message
    copy = Path(message.split("a copy of what was there is in ")[1].split(";")[0].split(". ")[0].strip())
    assert copy.read_text(encoding="utf-8") == source.read_text(encoding="utf-8")


def test_a_folder_where_the_notebook_goes_is_moved_aside(tmp_path):
    course = tmp_path / "grading"
    source = export_course(course, [LAB], root=REPO)[1].path
    source.unlink()
    source.mkdir()  # a folder where the notebook goes: moved aside, never written through
    (source / "keep.txt").write_text("mine", encoding="utf-8")
    written = {w.path: w for w in export_course(course, [LAB], root=REPO)}
    assert (written[source].backup / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert source.is_file()


def test_what_the_export_keeps_never_goes_through_a_link(tmp_path):
    course, elsewhere = tmp_path / "grading", tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings = export_course(course, [LAB], root=REPO)[0].path
    precious = elsewhere / "precious.txt"
    precious.write_text("mine", encoding="utf-8")
    manifest = course / ".fxcourse-grading.json"
    manifest.unlink()
    manifest.symlink_to(precious)  # the record itself replaced by a link
    export_course(course, [LAB], root=REPO)
    assert precious.read_text(encoding="utf-8") == "mine" and not manifest.is_symlink()

    shutil.rmtree(course / "backups")  # it holds the link moved aside above
    (course / "backups").symlink_to(elsewhere)  # copies would land outside OUT
    settings.write_text(settings.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    with pytest.raises(FxCourseError, match="link"):
        export_course(course, [LAB], root=REPO)
    assert "# mine" in settings.read_text(encoding="utf-8") and sorted(p.name for p in elsewhere.iterdir()) == [
        "precious.txt"]


def test_a_moved_link_still_points_where_it_did_and_hard_links_keep_their_content(tmp_path):
    course = tmp_path / "grading"
    source = export_course(course, [LAB], root=REPO)[1].path
    notes = tmp_path / "notes.ipynb"
    notes.write_text("my notes", encoding="utf-8")
    source.unlink()
    source.symlink_to(os.path.relpath(notes, source.parent))  # a relative link
    moved = {w.path: w for w in export_course(course, [LAB], root=REPO)}[source].backup
    assert moved.is_symlink() and moved.read_text(encoding="utf-8") == "my notes"

    edited = source.read_text(encoding="utf-8") + " "
    source.write_text(edited, encoding="utf-8")
    twin = tmp_path / "twin.ipynb"
    os.link(source, twin)  # the instructor's hard link outside OUT
    export_course(course, [LAB], root=REPO)
    assert twin.read_text(encoding="utf-8") == edited


def test_a_relative_link_moved_aside_resolves_when_out_is_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = Path("rel")  # as the help suggests: ../fxcourse-grading
    source = export_course(out, [LAB], root=REPO)[1].path
    (source.parent / "mine").mkdir()
    (source.parent / "mine" / "nb.ipynb").write_text("my notebook", encoding="utf-8")
    source.unlink()
    source.symlink_to("mine/nb.ipynb")
    moved = {w.path: w for w in export_course(out, [LAB], root=REPO)}[source].backup
    assert moved.read_text(encoding="utf-8") == "my notebook"


def test_a_reader_that_goes_away_ends_the_command_quietly_and_the_export_completes(tmp_path):
    out = tmp_path / "piped"
    stderr = into_closed_pipe("grading", str(out))
    assert "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    notebooks = sorted(p.name for p in (out / "source").glob("*/*.ipynb"))
    assert len(notebooks) == len(list((REPO / "solutions").glob("lab*.ipynb")))  # every lab, not just the first
    recorded = json.loads((out / ".fxcourse-grading.json").read_text(encoding="utf-8"))
    assert len(recorded) == len(notebooks) + 1


def test_an_out_path_through_a_link_and_dot_dot_is_followed_as_the_system_does(tmp_path, monkeypatch):
    (tmp_path / "deep" / "real").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "deep" / "real")
    monkeypatch.chdir(tmp_path)
    written = export_course(Path("link") / ".." / "out", [LAB], root=REPO)  # link/.. is deep/, not tmp_path
    assert all(w.path.exists() for w in written) and (tmp_path / "deep" / "out" / "nbgrader_config.py").is_file()


def test_written_files_get_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        written = export_course(tmp_path / "grading", [LAB], root=REPO)
    finally:
        os.umask(old)
    assert {oct(w.path.stat().st_mode & 0o777) for w in written} == {"0o644"}
    written[0].path.chmod(0o664)  # the instructor's own choice survives a rerun
    export_course(tmp_path / "grading", [LAB], root=REPO)
    assert oct(written[0].path.stat().st_mode & 0o777) == "0o664"


@pytest.mark.parametrize("broken", [b"{ not json", b'{"cells": [], "nbformat": 4, "nbformat_minor": 5}'])
def test_a_broken_solution_stops_the_export_before_anything_is_written(tmp_path, broken, capsys, monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    course = tmp_path / "course"
    (course / "solutions").mkdir(parents=True)
    (course / "labs").mkdir()
    shutil.copy(REPO / "solutions" / "lab03_fx_ir.ipynb", course / "solutions")
    (course / "solutions" / "lab00_warmup.ipynb").write_bytes(broken)
    (course / "pyproject.toml").write_text("[project]\nname = 'fxcourse'\n")
    out = tmp_path / "out"
    monkeypatch.chdir(course)
    from fxcourse.tooling.cli import main
    assert main(["grading", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "unexpected" not in err
    assert "grading: got " in err and "lab00_warmup.ipynb" in err
    assert not out.exists()
