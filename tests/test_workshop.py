"""The workshop hub: scripts/workshop.sh serving three learners on loopback, driven in Chromium.

Starts the real command (`bash scripts/workshop.sh --learners 3 --no-setup`) with its folder
in a temporary directory, logs learners in through the JupyterHub login page, runs lab 00's
checks in each learner's own copy, edits one learner's copy and shows the other's is untouched,
and that a wrong workshop code or a name outside the room is refused. Writes screenshots, the
hub's start time and the memory each learner costs under test-output/workshop/. Every process
the hub started (proxy, single-user servers, kernels) is stopped at the end, pass or fail.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from test_browser import _browser

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "test-output" / "workshop"
CODE = "test-code-" + os.urandom(4).hex()
INSTRUCTOR_PASSWORD = "instructor-" + os.urandom(16).hex()
LAB = "lab00_warmup.ipynb"
SOLUTION = ("def count_by_opcode(gm): "
            "return dict(__import__('collections').Counter(n.op for n in gm.graph.nodes))")

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ours(root: Path) -> list:
    """Processes whose working directory is inside the workshop folder: the proxy, the
    single-user servers and their kernels, even if the hub that started them is gone."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            if Path(proc.cwd()).is_relative_to(root):
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


def _stop(hub: subprocess.Popen, root: Path) -> list[str]:
    """Stop the hub (it stops the proxy and every server), then kill whatever is left.
    Returns what had to be killed."""
    import psutil

    try:
        procs = psutil.Process(hub.pid).children(recursive=True)
    except psutil.Error:
        procs = []
    if hub.poll() is None:
        hub.send_signal(signal.SIGINT)
        try:
            hub.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hub.kill()
            hub.wait(timeout=10)
    _, alive = psutil.wait_procs(procs, timeout=10)
    left = alive + [p for p in _ours(root) if p not in alive]
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=10)
    return [str(p) for p in left]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("workshop")
    # The browser test reads every cell, so no virtual scrolling in the learners' JupyterLab.
    for name in ("learner01", "learner02", "learner03"):
        settings = root / "learners" / name / ".jupyter" / "lab" / "user-settings" / "@jupyterlab"
        (settings / "notebook-extension").mkdir(parents=True)
        (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "none"}))
    port = _free_port()
    env = dict(os.environ, FXCOURSE_WORKSHOP_CODE=CODE, FXCOURSE_INSTRUCTOR_PASSWORD=INSTRUCTOR_PASSWORD,
               PYTHONHASHSEED="0")
    env.pop("FXCOURSE_LANG", None)
    log_path = root / "workshop.log"
    log = open(log_path, "w")
    started = time.monotonic()
    proc = subprocess.Popen(["bash", str(REPO / "scripts" / "workshop.sh"), "--learners", "3", "--port", str(port),
                             "--dir", str(root), "--no-setup"],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = started + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/hub/login", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the hub did not start:\n" + log_path.read_text()[-4000:])
            time.sleep(0.25)
        start_s = time.monotonic() - started
        OUTPUT.mkdir(parents=True, exist_ok=True)
        yield {"base": base, "root": root, "proc": proc, "start_s": start_s, "log": log_path}
    finally:
        killed = _stop(proc, root)
        log.close()
        OUTPUT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log_path, OUTPUT / "workshop.log")  # the hub's log, for a failure
        assert not _ours(root), "processes of the workshop survived the hub"
        if killed:
            print("[workshop test] had to kill:", killed)


def _login(page, base: str, name: str, password: str) -> None:
    page.goto(f"{base}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-item", has_text=menu).first.click()
    page.locator(".lm-Menu-item:visible", has_text=item).first.click()


