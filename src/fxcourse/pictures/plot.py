"""``bar_plot``: measured numbers as a bar chart, labels in English and 中文.

Lectures measure things (capture times, fusion speed-ups, recompile costs, backend
timings) and show them twice: as text and as a picture made here. matplotlib is imported
only when a plot is made, and its global state (pyplot, rcParams) is left alone: each plot
is its own ``Figure`` rendered with the Agg canvas inside an ``rc_context``.

中文 labels need a CJK font (Debian's ``fonts-noto-cjk``; scripts/setup.sh installs it).
Without one, the plot keeps the English half of each label, so no glyph is missing, and
``Plot.notes`` says how to get the 中文 half.
"""
from __future__ import annotations

import base64
import io
from typing import Any, Mapping, Sequence, Union

from .._lang import pick
from ..errors import FxCourseError, describe

__all__ = ["Plot", "bar_plot", "cjk_font"]

Label = Union[str, Sequence[str]]  # "text" or ("English", "中文")
_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans CJK TC", "Source Han Sans SC",
                 "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Microsoft YaHei", "PingFang SC", "SimHei")
_NO_FONT = ("no CJK font found, so the plot shows English labels only; install Debian's "
            "fonts-noto-cjk (scripts/setup.sh does)", "未找到中文字体，图中只显示英文；请安装 fonts-noto-cjk")
_font: list[str | None] = []  # cache: [family or None]


def cjk_font() -> str | None:
    """The family name of an installed CJK font matplotlib can use, or None.

    >>> cjk_font() is None or "CJK" in cjk_font() or "Hei" in cjk_font() or True
    True
    """
    if not _font:
        _font.append(_find_font())
    return _font[0]


def _find_font() -> str | None:
    from matplotlib import font_manager

    def known() -> set[str]:
        return {f.name for f in font_manager.fontManager.ttflist}

    names = known()
    for family in _CJK_FAMILIES:
        if family in names:
            return family
    # fonts installed after matplotlib built its cache: add the files directly
    for path in font_manager.findSystemFonts():
        if "CJK" in path or "wqy" in path.lower():
            try:
                font_manager.fontManager.addfont(path)
            except Exception:  # a font file FreeType cannot read
                continue
    names = known()
    return next((family for family in _CJK_FAMILIES if family in names), None)


def _text(label: Label, cjk: bool) -> str:
    if isinstance(label, str):
        return label
    parts = [str(p) for p in label]
    if len(parts) == 2:
        if not cjk:  # no glyphs for 中文: English whatever the language
            return parts[0]
        return pick(parts[0], parts[1])  # the reader's language; both: "English / 中文"
    return " / ".join(parts)


