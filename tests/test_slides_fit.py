"""Every slide of every lecture fits a 1280×720 projector at sizes a room can read.

The design (README, "Presenting a lecture as slides"): ``course/rise.css`` sets prose to 24 px
and code and outputs to 20 px, starts every slide at the top of the screen, and lets a slide
taller than the screen scroll inside itself, with a "more below" bar. ``fxcourse slides mark``
cuts a lecture so that the cells of one (sub-)slide fit the screen (an estimate in pixels,
fxcourse.tooling.slides.estimate_height); a cell taller than the screen alone (a long
function, a long output, a big drawing) gets a sub-slide of its own and scrolls.

* static: every lecture, every slide, from the notebook (fast);
* browser: the two densest lectures by that estimate, exported in English, trusted (drawings
  and HTML tables shown), presented by jupyterlab-rise in Chromium at 1280×720; every slide
  is visited and measured. The densest slide's screenshot goes to test-output/slides/.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from fxcourse.tooling import i18n, slides

REPO = Path(__file__).resolve().parents[1]
LECTURES = sorted((REPO / "course").glob("[0-9][0-9]_*.ipynb"))
STYLE = REPO / "course" / "rise.css"
OUTPUT = REPO / "test-output" / "slides"
WIDTH, HEIGHT = slides.SCREEN


def _md(source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": ["lang-en"]})


def too_tall(nb: nbformat.NotebookNode, name: str) -> list[str]:
    """Slides of ``nb`` (as its metadata cuts it) whose cells together are taller than a slide
    and could have been split: any slide of more than one cell over the budget."""
    return [f"{name}: the slide at cell {s.first} holds {s.cells} cells, about {s.height} px "
            f"(budget {slides.BUDGET} px): run `fxcourse slides mark`"
            for s in slides.slide_heights(nb) if s.height > slides.BUDGET and s.cells > 1]


def densest(count: int = 2) -> list[Path]:
    """The lectures with the most slides taller than the screen (that scroll), by the estimate."""
    def weight(path: Path) -> tuple[int, int]:
        sizes = slides.slide_heights(nbformat.read(path, as_version=4))
        tall = [s.height - slides.BUDGET for s in sizes if s.height > slides.BUDGET]
        return len(tall), sum(tall)
    return sorted(LECTURES, key=weight, reverse=True)[:count]


# -- static: all lectures ------------------------------------------------------------------------

def test_the_style_sets_the_sizes_the_estimate_uses():
    css = STYLE.read_text(encoding="utf-8")
    assert re.search(rf"--jp-content-font-size1:\s*{slides.PROSE_PX}px", css)
    assert re.search(rf"--jp-code-font-size:\s*{slides.CODE_PX}px", css)
    assert re.search(rf"\)\s*{{\s*font-size:\s*{slides.PROSE_PX}px", css)  # prose: p, li, td, ...
    assert re.search(rf"\.jp-OutputArea-output :is\(pre, td, th\) {{ font-size: {slides.CODE_PX}px", css)
    assert slides.PROSE_PX >= 24 and slides.CODE_PX >= 20


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_slide_of_several_cells_is_taller_than_the_screen(path):
    nb = nbformat.read(path, as_version=4)
    assert too_tall(nb, path.name) == []
    # what remains taller than the screen is one cell alone: it scrolls inside its slide
    for size in slides.slide_heights(nb):
        assert size.height <= slides.BUDGET or size.cells == 1, size


def test_the_rule_fails_a_made_up_lecture_that_does_not_fit():
    code = lambda n: nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(n)))
    assert slides.estimate_height(code(10)) == 20 + 10 * 26  # ten lines of code at 20 px
    items = _md("## Summary\n\n" + "\n".join(["- " + "word " * 35] * 6))  # six items of two lines
    assert slides.estimate_height(items) == round(20 + 60 + 6 * 2 * 24 * 1.4)
    stream = code(1)
    stream.outputs = [nbformat.v4.new_output("stream", text="a" * 194 + "\n" + "中" * 48 + "\n")]
    assert slides.estimate_height(stream) == 20 + 26 + 6 + 26 * 3  # wrapped at 97 columns
    stream.outputs = [nbformat.v4.new_output("stream", text="a" * 98 + "\n")]
    assert slides.estimate_height(stream) == 20 + 26 + 6 + 26 * 2  # 98 columns take two lines
    cells = [_md("## Section\n\nWhy."), code(12), code(12)]  # ~700 px on one slide
    nb = nbformat.v4.new_notebook(cells=cells)
    for cell in cells:
        cell.metadata["slideshow"] = {"slide_type": "slide" if cell is cells[0] else "-"}
    assert too_tall(nb, "made-up.ipynb") and "3 cells" in too_tall(nb, "made-up.ipynb")[0]
    types = slides.slide_types(nb)  # what `slides mark` writes instead: the second code cell moves down
    assert types == ["slide", "-", "subslide"]
    for cell, kind in zip(cells, types):
        cell.metadata["slideshow"] = {"slide_type": kind}
    assert too_tall(nb, "made-up.ipynb") == []
    nb.cells.append(code(40))  # 40 lines: taller than the screen alone, a sub-slide that scrolls
    nb.cells[-1].metadata["slideshow"] = {"slide_type": slides.slide_types(nb)[-1]}
    assert nb.cells[-1].metadata["slideshow"] == {"slide_type": "subslide"} and too_tall(nb, "x") == []


def test_the_export_takes_the_style_along(tmp_path):
    i18n.export([LECTURES[0]], "zh", tmp_path)
    assert (tmp_path / "course" / "rise.css").read_bytes() == STYLE.read_bytes()


# -- a real slideshow: the two densest lectures --------------------------------------------------

#: True once the present slide is ``id``, at the top of the screen, with the same box twice.
SETTLED_JS = """id => { const s = document.querySelector('.reveal .slides section.present section.present');
  if (!s || s.id !== id) return false;
  const now = JSON.stringify(s.getBoundingClientRect()) + s.scrollHeight;
  const same = window.__fxcourseLast === now; window.__fxcourseLast = now; return same; }"""
#: What is on the present slide, and whether all of it can be seen (scrolling included).
MEASURE_JS = """() => {
  const s = document.querySelector('.reveal .slides section.present section.present');
  const box = s.getBoundingClientRect();
  const shown = e => e.offsetParent !== null && e.innerText.trim() !== '';
  const sizes = sel => [...s.querySelectorAll(sel)].filter(shown).map(e => parseFloat(getComputedStyle(e).fontSize));
  const prose = sizes('.jp-RenderedHTMLCommon :is(p, li, td, th)');
  const code = sizes('.jp-CodeCell .cm-line, .jp-OutputArea-output :is(pre, td, th)');
  const wide = [s, ...s.querySelectorAll('pre, .cm-scroller, .jp-RenderedHTMLCommon, .jp-OutputArea-output')]
      .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
      .map(e => e.className.split(' ')[0] + ' ' + e.scrollWidth + ' > ' + e.clientWidth);
  const cells = [...s.querySelectorAll('.jp-Cell')].filter(c => c.offsetParent !== null);
  const start = s.scrollTop;
  const more = getComputedStyle(s, '::after').opacity;  // the "more below" bar, at the top
  s.scrollTop = s.scrollHeight;  // to the end, as far as the slide scrolls
  const last = cells.length ? cells[cells.length - 1].getBoundingClientRect().bottom : box.top;
  const end = {scrollTop: s.scrollTop, last: last, bottom: s.getBoundingClientRect().bottom};
  s.scrollTop = start;
  return {id: s.id, top: box.top, bottom: box.bottom, left: box.left, right: box.right, cells: cells.length,
          scrollHeight: s.scrollHeight, clientHeight: s.clientHeight, overflowY: getComputedStyle(s).overflowY,
          prose: prose.length ? Math.min(...prose) : null, code: code.length ? Math.min(...code) : null, wide, end,
          more: parseFloat(more)};
}"""


@pytest.fixture(scope="module")
def deck_server(tmp_path_factory):
    """JupyterLab + jupyterlab-rise serving the two densest lectures exported in English and
    trusted (as `jupyter trust` leaves them: drawings and HTML tables rendered)."""
    from test_browser import _serve, write_settings

    root = tmp_path_factory.mktemp("decks")
    lectures = densest()
    i18n.export(lectures, "en", root)
    home = tmp_path_factory.mktemp("decks-home")
    write_settings(home)
    # no slide transition (each slide is measured once it stands still, and sooner), and no
    # selecting a code cell 450 ms after a slide appears: a late selection would take reveal.js
    # back to the slide the test had just left
    rise = home / "settings" / "jupyterlab-rise" / "plugin.jupyterlab-settings"
    rise.parent.mkdir(parents=True, exist_ok=True)
    rise.write_text('{"transition": "none", "auto_select": "none"}')
    env = {"JUPYTER_DATA_DIR": str(home / "data")}
    subprocess.run([sys.executable, "-m", "jupyter", "trust", *map(str, sorted((root / "course").glob("*.ipynb")))],
                   env={**os.environ, **env}, check=True, capture_output=True)
    for base, token in _serve(root, home, env, []):
        yield base, token, lectures


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("rank", [0, 1], ids=["densest", "second"])
def test_every_slide_of_a_dense_lecture_fits_the_projector(deck_server, rank):
    from playwright.sync_api import sync_playwright
    from test_browser import _browser

    base, token, lectures = deck_server
    lecture = lectures[rank]
    expected = slides.slide_heights(nbformat.read(lecture, as_version=4))
    OUTPUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.goto(f"{base}/rise/course/{lecture.name}?token={token}")
            page.wait_for_selector(".reveal .slides section.present .jp-MarkdownCell h1", timeout=90_000)
            ids = page.evaluate("() => [...document.querySelectorAll('.reveal .slides > section > section')].map(s => s.id)")
            assert len(ids) == len(expected), (len(ids), len(expected))
            measured = []
            for id_ in ids:  # reveal.js follows the address (history: true): #/h/v is slide-h-v
                h, v = id_.split("-")[1:]
                page.evaluate(f"() => {{ location.hash = '#/{h}/{v}'; }}")
                page.wait_for_function(SETTLED_JS, arg=id_, polling=50, timeout=15_000)
                m = page.evaluate(MEASURE_JS)
                measured.append(m)
                where = f"{lecture.name} {id_}"
                assert m["top"] >= 0 and m["left"] >= 0 and m["bottom"] <= HEIGHT and m["right"] <= WIDTH, (where, m)
                assert m["prose"] is None or m["prose"] >= slides.PROSE_PX, (where, m["prose"])
                assert m["code"] is None or m["code"] >= slides.CODE_PX, (where, m["code"])
                assert m["wide"] == [], (where, m["wide"])  # nothing cut at the right edge
                if m["scrollHeight"] > m["clientHeight"]:  # taller than the screen: it scrolls to its end
                    assert m["overflowY"] in ("auto", "scroll"), (where, m)
                    assert m["end"]["scrollTop"] >= m["scrollHeight"] - m["clientHeight"] - 1, (where, m)
                    assert m["more"] == 1, (where, "no 'more below' bar", m)
                else:
                    assert m["more"] == 0, (where, "a 'more below' bar on a slide that fits", m)
                assert m["end"]["last"] <= m["end"]["bottom"] + 1, (where, m)  # the last cell's end is on screen
            worst = max(measured, key=lambda m: m["scrollHeight"])
            h, v = worst["id"].split("-")[1:]
            page.evaluate(f"() => {{ location.hash = '#/{h}/{v}'; }}")
            page.wait_for_function(SETTLED_JS, arg=worst["id"], polling=50, timeout=15_000)
            page.screenshot(path=str(OUTPUT / f"densest_{lecture.stem}_{worst['id']}.png"))
        finally:
            browser.close()
    tall = [m for m in measured if m["scrollHeight"] > m["clientHeight"]]
    print(f"\n{lecture.name}: {len(measured)} slides, {len(tall)} scroll inside the slide, the tallest "
          f"{worst['id']} ({worst['scrollHeight']} px); {time.monotonic() - started:.0f} s")
    # the estimate the static test relies on agrees with the browser: a slide of several cells
    # that the estimate fits into the budget does not scroll by more than a line
    for m, size in zip(measured, expected):
        if size.cells > 1:
            assert m["scrollHeight"] <= m["clientHeight"] + 40, (lecture.name, m["id"], size, m["scrollHeight"])
