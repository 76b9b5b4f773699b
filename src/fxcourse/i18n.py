"""Bilingual notebooks: one source holds English and 中文 prose side by side.

Every markdown cell is tagged ``lang-en`` or ``lang-zh``; each English cell is followed
directly by its Chinese twin, with the same headings (count and levels). Lectures in
``course/`` follow the skeleton: a level-1 title, sections, and ``## Summary`` / ``## 小结``
then ``## Exercises`` / ``## 练习`` as the last two sections. ``export`` writes
single-language copies for a workshop held in one language; it never writes into the
course's own folders, and a file it would replace is first copied to ``OUT/backups/``.
"""
from __future__ import annotations

import re
import shutil
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat

from .errors import FxCourseError

__all__ = ["Exported", "Problem", "check_notebook", "check_paths", "export", "headings", "notebooks_in"]

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
    from . import nbrun

    path = Path(path)
    nb = nbrun.read(path, where="i18n")
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


def notebooks_in(paths: list[str | Path], where: str = "i18n") -> list[Path]:
    """The notebooks named by ``paths`` (files or folders; checkpoints skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.glob("*.ipynb"))
        elif p.suffix == ".ipynb" and p.is_file():
            out.append(p)
        else:
            raise FxCourseError(got=str(p), accepted="a .ipynb file or a folder holding notebooks",
                                fix="check the path", where=where,
                                zh=f"{where}：{p} 既不是 .ipynb 文件，也不是存放笔记本的文件夹；请检查路径。")
    return out


def check_paths(paths: list[str | Path]) -> list[Problem]:
    """Problems in every notebook named by ``paths``; a notebook that cannot be read is one
    problem that says why (the others are still checked)."""
    problems: list[Problem] = []
    for path in notebooks_in(paths):
        try:
            problems += check_notebook(path)
        except FxCourseError as exc:
            reason = getattr(exc, "reason", None)
            if reason is None:
                raise
            problems.append(Problem(Path(path).as_posix(), None, f"{reason}; repair it or restore it from "
                                    f"version control / {exc.reason_zh}；请修复，或从版本库恢复"))
    return problems


@dataclass(frozen=True)
class Exported:
    """One file ``export`` wrote, and where the file it replaced went (if it replaced one)."""

    path: Path
    backup: Path | None = None

    def __str__(self) -> str:
        if self.backup is None:
            return str(self.path)
        return (f"{self.path} (the file it replaced was saved to {self.backup} / "
                f"被替换的文件已备份到 {self.backup})")


def _export_target_error(out: Path, got: str, zh: str) -> FxCourseError:
    return FxCourseError(got=got, accepted="an output folder outside the course's own folders (course/, labs/, "
                         "solutions/)", fix="choose another OUT, e.g. build/zh", where="i18n export",
                         zh=f"i18n export：{zh}；请换一个输出文件夹，例如 build/zh。")


def _check_out(out: Path) -> None:
    """OUT must be a folder (or not exist yet, under folders)."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise _export_target_error(out, f"OUT {out}, where {folder} is a file, not a folder",
                                           f"{folder} 是文件，不是文件夹")
            return


def _inside_course(target: Path) -> bool:
    """True when ``target`` would sit in a course's own course/, labs/ or solutions/ folder."""
    parent = target.parent.resolve()
    return parent.name in ("course", "labs", "solutions") and (parent.parent / "solutions").is_dir()


def _backup(target: Path, out: Path) -> Path:
    folder = out / "backups" / target.parent.name
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    backup, n = folder / f"{target.stem}.{stamp}.ipynb", 1
    while backup.exists():
        n += 1
        backup = folder / f"{target.stem}.{stamp}-{n}.ipynb"
    shutil.copy2(target, backup)
    return backup


def export(paths: list[str | Path], lang: str, out_dir: str | Path) -> list[Exported]:
    """Write single-language copies (the other language's prose removed; code and outputs kept)
    to ``out_dir/<folder>/<name>``. Every source is read and every target checked before
    anything is written; a target that exists with other content is first copied to
    ``out_dir/backups/<folder>/``, and a target in the course's own folders is refused."""
    from . import nbrun

    tag = {"en": "lang-en", "zh": "lang-zh"}.get(lang)
    if tag is None:
        raise FxCourseError(got=repr(lang), accepted="'en' or 'zh'", fix="use --lang en or --lang zh",
                            where="i18n export", zh=f"i18n export：不支持语言 {lang!r}；请用 --lang en 或 --lang zh。")
    other = "lang-zh" if tag == "lang-en" else "lang-en"
    out = Path(out_dir)
    _check_out(out)
    planned = []
    for path in notebooks_in(paths):
        nb = nbrun.read(path, where="i18n export")
        nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and _lang(c) == other)]
        nb.metadata["fxcourse_language"] = lang
        target = out / path.parent.name / path.name
        if target.resolve() == path.resolve() or _inside_course(target):
            raise _export_target_error(out, f"an output folder that would overwrite {target}",
                                       f"输出会覆盖课程自己的文件 {target}")
        if target.exists() and not target.is_file():
            raise _export_target_error(out, f"OUT {out}, where {target} is a folder, not a file",
                                       f"{target} 是文件夹，不是文件")
        planned.append((nb, target))
    written = []
    for nb, target in planned:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = nbformat.writes(nb)
        text += "" if text.endswith("\n") else "\n"  # what nbformat.write puts in a file
        target.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if target.exists() and target.read_bytes() != text.encode("utf-8"):
            backup = _backup(target, out)
        nbrun.write(nb, target)
        written.append(Exported(target, backup))
    return written
