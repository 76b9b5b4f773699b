"""Bilingual notebooks: one source holds English and 中文 prose side by side.

Every markdown cell is tagged ``lang-en`` or ``lang-zh``; each English cell is followed
directly by its Chinese twin, with the same headings (count and levels). Lectures in
``course/`` follow the skeleton: a level-1 title, sections, and ``## Summary`` / ``## 小结``
then ``## Exercises`` / ``## 练习`` as the last two sections. The 中文 cells follow the
glossary ``course/GLOSSARY.md`` (a separate kind of problem, ``glossary``).

``export`` writes single-language copies for a workshop held in one language: a working
course of its own (lectures, labs and solutions, so ``fxcourse labs reset`` works inside it),
each notebook starting with a cell that sets the language, and (by default on the command
line) executed in that language so that what the library prints is in it too. It never
writes into the course's own folders, and a file it would replace is first copied to
``OUT/backups/``. ``check`` accepts such a single-language notebook (its metadata says its
language) and still reports a mixed one.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterator

import nbformat

from .._lang import current, only, pick
from ..errors import FxCourseError
from .nbrun import keep_copy, kernel_language, notebooks_in

__all__ = ["KINDS", "LANGUAGE_TAG", "Exported", "Problem", "check_glossary", "check_notebook", "check_paths",
           "export", "export_iter", "headings", "kernel_language", "notebooks_in", "single_language"]

LANGS = ("lang-en", "lang-zh")
SKELETON_END = {"lang-en": ("Summary", "Exercises"), "lang-zh": ("小结", "练习")}
#: The kinds of problem ``check`` looks for: English/中文 pairs and skeleton, and the glossary.
KINDS = ("parity", "glossary")
#: The tag of the first cell of an exported notebook, the one that sets its language.
LANGUAGE_TAG = "fxcourse-language"
DEFAULT_EXPORT = ["course", "labs", "solutions"]
#: The stylesheet jupyterlab-rise loads for slideshows of the notebooks in its folder (course/).
SLIDE_STYLE = "rise.css"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_NAMES = {"lang-en": ("English", "英文"), "lang-zh": ("中文", "中文")}


@dataclass(frozen=True)
class Problem:
    path: str
    cell: int | None
    message: str
    kind: str = "parity"

    def __str__(self) -> str:
        where = self.path if self.cell is None else only(f"{self.path} cell {self.cell}",
                                                         f"{self.path} 第 {self.cell} 个单元")
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


def _is_language_cell(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and LANGUAGE_TAG in cell.get("metadata", {}).get("tags", [])


def check_notebook(path: str | Path, *, skeleton: bool | None = None,
                   kinds: tuple[str, ...] = KINDS) -> list[Problem]:
    """Parity (and, for lectures, skeleton) problems in one notebook, then glossary problems.

    A notebook whose metadata names one language (``fxcourse_language``, as ``export``
    writes) is checked as single-language: every markdown cell in that language."""
    from . import nbrun

    path = Path(path)
    nb = nbrun.read(path, where="i18n")
    problems: list[Problem] = []
    if "parity" in kinds:
        single = {"en": "lang-en", "zh": "lang-zh"}.get(nb.metadata.get("fxcourse_language", ""))
        check = _check_single if single else _check_pairs
        skeleton = path.parent.name == "course" if skeleton is None else skeleton
        problems += check(nb, path.as_posix(), skeleton, single)  # type: ignore[operator]
    if "glossary" in kinds:
        problems += _glossary_problems(nb, path)
    return problems


def check_glossary(path: str | Path) -> list[Problem]:
    """Only the glossary problems of one notebook (see :mod:`fxcourse.tooling.glossary`).

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "course").mkdir()
    >>> _ = (root / "course" / "GLOSSARY.md").write_text(
    ...     "| English | 中文 | avoid | note |\\n|---|---|---|---|\\n| guard; guards | 守卫 | 保护条件 | |\\n")
    >>> nb = nbformat.v4.new_notebook(cells=[
    ...     nbformat.v4.new_markdown_cell("Dynamo checks its guards.", metadata={"tags": ["lang-en"]}),
    ...     nbformat.v4.new_markdown_cell("Dynamo 检查保护条件。", metadata={"tags": ["lang-zh"]})])
    >>> nbformat.write(nb, root / "course" / "00_demo.ipynb")
    >>> [p.message for p in check_glossary(root / "course" / "00_demo.ipynb")]
    ["中文 uses '保护条件' where the English says 'guards'; write '守卫' (glossary: course/GLOSSARY.md) / 英文用了“guards”，中文却写成“保护条件”；请用“守卫”（见术语表 course/GLOSSARY.md）"]
    """
    return check_notebook(path, kinds=("glossary",))


def _check_pairs(nb: nbformat.NotebookNode, shown: str, skeleton: bool, _: str | None) -> list[Problem]:
    problems: list[Problem] = []
    cells = nb.cells
    sections: dict[str, list[str]] = {"lang-en": [], "lang-zh": []}
    first = _first_prose(cells)
    i = 0
    while i < len(cells):
        cell = cells[i]
        if cell.cell_type != "markdown":
            i += 1
            continue
        lang = _lang(cell)
        if lang is None:
            problems.append(Problem(shown, i, only("markdown cell without exactly one of the tags lang-en / lang-zh",
                                                   "markdown 单元必须恰好带有 lang-en 或 lang-zh 中的一个标签")))
            i += 1
            continue
        if lang == "lang-zh":
            problems.append(Problem(shown, i, only("中文 cell without an English cell right before it",
                                                   "中文单元前面没有紧挨着的英文单元")))
            i += 1
            continue
        twin = cells[i + 1] if i + 1 < len(cells) else None
        if twin is None or twin.cell_type != "markdown" or _lang(twin) != "lang-zh":
            problems.append(Problem(shown, i, only("English cell has no 中文 twin right after it",
                                                   "英文单元后面没有紧挨着的中文单元")))
            i += 1
            continue
        en, zh = headings(cell.source), headings(twin.source)
        if [lvl for lvl, _ in en] != [lvl for lvl, _ in zh]:
            problems.append(Problem(shown, i, only(f"headings differ: English {_levels(en)} vs 中文 {_levels(zh)}",
                                                   f"标题不一致：英文 {_levels(en)}，中文 {_levels(zh)}")))
        if not twin.source.strip():
            problems.append(Problem(shown, i + 1, only("中文 cell is empty", "中文单元是空的")))
        sections["lang-en"] += [t for lvl, t in en if lvl == 2]
        sections["lang-zh"] += [t for lvl, t in zh if lvl == 2]
        if skeleton and i == first and not (en[:1] and en[0][0] == 1):
            problems.append(Problem(shown, i, _no_title()))
        i += 2
    if skeleton:
        problems += _skeleton_end(cells, shown, sections, first)
    return problems


def _check_single(nb: nbformat.NotebookNode, shown: str, skeleton: bool, lang: str) -> list[Problem]:
    """A single-language notebook: every markdown cell in ``lang``; the skeleton in ``lang``."""
    problems: list[Problem] = []
    cells = nb.cells
    first = _first_prose(cells)
    sections: dict[str, list[str]] = {lang: []}
    en_name, zh_name = _NAMES[lang]
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        tag = _lang(cell)
        if tag != lang:
            problems.append(Problem(shown, i, only(
                f"markdown cell tagged {tag or 'with neither lang-en nor lang-zh'} in a notebook whose metadata "
                f"says it is {en_name} only (fxcourse_language)",
                f"这个笔记本的元数据（fxcourse_language）说明它只含{zh_name}，但这个 markdown 单元"
                f"{'带有 ' + tag + ' 标签' if tag else '没有 lang-en / lang-zh 标签'}")))
            continue
        found = headings(cell.source)
        sections[lang] += [t for lvl, t in found if lvl == 2]
        if not cell.source.strip():
            problems.append(Problem(shown, i, only(f"{en_name} cell is empty", f"{zh_name}单元是空的")))
        if skeleton and i == first and not (found[:1] and found[0][0] == 1):
            problems.append(Problem(shown, i, _no_title()))
    if skeleton:
        problems += _skeleton_end(cells, shown, sections, first)
    return problems


def _first_prose(cells: list[nbformat.NotebookNode]) -> int:
    """Index of the first cell after an export's language cell."""
    i = 0
    while i < len(cells) and _is_language_cell(cells[i]):
        i += 1
    return i


