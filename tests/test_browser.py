"""A real browser: JupyterLab on loopback, Chromium driven by Playwright, lab00 run in the page,
and the course read in one language (course.sh --lang en|zh, and fxcourse.language() in a cell).
Screenshots go to test-output/browser/.

The notebooks are copied to a temporary folder first, so JupyterLab's autosave never
touches the repository. The browser must be installed (scripts/setup.sh --test does it);
a missing browser fails this test rather than skipping it.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "test-output" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SETTINGS = {
    # every cell in the DOM (no virtual scrolling), no "Jupyter news" prompt
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(root: Path, home: Path, env: dict[str, str], args: list[str]):
    """Run JupyterLab on loopback for ``root`` with the learner's folders under ``home``;
    yields (base URL, token) while it runs."""
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "ws"),
           "PYTHONHASHSEED": "0", "FXCOURSE_LANG": "both", **env}
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", *args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "w")
    server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (home / "server.log").read_text()[-3000:])
            time.sleep(0.5)
    yield base, token
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


def write_settings(home):
    """JupyterLab's user settings for the tests (no news prompt, ...) under ``home``."""
    for name, value in SETTINGS.items():
        target = home / "settings" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for folder in ("labs", "solutions"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".backups"))
    home = tmp_path_factory.mktemp("jupyter-home")
    write_settings(home)
    for base, token in _serve(root, home, {}, []):
        yield base, token, root


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(".lm-Menu-item:visible", has_text=item).first.click()


def _browser(p):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is not installed: run `bash scripts/setup.sh --test`"
    return p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)


