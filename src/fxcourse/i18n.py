"""Bilingual notebooks: one source holds English and 中文 prose side by side.

Every markdown cell is tagged ``lang-en`` or ``lang-zh``; each English cell is followed
directly by its Chinese twin, with the same headings (count and levels). Lectures in
``course/`` follow the skeleton: a level-1 title, sections, and ``## Summary`` / ``## 小结``
then ``## Exercises`` / ``## 练习`` as the last two sections. ``export`` writes
single-language copies for a workshop held in one language.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .errors import FxCourseError

__all__ = ["Problem", "check_notebook", "check_paths", "export", "headings", "notebooks_in"]

LANGS = ("lang-en", "lang-zh")
SKELETON_END = {"lang-en": ("Summary", "Exercises"), "lang-zh": ("小结", "练习")}
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Problem:
    path: str
    cell: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path} cell {self.cell}" if self.cell is not None else self.path
        return f"{where}: {self.message}"


def headings(markdown: str) -> list[tuple[int, str]]:
    """``(level, text)`` of each heading, ignoring fenced code.

    >>> headings("# Title\\n```\\n# not a heading\\n```\\n## Part")
    [(1, 'Title'), (2, 'Part')]
    """
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else _HEADING.match(line)
        if m:
            found.append((len(m.group(1)), m.group(2)))
    return found


def _lang(cell: nbformat.NotebookNode) -> str | None:
    tags = [t for t in cell.get("metadata", {}).get("tags", []) if t in LANGS]
    return tags[0] if len(tags) == 1 else None


def check_notebook(path: str | Path, *, skeleton: bool | None = None) -> list[Problem]:
    """Parity (and, for lectures, skeleton) problems in one notebook."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    shown = path.as_posix()
    skeleton = path.parent.name == "course" if skeleton is None else skeleton
    problems: list[Problem] = []
    cells = nb.cells
    sections: dict[str, list[str]] = {"lang-en": [], "lang-zh": []}
    i = 0
    while i < len(cells):
        cell = cells[i]
        if cell.cell_type != "markdown":
            i += 1
            continue
        lang = _lang(cell)
        if lang is None:
            problems.append(Problem(shown, i, "markdown cell without exactly one of the tags lang-en / lang-zh"))
            i += 1
            continue
        if lang == "lang-zh":
            problems.append(Problem(shown, i, "中文 cell without an English cell right before it"))
            i += 1
            continue
        twin = cells[i + 1] if i + 1 < len(cells) else None
        if twin is None or twin.cell_type != "markdown" or _lang(twin) != "lang-zh":
            problems.append(Problem(shown, i, "English cell has no 中文 twin right after it"))
            i += 1
            continue
        en, zh = headings(cell.source), headings(twin.source)
        if [lvl for lvl, _ in en] != [lvl for lvl, _ in zh]:
            problems.append(Problem(shown, i, f"headings differ: English {_levels(en)} vs 中文 {_levels(zh)}"))
        if not twin.source.strip():
            problems.append(Problem(shown, i + 1, "中文 cell is empty"))
        sections["lang-en"] += [t for lvl, t in en if lvl == 2]
        sections["lang-zh"] += [t for lvl, t in zh if lvl == 2]
        if skeleton and i == 0 and not (en[:1] and en[0][0] == 1):
            problems.append(Problem(shown, 0, "a lecture starts with a level-1 title (# ...)"))
        i += 2
    if skeleton:
        if not cells or cells[0].cell_type != "markdown":
            problems.append(Problem(shown, 0, "a lecture starts with its title in a markdown cell"))
        for lang, want in SKELETON_END.items():
            if tuple(sections[lang][-2:]) != want:
                problems.append(Problem(shown, None, f"the last two '##' sections ({lang}) must be "
                                        f"{' and '.join(want)}, found {sections[lang][-2:] or 'none'}"))
    return problems


def _levels(found: list[tuple[int, str]]) -> str:
    return "[" + ", ".join("#" * lvl for lvl, _ in found) + "]"


def notebooks_in(paths: list[str | Path]) -> list[Path]:
    """The notebooks named by ``paths`` (files or folders; checkpoints skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.glob("*.ipynb"))
        elif p.suffix == ".ipynb" and p.is_file():
            out.append(p)
        else:
            raise FxCourseError(got=str(p), accepted="a .ipynb file or a folder holding notebooks",
                                fix="check the path", where="i18n")
    return out


def check_paths(paths: list[str | Path]) -> list[Problem]:
    problems: list[Problem] = []
    for path in notebooks_in(paths):
        problems += check_notebook(path)
    return problems


def export(paths: list[str | Path], lang: str, out_dir: str | Path) -> list[Path]:
    """Write single-language copies (the other language's prose removed; code and outputs kept)."""
    tag = {"en": "lang-en", "zh": "lang-zh"}.get(lang)
    if tag is None:
        raise FxCourseError(got=repr(lang), accepted="'en' or 'zh'", fix="use --lang en or --lang zh",
                            where="i18n export")
    other = "lang-zh" if tag == "lang-en" else "lang-en"
    written = []
    for path in notebooks_in(paths):
        nb = nbformat.read(path, as_version=4)
        nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and _lang(c) == other)]
        nb.metadata["fxcourse_language"] = lang
        target = Path(out_dir) / path.parent.name / path.name
        if target.resolve() == path.resolve():
            raise FxCourseError(got=f"an output folder that would overwrite {path}",
                                accepted="a folder outside the course's own folders",
                                fix="choose another OUT, e.g. build/zh", where="i18n export")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        written.append(target)
    return written
