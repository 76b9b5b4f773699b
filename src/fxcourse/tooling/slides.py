"""Lectures as slideshows: RISE (``jupyterlab-rise``) slide metadata, written by a tool.

RISE reads ``metadata.slideshow.slide_type`` on every cell. :func:`slide_types` derives it
from the notebook itself, so ``fxcourse slides mark course/`` can be run again after any edit
and ``fxcourse slides check`` (and a test) proves that every lecture carries what it would write:

* a markdown cell opening with a ``#`` or ``##`` heading starts a slide, ``###`` a sub-slide;
* prose right after a code cell is a fragment (it appears after the output it explains);
* everything else continues the current slide, unless the slide would grow past
  :data:`BUDGET` projector lines: then the cell starts a sub-slide of its own ("continued"
  below the heading, reveal.js's vertical direction);
* the 中文 twin of an English cell gets the English cell's type, so both languages cut the
  course into the same slides; sizes are measured on the English cells and shared code;
* the cell ``fxcourse i18n export`` adds to set the language is skipped.

One language at a time: present the single-language copy that ``fxcourse i18n export --lang
en|zh OUT course`` writes. It keeps every cell's metadata and drops the other language's
cells, so no twin can add a slide or a fragment. The notebook's ``metadata.rise`` asks RISE
to scroll a slide taller than the screen.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .._lang import pick

__all__ = ["BUDGET", "RISE_SETTINGS", "OutOfDate", "check_paths", "estimate_lines", "mark_notebook",
           "mark_paths", "marked_backups", "slide_types"]

#: About how many lines of notebook text fit on a 1280×720 projector in RISE.
BUDGET = 30
#: Notebook-level RISE settings every lecture carries.
RISE_SETTINGS = {"scroll": True}
#: Characters per projector line before prose or output wraps.
WIDTH = 100
#: An image or drawing counts as this many lines.
IMAGE_LINES = 16
#: The tag of the cell ``fxcourse i18n export`` adds (fxcourse.tooling.i18n.LANGUAGE_TAG).
LANGUAGE_TAG = "fxcourse-language"
_HEADING = re.compile(r"^(#{1,6})\s")


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _heading_level(cell: nbformat.NotebookNode) -> int:
    """The level of the heading a markdown cell opens with (0: none)."""
    if cell.cell_type != "markdown":
        return 0
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    m = _HEADING.match(first)
    return len(m.group(1)) if m else 0


def _wrapped(text: str) -> int:
    return sum(max(1, math.ceil(len(line) / WIDTH)) for line in text.splitlines())


def estimate_lines(cell: nbformat.NotebookNode) -> int:
    """Roughly how many projector lines ``cell`` takes with its stored outputs.

    >>> estimate_lines(nbformat.v4.new_markdown_cell("## Title\\n\\nOne line."))
    4
    >>> estimate_lines(nbformat.v4.new_code_cell("x = 1\\nx"))
    2
    """
    if cell.cell_type == "markdown":
        return _wrapped(cell.source) + (1 if _heading_level(cell) else 0)
    lines = len(cell.source.splitlines()) or 1
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            lines += _wrapped(output.get("text", ""))
            continue
        data = output.get("data", {})
        if any(kind.startswith("image/") for kind in data):
            lines += IMAGE_LINES
        elif "text/html" in data:
            html = "".join(data["text/html"])
            lines += max(2, html.count("<tr") + html.count("<p") + html.count("<br") + html.count("<li"))
        elif "text/plain" in data:
            lines += _wrapped("".join(data["text/plain"]))
        elif output.get("output_type") == "error":
            lines += len(output.get("traceback", []))
    return lines


def _twin_of_previous(cells: list[nbformat.NotebookNode], i: int) -> bool:
    """Whether cell ``i`` is the 中文 twin of the English cell just before it."""
    return (i > 0 and cells[i].cell_type == "markdown" and "lang-zh" in _tags(cells[i])
            and cells[i - 1].cell_type == "markdown" and "lang-en" in _tags(cells[i - 1]))


def slide_types(nb: nbformat.NotebookNode) -> list[str]:
    """The RISE ``slide_type`` of every cell of ``nb`` (see the module's rules).

    >>> md = lambda s, lang: nbformat.v4.new_markdown_cell(s, metadata={"tags": [f"lang-{lang}"]})
    >>> nb = nbformat.v4.new_notebook(cells=[md("# Title", "en"), md("# 标题", "zh"),
    ...     nbformat.v4.new_code_cell("x = 1"), md("Notice x.", "en"), md("注意 x。", "zh"),
    ...     md("### Detail", "en"), md("### 细节", "zh")])
    >>> slide_types(nb)
    ['slide', 'slide', '-', 'fragment', 'fragment', 'subslide', 'subslide']
    """
    types: list[str] = []
    used = 0  # lines on the current (sub-)slide
    previous_kind = None  # the kind of the previous cell that was sized (not a twin, not skipped)
    for i, cell in enumerate(nb.cells):
        if LANGUAGE_TAG in _tags(cell):
            types.append("skip")
            continue
        if _twin_of_previous(nb.cells, i):
            types.append(types[-1])
            continue
        height, level = estimate_lines(cell), _heading_level(cell)
        if level in (1, 2):
            kind, used = "slide", height
        elif level == 3:
            kind, used = "subslide", height
        elif i > 0 and used + height > BUDGET and used > 0:
            kind, used = "subslide", height
        else:
            kind = "fragment" if cell.cell_type == "markdown" and previous_kind == "code" else "-"
            used += height
        types.append(kind)
        previous_kind = cell.cell_type
    return types


def _differences(nb: nbformat.NotebookNode) -> list[tuple[int, str | None, str]]:
    found = []
    for i, (cell, want) in enumerate(zip(nb.cells, slide_types(nb))):
        have = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        if have != want:
            found.append((i, have, want))
    return found


def mark_notebook(path: str | Path) -> bool:
    """Write the slide metadata into the notebook at ``path``; True if it changed. Outputs,
    sources and every other field stay as they are; the version it replaced is kept in
    ``backups/`` first (see :func:`marked_backups`)."""
    from .nbrun import read, write

    nb = read(path, where="slides mark")
    changed = bool(_differences(nb)) or nb.metadata.get("rise") != RISE_SETTINGS
    if changed:
        for cell, kind in zip(nb.cells, slide_types(nb)):
            cell.metadata["slideshow"] = {"slide_type": kind}
        nb.metadata["rise"] = dict(RISE_SETTINGS)
        kept = write(nb, path, keep=True)
        if kept is not None:
            _KEPT[Path(path)] = kept
    return changed


_KEPT: dict[Path, Path] = {}  # notebook -> the copy of what mark_notebook replaced, this process


def marked_backups() -> dict[Path, Path]:
    """Each notebook ``mark_notebook`` rewrote in this process, and where its old version is."""
    return dict(_KEPT)


@dataclass(frozen=True)
class OutOfDate:
    """A notebook whose slide metadata is not what ``slides mark`` writes."""

    path: Path
    cells: tuple[tuple[int, str | None, str], ...]  # (cell index, stored, expected)
    rise: bool  # whether metadata.rise differs

    def __str__(self) -> str:
        first = [(i, f"{have!r} -> {want!r}") for i, have, want in self.cells[:3]]
        more = len(self.cells) - len(first)
        rise = [f"metadata.rise -> {RISE_SETTINGS}"] if self.rise else []
        en = ", ".join([f"cell {i}: {s}" for i, s in first] + ([f"{more} more cells"] if more > 0 else []) + rise)
        zh = "，".join([f"单元格 {i}：{s}" for i, s in first] + ([f"另有 {more} 个单元格"] if more > 0 else []) + rise)
        return f"{self.path}: " + pick(f"slide metadata out of date ({en})", f"幻灯片元数据过期（{zh}）")


def check_paths(paths: list[str | Path]) -> list[OutOfDate]:
    """Every notebook under ``paths`` whose slide metadata differs from what ``mark`` writes."""
    from .i18n import notebooks_in
    from .nbrun import read

    problems = []
    for path in notebooks_in(paths, where="slides check"):
        nb = read(path, where="slides check")
        cells = _differences(nb)
        rise = nb.metadata.get("rise") != RISE_SETTINGS
        if cells or rise:
            problems.append(OutOfDate(Path(path), tuple(cells), rise))
    return problems


def mark_paths(paths: list[str | Path]) -> list[Path]:
    """Mark every notebook under ``paths``; returns those whose metadata changed."""
    from .i18n import notebooks_in

    return [Path(p) for p in notebooks_in(paths, where="slides mark") if mark_notebook(p)]