def _no_title() -> str:
    return only("a lecture starts with a level-1 title (# ...)", "讲义以一级标题（# ...）开头")


def _skeleton_end(cells: list[nbformat.NotebookNode], shown: str, sections: dict[str, list[str]],
                  first: int) -> list[Problem]:
    problems = []
    if first >= len(cells) or cells[first].cell_type != "markdown":
        problems.append(Problem(shown, first, only("a lecture starts with its title in a markdown cell",
                                                   "讲义应以 markdown 单元中的标题开头")))
    for lang, found in sections.items():
        want = SKELETON_END[lang]
        if tuple(found[-2:]) != want:
            problems.append(Problem(shown, None, only(
                f"the last two '##' sections ({lang}) must be {' and '.join(want)}, found {found[-2:] or 'none'}",
                f"最后两个 '##' 小节（{lang}）必须是 {'、'.join(want)}，实际是 {found[-2:] or '无'}")))
    return problems


def _levels(found: list[tuple[int, str]]) -> str:
    return "[" + ", ".join("#" * lvl for lvl, _ in found) + "]"


def _glossary_problems(nb: nbformat.NotebookNode, path: Path) -> list[Problem]:
    """中文 cells using a word the glossary says to avoid where their English twin uses the term,
    and 中文 cells that write a glossary term in English where the glossary has a 中文 form."""
    from .glossary import english_in, find_glossary, findings, load as load_terms

    glossary = find_glossary(path)
    if glossary is None:
        return []
    terms = load_terms(glossary)
    shown_glossary = f"{glossary.parent.name}/{glossary.name}"
    problems = []
    cells = nb.cells
    for i in range(1, len(cells)):
        en, zh = cells[i - 1], cells[i]
        if not (en.cell_type == zh.cell_type == "markdown" and _lang(en) == "lang-en" and _lang(zh) == "lang-zh"):
            continue
        for found in findings(en.source, zh.source, terms):
            term, said = found.term, found.english
            note = f"; {term.note}" if term.note else ""
            problems.append(Problem(path.as_posix(), i, pick(
                f"中文 uses '{found.avoided}' where the English says '{said}'; write '{term.chinese}' "
                f"(glossary: {shown_glossary}{note})",
                f"英文用了“{said}”，中文却写成“{found.avoided}”；请用“{term.chinese}”（见术语表 {shown_glossary}）"),
                kind="glossary"))
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown" or _lang(cell) != "lang-zh":
            continue
        for english in english_in(cell.source, terms):
            term = english.term
            line = cell.source.count("\n", 0, english.offset) + 1
            problems.append(Problem(path.as_posix(), i, pick(
                f"中文 prose writes the term '{english.word}' in English (line {line}); write '{term.chinese}', or "
                f"gloss it in parentheses after the 中文 term: {term.forms[0]}（{english.word}） "
                f"(glossary: {shown_glossary})",
                f"中文正文直接写了英文术语“{english.word}”（第 {line} 行）；请写“{term.chinese}”，或在中文术语后用括号注明："
                f"{term.forms[0]}（{english.word}）（见术语表 {shown_glossary}）"), kind="glossary"))
    return problems