def _open_lab(page, base: str, name: str) -> None:
    page.wait_for_url(f"**/user/{name}/lab**", timeout=150_000)  # spawn-pending, then JupyterLab
    page.goto(f"{base}/user/{name}/lab/tree/labs/{LAB}?reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    page.locator(".jp-StatusBar-TextItem", has_text="| Idle").wait_for(timeout=90_000)


def _run_all(page) -> None:
    _menu(page, "Edit", "Clear Outputs of All Cells")
    page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 0", timeout=30_000)
    _menu(page, "Run", "Run All Cells")
    page.wait_for_function("document.querySelectorAll('.fxcourse-check').length === 3", timeout=180_000)


def _cell_source(path: Path, index: int) -> str:
    return nbformat.read(path, as_version=4).cells[index].source


def _memory(hub_proc: subprocess.Popen) -> dict:
    """Resident (RSS) and proportional (PSS, shared pages split) memory in MiB: the hub, the
    proxy, and for each learner their single-user server and kernels."""
    import psutil

    def mib(p):
        info = p.memory_full_info()
        return {"rss": round(info.rss / 2**20, 1), "pss": round(info.pss / 2**20, 1)}

    hub = psutil.Process(hub_proc.pid)
    out = {"hub": mib(hub), "proxy": None, "learners": {}}
    for child in hub.children():
        cmd = " ".join(child.cmdline())
        if "configurable-http-proxy" in cmd:
            out["proxy"] = mib(child)
        elif "jupyterhub-singleuser" in cmd:
            user = child.environ().get("JUPYTERHUB_USER")
            kernels = [k for k in child.children(recursive=True) if "ipykernel" in " ".join(k.cmdline())]
            out["learners"][user] = {"server": mib(child), "kernels": [mib(k) for k in kernels],
                                     "kernel_python": kernels[0].cmdline()[0] if kernels else None}
    return out


def test_a_wrong_code_or_a_stranger_is_refused(hub):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = _browser(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            _login(page, hub["base"], "learner01", "not-the-code")
            error = page.locator(".login_error")
            error.wait_for(timeout=30_000)
            assert "Invalid username or password" in error.inner_text()
            page.screenshot(path=str(OUTPUT / "wrong_code.png"))
            # the right code, but a name outside learner01..learner03
            _login(page, hub["base"], "learner04", CODE)
            page.locator(".login_error").wait_for(timeout=30_000)
            assert "/hub/login" in page.url
            # learners may not use the instructor's name with their code
            _login(page, hub["base"], "instructor", CODE)
            page.locator(".login_error").wait_for(timeout=30_000)
            assert "/hub/login" in page.url
        finally:
            browser.close()


def test_learners_run_checks_in_their_own_copies(hub):
    from playwright.sync_api import sync_playwright

    base, root = hub["base"], hub["root"]
    mine = {name: root / "learners" / name / "labs" / LAB for name in ("learner01", "learner02", "learner03")}
    original = _cell_source(REPO / "labs" / LAB, 5)
    assert "NotImplementedError" in original
    # seconds: the hub from the command to its login page; each learner from the first login
    # to their lab open with an idle kernel
    timings = {"hub_start_s": round(hub["start_s"], 1)}
    with sync_playwright() as p:
        browser = _browser(p)
        try:
            # all three log in (their servers start side by side), then each opens lab 00
            pages = {}
            t0 = time.monotonic()
            for name in mine:
                pages[name] = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                _login(pages[name], base, name, CODE)
            for name, page in pages.items():
                _open_lab(page, base, name)
                timings[f"{name}_ready_s"] = round(time.monotonic() - t0, 1)
            # the copy was made at first spawn, from the course's labs/
            for name, path in mine.items():
                assert path.is_file(), f"{name} has no copy of {LAB}"
                assert _cell_source(path, 5) == original

            # learner01 solves exercise 1 in their copy and saves it
            page = pages["learner01"]
            cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(5)
            assert "count_by_opcode" in cell.inner_text()
            cell.locator(".cm-content").click()
            page.keyboard.press("Control+A")
            page.keyboard.insert_text(SOLUTION)
            _run_all(page)
            assert page.locator(".fxcourse-check-passed").count() == 1
            assert page.locator(".fxcourse-check-not_implemented").count() == 2
            page.keyboard.press("Escape")
            page.keyboard.press("Control+S")
            deadline = time.monotonic() + 30
            while _cell_source(mine["learner01"], 5) != SOLUTION:
                assert time.monotonic() < deadline, "learner01's edit never reached their file"
                time.sleep(0.5)
            page.locator(".fxcourse-check-passed").first.scroll_into_view_if_needed()
            page.screenshot(path=str(OUTPUT / "learner01_solved_exercise1.png"))

            # learner02 and learner03 run the same checks on their own, untouched stubs
            for name in ("learner02", "learner03"):
                page = pages[name]
                assert "NotImplementedError" in page.locator(
                    ".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(5).inner_text()
                _run_all(page)
                assert page.locator(".fxcourse-check-not_implemented").count() == 3
                first = page.locator(".fxcourse-check").first
                assert "lab00.1" in first.inner_text() and "尚未完成" in first.inner_text()
                first.scroll_into_view_if_needed()
                page.screenshot(path=str(OUTPUT / f"{name}_not_yet_implemented.png"))
                assert _cell_source(mine[name], 5) == original
            assert _cell_source(REPO / "labs" / LAB, 5) == original  # the course's copy too

            # learner02 cannot open learner01's server
            response = pages["learner02"].goto(f"{base}/user/learner01/lab")
            assert response is not None and response.status == 403, response and response.status
            pages["learner02"].screenshot(path=str(OUTPUT / "learner02_at_learner01_forbidden.png"))

            # memory with three learners, each with one kernel after a lab check
            memory = _memory(hub["proc"])
        finally:
            browser.close()
    assert sorted(memory["learners"]) == ["learner01", "learner02", "learner03"]
    venv_python = REPO / ".venv" / "bin" / "python"
    for name, used in memory["learners"].items():
        assert len(used["kernels"]) == 1, (name, used)
        assert Path(used["kernel_python"]).resolve() == venv_python.resolve()  # the course's environment
        assert used["server"]["pss"] > 10 and used["kernels"][0]["pss"] > 50, used
    per = [u["server"]["pss"] + u["kernels"][0]["pss"] for u in memory["learners"].values()]
    memory["per_learner_pss_mib"] = {"min": min(per), "max": max(per)}
    memory["total_pss_mib"] = round(memory["hub"]["pss"] + (memory["proxy"] or {"pss": 0})["pss"] + sum(per), 1)
    (OUTPUT / "measurements.json").write_text(json.dumps({"timings": timings, "memory": memory}, indent=2))
    print(json.dumps({"timings": timings, "memory": memory}, indent=2))
