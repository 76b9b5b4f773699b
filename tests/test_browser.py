"""A real browser: JupyterLab on loopback, Chromium driven by Playwright, lab00 run in the page.

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


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    for folder in ("labs", "solutions"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".backups"))
    home = tmp_path_factory.mktemp("jupyter-home")
    for name, value in SETTINGS.items():
        target = home / "settings" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(value))
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "ws"),
               PYTHONHASHSEED="0")
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}"]
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
    yield base, token, root
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


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
