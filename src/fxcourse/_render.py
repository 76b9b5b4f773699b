"""Shared rendering for every viewer: a plain table with a text view and an HTML view.

Viewers build a :class:`Table` and wrap it in their own result object. Rendering is
deterministic (no ids, addresses or timestamps) and everything is HTML-escaped.
"""
from __future__ import annotations

import html
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from ._lang import only

__all__ = ["HTML_MAX_ROWS", "Table", "elide", "esc", "terminal_width"]

ELLIPSIS = "…"
HTML_MAX_ROWS = 200  # viewers fold the middle of longer tables into a <details> element


class Viewable:
    """Display plumbing shared by every result object: ``str()`` and IPython's text/plain
    show ``to_text()``, JupyterLab's rich display shows ``to_html()``."""

    def to_text(self) -> str:  # pragma: no cover - each viewer defines it
        raise NotImplementedError

    def to_html(self) -> str:  # pragma: no cover - each viewer defines it
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.to_text())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # IPython's text/plain uses the first class in the MRO that defines _repr_pretty_
        # or __repr__; a viewer's short __repr__ would win over the inherited method, so
        # every subclass gets its own reference to it.
        super().__init_subclass__(**kwargs)
        if "_repr_pretty_" not in cls.__dict__:
            cls._repr_pretty_ = Viewable._repr_pretty_  # type: ignore[method-assign]


class TableView(Viewable):
    """A viewer whose content is one :class:`Table`: exposes its columns and rows as data."""

    _table: "Table"

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self._table.columns)

    @property
    def rows(self) -> list[tuple[str, ...]]:
        return [tuple(row) for row in self._table.rows]


def table_style(css_class: str, rows: dict[str, str]) -> str:
    """The inline CSS of a viewer's table: shared layout plus one rule per row class.

    Row rules are written as ``.X table tbody tr.Y`` so they outrank JupyterLab's zebra
    striping (``.jp-RenderedHTMLCommon tbody tr:nth-child(odd)``), and cells are left-aligned
    with ``!important`` because JupyterLab right-aligns them with a two-class selector;
    a browser test checks both.

    >>> table_style("t", {"add": "background:#efe"}).endswith(".t table tbody tr.add{background:#efe}")
    True
    """
    box = f".{css_class}"
    layout = (
        f"{box} table{{border-collapse:collapse;font-family:monospace;font-size:12px}}"
        f"{box} th{{text-align:left!important;border-bottom:1px solid #888}}"
        f"{box} td{{text-align:left!important;padding:1px 8px;vertical-align:top;max-width:40em;overflow-wrap:anywhere}}"
        f"{box} summary{{cursor:pointer;color:#555;padding:2px 8px}}"
    )
    row = f"{box} table tbody tr"
    return layout + "".join(
        ",".join(f"{row}.{name}" for name in names.split(",")) + "{" + rule + "}"
        for names, rule in rows.items()
    )


def esc(text: object) -> str:
    """HTML-escape ``text`` (quotes included).

    >>> esc("<built-in function add>")
    '&lt;built-in function add&gt;'
    """
    return html.escape(str(text), quote=True)


