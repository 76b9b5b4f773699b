"""Lectures as slideshows: RISE (``jupyterlab-rise``) slide metadata, written by a tool.

RISE reads ``metadata.slideshow.slide_type`` on every cell. :func:`slide_types` derives it
from the notebook itself, so ``fxcourse slides mark course/`` can be run again after any edit
and ``fxcourse slides check`` (and a test) proves that every lecture carries what it would write:

* a markdown cell opening with a ``#`` or ``##`` heading starts a slide, ``###`` a sub-slide;
* prose right after a code cell is a fragment (it appears after the output it explains);
* everything else continues the current slide, unless the slide would grow past
  :data:`BUDGET` pixels (:func:`estimate_height`, at the sizes ``course/rise.css`` sets on a
  1280×720 screen): then the cell starts a sub-slide of its own ("continued" below the
  heading, reveal.js's vertical direction). A cell taller than a slide alone (a long function,
  a long output, a big drawing) gets a sub-slide to itself and scrolls inside it;
* the 中文 twin of an English cell gets the English cell's type, so both languages cut the
  course into the same slides; sizes are measured on the English cells and shared code;
* the cell ``fxcourse i18n export`` adds to set the language is skipped.

One language at a time: present the single-language copy that ``fxcourse i18n export --lang
en|zh OUT course`` writes. It keeps every cell's metadata and drops the other language's
cells, so no twin can add a slide or a fragment. The notebook's ``metadata.rise`` asks RISE
to scroll a slide taller than the screen; ``course/rise.css`` (which RISE loads for every
notebook in its folder, and which the export copies) sets the font sizes, keeps every slide
inside the screen and marks a slide that scrolls.
"""
from __future__ import annotations

import base64
import math
import re
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .._lang import pick

__all__ = ["BUDGET", "CODE_PX", "PROSE_PX", "RISE_SETTINGS", "SCREEN", "OutOfDate", "SlideSize", "check_paths",
           "estimate_height", "mark_notebook", "mark_paths", "marked_backups", "slide_heights", "slide_types"]

