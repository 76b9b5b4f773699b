"""The instructor guide and the script its numbers come from.

The guide's per-section tables name every section heading of every lecture (a renamed or added
section shows up here), both languages are there, and the places other parts of the workshop
kit fill are marked. The timing script measures a real kernel and leaves no kernel behind.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "course" / "INSTRUCTORS.md"
sys.path.insert(0, str(ROOT / "benchmarks"))
import workshop_timings  # noqa: E402


def _headings(path: Path, tag: str) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [line.lstrip("#").strip() for cell in nb.cells if cell.cell_type == "markdown"
            and tag in cell.metadata.get("tags", []) for line in cell.source.splitlines()
            if re.match(r"#{1,2} ", line)]


@pytest.mark.parametrize("path", sorted((ROOT / "course").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_guide_plans_every_section_of_every_lecture(path: Path) -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    en, zh = _headings(path, "lang-en"), _headings(path, "lang-zh")
    assert f"#### {en[0]} / {zh[0]}" in guide
    block = guide.split(f"#### {en[0]} / {zh[0]}")[1].split("####")[0]
    rows = re.findall(r"^\| (.+?) \| \**(\d+)\** \|$", block, re.M)
    planned = [title for title, _ in rows]
    assert planned[0] == "(introduction / 引言)" and planned[-1] == "**total / 合计**"
    assert planned[1:-1] == [f"{e} / {z}" for e, z in zip(en[1:], zh[1:])]
    minutes = [int(m) for _, m in rows]
    assert all(m >= 1 for m in minutes)
    assert abs(sum(minutes[:-1]) - minutes[-1]) <= len(minutes)  # rounding per row


def test_guide_has_both_languages_and_the_places_others_fill() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    for heading in ("# Instructor guide", "# 讲师指南", "## Tracks", "## 课程安排", "## Serving a room",
                    "## Grading", "## 服务整个教室", "## 评分"):
        assert re.search(rf"^{re.escape(heading)}$", guide, re.M), heading
    assert "fxcourse i18n export --lang zh" in guide and "rm -rf /tmp/fxcourse-zh/solutions" in guide
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("(course/INSTRUCTORS.md)") >= 4  # linked from both languages' parts
    # macOS and Windows (WSL2) are marked as untested, in both languages
    for system in ("**macOS (not tested in CI):**", "**Windows (not tested in CI):**",
                   "**macOS（未在 CI 中测试）：**", "**Windows（未在 CI 中测试）：**"):
        assert system in readme, system


def test_plan_rule() -> None:
    plan = workshop_timings.plan_minutes
    assert plan(110, 0, 0) == 1 and plan(0, 4, 0) == 3 and plan(0, 0, 90) == 1.5
    assert plan(0, 0, 0, exercises=3) == 30


@pytest.mark.slow
def test_timing_script_measures_a_kernel_and_stops_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    course = tmp_path / "repo" / "course"
    course.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# T\n\nfour words here", metadata={"tags": ["lang-en"]}),
                nbformat.v4.new_markdown_cell("# T", metadata={"tags": ["lang-zh"]}),
                nbformat.v4.new_markdown_cell("## Busy", metadata={"tags": ["lang-en"]}),
                nbformat.v4.new_code_cell("big = bytearray(300 * 2**20)\n"
                                          "import time\nt = time.process_time()\n"
                                          "while time.process_time() - t < 1.0: pass")]
    nbformat.write(nb, course / "t.ipynb")
    monkeypatch.setattr(workshop_timings, "ROOT", tmp_path / "repo")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    result = workshop_timings.measure(course / "t.ipynb", tmp_path / "repo")
    assert result["cpu_s"] >= 1.0 and result["wall_s"] >= 1.0
    assert result["peak_kernel_mb"] >= 300 and result["peak_rss_mb"] >= result["peak_kernel_mb"]
    sections = [(s["title"], s["words"], s["code_cells"]) for s in result["sections"]]
    assert sections == [("T", 5, 0), ("Busy", 2, 1)]  # a heading's marks count as words
    assert result["sections"][1]["run_s"] >= 1.0
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before and p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], "the kernel was left running"


# -- the guide's minutes are the timing script's, from its committed run ----------------------------

TIMINGS = ROOT / "benchmarks" / "timings.json"


def _measured() -> dict[str, dict]:
    return {r["notebook"]: r for r in json.loads(TIMINGS.read_text(encoding="utf-8"))["results"]}


def _lecture_rows(guide: str, heading: str = "## Lectures and labs") -> dict[str, list[str]]:
    """The table of lectures and labs under ``heading`` (English, or the 中文 twin): number → its cells."""
    block = guide.split(heading)[1].split("\n## ")[0]
    return {cells[0]: cells for cells in (
        [c.strip() for c in line.strip("|").split("|")] for line in block.splitlines() if re.match(r"\| \d\d \|", line))}


def _numbered(folder: str, number: str) -> str:
    (path,) = sorted((ROOT / folder).glob(f"*{number}_*.ipynb"))
    return f"{folder}/{path.name}"


def test_the_timing_run_covers_every_notebook_on_the_taught_torch() -> None:
    from fxcourse._pins import TORCH

    saved = json.loads(TIMINGS.read_text(encoding="utf-8"))
    assert saved["torch"] == TORCH, "re-run benchmarks/workshop_timings.py on the torch the course teaches"
    every = {f"{folder}/{p.name}" for folder in ("course", "labs", "solutions")
             for p in (ROOT / folder).glob("*.ipynb")}
    assert every <= set(_measured()), sorted(every - set(_measured()))


def test_lecture_and_lab_minutes_are_the_timing_runs() -> None:
    guide, measured = GUIDE.read_text(encoding="utf-8"), _measured()
    rows = _lecture_rows(guide)
    zh = _lecture_rows(guide, "## 各讲与实验")
    lectures = sorted(p.name[:2] for p in (ROOT / "course").glob("[0-9][0-9]_*.ipynb"))
    assert sorted(rows) == lectures and sorted(zh) == lectures
    for number in lectures:
        lecture = measured[_numbered("course", number)]
        lab = measured[_numbered("labs", f"lab{number}")]
        run = f"{lecture['cpu_s']:.0f} ({lecture['wall_s']:.0f})"
        want = (run, f"{workshop_timings.lecture_minutes(lecture):.0f}", f"{workshop_timings.lecture_minutes(lab):.0f}")
        assert (rows[number][2], rows[number][3], rows[number][5]) == want, number
        assert (zh[number][2], zh[number][3]) == want[1:], number


def test_section_minutes_are_the_timing_runs() -> None:
    guide, measured = GUIDE.read_text(encoding="utf-8"), _measured()
    for path in sorted((ROOT / "course").glob("[0-9][0-9]_*.ipynb")):
        en, zh = _headings(path, "lang-en"), _headings(path, "lang-zh")
        block = guide.split(f"#### {en[0]} / {zh[0]}")[1].split("####")[0]
        minutes = [int(m) for m in re.findall(r"^\| .+? \| \**(\d+)\** \|$", block, re.M)]
        r = measured[f"course/{path.name}"]
        want = [round(m) for _, m in workshop_timings.section_minutes(r)]
        assert minutes == want + [round(workshop_timings.lecture_minutes(r))], path.name


def _track_minutes(content: str, lecture: dict[str, int], lab: dict[str, int]) -> int:
    """A track's minutes from its English content: lectures (two digits), labs (labNN), and breaks or
    questions with their minutes in parentheses ("two breaks (15 each)" is 30)."""
    total = 0
    for count, minutes, each in re.findall(r"(?:\b(two|three) )?(?:breaks?|questions) \((\d+)( each)?\)", content):
        total += int(minutes) * ({"two": 2, "three": 3}.get(count, 1) if each else 1)
    total += sum(lab[n] for n in re.findall(r"lab(\d\d)", content))
    total += sum(lecture[n] for n in re.findall(r"(?<![\w(])(\d\d)(?![\w)])", content))
    return total


def test_track_minutes_add_up_from_the_timing_run() -> None:
    guide, measured = GUIDE.read_text(encoding="utf-8"), _measured()
    numbers = sorted(p.name[:2] for p in (ROOT / "course").glob("[0-9][0-9]_*.ipynb"))
    lecture = {n: round(workshop_timings.lecture_minutes(measured[_numbered("course", n)])) for n in numbers}
    lab = {n: round(workshop_timings.lecture_minutes(measured[_numbered("labs", f"lab{n}")])) for n in numbers}
    en = re.findall(r"^\| ([^|]+) \| ([^|]+) \| (\d+) \|$", guide.split("## Tracks")[1].split("\n## ")[0], re.M)
    zh = re.findall(r"^\| ([^|]+) \| ([^|]+) \| (\d+) \|$", guide.split("## 课程安排")[1].split("\n## ")[0], re.M)
    assert len(en) == len(zh) == 4
    for (name, content, total), (_, _, total_zh) in zip(en, zh):
        days = re.findall(r"day \d: (.+?) = (\d+)", content)
        for day, subtotal in days:
            assert _track_minutes(day, lecture, lab) == int(subtotal), (name, day)
        assert _track_minutes(content.replace(" = ", " total "), lecture, lab) == int(total) == int(total_zh), name
    hours = {name: int(total) for name, _, total in en}
    assert hours["3.5 hours"] <= 3.5 * 60 and max(hours["one day"], hours["compiler day"]) <= 6.5 * 60 + 30, hours


def test_the_guides_totals_are_the_timing_runs() -> None:
    guide, measured = GUIDE.read_text(encoding="utf-8"), _measured()
    numbers = sorted(p.name[:2] for p in (ROOT / "course").glob("[0-9][0-9]_*.ipynb"))

    def total(folder: str, prefix: str) -> tuple[int, int]:
        minutes = sum(workshop_timings.lecture_minutes(measured[_numbered(folder, prefix + n)]) for n in numbers)
        rounded = int(round(minutes / 10) * 10)
        return divmod(rounded, 60)

    (lh, lm), (bh, bm) = total("course", ""), total("labs", "lab")
    assert f"All lectures: about {lh} h {lm} min; all labs: about {bh} h {bm} min." in guide
    assert f"全部讲授约 {lh} 小时 {lm} 分钟，全部实验约 {bh} 小时 {bm} 分钟。" in guide