def check_paths(paths: list[str | Path], kinds: tuple[str, ...] = KINDS) -> list[Problem]:
    """Problems of the given kinds in every notebook named by ``paths``; a notebook that cannot
    be read is one problem that says why (the others are still checked)."""
    problems: list[Problem] = []
    for path in notebooks_in(paths):
        try:
            problems += check_notebook(path, kinds=kinds)
        except FxCourseError as exc:
            reason = getattr(exc, "reason", None)
            if reason is None:
                raise
            problems.append(Problem(Path(path).as_posix(), None, pick(
                f"{reason}; repair it or restore it from version control", f"{exc.reason_zh}；请修复，或从版本库恢复")))
    return problems


# -- single-language export ------------------------------------------------------------------

@dataclass(frozen=True)
class Exported:
    """One file ``export`` wrote, and where the file it replaced went (if it replaced one)."""

    path: Path
    backup: Path | None = None
    seconds: float = 0.0  # spent executing it

    def __str__(self) -> str:
        text = str(self.path) + (f" ({self.seconds:.1f} s)" if self.seconds else "")
        if self.backup is None:
            return text
        en, zh = f"the file it replaced was saved to {self.backup}", f"被替换的文件已备份到 {self.backup}"
        return text + (f"（{zh}）" if current() == "zh" else f" ({pick(en, zh)})")


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