#: The projector the slides are made for (width, height in CSS pixels).
SCREEN = (1280, 720)
#: Font sizes ``course/rise.css`` gives prose and code (outputs too) on that screen.
PROSE_PX, CODE_PX = 24, 20
#: Pixels of a slide its cells may fill: the screen less rise.css's top padding (8) and the
#: "more below" bar that ends every slide (44).
BUDGET = SCREEN[1] - 8 - 44
#: Notebook-level RISE settings every lecture carries.
RISE_SETTINGS = {"scroll": True}
# How tall things render at those sizes, measured in Chromium (jupyterlab-rise 0.43) on every
# cell of lectures 03, 04, 07 and 08: code and text outputs to the pixel, prose within about a
# line, HTML tables within two; tests/test_slides_fit.py walks the densest decks again.
_PROSE_LINE = PROSE_PX * 1.4  # a line of prose (line-height 1.4)
_PROSE_CHARS = 92  # characters of prose in one line across the slide
_PROSE_GAP = 22  # below a paragraph
_MD_CELL = 20  # a markdown cell's own padding
_HEADINGS = {1: 74, 2: 60, 3: 52}  # a heading line with its margins (h4-h6 as h3)
_CODE_LINE = 26  # a line of code or output (20 px, line-height 1.3)
_CODE_CELL = 20  # a code cell's padding and editor border
_OUTPUT_PAD = 6  # each output
_OUTPUT_COLUMNS = 97  # monospace columns of an output line before it wraps (measured on a screenshot)
_IMAGE_WIDTH = 1180  # widest an output image shows unscaled
_TABLE_ROW = 28  # a line of an HTML table output (the course's graph tables)
_TABLE_MARGIN = 110  # a table's header line, margins and caption
_CODE_CHAR = 12.04  # a monospace column at 20 px
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


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MARKUP = re.compile(r"[`*_]|<[^>]+>")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _columns(line: str) -> int:
    """Columns a monospace font gives ``line`` (a 中文 character is two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def _prose_lines(text: str, width: int = _PROSE_CHARS) -> int:
    shown = _MARKUP.sub("", _LINK.sub(r"\1", text)).strip()
    return max(1, math.ceil(_columns(shown) / width))


def _output_lines(text: str) -> int:
    return sum(max(1, math.ceil(_columns(line) / _OUTPUT_COLUMNS)) for line in _ANSI.sub("", text).splitlines())


def _markdown_height(source: str) -> float:
    """Paragraphs, list items, headings, table rows and fenced code of a markdown cell."""
    height: float = _MD_CELL
    blocks: list[list[str]] = []  # [kind, text]
    fence = None
    for line in source.splitlines():
        if fence is not None:  # inside ``` ... ```
            if line.strip().startswith("```"):
                height += fence * 27 + 30
                fence = None
            else:
                fence += 1
        elif line.strip().startswith("```"):
            fence = 0
        elif not line.strip():
            blocks.append(["blank", ""])
        elif _HEADING.match(line):
            height += _HEADINGS.get(len(_HEADING.match(line).group(1)), _HEADINGS[3])
            blocks.append(["heading", ""])
        elif line.lstrip().startswith("|"):
            if not re.match(r"^\s*\|[\s:|-]+\|\s*$", line):  # not the rule under the header
                cells = line.strip().strip("|").split("|")  # columns share the width: long cells wrap
                width = max(8, _PROSE_CHARS // len(cells) - 2)
                height += max(_prose_lines(c, width) for c in cells) * _PROSE_LINE + 8
            blocks.append(["row", ""])
        elif _ITEM.match(line):
            blocks.append(["item", line])
        elif blocks and blocks[-1][0] in ("para", "item"):
            blocks[-1][1] += " " + line.strip()  # markdown joins the lines of a paragraph
        else:
            blocks.append(["para", line])
    for kind, text in blocks:
        if kind == "para":
            height += _prose_lines(text) * _PROSE_LINE + _PROSE_GAP
        elif kind == "item":
            height += _prose_lines(text, _PROSE_CHARS - 3) * _PROSE_LINE
    return height + (fence or 0) * 27


def _image_size(data: dict) -> tuple[float, float] | None:
    """(width, height) in CSS pixels of an image output: a PNG's header, an SVG's size."""
    if "image/png" in data:
        raw = base64.b64decode("".join(data["image/png"])[:64])
        if raw[:8] == b"\x89PNG\r\n\x1a\n":
            return struct.unpack(">II", raw[16:24])
    if "image/svg+xml" in data:
        svg = "".join(data["image/svg+xml"])
        head = re.search(r"<svg\b[^>]*>", svg)
        size = [re.search(rf'\b{k}="([0-9.]+)(pt|px)?"', head.group(0)) if head else None for k in ("width", "height")]
        if all(size):
            return tuple(float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1) for m in size)
    for kind in ("image/png", "image/jpeg", "image/svg+xml"):
        if kind in data:
            return (_IMAGE_WIDTH, 400)  # unknown size: about half a slide
    return None


def _output_height(output: dict) -> float:
    if output.get("output_type") == "stream":
        return _OUTPUT_PAD + _CODE_LINE * _output_lines("".join(output.get("text", "")))
    if output.get("output_type") == "error":
        return _OUTPUT_PAD + _CODE_LINE * _output_lines("\n".join(output.get("traceback", [])))
    data = output.get("data", {})
    size = _image_size(data)
    if size is not None:
        width, height = size
        return _OUTPUT_PAD + height * min(1.0, _IMAGE_WIDTH / width)
    if "text/html" in data:
        html = "".join(data["text/html"])
        rows = 0.0
        for row in re.findall(r"<tr\b.*?</tr>", html, re.S):  # a long row wraps across the slide
            cells = [_MARKUP.sub("", c) for c in re.findall(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", row, re.S)]
            width = _IMAGE_WIDTH / max(1, len(cells)) - 16  # columns share the width: long cells wrap
            rows += max([math.ceil(_columns(c) * _CODE_CHAR / width) for c in cells] + [1])
        rows += html.count("<p") + html.count("<br") + html.count("<li") + html.count("<h") + html.count("<summary")
        return _OUTPUT_PAD + (_TABLE_MARGIN if "<table" in html else 20) + _TABLE_ROW * max(1, rows)
    if "text/plain" in data:
        return _OUTPUT_PAD + _CODE_LINE * _output_lines("".join(data["text/plain"]))
    return 0


def estimate_height(cell: nbformat.NotebookNode) -> int:
    """About how many pixels ``cell`` takes on a 1280×720 slide, stored outputs included (the
    view of a trusted notebook: drawings at their size, HTML tables rendered).

    >>> estimate_height(nbformat.v4.new_code_cell("x = 1\\nx"))
    72
    >>> estimate_height(nbformat.v4.new_markdown_cell("## Title\\n\\nOne line."))
    136
    """
    if cell.cell_type != "code":
        return round(_markdown_height(cell.source))
    height = _CODE_CELL + _CODE_LINE * max(1, len(cell.source.splitlines()))
    return round(height + sum(_output_height(o) for o in cell.get("outputs", [])))


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
    used = 0  # pixels on the current (sub-)slide
    previous_kind = None  # the kind of the previous cell that was sized (not a twin, not skipped)
    for i, cell in enumerate(nb.cells):
        if LANGUAGE_TAG in _tags(cell):
            types.append("skip")
            continue
        if _twin_of_previous(nb.cells, i):
            types.append(types[-1])
            continue
        height, level = estimate_height(cell), _heading_level(cell)
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
    from .nbrun import notebooks_in
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
    from .nbrun import notebooks_in

    return [Path(p) for p in notebooks_in(paths, where="slides mark") if mark_notebook(p)]


@dataclass(frozen=True)
class SlideSize:
    """One slide or sub-slide of a lecture as ``slide_types`` cuts it, in English."""

    first: int  # index of its first cell in the notebook
    cells: int  # how many cells it shows (English prose, code)
    height: int  # estimated pixels (:func:`estimate_height`)


def slide_heights(nb: nbformat.NotebookNode, types: list[str] | None = None) -> list[SlideSize]:
    """The estimated height of every (sub-)slide of ``nb`` cut as ``types`` says (default: its
    stored slide metadata); the 中文 twins and skipped cells are left out, as an English
    single-language copy shows it."""
    if types is None:
        types = [c.get("metadata", {}).get("slideshow", {}).get("slide_type") or "-" for c in nb.cells]
    sizes: list[list[int]] = []  # [first, cells, height]
    for i, (cell, kind) in enumerate(zip(nb.cells, types)):
        if kind in ("skip", "notes") or "lang-zh" in _tags(cell):
            continue
        if kind in ("slide", "subslide") or not sizes:
            sizes.append([i, 0, 0])
        sizes[-1][1] += 1
        sizes[-1][2] += estimate_height(cell)
    return [SlideSize(*s) for s in sizes]
