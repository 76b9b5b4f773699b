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
import math
import io
from typing import Any, Mapping, Sequence, Union

from .._lang import pick
from ..errors import FxCourseError, describe, need_flag

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
    if not isinstance(label, (tuple, list)):  # a batch size, a None series name, ...
        return str(label)
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
    _check_options(title, unit, log, series, fmt)
    rows, series_names = _rows(values, series)
    if log and any(v <= 0 for _, _, v in rows):
        bad = next((c, v) for c, _, v in rows if v <= 0)
        raise FxCourseError(got=f"log=True with {bad[0]!r}: {bad[1]:g}", where="bar_plot",
                            accepted="only positive numbers on a logarithmic axis",
                            fix="leave log=False, or plot only positive numbers (a ratio, a time)",
                            zh=f"bar_plot：log=True 时 {bad[0]!r} 的值为 {bad[1]:g}；对数坐标只能画正数。"
                               "修复：保持 log=False，或者只画正数（比值、时间）。")
    cjk = cjk_font()
    notes = [] if cjk else [pick(*_NO_FONT)]
    rows = [(_text(c, cjk is not None), _text(s, cjk is not None) if s else "", v) for c, s, v in rows]
    figure = _figure(rows, [_text(s, cjk is not None) for s in series_names],
                     _text(title, cjk is not None).replace(" / ", "\n", 1),  # one line per language
                     _text(unit, cjk is not None), log, fmt, cjk)
    return Plot(figure, _text(title, cjk is not None), rows, _text(unit, cjk is not None), notes)


def _is_label(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, tuple) and len(value) == 2
                                       and all(isinstance(p, str) for p in value))


def _check_options(title: Any, unit: Any, log: Any, series: Any, fmt: Any) -> None:
    """Refuse options that matplotlib would refuse later, or would draw as something else."""
    for name, value in (("title", title), ("unit", unit)):
        if not _is_label(value):
            raise FxCourseError(got=f"{name}={describe(value)}", where="bar_plot",
                                accepted=f"{name} as a str or an (English, 中文) pair of str",
                                fix=f'pass e.g. {name}=("time per call", "每次调用耗时")',
                                zh=f"bar_plot：{name}={describe(value)} 不可用；需要字符串或（英文, 中文）字符串对，"
                                   f'例如 {name}=("time per call", "每次调用耗时")。')
    need_flag(log, "log", "bar_plot", "pass log=True for numbers spanning decades", "数值跨越几个数量级时传 log=True")
    if series is not None and (isinstance(series, (str, bytes)) or not isinstance(series, Sequence)):
        raise FxCourseError(got=f"series={describe(series)}", where="bar_plot",
                            accepted="a list of series names (a str would be split into letters)",
                            fix='pass e.g. series=["eager", "compiled"]',
                            zh=f"bar_plot：series={describe(series)} 不可用；需要系列名的列表（字符串会被拆成单个字母），"
                               '例如 series=["eager", "compiled"]。')
    if fmt is not None:
        try:
            if not isinstance(fmt, str):
                raise TypeError(type(fmt).__name__)
            fmt.format(1.5)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            raise FxCourseError(got=f"fmt={describe(fmt)} ({type(exc).__name__}: {exc})", where="bar_plot",
                                accepted="a format string with one field for the number, e.g. '{:.2f} s'",
                                fix="pass e.g. fmt='{:.1f}×' or leave fmt out",
                                zh=f"bar_plot：fmt={describe(fmt)} 无法格式化数值；需要含一个数值字段的格式字符串，"
                                   "例如 '{:.2f} s'。修复：传入 fmt='{:.1f}×' 或不传 fmt。") from None


