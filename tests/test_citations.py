"""Checker feedback and hints send learners to lecture sections; every citation must name a
section that exists, with the number and title the lecture gives it (lectures get renumbered)."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKS = sorted((ROOT / "src" / "fxcourse" / "checks").glob("lab*.py"))

# "Lecture 05, section 2 (Title…)", "lecture 06, section 5 'Title'", "Lecture course/02_x.ipynb,
# section '6 · Title'", "lecture 03, sections 3 (…) and 4 (…)".
_CITATION = re.compile(
    r"[Ll]ecture (?:course/)?(?P<lecture>\d\d)(?:_\w+\.ipynb)?,? sections? "
    r"(?:'(?P<qnum>\d+) · (?P<qtitle>[^']+)'|(?P<num>\d+)(?: \((?P<ptitle>[^)]*)\)| '(?P<stitle>[^']+)')?)")


def _headings(lecture: str) -> dict[int, str]:
    (path,) = sorted((ROOT / "course").glob(f"{lecture}_*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    found = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "lang-en" in cell.metadata.get("tags", []):
            for line in cell.source.splitlines():
                m = re.match(r"## (\d+) · (.+)", line)
                if m:
                    found[int(m.group(1))] = m.group(2).strip()
    return found


def _citations() -> list[tuple[str, str, int, str]]:
    out = []
    for path in CHECKS:
        # Join string literals that Python concatenates across lines: "… and "\n    "`with`'".
        text = re.sub(r'"\s*\n\s*f?"', "", path.read_text(encoding="utf-8"))
        for m in _CITATION.finditer(text):
            number = int(m.group("qnum") or m.group("num"))
            title = m.group("qtitle") or m.group("ptitle") or m.group("stitle") or ""
            out.append((path.name, m.group("lecture"), number, title))
    return out


def test_checkers_cite_lecture_sections():
    assert len(_citations()) >= 20  # the hint ladders point at lecture sections


@pytest.mark.parametrize("source, lecture, number, title", _citations())
def test_cited_section_exists_with_that_title(source, lecture, number, title):
    headings = _headings(lecture)
    assert number in headings, f"{source} cites lecture {lecture} section {number}; it has {sorted(headings)}"
    # A cited title is the heading's start, or its text with the markup left out ("…" cuts it short).
    plain = lambda s: re.sub(r"[`*]", "", s).rstrip("…. ").strip()  # noqa: E731
    assert plain(headings[number]).startswith(plain(title)), (
        f"{source} cites lecture {lecture} section {number} as {title!r}; its heading is {headings[number]!r}")