def _is_export(root: Path) -> bool:
    """True when every notebook in ``root``'s course/, labs/ and solutions/ says its one language
    (an earlier export, which may be written again), and there is at least one."""
    import json

    found = [p for folder in ("course", "labs", "solutions") for p in (root / folder).glob("*.ipynb")]
    try:
        return bool(found) and all("fxcourse_language" in json.loads(p.read_text(encoding="utf-8")).get("metadata", {})
                                   for p in found)
    except (OSError, ValueError, AttributeError):
        return False


def _inside_course(target: Path, exports: dict[Path, bool] | None = None) -> bool:
    """True when ``target`` would sit in a course's own course/, labs/ or solutions/ folder
    (not an earlier single-language export; ``exports`` remembers which roots are)."""
    parent = target.parent.resolve()
    if parent.name not in ("course", "labs", "solutions") or not (parent.parent / "solutions").is_dir():
        return False
    exports = {} if exports is None else exports
    if parent.parent not in exports:
        exports[parent.parent] = _is_export(parent.parent)
    return not exports[parent.parent]


def _backup(target: Path, out: Path) -> Path:
    return keep_copy(target, out / "backups" / target.parent.name)


def single_language(nb: nbformat.NotebookNode, lang: str) -> nbformat.NotebookNode:
    """``nb`` with the other language's prose removed, its language in the metadata, and a first
    cell that sets the language for the notebook's kernel (so ``check()`` follows it even when
    the notebook is opened later without ``FXCOURSE_LANG``). A generated lab's record of its
    sources is updated, so ``labs check`` in the export still sees a pristine lab.

    >>> nb = nbformat.v4.new_notebook(cells=[
    ...     nbformat.v4.new_markdown_cell("# Title", metadata={"tags": ["lang-en"]}),
    ...     nbformat.v4.new_markdown_cell("# 标题", metadata={"tags": ["lang-zh"]})])
    >>> [c.source for c in single_language(nb, "zh").cells]
    ['import fxcourse; fxcourse.language("zh")', '# 标题']
    """
    from .nbrun import source_hash

    other = "lang-zh" if lang == "en" else "lang-en"
    record = nb.metadata.get("fxcourse", {})
    pristine = bool(record.get("source_hash")) and record.get("source_hash") == source_hash(nb)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "markdown" and _lang(c) == other)
                and not _is_language_cell(c)]
    # RISE skips it: a slideshow of the copy opens on the title (see fxcourse.tooling.slides)
    nb.cells.insert(0, nbformat.v4.new_code_cell(f'import fxcourse; fxcourse.language("{lang}")',
                                                 metadata={"tags": [LANGUAGE_TAG], "slideshow": {"slide_type": "skip"}}))
    if nb.get("nbformat_minor", 0) >= 5:
        nb.cells[0]["id"] = LANGUAGE_TAG  # a fixed id: exporting twice writes the same bytes
    else:
        nb.cells[0].pop("id", None)  # before nbformat 4.5 cells have no ids
    nb.metadata["fxcourse_language"] = lang
    if pristine:
        nb.metadata["fxcourse"]["source_hash"] = source_hash(nb)
    return nb


