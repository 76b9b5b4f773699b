"""README command 1: `bash scripts/course.sh` serves the course on loopback, behind its own token."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from fxcourse._toggle import ZH_CSS

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _status(url: str) -> tuple[int, str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=5) as response:
            return response.status, ""
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Location", "")


def _listening_addresses(port: int) -> set[str]:
    """IPv4 addresses with a listening socket on ``port``, from /proc/net/tcp (state 0A)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


def _in_group(proc_dir: Path, pgid: int) -> bool:
    """True when the process in ``proc_dir`` belongs to process group ``pgid``."""
    try:
        fields = (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[2]) == pgid  # after the name: state, ppid, pgrp


def _start(tmp_path: Path, *args: str, **env_extra: str):
    """Start ``course.sh *args`` with the learner's Jupyter folders under ``tmp_path``; wait for
    its URL line and the server. Returns (process, log, port, url, token)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PORT=str(port), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    env.pop("FXCOURSE_LANG", None)  # the default unless a test sets it
    env.update(env_extra)
    log = tmp_path / "course.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", "scripts/course.sh", "--no-browser", *args], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    printed = rf"open the course at / 在浏览器中打开课程：(http://127\.0\.0\.1:{port}/lab/tree/course/00_overview\.ipynb\?token=([0-9a-f]+))\n"
    url = token = None
    while token is None or "Jupyter Server" not in log.read_text():  # the script's line, then the server
        match = re.search(printed, log.read_text())
        if match:
            url, token = match.groups()
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            pytest.fail("course.sh did not print its URL and start JupyterLab:\n" + log.read_text()[-2000:])
        time.sleep(0.5)
    base = f"http://127.0.0.1:{port}"
    for _ in range(60):  # the server may still be binding
        if _status(f"{base}/api/status?token={token}")[0] == 200:
            break
        time.sleep(0.5)
    return proc, log, port, url, token


def test_course_command_serves_lecture_00_on_loopback_with_a_token(tmp_path):
    proc, log, port, url, token = _start(tmp_path)
    try:
        assert "language / 语言：both" in log.read_text()
        assert len(token) == 48  # secrets.token_hex(24), made by the script itself
        assert log.read_text().count(token) == 1  # JupyterLab did not make it (it prints "token=...")
        base = f"http://127.0.0.1:{port}"
        assert _status(f"{base}/api/contents/labs")[0] == 403  # no token, no access
        assert _status(f"{base}/api/contents/labs?token={'0' * 48}")[0] == 403  # nor with a wrong one
        assert _status(f"{base}/api/contents/labs?token={token}")[0] == 200  # the whole project is served
        assert _status(url)[0] == 200  # the printed URL opens lecture 00
        jupyter = [p for p in Path("/proc").glob("[0-9]*") if _in_group(p, proc.pid)]
        assert jupyter and all(token not in (p / "cmdline").read_text(errors="replace") for p in jupyter)
        code, location = _status(f"{base}/?token={token}")
        assert code == 302 and "/lab/tree/course/00_overview.ipynb" in location
        assert _listening_addresses(port) == {"127.0.0.1"}  # bound to loopback only
        css = _get(f"{base}/custom/custom.css?token={token}")  # 'both' hides nothing; 中文 cells get SC fonts
        assert "display: none" not in css and ZH_CSS in css
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_course_command_lang_zh_hides_english_cells_and_speaks_chinese(tmp_path):
    """--lang zh: custom CSS hiding lang-en cells, JupyterLab's locale zh_CN, windowing that keeps
    every cell attached; FXCOURSE_LANG reaches the kernels. The learner's own settings stay."""
    import json

    from fxcourse._toggle import HIDE_CSS

    theme = tmp_path / "us" / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    theme.parent.mkdir(parents=True)
    theme.write_text(json.dumps({"theme": "JupyterLab Dark"}))  # a learner's own setting
    proc, log, port, _, token = _start(tmp_path, "--lang", "zh", FXCOURSE_LANG="en",  # --lang wins
                                       JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "us"))
    try:
        assert "language / 语言：zh" in log.read_text()
        base = f"http://127.0.0.1:{port}"
        assert "custom/custom.css" in _get(f"{base}/lab?token={token}")  # JupyterLab loads it
        css = _get(f"{base}/custom/custom.css?token={token}")
        assert HIDE_CSS["zh"] in css and "lang-zh" not in css

        def setting(plugin):  # what JupyterLab uses: the learner's settings over the defaults
            reply = json.loads(_get(f"{base}/lab/api/settings/{plugin}?token={token}"))
            defaults = {k: v.get("default") for k, v in reply["schema"]["properties"].items()}
            return {**defaults, **reply["settings"]}
        assert setting("@jupyterlab/translation-extension:plugin")["locale"] == "zh_CN"
        assert setting("@jupyterlab/notebook-extension:tracker")["windowingMode"] == "defer"
        assert setting("@jupyterlab/apputils-extension:notification")["fetchNews"] == "false"
        assert setting("@jupyterlab/apputils-extension:themes")["theme"] == "JupyterLab Dark"
        packs = json.loads(_get(f"{base}/lab/api/translations?token={token}"))["data"]
        assert "zh_CN" in packs  # the language pack is installed and found
        server = [p for p in Path("/proc").glob("[0-9]*") if _in_group(p, proc.pid)
                  and b"jupyter" in (p / "cmdline").read_bytes()]
        assert server and all(b"FXCOURSE_LANG=zh\0" in (p / "environ").read_bytes() for p in server)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_course_command_rejects_an_unknown_language(tmp_path):
    result = subprocess.run(["bash", "scripts/course.sh", "--lang", "fr", "--no-browser"], cwd=REPO,
                            capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "cfg")))
    assert result.returncode == 2
    assert "'fr'" in result.stderr and "en, zh or both" in result.stderr and "不支持" in result.stderr
    assert "open the course" not in result.stdout