def _scratch_notebook(root, name: str, *sources: str) -> str:
    """Write ``views/<name>`` (one code cell per source, with kernelspec metadata so JupyterLab
    starts the kernel without asking) into the served copy; returns its path for :func:`_open`."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    (root / "views").mkdir(exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in sources], metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}}), root / "views" / name)
    return f"views/{name}"


def _open(page, base: str, token: str, notebook: str) -> None:
    """Open ``notebook`` in a fresh workspace (no tabs restored) and wait for an idle kernel."""
    workspace = notebook.split("/")[0]
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{notebook}?reset&token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").wait_for(timeout=90_000)


@pytest.mark.parametrize("notebook, status, marker", [
    ("labs/lab00_warmup.ipynb", "not_implemented", "尚未完成"),
    ("solutions/lab00_warmup.ipynb", "passed", "通过"),
])
def test_run_all_shows_the_checkers_feedback(jupyterlab, notebook, status, marker):
    from playwright.sync_api import sync_playwright

    base, token, _ = jupyterlab
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open(page, base, token, notebook)
            checks = page.locator(".jp-OutputArea-output .fxcourse-check")
            # the stored outputs render
            page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 3", timeout=90_000)
            _menu(page, "Edit", "Clear Outputs of All Cells")
            page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 0", timeout=30_000)
            _menu(page, "Run", "Run All Cells")
            page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 3", timeout=180_000)
            assert page.locator(f".fxcourse-check-{status}").count() == 3
            first = checks.first
            assert marker in first.inner_text() and "lab00.1" in first.inner_text()
            first.scroll_into_view_if_needed()
            name = notebook.replace("/", "_").replace(".ipynb", ".png")
            page.screenshot(path=str(OUTPUT / name))
            assert (OUTPUT / name).stat().st_size > 10_000
        finally:
            browser.close()


def test_resnet18_graph_table_renders_styled_in_jupyterlab(jupyterlab):
    """graph_table's HTML survives JupyterLab's sanitiser: every node a row, rows coloured by opcode."""
    from playwright.sync_api import sync_playwright

    base, token, root = jupyterlab
    source = ("import torch\nfrom fxcourse import graph_table, zoo\n"
              "model, _ = zoo.example('resnet18')\ngm = torch.fx.symbolic_trace(model)\n"
              "print(len(gm.graph.nodes), 'nodes')\ngraph_table(gm, columns=['+users'])")
    notebook = _scratch_notebook(root, "resnet18_table.ipynb", source)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open(page, base, token, notebook)
            _menu(page, "Run", "Run All Cells")
            table = page.locator(".jp-OutputArea-output .fxcourse-graph-table")
            table.wait_for(timeout=120_000)
            nodes = int(page.locator(".jp-OutputArea-output pre").first.inner_text().split()[0])
            assert table.locator("tbody tr").count() == nodes
            assert "layer1.0.conv1" in table.inner_text() and "users" in table.inner_text()
            colour = table.locator("tr.op-call_module").first.evaluate("r => getComputedStyle(r).backgroundColor")
            assert colour == "rgb(234, 247, 234)", colour  # the inline <style> was applied
            align = table.locator("td").first.evaluate("c => getComputedStyle(c).textAlign")
            assert align == "left", align
            page.screenshot(path=str(OUTPUT / "resnet18_graph_table.png"))
        finally:
            browser.close()


def test_a_drawing_and_a_plot_render_in_jupyterlab(jupyterlab):
    """draw() shows as SVG and bar_plot() as PNG in a JupyterLab output, 中文 labels included."""
    from playwright.sync_api import sync_playwright

    base, token, root = jupyterlab
    drawing = ("import torch\nfrom fxcourse import capture, draw, zoo\n"
               "model, args = zoo.example('gate')\ndraw(capture(model, *args))")
    plot = ("from fxcourse import bar_plot\n"
            "bar_plot({('eager', '即时执行'): 12.5, ('compiled', '编译后'): 3.2},"
            " title=('time per call', '每次调用耗时'), unit='µs')")
    notebook = _scratch_notebook(root, "pictures.ipynb", drawing, plot)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            _open(page, base, token, notebook)
            _menu(page, "Run", "Run All Cells")
            svg = page.locator(".jp-OutputArea-output.jp-RenderedSVG").first
            svg.wait_for(timeout=120_000)
            png = page.locator(".jp-OutputArea-output.jp-RenderedImage img").first
            png.wait_for(timeout=120_000)
            # JupyterLab shows the SVG inline or as an <img>; either way it must have drawn
            box = svg.bounding_box()
            assert box and box["width"] > 300 and box["height"] > 300, box
            inline = svg.locator("svg")
            if inline.count():
                text = inline.first.inner_text()
                assert "graph break 1" in text and "图中断" in text
            else:
                assert svg.locator("img").first.evaluate("i => i.naturalWidth") > 300
            assert png.evaluate("i => i.complete && i.naturalWidth") > 500
            assert page.locator(".jp-OutputArea-output .jp-RenderedText").count() == 0  # no repr text instead
            svg.scroll_into_view_if_needed()
            page.screenshot(path=str(OUTPUT / "drawing_and_plot.png"), full_page=True)
            assert (OUTPUT / "drawing_and_plot.png").stat().st_size > 20_000
        finally:
            browser.close()


# -- one language at a time: scripts/course.sh --lang en|zh ------------------------------------

LECTURE = "course/00_overview.ipynb"
LAB = "labs/lab00_warmup.ipynb"
#: JupyterLab's own words for the menus these tests use, in each interface language.
MENUS = {"en": {"File": "File", "Edit": "Edit", "Run": "Run", "Clear": "Clear Outputs of All Cells",
                "Run All": "Run All Cells", "idle": "Idle"},
         "zh": {"File": "文件", "Edit": "编辑", "Run": "运行", "Clear": "清除所有单元格的输出",
                "Run All": "运行所有单元格", "idle": "空闲"}}
#: What one check() result says in each language (a stub that raises NotImplementedError).
NOT_YET = {"en": "not yet implemented", "zh": "尚未完成"}
#: For each cell kind, [cells on the page, cells visible].
VISIBLE_JS = """() => { const r = {};
  for (const [k, s] of [['en', '.cell-tag-lang-en'], ['zh', '.cell-tag-lang-zh'], ['code', '.jp-CodeCell']]) {
    const all = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook ' + s)];
    r[k] = [all.length, all.filter(e => e.checkVisibility()).length]; }
  return r; }"""


def _language_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fxcourse_jupyter_language", REPO / "scripts" / "jupyter" / "language.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=["en", "zh"])
def one_language(request, tmp_path_factory):
    """JupyterLab as ``course.sh --lang <lang>`` starts it (the same scripts/jupyter/language.py,
    with its folders in a temporary app directory), serving trusted copies of lecture 00 and lab00."""
    lang = request.param
    root = tmp_path_factory.mktemp(f"course-{lang}")
    for notebook in (LECTURE, LAB):
        (root / notebook).parent.mkdir(exist_ok=True)
        shutil.copyfile(REPO / notebook, root / notebook)
    home = tmp_path_factory.mktemp(f"jupyter-home-{lang}")
    base_settings = home / "app" / "settings"  # what setup.sh writes into the real app directory
    base_settings.mkdir(parents=True)
    base_settings.joinpath("overrides.json").write_text(json.dumps(
        {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}))
    env = {"JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "ws"), "JUPYTER_DATA_DIR": str(home / "data")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # prepare() reads the learner's folders from the environment
    try:
        lang_env, args = _language_module().prepare(lang, app_dir=home / "app")
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    # as setup.sh's `jupyter trust` does: sign the notebooks in the secret database of the
    # server's data directory, so their stored HTML outputs are shown as they were made
    import nbformat
    from nbformat.sign import NotebookNotary

    Path(env["JUPYTER_DATA_DIR"]).mkdir()
    notary = NotebookNotary(data_dir=env["JUPYTER_DATA_DIR"])
    for notebook in (LECTURE, LAB):
        notary.sign(nbformat.read(root / notebook, as_version=4))
    for base, token in _serve(root, home, {**env, **lang_env, "FXCOURSE_LANG": lang}, args):
        yield lang, base, token, root


def _wait_all_cells(page, notebook_file: Path) -> None:
    """Wait until every cell of the notebook is on the page ('defer' windowing attaches them
    when the browser is idle)."""
    import nbformat

    cells = len(nbformat.read(notebook_file, as_version=4).cells)
    page.wait_for_function(f"document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length >= {cells}",
                           timeout=90_000)


def _open_in(page, base: str, token: str, notebook: str, lang: str) -> None:
    page.goto(f"{base}/lab/workspaces/{lang}/tree/{notebook}?reset&token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-CodeCell", timeout=90_000)  # the first cell may be hidden
    page.locator(".jp-StatusBar-TextItem", has_text=f"| {MENUS[lang]['idle']}").wait_for(timeout=90_000)


def test_a_lecture_shows_one_language(one_language):
    """The lecture shows only the chosen language's prose (all code), JupyterLab's menus speak it,
    the stored HTML output keeps its style (trusted), and the last cell scrolls into view."""
    from playwright.sync_api import sync_playwright

    lang, base, token, root = one_language
    other = {"en": "zh", "zh": "en"}[lang]
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open_in(page, base, token, LECTURE, lang)
            _wait_all_cells(page, root / LECTURE)
            seen = page.evaluate(VISIBLE_JS)
            assert seen[other][0] > 10 and seen[other][1] == 0, seen  # on the page, none visible
            assert seen[lang][1] == seen[lang][0] == seen[other][0], seen  # every twin of ours shows
            assert seen["code"][1] == seen["code"][0] > 10, seen  # code cells stay
            menus = page.locator(".lm-MenuBar-item").all_inner_texts()
            assert menus[0] == MENUS[lang]["File"], menus
            heading = page.locator(".jp-MarkdownCell:visible h1").first.inner_text()
            assert ("获取计算图" in heading) == (lang == "zh"), heading
            # the trusted notebook's stored compare_capture table keeps its own <style>
            th = page.locator(".fxcourse-compare-table th").first
            assert th.evaluate("e => getComputedStyle(e).textAlign") == "left"
            page.screenshot(path=str(OUTPUT / f"lecture00_{lang}.png"))
            # hidden cells do not confuse the notebook's windowing: the last one scrolls into view
            last = page.locator(f".jp-Notebook .cell-tag-lang-{lang}").last
            last.scroll_into_view_if_needed()
            assert ("练习" if lang == "zh" else "Exercises") in last.inner_text()
            box, outer = last.bounding_box(), page.locator(".jp-NotebookPanel .jp-WindowedPanel-outer").bounding_box()
            assert box and outer["y"] <= box["y"] < outer["y"] + outer["height"], (box, outer)
        finally:
            browser.close()


def test_a_lab_checks_in_one_language_and_the_toggle_switches_live(one_language):
    """Run All in lab00: every check() result speaks the chosen language only. Then
    fxcourse.language(...) typed into new cells: it overrides course.sh's choice for this
    notebook, a later call undoes an earlier one, 'both' shows everything, and the kernel
    speaks the new language."""
    from playwright.sync_api import sync_playwright

    lang, base, token, root = one_language
    other = {"en": "zh", "zh": "en"}[lang]
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open_in(page, base, token, LAB, lang)
            _wait_all_cells(page, root / LAB)
            seen = page.evaluate(VISIBLE_JS)
            prose, code = seen[lang][0], seen["code"][0]
            assert seen[other] == [prose, 0] and seen[lang] == [prose, prose] and prose > 0, seen
            _menu(page, MENUS[lang]["Edit"], MENUS[lang]["Clear"])
            page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 0", timeout=30_000)
            _menu(page, MENUS[lang]["Run"], MENUS[lang]["Run All"])
            page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 3", timeout=180_000)
            results = page.locator(".jp-OutputArea-output .fxcourse-check").all_inner_texts()
            for text in results:
                assert NOT_YET[lang] in text and NOT_YET[other] not in text, text
            if lang == "en":
                assert not any("\u4e00" <= ch <= "\u9fff" for text in results for ch in text), results
            page.locator(".jp-OutputArea-output .fxcourse-check").first.scroll_into_view_if_needed()
            page.screenshot(path=str(OUTPUT / f"lab00_{lang}.png"))

            # the toggle: a new cell below the last code cell, typed and run like a learner would
            def run_new_cell(source: str) -> dict:
                page.locator(".jp-Notebook .jp-CodeCell").last.locator(".jp-InputArea-editor").click()
                page.keyboard.press("Escape")
                page.keyboard.press("b")  # insert a cell below, in command mode
                page.keyboard.press("Enter")
                page.keyboard.insert_text(source)
                page.keyboard.press("Control+Enter")
                page.locator(".jp-Notebook .jp-CodeCell").last.locator(".fxcourse-language").wait_for(timeout=60_000)
                page.wait_for_timeout(200)
                return page.evaluate(VISIBLE_JS)

            code_seen = lambda n: [code + n, code + n]  # noqa: E731 - the new cells are code cells
            assert run_new_cell(f'import fxcourse\nfxcourse.language("{other}")') == {
                lang: [prose, 0], other: [prose, prose], "code": code_seen(1)}  # course.sh's choice undone
            said = page.locator(".jp-Notebook .fxcourse-language").last.inner_text()
            assert said == {"zh": "fxcourse 语言：只显示中文", "en": "fxcourse language: English only"}[other]
            page.screenshot(path=str(OUTPUT / f"lab00_{lang}_toggled_to_{other}.png"))
            assert run_new_cell(f'fxcourse.language("{lang}")') == {
                lang: [prose, prose], other: [prose, 0], "code": code_seen(2)}  # the later call wins
            assert run_new_cell('fxcourse.language("both")') == {
                lang: [prose, prose], other: [prose, prose], "code": code_seen(3)}
        finally:
            browser.close()
