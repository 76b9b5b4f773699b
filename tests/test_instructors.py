"""The instructor guide and the script its numbers come from.

The guide's per-section tables name every section heading of every lecture (a renamed or added
section shows up here), both languages are there, and the places other parts of the workshop
kit fill are marked. The timing script measures a real kernel and leaves no kernel behind.
"""
from __future__ import annotations

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
