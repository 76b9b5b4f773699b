"""README command 1: `bash scripts/course.sh` serves the course on loopback, behind a token."""
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


def test_course_command_serves_lecture_00_on_loopback_with_a_token(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PORT=str(port), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"))
    log = tmp_path / "course.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["bash", "scripts/course.sh", "--no-browser"], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        token = None
        while token is None:
            match = re.search(rf"http://127\.0\.0\.1:{port}/\S*token=([0-9a-f]+)", log.read_text())
            if match:
                token = match.group(1)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("course.sh did not print a URL:\n" + log.read_text()[-2000:])
            else:
                time.sleep(0.5)
        base = f"http://127.0.0.1:{port}"
        assert _status(f"{base}/api/contents/labs")[0] == 403  # no token, no access
        assert _status(f"{base}/api/contents/labs?token={token}")[0] == 200  # the whole project is served
        code, location = _status(f"{base}/?token={token}")
        assert code == 302 and "/lab/tree/course/00_overview.ipynb" in location
        assert _listening_addresses(port) == {"127.0.0.1"}  # bound to loopback only
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
