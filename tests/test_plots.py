"""bar_plot(): measured numbers as a PNG, 中文 labels with no missing glyphs, pyplot left alone."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from fxcourse import FxCourseError, bar_plot
from fxcourse.pictures import plot as _plot

TIMES = {("eager", "即时执行"): 12.5, ("TorchScript", "TorchScript"): 9.0, ("compiled", "编译后"): 3.25}


def _glyph_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "Glyph" in str(w.message) or "missing from" in str(w.message)]


def test_chinese_labels_render_with_a_cjk_font_and_no_missing_glyphs():
    assert _plot.cjk_font() is not None, "no CJK font: run scripts/setup.sh (installs fonts-noto-cjk)"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = bar_plot(TIMES, title=("time per call", "每次调用耗时"), unit=("µs", "微秒"))
        png = p.to_png()
    assert _glyph_warnings(caught) == []
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000
    assert p.title == "time per call / 每次调用耗时"
    labels = [t.get_text() for t in p.figure.axes[0].get_yticklabels()]
    assert labels == ["eager / 即时执行", "TorchScript / TorchScript", "compiled / 编译后"]
    assert p._repr_png_() == png and p.to_html().startswith('<div class="fxcourse-plot"><img alt=')


def test_without_a_cjk_font_only_the_english_half_is_drawn(monkeypatch):
    monkeypatch.setattr(_plot, "_font", [None])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = bar_plot(TIMES, title=("time per call", "每次调用耗时"), unit="µs")
        p.to_png()
    assert _glyph_warnings(caught) == []
    assert [t.get_text() for t in p.figure.axes[0].get_yticklabels()] == ["eager", "TorchScript", "compiled"]
    assert "fonts-noto-cjk" in p.notes[0] and "fonts-noto-cjk" in p.to_text()


def test_the_default_font_really_lacks_the_glyphs_the_cjk_font_supplies():
    """Why the font matters: matplotlib's own font warns about every 中文 character."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    import matplotlib

    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure = Figure()
        FigureCanvasAgg(figure)
        figure.add_subplot().set_title("每次调用耗时")
        figure.canvas.draw()
    assert _glyph_warnings(caught)


def test_groups_log_scale_and_the_numbers_as_text():
    p = bar_plot({"conv+bn": {"eager": 100.0, "fused": 60.0}, "resnet18": {"eager": 2000.0, "fused": 1500.0}},
                 title="fusion", unit="µs", log=True)
    ax = p.figure.axes[0]
    assert ax.get_xscale() == "log" and len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["eager", "fused"]
    assert p.to_text().splitlines() == ["fusion", "  conv+bn [eager]   100 µs", "  conv+bn [fused]   60 µs",
                                        "  resnet18 [eager]  2,000 µs", "  resnet18 [fused]  1,500 µs"]
    assert sorted(t.get_text() for t in ax.texts) == [" 1,500", " 100", " 2,000", " 60"]
    assert p.to_png() == p.to_png()


def test_bad_values_are_explained():
    with pytest.raises(FxCourseError, match="non-empty dict"):
        bar_plot({}, title="t")
    with pytest.raises(FxCourseError, match="'eager': str 'fast'"):
        bar_plot({"eager": "fast"}, title="t")


def test_plotting_leaves_pyplot_alone():
    code = ("import sys; from fxcourse import bar_plot; bar_plot({'a': 1.0}, title='t').to_png(); "
            "print('matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# -- ordinary data is drawn as it is, or refused clearly (never a matplotlib or TypeError) ------

@pytest.mark.parametrize("values, kwargs, says", [
    ({"a": None}, {}, "not None, NaN, inf or bool"),
    ({"a": float("nan")}, {}, "not None, NaN, inf or bool"),
    ({"a": float("inf")}, {}, "not None, NaN, inf or bool"),
    ({"a": True}, {}, "not None, NaN, inf or bool"),
    ({"a": 1.0}, {"title": None}, "title as a str"),
    ({"a": 1.0}, {"unit": 3}, "unit as a str"),
    ({"a": 1.0}, {"fmt": "{:q}"}, "a format string with one field"),
    ({"a": 1.0}, {"fmt": "{} {}"}, "a format string with one field"),
    ({"a": 1.0}, {"fmt": 3}, "a format string with one field"),
    ({"a": -1.0}, {"log": True}, "only positive numbers on a logarithmic axis"),
    ({"a": 0.0}, {"log": True}, "only positive numbers on a logarithmic axis"),
    ({"a": 1.0}, {"log": "yes"}, "log=True or log=False"),
    ({"a": {}, "b": {"eager": 1.0}}, {}, "at least one series"),
    ({"a": {"eager": 1.0}}, {"series": "abc"}, "a list of series names"),
    ({"a": {"eager": 1.0}, "b": 2.0}, {}, "every value a number, or every value a dict"),
])
def test_data_matplotlib_would_refuse_or_misdraw_is_refused_clearly(values, kwargs, says, monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    kwargs = {"title": "t", **kwargs}
    with pytest.raises(FxCourseError) as caught:
        bar_plot(values, **kwargs)
    assert says in str(caught.value) and str(caught.value).startswith("bar_plot: got ")


def test_integer_labels_dollar_signs_negative_values_and_zeros_are_drawn():
    p = bar_plot({1: {"eager": -2.0, "compiled": 3.0}, 8: {"eager": 0.0}, "cost $5": {"compiled": 1.0}},
                 title="speed-up in $")
    ax = p.figure.axes[0]
    left, right = ax.get_xlim()
    assert left < -2.0 and right > 3.0  # the negative bar is on the axis, not cut at 0
    labels = sorted(t.get_text().strip() for t in ax.texts)
    assert labels == ["-2", "0", "1", "3"]  # a 0 is a measurement: it has its label; a missing one has none
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1", "8", r"cost \$5"]
    assert p.to_png()[:4] == b"\x89PNG"
    assert "cost $5" in p.to_text() and "speed-up in $" in p.to_text()
