"""The workshop hub: scripts/workshop.sh serving learners on loopback, driven in Chromium.

Starts the real command (`bash scripts/workshop.sh --learners 4 --no-setup`) with its folder
in a temporary directory, logs learners in through the JupyterHub login page, runs lab 00's
checks in each learner's own copy, edits one learner's copy and shows the other's is untouched,
and that a wrong workshop code or a name outside the room is refused and that guessing codes is
limited. Run as root (as CI runs), each learner has a Unix user of their own: the attacks a
learner in the room would try (another learner's lab, the hub's secrets and state, another
server's token, root's files) are tried as that learner and must fail. Run as an ordinary user
the script warns that learners are not kept apart and refuses to serve the network without
--trusted-room. Writes screenshots, the hub's start time and the memory each learner costs
under test-output/workshop/. Every process the hub started (proxy, single-user servers,
kernels) is stopped at the end, pass or fail.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from commands import NO_TOOL
from commands import offline as _offline
from test_browser import _browser

ROOT_MODE = hasattr(os, "geteuid") and os.geteuid() == 0  # CI: a Unix user per learner

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
def hub():
    import tempfile

    # not under pytest's own temporary folder, which only root may enter: learners' users
    # must reach their folders (workshop.sh opens the workshop folder itself to them)
    root = Path(tempfile.mkdtemp(prefix="fxcourse-workshop-"))
    # The browser test reads every cell, so no virtual scrolling in the learners' JupyterLab.
    for name in ("learner01", "learner02", "learner03"):
        settings = root / "learners" / name / ".jupyter" / "lab" / "user-settings" / "@jupyterlab"
        (settings / "notebook-extension").mkdir(parents=True)
        (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text(
            json.dumps({"windowingMode": "none"}))
    port = _free_port()
    users_before = _workshop_users()
    env = dict(_offline(os.environ, root / "no-network"), FXCOURSE_WORKSHOP_CODE=CODE, FXCOURSE_INSTRUCTOR_PASSWORD=INSTRUCTOR_PASSWORD,
               PYTHONHASHSEED="0")
    env.pop("FXCOURSE_LANG", None)
    log_path = root / "workshop.log"
    log = open(log_path, "w")
    started = time.monotonic()
    proc = subprocess.Popen(["bash", str(REPO / "scripts" / "workshop.sh"), "--learners", "4", "--port", str(port),
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
        for name in sorted(_workshop_users() - users_before):  # only the users this test made
            subprocess.run(["userdel", name], check=True)
        shutil.rmtree(root, ignore_errors=True)


def _workshop_users() -> set[str]:
    """Unix users workshop.sh made (their comment field is its marker)."""
    import pwd

    return {p.pw_name for p in pwd.getpwall() if p.pw_gecos == "fxcourse workshop"}


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


def _saved_cell_source(path: Path, index: int) -> str | None:
    """The cell's source, or None while the server is still writing the file (it can be
    caught empty or half-written between two polls)."""
    try:
        return _cell_source(path, index)
    except (nbformat.reader.NotJSONError, ValueError, OSError):
        return None


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
            out["proxy"] = {**mib(child), "runs": Path(child.exe()).name}
        elif "jupyterhub.singleuser" in cmd or "jupyterhub-singleuser" in cmd:
            user = child.environ().get("JUPYTERHUB_USER")
            kernels = [k for k in child.children(recursive=True) if "ipykernel" in " ".join(k.cmdline())]
            out["learners"][user] = {"server": mib(child), "kernels": [mib(k) for k in kernels],
                                     "caches": [child.environ().get(key) for key in
                                                ("TORCHINDUCTOR_CACHE_DIR", "TORCH_EXTENSIONS_DIR")],
                                     "kernel_python": kernels[0].cmdline()[0] if kernels else None,
                                     "uids": sorted({p.uids().effective for p in [child, *kernels]})}
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
            # the right code, but a name outside learner01..learner04
            _login(page, hub["base"], "learner05", CODE)
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
            while _saved_cell_source(mine["learner01"], 5) != SOLUTION:
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
    # the proxy is the Python implementation from the course's environment: the hub started with
    # downloads refused and no Node.js, and its set-up never tried them (JupyterLab itself asks
    # for node once a server runs, to show its build status, and does without it)
    assert memory["proxy"] and memory["proxy"]["runs"].startswith("python"), memory["proxy"]
    set_up = re.split(r"^\[[DIWE] \d{4}-", hub["log"].read_text(), maxsplit=1, flags=re.M)[0]
    assert "[workshop]" in set_up and NO_TOOL not in set_up, set_up
    venv_python = REPO / ".venv" / "bin" / "python"
    # the course's environment: .venv's interpreter, or (root, when other users cannot run it)
    # workshop.sh's view of .venv run by the system's Python of the same version
    course_pythons = {str(venv_python), str(root / "python" / "bin" / "python")}
    for name, used in memory["learners"].items():
        assert len(used["kernels"]) == 1, (name, used)
        if ROOT_MODE:  # each server and kernel runs as its learner's own user, never as root
            import pwd

            assert used["uids"] == [pwd.getpwnam(name).pw_uid], (name, used["uids"])
        assert used["kernel_python"] in course_pythons, used["kernel_python"]  # the course's environment
        # compile caches in the learner's own folder, never in the shared .venv
        assert all(cache and cache.startswith(str(root / "learners" / name) + os.sep) for cache in used["caches"]), used
        assert used["server"]["pss"] > 10 and used["kernels"][0]["pss"] > 50, used
    per = [u["server"]["pss"] + u["kernels"][0]["pss"] for u in memory["learners"].values()]
    memory["per_learner_pss_mib"] = {"min": min(per), "max": max(per)}
    memory["total_pss_mib"] = round(memory["hub"]["pss"] + (memory["proxy"] or {"pss": 0})["pss"] + sum(per), 1)
    (OUTPUT / "measurements.json").write_text(json.dumps({"timings": timings, "memory": memory}, indent=2))
    print(json.dumps({"timings": timings, "memory": memory}, indent=2))


# -- what a learner in the room can reach --------------------------------------------------------

_ATTACKS = r'''
import json, os, sys
hub, proxy, other_server, root, repo = sys.argv[1:6]
other = f"{root}/learners/learner02"


def attempt(act):
    try:
        act()
        return "done"
    except (PermissionError, FileNotFoundError) as exc:  # denied, or hidden behind a closed folder
        return type(exc).__name__


def read(path):
    with open(path, "rb") as f:
        f.read()


def open_to_write(path):  # opened for appending, nothing written: the file's bytes stay
    with open(path, "ab"):
        pass


print(json.dumps({
    "read another learner's lab": attempt(lambda: read(f"{other}/labs/lab00_warmup.ipynb")),
    "change another learner's lab": attempt(lambda: open_to_write(f"{other}/labs/lab00_warmup.ipynb")),
    "list another learner's folder": attempt(lambda: os.listdir(other)),
    "read the hub's environment (password, code)": attempt(lambda: read(f"/proc/{hub}/environ")),
    "read the proxy's environment (its token)": attempt(lambda: read(f"/proc/{proxy}/environ")),
    "read another learner's server environment (its token)": attempt(lambda: read(f"/proc/{other_server}/environ")),
    "read the hub's database": attempt(lambda: read(f"{root}/hub/jupyterhub.sqlite")),
    "read the hub's cookie secret": attempt(lambda: read(f"{root}/hub/jupyterhub_cookie_secret")),
    "read the workshop code file": attempt(lambda: read(f"{root}/hub/workshop-code")),
    "read /etc/shadow": attempt(lambda: read("/etc/shadow")),
    "write into the course": attempt(lambda: open_to_write(f"{repo}/labs/lab00_warmup.ipynb")),
    "become root": attempt(lambda: os.setuid(0)),
}))
'''


def _hub_children(hub_proc: subprocess.Popen) -> dict:
    import psutil

    found = {}
    for child in psutil.Process(hub_proc.pid).children():
        cmd = " ".join(child.cmdline())
        if "configurable-http-proxy" in cmd:
            found["proxy"] = child.pid
        elif "jupyterhub.singleuser" in cmd or "jupyterhub-singleuser" in cmd:
            found[child.environ().get("JUPYTERHUB_USER")] = child.pid
    return found


def test_a_learner_cannot_reach_another_learner_the_hub_or_root(hub):
    """Run after the learners' servers started: every attack, as learner01's own identity."""
    children = _hub_children(hub["proc"])
    assert {"proxy", "learner01", "learner02"} <= set(children), children
    args = [str(hub["proc"].pid), str(children["proxy"]), str(children["learner02"]), str(hub["root"]), str(REPO)]
    view = hub["root"] / "python" / "bin" / "python"  # workshop.sh's view, when learners cannot run .venv's
    python = str(view if view.exists() else REPO / ".venv" / "bin" / "python")
    # as root, learner01's kernel runs as the Unix user learner01 (asserted in the test above);
    # as an ordinary user, it runs as the hub's own user: the attacks run as that identity
    command = (["runuser", "-u", "learner01", "--"] if ROOT_MODE else []) + [python, "-c", _ATTACKS, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    (OUTPUT / "attacks.json").write_text(json.dumps({"root_mode": ROOT_MODE, "outcome": outcome}, indent=2))
    if ROOT_MODE:
        succeeded = [attack for attack, result in outcome.items() if result == "done"]
        assert succeeded == [], f"attacks that worked as learner01: {succeeded}"
    else:  # the documented shared mode: learners are not kept apart (workshop.sh says so)
        for attack in ("read another learner's lab", "change another learner's lab",
                       "read the hub's environment (password, code)", "read the workshop code file"):
            assert outcome[attack] == "done", (attack, outcome)


def _login_status(base: str, name: str, password: str) -> int:
    """POST the login form without following the redirect: 302 logged in, 403 refused."""
    import http.cookiejar
    import re
    import urllib.error
    import urllib.parse

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect)
    page = opener.open(f"{base}/hub/login", timeout=30).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": name, "password": password, "_xsrf": xsrf}).encode()
    try:
        return opener.open(urllib.request.Request(f"{base}/hub/login", data=form), timeout=60).status
    except urllib.error.HTTPError as err:
        return err.code


def test_guessing_the_code_is_slow_and_then_locked(hub):
    base = hub["base"]
    started = time.monotonic()
    for guess in range(10):  # login_limits.PER_NAME failures for learner04
        assert _login_status(base, "learner04", f"guess-{guess:04d}") == 403
    assert time.monotonic() - started >= 10 * 0.9  # each failure waits about a second
    assert _login_status(base, "learner04", CODE) == 403  # locked: even the right code is refused
    assert _login_status(base, "learner03", CODE) == 302  # another name is not locked by it


def test_an_ordinary_user_is_told_learners_are_not_kept_apart_and_kept_off_the_network(tmp_path):
    """workshop.sh run by an ordinary user. Run as root, the script is shown an ordinary user's
    `id` (no other user can run this machine's course environment): it must warn and refuse
    before starting anything, as it does for a real ordinary user."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="fxcourse-shared-"))
    try:
        env = dict(os.environ, FXCOURSE_WORKSHOP_CODE=CODE, FXCOURSE_INSTRUCTOR_PASSWORD=INSTRUCTOR_PASSWORD)
        if ROOT_MODE:
            fake = tmp_path / "bin"
            fake.mkdir()
            (fake / "id").write_text('#!/bin/sh\ncase "$1" in -u) echo 1000 ;; -un) echo teacher ;; '
                                     '*) exec /usr/bin/id "$@" ;; esac\n')
            (fake / "id").chmod(0o755)
            env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
        base = ["bash", str(REPO / "scripts" / "workshop.sh"), "--learners", "2", "--no-setup", "--dir", str(folder),
                "--port", str(_free_port())]
        refused = subprocess.run(base + ["--listen", "0.0.0.0"], capture_output=True, text=True,
                                 timeout=120, cwd=REPO, env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "--trusted-room" in refused.stderr and "学员之间没有隔离" in refused.stderr
        warning = " ".join(refused.stdout.split())
        assert "any learner's code can read and change every other learner's work" in warning
        assert "instructor's password" in warning and "读到讲师密码" in warning
        assert not (folder / "hub" / "jupyterhub.sqlite").exists()  # no hub was started
    finally:
        shutil.rmtree(folder, ignore_errors=True)