def _rows(values: Any, series: Sequence[Label] | None) -> tuple[list[tuple[Label, Label, float]], list[Label]]:
    if not isinstance(values, Mapping) or not values:
        raise FxCourseError(got=describe(values), where="bar_plot",
                            accepted="a non-empty dict of label -> number, or label -> {series -> number}",
                            fix='pass for example {"eager": 1.2, "compiled": 0.4}',
                            zh=f"bar_plot：收到 {describe(values)}；需要非空的字典（标签 -> 数值，或标签 -> {{系列 -> 数值}}），"
                               '例如 {"eager": 1.2}。')
    grouped = [isinstance(v, Mapping) for v in values.values()]
    if any(grouped) and not all(grouped):
        plain = next(k for k, g in zip(values, grouped) if not g)
        raise FxCourseError(got=f"{plain!r}: a number beside labels holding {{series: number}}", where="bar_plot",
                            accepted="every value a number, or every value a dict of series -> number",
                            fix=f'give {plain!r} its series too, e.g. {{{plain!r}: {{"eager": 1.2}}}}',
                            zh=f"bar_plot：{plain!r} 的值是一个数，而其他标签的值是“系列 -> 数值”的字典；要么全是数，"
                               f"要么全是字典。修复：也给 {plain!r} 写上系列名。")
    rows: list[tuple[Label, Label, float]] = []
    names: list[Label] = list(series or [])
    for category, value in values.items():
        if isinstance(value, Mapping):
            if not value:
                raise FxCourseError(got=f"{category!r}: an empty dict", where="bar_plot",
                                    accepted="at least one series -> number for every label",
                                    fix=f"leave {category!r} out, or give it its numbers",
                                    zh=f"bar_plot：{category!r} 对应的是空字典；每个标签至少要有一个“系列 -> 数值”。"
                                       f"修复：去掉 {category!r}，或给出它的数值。")
            for name, number in value.items():
                if name not in names:
                    names.append(name)
                rows.append((category, name, _number(number, category)))
        else:
            rows.append((category, "", _number(value, category)))
    return rows, names


def _number(value: Any, label: Any) -> float:
    try:
        if isinstance(value, (bool, str, bytes)):  # "1.2" is a label's text, not a measurement
            raise TypeError(type(value).__name__)
        number = float(value)
        if not math.isfinite(number):
            raise ValueError("not finite")
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float's range
        raise FxCourseError(got=f"{label!r}: {describe(value)}", where="bar_plot",
                            accepted="finite numbers (int or float) as the values, not None, NaN, inf or bool, nor text",
                            fix="pass measured numbers, e.g. seconds as floats; leave out what was not measured",
                            zh=f"bar_plot：{label!r} 的值 {describe(value)} 不是有限的数值（None、NaN、inf、bool、字符串都不行）；"
                               "请传入测得的数字，没有测到的项请省略。") from None
    return number


def _plain(text: str) -> str:
    """Text matplotlib draws as it is: a `$` would start math mode."""
    return text.replace("$", r"\$")


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
        largest = max((v for _, _, v in rows), default=1.0)
        smallest = min((v for _, _, v in rows), default=0.0)
        span = (max(largest, 0.0) - min(smallest, 0.0)) or 1.0
        for k, name in enumerate(groups):
            ys = [i + (k - (len(groups) - 1) / 2) * bar for i in range(len(categories))]
            xs = [lookup.get((c, name)) for c in categories]  # None: this label has no such series
            ax.barh(ys, [math.nan if x is None else x for x in xs], height=bar * 0.92, label=_plain(name) or None,
                    color=f"C{k}")
            for y, x in zip(ys, xs):
                if x is not None:  # a 0 is a measurement too: it gets its label
                    shown = fmt.format(x) if fmt else _number_text(x)
                    ax.text(x, y, _plain(f" {shown}" if x >= 0 else f"{shown} "), va="center", fontsize=8,
                            ha="left" if x >= 0 else "right")
        ax.set_yticks(range(len(categories)), [_plain(c) for c in categories])
        ax.invert_yaxis()
        ax.set_xlabel(_plain(unit))
        ax.set_title(_plain(title), fontsize=11, loc="left")
        if log:
            ax.set_xscale("log")
            ax.set_xlim(right=largest * 4)
        else:
            ax.set_xlim(min(smallest, 0.0) - (0.18 * span if smallest < 0 else 0.0),
                        max(largest, 0.0) + 0.18 * span)
            if smallest < 0:
                ax.axvline(0, color="0.3", linewidth=0.8)
        ax.grid(axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        if series:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        figure.canvas.draw()  # lay out now: glyph problems show here, not at display time
    return figure
