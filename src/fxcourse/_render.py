"""Shared rendering for every viewer: a plain table with a text view and an HTML view.

Viewers build a :class:`Table` and wrap it in their own result object. Rendering is
deterministic (no ids, addresses or timestamps) and everything is HTML-escaped.
"""
from __future__ import annotations

import html
import shutil
from dataclasses import dataclass, field
from typing import Sequence

__all__ = ["Table", "elide", "esc", "terminal_width"]

ELLIPSIS = "…"


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
    """The terminal's width, or ``default`` where there is no terminal (notebooks, CI)."""
    return shutil.get_terminal_size((default, 24)).columns


@dataclass
class Table:
    """Rows of strings under named columns.

    ``row_classes`` gives each row a CSS class (for example its opcode); ``indent`` gives
    each row a nesting depth, shown by indenting the first column.

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

    def _cells(self) -> list[list[str]]:
        if not self.indent:
            return self.rows
        out = []
        for row, depth in zip(self.rows, self.indent):
            out.append(["  " * depth + row[0], *row[1:]] if row else row)
        return out

    def to_text(self, width: int | None = None, max_rows: int | None = None) -> str:
        """Aligned columns; each cell is elided so the table fits ``width`` characters."""
        width = width or terminal_width()
        cells = self._cells()
        cells, hidden_at, hidden = _window(cells, max_rows)
        widths = [len(c) for c in self.columns]
        for row in cells:
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], len(cell))
        widths = _fit(widths, width, gap=2)
        lines = [_line(self.columns, widths), "  ".join("-" * w for w in widths)]
        for i, row in enumerate(cells):
            if i == hidden_at:
                lines.append(f"{ELLIPSIS} {hidden} more rows {ELLIPSIS}")
            lines.append(_line(row, widths))
        text = "\n".join(line.rstrip() for line in lines)
        return f"{self.caption}\n{text}" if self.caption else text

    def to_html(self, max_rows: int | None = None, style: str = "") -> str:
        """An HTML ``<table>``; with ``max_rows``, the middle rows collapse into a
        ``<details>`` element that says how many rows it holds."""
        classes = self.row_classes or [""] * len(self.rows)
        depth = self.indent or [0] * len(self.rows)
        head = "".join(f"<th>{esc(c)}</th>" for c in self.columns)

        def tr(i: int) -> str:
            cls = f' class="{esc(classes[i])}"' if classes[i] else ""
            tds = []
            for j, cell in enumerate(self.rows[i]):
                pad = f' style="padding-left:{0.4 + 1.2 * depth[i]:.1f}em"' if j == 0 and depth[i] else ""
                tds.append(f"<td{pad}>{esc(cell)}</td>")
            return f"<tr{cls}>{''.join(tds)}</tr>"

        n = len(self.rows)
        parts = [f'<div class="{esc(self.css_class)}">']
        if style:
            parts.append(f"<style>{style}</style>")
        if self.caption:
            parts.append(f"<div><b>{esc(self.caption)}</b></div>")
        if max_rows is None or n <= max_rows:
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
            parts.extend(tr(i) for i in range(n))
            parts.append("</tbody></table>")
        else:
            top = max_rows // 2
            bottom = max_rows - top
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>")
            parts.extend(tr(i) for i in range(top))
            parts.append("</tbody></table>")
            parts.append(f"<details><summary>{n - top - bottom} more rows</summary>")
            parts.append(f"<table><tbody>")
            parts.extend(tr(i) for i in range(top, n - bottom))
            parts.append("</tbody></table></details>")
            parts.append(f"<table><tbody>")
            parts.extend(tr(i) for i in range(n - bottom, n))
            parts.append("</tbody></table>")
        parts.append("</div>")
        return "".join(parts)


def _window(cells: list[list[str]], max_rows: int | None) -> tuple[list[list[str]], int, int]:
    """Keep the first and last rows when there are more than ``max_rows``."""
    if max_rows is None or len(cells) <= max_rows:
        return cells, -1, 0
    top = max_rows // 2
    bottom = max_rows - top
    hidden = len(cells) - top - bottom
    return cells[:top] + cells[len(cells) - bottom :], top, hidden


def _fit(widths: list[int], total: int, gap: int) -> list[int]:
    """Shrink the widest columns until the row fits ``total`` characters (min 6 each)."""
    widths = list(widths)
    budget = total - gap * (len(widths) - 1)
    while sum(widths) > budget:
        i = max(range(len(widths)), key=widths.__getitem__)
        if widths[i] <= 6:
            break
        widths[i] = max(6, widths[i] - max(1, (sum(widths) - budget)))
    return widths


def _line(row: Sequence[str], widths: list[int]) -> str:
    return "  ".join(elide(str(c), w).ljust(w) for c, w in zip(row, widths))