class Plot:
    """A bar chart of measured numbers: ``to_png()``, ``to_html()``, ``to_text()``
    (the numbers as a table), ``.figure`` (the matplotlib Figure), ``.notes``.

    JupyterLab shows it as a PNG; its text form lists the numbers.
    """

    def __init__(self, figure: Any, title: str, rows: list[tuple[str, str, float]], unit: str,
                 notes: list[str]) -> None:
        self.figure = figure
        self.title = title
        self.rows = rows  # (category, series, value)
        self.unit = unit
        self.notes = notes
        self._png: bytes | None = None

    def to_png(self) -> bytes:
        if self._png is None:
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
            self._png = buffer.getvalue()
        return self._png

    def to_html(self) -> str:
        data = base64.b64encode(self.to_png()).decode("ascii")
        return f'<div class="fxcourse-plot"><img alt="{_attr(self.title)}" src="data:image/png;base64,{data}"></div>'

    def to_text(self) -> str:
        names = [f"{c} [{s}]" if s else c for c, s, _ in self.rows]
        width = max((_width(n) for n in names), default=0)
        lines = [self.title]
        for name, (_, _, value) in zip(names, self.rows):
            pad = " " * (width - _width(name))
            lines.append(f"  {name}{pad}  {_number_text(value)} {self.unit}".rstrip())
        return "\n".join(lines + self.notes)

    def _repr_png_(self) -> bytes:
        return self.to_png()

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"<Plot {self.title!r}: {len(self.rows)} bars>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.to_text())


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: CJK characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _number_text(x: float) -> str:
    """``1,234`` for large numbers, three significant digits otherwise.

    >>> _number_text(2000.4), _number_text(0.01234), _number_text(12.5)
    ('2,000', '0.0123', '12.5')
    """
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _attr(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def bar_plot(values: Mapping[Any, Any], *, title: Label, unit: Label = "", log: bool = False,
             series: Sequence[Label] | None = None, fmt: str | None = None) -> Plot:
    """Horizontal bars, one per entry of ``values`` (label → number), or groups of bars
    when each value is itself a mapping (label → {series → number}).

    Labels may be ``("English", "中文")`` pairs; both halves are drawn when a CJK font is
    installed. ``log=True`` uses a logarithmic axis (for numbers spanning decades).
    Introduced in course/00_overview.ipynb.

    >>> p = bar_plot({"eager": 12.0, ("compiled", "编译后"): 3.0}, title=("time", "时间"), unit="µs")
    >>> print(p.to_text().splitlines()[1])
      eager              12 µs
    >>> p.to_png()[:4] == b"\\x89PNG"
    True
    """
    rows, series_names = _rows(values, series)
    cjk = cjk_font()
    notes = [] if cjk else [pick(*_NO_FONT)]
    rows = [(_text(c, cjk is not None), _text(s, cjk is not None) if s else "", v) for c, s, v in rows]
    figure = _figure(rows, [_text(s, cjk is not None) for s in series_names],
                     _text(title, cjk is not None).replace(" / ", "\n", 1),  # one line per language
                     _text(unit, cjk is not None), log, fmt, cjk)
    return Plot(figure, _text(title, cjk is not None), rows, _text(unit, cjk is not None), notes)


def _rows(values: Any, series: Sequence[Label] | None) -> tuple[list[tuple[Label, Label, float]], list[Label]]:
    if not isinstance(values, Mapping) or not values:
        raise FxCourseError(got=describe(values), where="bar_plot",
                            accepted="a non-empty dict of label -> number, or label -> {series -> number}",
                            fix='pass for example {"eager": 1.2, "compiled": 0.4}',
                            zh='bar_plot：需要非空的字典（标签 -> 数值，或标签 -> {系列 -> 数值}），例如 {"eager": 1.2}。')
    rows: list[tuple[Label, Label, float]] = []
    names: list[Label] = list(series or [])
    for category, value in values.items():
        if isinstance(value, Mapping):
            for name, number in value.items():
                if name not in names:
                    names.append(name)
                rows.append((category, name, _number(number, category)))
        else:
            rows.append((category, "", _number(value, category)))
    return rows, names


def _number(value: Any, label: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise FxCourseError(got=f"{label!r}: {describe(value)}", where="bar_plot",
                            accepted="numbers (int or float) as the values",
                            fix="pass measured numbers, e.g. seconds as floats",
                            zh=f"bar_plot：{label!r} 的值 {describe(value)} 不是数值；请传入测得的数字。") from None
    return number


def _figure(rows: list[tuple[str, str, float]], series: list[str], title: str, unit: str, log: bool,
            fmt: str | None, cjk: str | None) -> Any:
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    categories = list(dict.fromkeys(c for c, _, _ in rows))
    groups = series or [""]
    style = {"font.family": [cjk, "DejaVu Sans"] if cjk else ["DejaVu Sans"], "svg.hashsalt": "fxcourse",
             "axes.unicode_minus": False}
    with matplotlib.rc_context(style):
        height = 0.9 + 0.32 * len(categories) * max(1, len(groups)) ** 0.8
        figure = Figure(figsize=(7.5, height), dpi=100, layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.add_subplot()
        bar = 0.8 / len(groups)
        lookup = {(c, s): v for c, s, v in rows}
        largest = max((abs(v) for _, _, v in rows), default=1.0) or 1.0
        for k, name in enumerate(groups):
            ys = [i + (k - (len(groups) - 1) / 2) * bar for i in range(len(categories))]
            xs = [lookup.get((c, name), 0.0) for c in categories]
            ax.barh(ys, xs, height=bar * 0.92, label=name or None, color=f"C{k}")
            for y, x in zip(ys, xs):
                if x:
                    ax.text(x, y, " " + (fmt.format(x) if fmt else _number_text(x)), va="center", fontsize=8)
        ax.set_yticks(range(len(categories)), categories)
        ax.invert_yaxis()
        ax.set_xlabel(unit)
        ax.set_title(title, fontsize=11, loc="left")
        if log:
            ax.set_xscale("log")
            ax.set_xlim(right=largest * 4)
        else:
            ax.set_xlim(0, largest * 1.18)
        ax.grid(axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        if series:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        figure.canvas.draw()  # lay out now: glyph problems show here, not at display time
    return figure