def export_iter(paths: list[str | Path], lang: str, out_dir: str | Path, *,
                execute: bool = False) -> Iterator[Exported]:
    """:func:`export`, one written file at a time (for progress on the command line)."""
    from . import nbrun
    from .glossary import find_glossary

    if lang not in ("en", "zh"):
        raise FxCourseError(got=repr(lang), accepted="'en' or 'zh'", fix="use --lang en or --lang zh",
                            where="i18n export", zh=f"i18n export：不支持语言 {lang!r}；请用 --lang en 或 --lang zh。")
    out = Path(out_dir)
    _check_out(out)
    planned, glossaries, exports, styles = [], {}, {}, {}
    for path in notebooks_in(paths):
        nb = single_language(nbrun.read(path, where="i18n export"), lang)
        target = out / path.parent.name / path.name
        if target.resolve() == path.resolve() or _inside_course(target, exports):
            raise _export_target_error(out, f"an output folder that would overwrite {target}",
                                       f"输出会覆盖课程自己的文件 {target}")
        if target.exists() and not target.is_file():
            raise _export_target_error(out, f"OUT {out}, where {target} is a folder, not a file",
                                       f"{target} 是文件夹，不是文件")
        if execute:
            nbrun.check_kernel(nb, path, where="i18n export")
        glossary = find_glossary(path)
        if glossary is not None and glossary.resolve() != (out / "course" / glossary.name).resolve():
            glossaries[glossary.resolve()] = out / "course" / glossary.name
        style = path.parent / SLIDE_STYLE  # what RISE loads for a slideshow of this folder's notebooks
        if style.is_file() and style.resolve() != (target.parent / SLIDE_STYLE).resolve():
            styles.setdefault(target.parent / SLIDE_STYLE, style)
        planned.append((nb, target))
    for source, target in list(glossaries.items())[:1]:  # one course's glossary per export
        yield _write(source.read_bytes(), target, out)
    for target, source in styles.items():
        yield _write(source.read_bytes(), target, out)
    for nb, target in planned:
        seconds = 0.0
        if execute:
            target.parent.mkdir(parents=True, exist_ok=True)
            start = datetime.now()
            with kernel_language(lang):
                nbrun.execute(nb, target.parent.resolve(), name=f"{target.parent.name}/{target.name}",
                              where="i18n export")
            seconds = (datetime.now() - start).total_seconds()
        _cut_slides(nb)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = nbformat.writes(nb)
        text += "" if text.endswith("\n") else "\n"  # what nbformat.write puts in a file
        yield _write(text.encode("utf-8"), target, out, nb=nb, seconds=seconds)


def _cut_slides(nb: nbformat.NotebookNode) -> None:
    """A lecture's slides cut again for the one language left (and its outputs, when re-run), by
    ``fxcourse slides mark``'s rules, so that ``slides check`` on the export agrees: a 中文
    paragraph is not as tall as its English twin was."""
    if not any("slideshow" in cell.get("metadata", {}) for cell in nb.cells[1:]):
        return  # not a slideshow (labs, solutions)
    from .slides import slide_types

    for cell, kind in zip(nb.cells, slide_types(nb)):
        cell.setdefault("metadata", {}).setdefault("slideshow", {})["slide_type"] = kind


def _write(data: bytes, target: Path, out: Path, *, nb: nbformat.NotebookNode | None = None,
           seconds: float = 0.0) -> Exported:
    from . import nbrun

    target.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if target.exists() and target.read_bytes() != data:
        backup = _backup(target, out)
    if nb is not None:
        nbrun.write(nb, target)
    else:
        target.write_bytes(data)
    return Exported(target, backup, seconds)


def export(paths: list[str | Path], lang: str, out_dir: str | Path, *, execute: bool = False) -> list[Exported]:
    """Write single-language copies (see :func:`single_language`; code and outputs kept) to
    ``out_dir/<folder>/<name>``, the course's ``GLOSSARY.md`` to ``out_dir/course/``, and the
    slideshow style (``rise.css``, see fxcourse.tooling.slides) beside the notebooks it styles.
    With ``execute``, each copy is run in a fresh kernel with ``FXCOURSE_LANG=lang`` before it
    is written, so its outputs are in that language. Every source is read and every target
    checked before anything is written; a target that exists with other content is first
    copied to ``out_dir/backups/<folder>/``, and a target in the course's own folders is refused.
    """
    return list(export_iter(paths, lang, out_dir, execute=execute))
