"""Lectures fit a projector: code cells at most 88 columns and 30 lines, text tables at most
120 columns.

Why these numbers: 88 columns is black's line length, about what a 1280-pixel-wide JupyterLab
shows in a code cell at 13 px with the file browser open; 30 lines is one screen at 1280×720.
JupyterLab breaks an output line that is too wide anywhere, mid-word included, so an aligned
text table must fit the output area: at 1280 pixels, with JupyterLab's 13 px monospace font
(about 7.8 px a column), the side bars and the prompt column leave about 135 columns; 120
leaves room for a scroll bar. Columns are counted as a terminal counts them (a 中文 character
is two). A table is recognised by its rule line, the dashes under its header
(``-----  ---  -----``), as the course's viewers and lectures print them; the rule spans every
column, so its width is the table's.
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
LECTURES = sorted((ROOT / "course").glob("[0-9][0-9]_*.ipynb"))
CODE_COLUMNS = 88
CODE_LINES = 30
TABLE_COLUMNS = 120
RULE = re.compile(r"^ *-{2,}(?: +-{2,})+ *$")

# (notebook, first line of the cell) -> why it cannot be split. Keep this short.
LONG_CELLS = {
    ("03_fx_tracing_ir.ipynb", "def lower(gm: fx.GraphModule, *example) -> tuple[str, str]:"):
        "one function, the lowering walk the section reads from top to bottom; its helpers are "
        "already in the cells before it",
    ("08_backends_intervention.ipynb", "def make_probe(name: str, recorder=Recorder, then=None):"):
        "one function of 31 lines whose nested backend closes over the recorder it creates",
}
# (notebook, first line of the cell) -> why its text table is wider than TABLE_COLUMNS.
WIDE_TABLES = {
    ("08_backends_intervention.ipynb", "def printing_backend(gm: fx.GraphModule, example_inputs: list) -> object:"):
        "the cell shows what Graph.print_tabular prints, wide args column included; the next cell "
        "shows the same graph with graph_table(columns=[...]).to_text(width=110) instead",
}


def columns(line: str) -> int:
    """Columns a monospace font gives ``line``: wide (中文) characters count two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


def code_problems(nb: nbformat.NotebookNode, name: str) -> list[str]:
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        first = lines[0] if lines else ""
        for number, line in enumerate(lines, 1):
            if columns(line) > CODE_COLUMNS:
                problems.append(f"{name} cell {index} line {number}: {columns(line)} columns: {line.strip()[:60]}")
        if len(lines) > CODE_LINES and (name, first) not in LONG_CELLS:
            problems.append(f"{name} cell {index}: {len(lines)} lines (split it at a statement): {first[:60]}")
    return problems


def _text_outputs(cell: nbformat.NotebookNode) -> list[str]:
    """What JupyterLab shows as plain text: streams, and text/plain where no HTML is given."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(output.get("text", ""))
        else:
            data = output.get("data", {})
            if "text/plain" in data and "text/html" not in data:
                texts.append(data["text/plain"])
    return ["".join(t) if isinstance(t, list) else t for t in texts]


def table_problems(nb: nbformat.NotebookNode, name: str) -> list[str]:
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        first = (cell.source.splitlines() or [""])[0]
        for text in _text_outputs(cell):
            lines = text.splitlines()
            for k, line in enumerate(lines):
                if not RULE.match(line):
                    continue
                width = max(columns(line), columns(lines[k - 1]) if k else 0)
                if width > TABLE_COLUMNS and (name, first) not in WIDE_TABLES:
                    problems.append(f"{name} cell {index}: a {width}-column table: {first[:60]}")
    return problems


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.name)
def test_code_cells_fit_a_projector(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert code_problems(nb, path.name) == []


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.name)
def test_text_tables_fit_a_projector(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert table_problems(nb, path.name) == []


def test_lecture_list_is_complete() -> None:
    assert len(LECTURES) >= 13


@pytest.mark.parametrize("allowed", [LONG_CELLS, WIDE_TABLES], ids=["long cells", "wide tables"])
def test_allow_lists_name_cells_that_exist_and_need_it(allowed: dict) -> None:
    """A stale entry (cell renamed, split or narrowed since) would hide nothing: remove it."""
    for (name, first), why in allowed.items():
        assert why.strip(), (name, first)
        nb = nbformat.read(ROOT / "course" / name, as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code" and (c.source.splitlines() or [""])[0] == first]
        assert len(cells) == 1, f"{name}: no single code cell starts with {first!r}"
        cell = cells[0]
        if allowed is LONG_CELLS:
            assert len(cell.source.splitlines()) > CODE_LINES, f"{name}: {first!r} fits now"
        else:
            widths = [columns(line) for text in _text_outputs(cell) for line in text.splitlines() if RULE.match(line)]
            assert widths and max(widths) > TABLE_COLUMNS, f"{name}: {first!r} has no wide table now"


def test_checks_catch_violations() -> None:
    """The checks fail on a long line, a long cell, a wide table (also in 中文), and pass their limits."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1" + " " * 83 + "#"),
                nbformat.v4.new_code_cell("\n".join(f"a{i} = {i}" for i in range(31))),
                nbformat.v4.new_code_cell("s = '" + "中" * 42 + "'"),
                nbformat.v4.new_code_cell("ok = 1")]
    wide = "  ".join(["-" * 40] * 3)
    narrow = "  ".join(["-" * 30] * 3)
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", text=f"{'h' * 124}\n{wide}\nrow\n")]
    ok = nbformat.v4.new_code_cell("fine = 1")
    ok.outputs = [nbformat.v4.new_output("stream", text=f"head\n{narrow}\n" + "a long line, not a table " * 9)]
    nb.cells.append(ok)
    code = code_problems(nb, "fake.ipynb")
    assert [p.split(":")[0] for p in code] == ["fake.ipynb cell 0 line 1", "fake.ipynb cell 1",
                                              "fake.ipynb cell 2 line 1"], code
    assert columns("x = 1" + " " * 83 + "#") == 89 and columns("中") == 2
    tables = table_problems(nb, "fake.ipynb")
    assert tables == ["fake.ipynb cell 3: a 124-column table: ok = 1"], tables
