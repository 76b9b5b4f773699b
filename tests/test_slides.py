"""Lectures as RISE slideshows: the slide metadata (fxcourse.tooling.slides) on every lecture, one
language at a time through the single-language export, and a real slideshow in Chromium
(JupyterLab + jupyterlab-rise) with a code cell run live. Screenshots go to test-output/slides/.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from fxcourse.tooling import i18n, slides
from fxcourse.tooling.cli import main

REPO = Path(__file__).resolve().parents[1]
LECTURES = sorted((REPO / "course").glob("[0-9][0-9]_*.ipynb"))
OUTPUT = REPO / "test-output" / "slides"


def _md(source: str, lang: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(source, metadata={"tags": [f"lang-{lang}"]})


def _type(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("slideshow", {}).get("slide_type")


# -- the metadata --------------------------------------------------------------------------------

def test_every_lecture_carries_what_slides_mark_writes():
    assert len(LECTURES) >= 13
    problems = slides.check_paths(LECTURES)
    assert problems == [], "\n".join(map(str, problems)) + "\nrun `fxcourse slides mark course/`"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_a_lecture_cuts_into_slides_the_same_in_both_languages(path):
    nb = nbformat.read(path, as_version=4)
    types = [_type(c) for c in nb.cells]
    assert nb.metadata.rise == {"scroll": True}
    assert types[0] == "slide" and "# " in nb.cells[0].source.splitlines()[0]
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if "lang-zh" in tags:  # the twin follows its English cell, and is cut the same way
            assert "lang-en" in nb.cells[i - 1].metadata.tags and types[i] == types[i - 1], (i, types[i - 1:i + 1])
        level = slides._heading_level(cell)
        assert (types[i] == "slide") == (level in (1, 2)), (i, cell.source[:60], types[i])
        if level == 3:
            assert types[i] == "subslide"
        assert types[i] in ("slide", "subslide", "fragment", "-"), (i, types[i])
    # a slide with the English cells and code that it opens fits the budget (pixels of a 1280×720
    # slide) unless one cell alone is bigger; tests/test_slides_fit.py measures it in a browser
    shown = [(c, t) for c, t in zip(nb.cells, types) if "lang-zh" not in c.metadata.get("tags", [])]
    used = 0
    for cell, kind in shown:
        height = slides.estimate_height(cell)
        used = height if kind in ("slide", "subslide") else used + height
        assert used <= slides.BUDGET or kind in ("slide", "subslide"), (cell.source[:60], used)
    assert sum(t == "slide" for _, t in shown) >= 5  # sections, Summary, Exercises


def test_the_rules_on_a_small_notebook():
    big = nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(30)))
    assert slides.estimate_height(big) > slides.BUDGET  # 30 lines of code at 20 px: taller than a slide
    nb = nbformat.v4.new_notebook(cells=[
        _md("# Title\n\nWhy.", "en"), _md("# 标题\n\n为什么。", "zh"),
        nbformat.v4.new_code_cell("x = 1"),  # continues the title slide
        _md("Notice x.", "en"), _md("注意 x。", "zh"),  # explains an output: a fragment
        big,  # does not fit on the slide: a sub-slide of its own
        _md("## Section", "en"), _md("## 小节", "zh"),
        _md("### Detail", "en"), _md("### 细节", "zh"),
        _md("More prose.", "en"), _md("更多说明。", "zh")])
    assert slides.slide_types(nb) == ["slide", "slide", "-", "fragment", "fragment", "subslide",
                                      "slide", "slide", "subslide", "subslide", "-", "-"]
    exported = i18n.single_language(nb, "zh")
    assert slides.slide_types(exported)[0] == "skip"  # the language cell
    assert _type(exported.cells[0]) == "skip"  # written so by the export itself


def test_mark_is_rerunnable_and_changes_only_slide_metadata(tmp_path, capsys):
    source = REPO / "course" / "00_overview.ipynb"
    copy = tmp_path / source.name
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:  # as a new lecture would be: no slide metadata
        cell.metadata.pop("slideshow", None)
    nb.metadata.pop("rise", None)
    nbformat.write(nb, copy)
    assert main(["slides", "check", str(copy)]) == 1
    assert "slides mark" in capsys.readouterr().out
    assert main(["slides", "mark", str(copy)]) == 0
    assert main(["slides", "check", str(copy)]) == 0
    assert copy.read_bytes() == source.read_bytes()  # the same bytes as the committed lecture
    assert main(["slides", "mark", str(copy)]) == 0 and "0 notebooks" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["00_overview.ipynb", "07_dynamo_guards_breaks.ipynb"])
def test_the_export_keeps_one_language_and_cuts_its_slides_for_it(tmp_path, name):
    """The export keeps one language's cells; its slides are cut again for that language, so that
    `slides check` on the export (the README's recipe) agrees; the English cut is the course's."""
    source = nbformat.read(REPO / "course" / name, as_version=4)
    expected = {"en": [], "zh": []}
    for cell in source.cells:
        tags = cell.metadata.get("tags", [])
        for lang in ("en", "zh"):
            if f"lang-{'zh' if lang == 'en' else 'en'}" not in tags:
                expected[lang].append((cell.source, _type(cell)))
    for lang in ("en", "zh"):
        i18n.export([REPO / "course" / name], lang, tmp_path / lang)
        nb = nbformat.read(tmp_path / lang / "course" / name, as_version=4)
        assert [c.source for c in nb.cells[1:]] == [src for src, _ in expected[lang]]
        if lang == "en":
            assert [(c.source, _type(c)) for c in nb.cells[1:]] == expected[lang]
        assert [_type(c) for c in nb.cells] == slides.slide_types(nb)
        assert slides.check_paths([tmp_path / lang / "course"]) == []
        assert _type(nb.cells[0]) == "skip" and nb.metadata.rise == {"scroll": True}
        # the slideshow's style (font sizes, scrolling) comes along: RISE loads it from the folder
        assert (tmp_path / lang / "course" / "rise.css").read_bytes() == (REPO / "course" / "rise.css").read_bytes()
        assert not any(f"lang-{'zh' if lang == 'en' else 'en'}" in c.metadata.get("tags", []) for c in nb.cells)


# -- a real slideshow ----------------------------------------------------------------------------

#: The first heading of lecture 00 in each language.
TITLE = {"en": "Three ways to get a graph", "zh": "获取计算图的三种方式"}
#: What the lecture's first code cell prints, whichever language.
FIRST_OUTPUT = "x_pos: y.sum() = +6.36"
PRESENT_ID_JS = "() => document.querySelector('.reveal section.present section.present')?.id"
SLIDE_JS = """() => {
  const present = document.querySelector('.reveal .slides section.present section.present')
      || document.querySelector('.reveal .slides > section.present');
  const all = document.querySelectorAll('.reveal .slides .jp-Cell');
  const tagged = t => document.querySelectorAll('.reveal .slides .cell-tag-' + t).length;
  return {id: present && present.id, text: present ? present.innerText : '', cells: all.length,
          en: tagged('lang-en'), zh: tagged('lang-zh'),
          h1: [...present.querySelectorAll('h1, h2')].map(h => h.innerText)}; }"""


@pytest.fixture(scope="module")
def slideshow_server(tmp_path_factory):
    """JupyterLab with jupyterlab-rise on loopback, serving lecture 00 exported to en/ and zh/."""
    import importlib.util

    assert importlib.util.find_spec("jupyterlab_rise"), "jupyterlab-rise is not installed: run `bash scripts/setup.sh --test`"
    from test_browser import _serve, write_settings

    root = tmp_path_factory.mktemp("slides")
    for lang in ("en", "zh"):
        i18n.export([REPO / "course" / "00_overview.ipynb"], lang, root / lang)
    home = tmp_path_factory.mktemp("slides-home")
    write_settings(home)
    for base, token in _serve(root, home, {}, []):
        yield base, token


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_lecture_presents_in_one_language_and_runs_code_live(slideshow_server, lang):
    from playwright.sync_api import sync_playwright
    from test_browser import _browser

    base, token = slideshow_server
    other = {"en": "zh", "zh": "en"}[lang]
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            # RISE's own page for the notebook: what View > "Render as slideshow" shows
            page.goto(f"{base}/rise/{lang}/course/00_overview.ipynb?token={token}")
            page.wait_for_selector(".reveal .slides section.present .jp-MarkdownCell h1", timeout=90_000)
            first = page.evaluate(SLIDE_JS)
            assert first["id"] == "slide-0-0" and TITLE[lang] in first["h1"][0], first["h1"]
            assert TITLE[other] not in first["text"]
            assert first[other] == 0 and first[lang] > 10, first  # no twin of the other language anywhere
            if lang == "en":
                assert not any("\u4e00" <= ch <= "\u9fff" for ch in first["text"]), first["text"][:300]
            page.screenshot(path=str(OUTPUT / f"00_{lang}_title.png"))

            # the first section, then down into its code cell (a sub-slide), and run it live
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"() => ({PRESENT_ID_JS})() === 'slide-1-0'", polling=200, timeout=10_000)
            section = page.evaluate(SLIDE_JS)
            assert section["h1"] and {"en": "The model", "zh": "模型"}[lang] in section["h1"][0], section["h1"]
            # on (Space: reveal.js's next, sub-slides first) to the slide holding the first code cell
            target = page.evaluate("() => document.querySelector('.reveal .jp-CodeCell:not(.reveal-skip)')"
                                   ".closest('section').id")
            for _ in range(10):
                if page.evaluate(PRESENT_ID_JS) == target:
                    break
                page.keyboard.press("Space")
                page.wait_for_timeout(400)
            assert page.evaluate(PRESENT_ID_JS) == target
            cell = page.locator(f"#{target} .jp-CodeCell").first
            stored = cell.locator(".jp-OutputArea-output")
            assert FIRST_OUTPUT in stored.inner_text()  # the stored output, before the run
            stored.evaluate("o => o.dataset.stored = 'yes'")  # gone once the cell runs again
            page.wait_for_timeout(600)  # RISE selects the new slide's first code cell (auto_select)
            assert "jp-mod-selected" in (cell.get_attribute("class") or "")
            cell.locator(".jp-InputPrompt").click()  # as a presenter would: the notebook takes the keys
            page.keyboard.press("Control+Enter")  # run, and stay on this slide
            page.wait_for_function(
                """([id, text]) => { const cell = document.querySelector('#' + id + ' .jp-CodeCell');
                   const out = cell && cell.querySelector('.jp-OutputArea-output');
                   return out && !out.dataset.stored && out.innerText.includes(text)
                          && cell.querySelector('.jp-InputPrompt').innerText.includes('[1]'); }""",
                arg=[target, FIRST_OUTPUT], polling=250, timeout=90_000)
            page.wait_for_timeout(300)
            page.screenshot(path=str(OUTPUT / f"00_{lang}_code_run_live.png"))
            assert (OUTPUT / f"00_{lang}_code_run_live.png").stat().st_size > 10_000
        finally:
            browser.close()


@pytest.mark.browser
@pytest.mark.slow
def test_jupyterlab_renders_the_open_lecture_as_slides(slideshow_server):
    """The way a presenter starts it: View > Render as Reveal Slideshow beside the notebook."""
    from playwright.sync_api import sync_playwright
    from test_browser import _browser, _menu

    base, token = slideshow_server
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{base}/lab/workspaces/slides/tree/zh/course/00_overview.ipynb?reset&token={token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            page.locator(".jp-StatusBar-TextItem", has_text="| Idle").wait_for(timeout=90_000)
            _menu(page, "View", "Render as Reveal Slideshow")
            frame = page.wait_for_selector("iframe[src*='/rise/zh/course/00_overview.ipynb']", timeout=30_000)
            slides = frame.content_frame()
            slides.wait_for_selector(".reveal .slides section.present .jp-MarkdownCell h1", timeout=90_000)
            shown = slides.evaluate(SLIDE_JS)
            assert TITLE["zh"] in shown["h1"][0] and shown["en"] == 0 and shown["zh"] > 10, shown["h1"]
            assert "fxcourse.language" not in shown["text"]  # the export's language cell is skipped
            page.screenshot(path=str(OUTPUT / "00_zh_in_jupyterlab.png"))
        finally:
            browser.close()