def elide(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` characters, marking the cut with an ellipsis.

    >>> elide("abcdefgh", 5)
    'abcd…'
    >>> elide("abc", 5)
    'abc'
    """
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: width - 1] + ELLIPSIS


def terminal_width(default: int = 120) -> int:
    """The terminal's width; ``default`` inside a Jupyter kernel, so that a notebook's text
    output is the same whichever process launched the kernel (nbval, nbclient, JupyterLab)."""
    if _in_kernel():
        return default
    return shutil.get_terminal_size((default, 24)).columns


def _in_kernel() -> bool:
    """True when this code runs in a Jupyter kernel's shell (not merely a process that
    imported IPython or ipykernel)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


@dataclass
class Table:
    """Rows of strings under named columns.

    ``row_classes`` gives each row a CSS class (for example its opcode); ``indent`` gives
    each row a nesting depth, shown by indenting the first column. ``labels``, when given,
    are the headers shown instead of the column names (the names stay the table's keys).
    Text output counts a CJK character as two columns, so 中文 cells stay aligned.

    >>> t = Table(["opcode", "name"], [["placeholder", "x"], ["output", "output"]])
    >>> print(t.to_text())
    opcode       name
    -----------  ------
    placeholder  x
    output       output
    """

    columns: list[str]
    rows: list[list[str]]
    row_classes: list[str] = field(default_factory=list)
    indent: list[int] = field(default_factory=list)
    css_class: str = "fxcourse-table"
    caption: str = ""
    labels: list[str] = field(default_factory=list)

    @property
    def headers(self) -> list[str]:
        """What the header row shows: ``labels`` if given, else the column names."""
        return list(self.labels) if self.labels else list(self.columns)

    def _cells(self) -> list[list[str]]:
        if not self.indent:
            return self.rows
        out = []
        for row, depth in zip(self.rows, self.indent):
            out.append(["  " * depth + row[0], *row[1:]] if row else row)
        return out

    def to_text(self, width: int | None = None, max_rows: int | None = None,
                fold_note: str | None = None) -> str:
        """Aligned columns; each cell is elided so the table fits ``width`` characters.
        Beyond ``max_rows`` the middle rows are left out and one line says how many
        (``fold_note``, if given, is that line, with ``{n}`` standing for the count)."""
        width = width or terminal_width()
        cells, hidden_at, hidden = _window(self._cells(), max_rows)
        headers = self.headers
        columns = [[*map(str, col)] for col in zip(*cells)] or [[] for _ in self.columns]
        wide = _has_wide(headers, columns)
        size = _display_width if wide else len
        cut = _elide_wide if wide else elide
        natural = [max(size(name), *map(size, col)) if col else size(name)
                   for name, col in zip(headers, columns)]
        widths = _fit(natural, width, gap=2)
        for i, (col, w) in enumerate(zip(columns, widths)):
            if natural[i] > w:  # only columns that were cut need eliding
                columns[i] = [cut(c, w) for c in col]
        if wide:
            def line(*row: str) -> str:
                return "  ".join(c + " " * (w - _display_width(c)) for c, w in zip(row, widths))
        else:
            line = "  ".join(f"{{:<{w}}}" for w in widths).format  # one C-level call per row
        rule = "  ".join(("-" if name else " ") * w for name, w in zip(headers, widths))
        header = [cut(name, w) for name, w in zip(headers, widths)]
        lines = [line(*header).rstrip(), rule.rstrip()]
        lines += [line(*row).rstrip() for row in zip(*columns)]
        if hidden_at >= 0:
            note = fold_note.format(n=hidden) if fold_note else f"{ELLIPSIS} {_more(hidden)} {ELLIPSIS}"
            lines.insert(2 + hidden_at, note)
        text = "\n".join(lines)
        return f"{self.caption}\n{text}" if self.caption else text

    def to_html(self, max_rows: int | None = None, style: str = "", fold_note: str | None = None) -> str:
        """An HTML ``<table>``; with ``max_rows``, the middle rows collapse into a
        ``<details>`` element that says how many rows it holds. With ``fold_note`` they are
        left out instead (so a huge table stays small) and one row shows the note, with
        ``{n}`` standing for the count.

        >>> Table(["target"], [["<built-in function add>"]]).to_html()
        '<div class="fxcourse-table"><table><thead><tr><th>target</th></tr></thead><tbody><tr><td>&lt;built-in function add&gt;</td></tr></tbody></table></div>'
        """
        n = len(self.rows)
        classes = self.row_classes or [""] * n
        depth = self.indent or [0] * n
        cells = _escape_rows(self.rows)
        class_attr = {c: f' class="{esc(c)}"' if c else "" for c in set(classes)}

        def tr(i: int) -> str:
            row = cells[i]
            pad = f' style="padding-left:{0.4 + 1.2 * depth[i]:.1f}em"' if depth[i] else ""
            body = "</td><td>".join(row[1:])
            rest = f"<td>{body}</td>" if len(row) > 1 else ""
            return f"<tr{class_attr[classes[i]]}><td{pad}>{row[0] if row else ''}</td>{rest}</tr>"

        head = "".join(f"<th>{esc(c)}</th>" for c in self.headers)
        parts = [f'<div class="{esc(self.css_class)}">']
        if style:
            parts.append(f"<style>{style}</style>")
        if self.caption:
            parts.append(f"<div><b>{esc(self.caption)}</b></div>")
        parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
        if max_rows is None or n <= max_rows:
            parts.extend(tr(i) for i in range(n))
        elif fold_note is not None:
            top = max_rows // 2
            bottom = n - (max_rows - top)
            parts.extend(tr(i) for i in range(top))
            note = esc(fold_note.format(n=bottom - top))
            parts.append(f'<tr class="fold"><td colspan="{max(len(self.columns), 1)}">{note}</td></tr>')
            parts.extend(tr(i) for i in range(bottom, n))
        else:
            top = max_rows // 2
            bottom = n - (max_rows - top)
            parts.extend(tr(i) for i in range(top))
            parts.append("</tbody></table>")
            parts.append(f"<details><summary>{_more(bottom - top)}</summary><table><tbody>")
            parts.extend(tr(i) for i in range(top, bottom))
            parts.append("</tbody></table></details><table><tbody>")
            parts.extend(tr(i) for i in range(bottom, n))
        parts.append("</tbody></table></div>")
        return "".join(parts)


def _more(count: int) -> str:
    return only(f"{count} more row" if count == 1 else f"{count} more rows", f"另有 {count} 行")


_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")


def _has_wide(headers: list[str], columns: list[list[str]]) -> bool:
    """Whether any header or cell holds a character a terminal shows two columns wide."""
    return bool(_WIDE.search("".join(headers))) or any(_WIDE.search("".join(col)) for col in columns)


def _display_width(text: str) -> int:
    """Columns ``text`` takes in a terminal: a CJK character counts two.

    >>> _display_width("节点 x")
    6
    """
    return len(text) + len(_WIDE.findall(text))


def _elide_wide(text: str, width: int) -> str:
    """:func:`elide` by display width (CJK characters count two).

    >>> _elide_wide("操作码很长", 5)
    '操作…'
    """
    if _display_width(text) <= width:
        return text
    out, used = [], 1  # room for the ellipsis
    for ch in text:
        w = 2 if _WIDE.match(ch) else 1
        if used + w > width:
            break
        out.append(ch)
        used += w
    return "".join(out) + ELLIPSIS


def _escape_rows(rows: list[list[str]]) -> list[list[str]]:
    """Every cell HTML-escaped, in one pass over the whole table (much faster than one
    escape per cell); cells holding the separator characters take the slow path."""
    if not rows:
        return []
    try:
        blob = "\x01".join(["\x00".join(row) for row in rows])
    except TypeError:  # a cell that is not a string
        return [[esc(cell) for cell in row] for row in rows]
    if (blob.count("\x01") != len(rows) - 1
            or blob.count("\x00") != sum(len(row) - 1 for row in rows)):
        return [[esc(cell) for cell in row] for row in rows]
    return [line.split("\x00") for line in esc(blob).split("\x01")]


def _window(cells: list[list[str]], max_rows: int | None) -> tuple[list[list[str]], int, int]:
    """Keep the first and last rows when there are more than ``max_rows``."""
    if max_rows is None or len(cells) <= max_rows:
        return cells, -1, 0
    top = max_rows // 2
    bottom = max_rows - top
    hidden = len(cells) - top - bottom
    return cells[:top] + cells[len(cells) - bottom :], top, hidden


def _fit(widths: list[int], total: int, gap: int, least: int = 6) -> list[int]:
    """Cap the widest columns at one common width so the row fits ``total`` characters.

    Narrow columns keep their width; no column is cut below ``least`` characters.

    >>> _fit([4, 30, 29], 40, gap=2)
    [4, 16, 16]
    >>> _fit([4, 5], 40, gap=2)
    [4, 5]
    """
    budget = total - gap * (len(widths) - 1)
    if sum(widths) <= budget:
        return list(widths)
    low, high = least, max(widths)
    while low < high:  # the widest cap that still fits
        mid = (low + high + 1) // 2
        if sum(min(w, mid) for w in widths) <= budget:
            low = mid
        else:
            high = mid - 1
    fitted = [min(w, low) for w in widths]
    spare = budget - sum(fitted)
    for i, w in enumerate(widths):  # hand what is left to the capped columns, left first
        if spare <= 0:
            break
        extra = min(spare, w - fitted[i])
        fitted[i] += extra
        spare -= extra
    return fitted
