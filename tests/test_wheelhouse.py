"""The wheelhouse: scripts/wheelhouse.sh asks pip for everything set-up installs, and
scripts/setup.sh installs from a wheelhouse folder, without the network, when one is there.

Most tests download and install nothing: both scripts run for real against a stand-in Python
(a small shell script) that records the pip commands it is given and runs everything else
with this Python. One slow test downloads the workshop hub's part for real (`wheelhouse.sh --hub`),
installs it in a fresh virtual environment with package downloads refused and starts the hub.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest
from commands import NO_TOOL, offline

from fxcourse._pins import TORCH, TORCHVISION

ROOT = Path(__file__).resolve().parent.parent
PIN_TORCH = f"torch=={TORCH},!={TORCH}+cpu"
PIN_TORCHVISION = f"torchvision=={TORCHVISION}"


def _copy_pins(course: Path) -> None:
    """What setup.sh and wheelhouse.sh read the torch pair from."""
    shutil.copy(ROOT / "scripts" / "pins.sh", course / "scripts" / "pins.sh")
    (course / "src" / "fxcourse").mkdir(parents=True)
    shutil.copy(ROOT / "src" / "fxcourse" / "_pins.py", course / "src" / "fxcourse" / "_pins.py")


def _stand_in_python(path: Path, log: Path, torch_installed: bool = False) -> None:
    """A python that logs `-m pip ...`, fails `import torch` unless told, runs the rest for real."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  shift 2; printf 'pip' >> {shlex.quote(str(log))}
  for a in "$@"; do printf '\t%s' "$a" >> {shlex.quote(str(log))}; done
  echo >> {shlex.quote(str(log))}; exit 0
fi
if [ "$1" = "-c" ]; then
  case "$2" in *"import torch"*) {'exit 0' if torch_installed else 'exit 1'};; esac
fi
exec {shlex.quote(sys.executable)} "$@"
""")
    path.chmod(0o755)


def _fake_course(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A copy of setup.sh in a folder shaped like the course, with stand-ins for its tools."""
    course = tmp_path / "course-copy"
    (course / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", course / "scripts" / "setup.sh")
    shutil.copy(ROOT / "pyproject.toml", course / "pyproject.toml")
    _copy_pins(course)
    for folder in ("course", "labs", "solutions"):
        (course / folder).mkdir()
        (course / folder / "x.ipynb").write_text("{}")
    log = tmp_path / "pip.log"
    _stand_in_python(course / ".venv" / "bin" / "python", log)
    tools = tmp_path / "bin"
    tools.mkdir()
    scripts = {"jupyter": 'case "$1" in --data-dir) echo /nowhere;; esac; exit 0',
               "dot": "exit 0", "fc-list": 'echo "Noto Sans CJK SC"',
               "apt-get": "echo apt-get must not run here >&2; exit 3", "sudo": "exit 3"}
    for name, body in scripts.items():
        target = course / ".venv" / "bin" / name if name == "jupyter" else tools / name
        target.write_text(f"#!/bin/sh\n{body}\n")
        target.chmod(0o755)
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "PYTHON": sys.executable}
    env.pop("FXCOURSE_WHEELHOUSE", None)
    return course, log, env


def _setup(course: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/setup.sh"], cwd=course, env=env, capture_output=True,
                          text=True, timeout=120)


def _pip_installs(log: Path) -> list[list[str]]:
    """The arguments after `pip install` of each install set-up ran (the log is tab-separated)."""
    return [line.split("\t")[2:] for line in log.read_text().splitlines() if line.startswith("pip\tinstall")]


def test_setup_installs_from_a_wheelhouse_when_one_is_there(tmp_path: Path) -> None:
    course, log, env = _fake_course(tmp_path)
    (course / "wheelhouse").mkdir()
    (course / "wheelhouse" / "anything-1.0-py3-none-any.whl").write_bytes(b"")
    run = _setup(course, env)
    assert run.returncode == 0, run.stderr
    installs = _pip_installs(log)
    assert len(installs) == 2, installs  # torch + torchvision, then the course package
    for args in installs:
        assert args[:4] == ["-q", "--no-index", "--find-links", "wheelhouse"], args
    assert PIN_TORCH in installs[0] and PIN_TORCHVISION in installs[0]
    assert installs[1][-2:] == ["-e", "."]
    assert "wheelhouse" in run.stdout


def test_setup_uses_the_network_without_a_wheelhouse(tmp_path: Path) -> None:
    course, log, env = _fake_course(tmp_path)
    (course / "wheelhouse").mkdir()  # an empty folder is no wheelhouse
    run = _setup(course, env)
    assert run.returncode == 0, run.stderr
    installs = _pip_installs(log)
    assert [args[0] for args in installs] == ["-q", "-q"]
    assert not any("--no-index" in args or "--find-links" in args for args in installs), installs
    assert installs[0][1:] == [PIN_TORCH, PIN_TORCHVISION]


def test_setup_finds_a_wheelhouse_elsewhere(tmp_path: Path) -> None:
    course, log, env = _fake_course(tmp_path)
    elsewhere = tmp_path / "usb stick" / "wheels"  # a space in the path, as on a mounted stick
    elsewhere.mkdir(parents=True)
    (elsewhere / "anything-1.0-py3-none-any.whl").write_bytes(b"")
    run = _setup(course, {**env, "FXCOURSE_WHEELHOUSE": str(elsewhere)})
    assert run.returncode == 0, run.stderr
    installs = _pip_installs(log)
    assert len(installs) == 2
    assert all(args[1:4] == ["--no-index", "--find-links", str(elsewhere)] for args in installs), installs


def _wheelhouse_script_copy(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A course folder holding wheelhouse.sh and what it reads, and a stand-in python that logs pip."""
    course = tmp_path / "course-copy"
    (course / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "wheelhouse.sh", course / "scripts" / "wheelhouse.sh")
    shutil.copy(ROOT / "pyproject.toml", course / "pyproject.toml")
    _copy_pins(course)
    log = tmp_path / "pip.log"
    fake = tmp_path / "bin" / "python"
    _stand_in_python(fake, log)
    return course, log, fake


def test_wheelhouse_script_asks_pip_for_every_pinned_package(tmp_path: Path) -> None:
    course, log, fake = _wheelhouse_script_copy(tmp_path)
    run = subprocess.run(["bash", "scripts/wheelhouse.sh", "room", "--python-version", "3.11"], cwd=course,
                         env={**os.environ, "PYTHON": str(fake)}, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    (command,) = [line.split("\t") for line in log.read_text().splitlines()]
    assert command[:3] == ["pip", "download", "--dest"] and command[3] == "room"
    assert PIN_TORCH in command and PIN_TORCHVISION in command
    assert command[-4:] == ["-r", "room/requirements.txt", "--python-version", "3.11"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = (project["build-system"]["requires"] + project["project"]["dependencies"]
              + project["project"]["optional-dependencies"]["test"])
    listed = (course / "room" / "requirements.txt").read_text().splitlines()
    assert listed == [r for r in wanted if not re.match(r"torch(vision)?==", r)]
    assert {"setuptools>=68", "wheel", "pytest>=8", "jupyterlab==4.6.*"} <= set(listed)
    # the workshop hub as workshop.sh pins it, its proxy included: a room with no network can start it
    pins = _hub_pins()
    assert {f"jupyterhub=={pins['JUPYTERHUB']}", f"configurable-http-proxy=={pins['CHP']}"} <= set(listed)


@pytest.mark.parametrize("script", ["setup.sh", "wheelhouse.sh"])
def test_scripts_need_no_sha256sum(script: str) -> None:
    """macOS has no sha256sum: hashing is Python's (setup) or not needed (wheelhouse)."""
    text = (ROOT / "scripts" / script).read_text()
    assert not re.search(r"^[^#]*\bsha256sum\b", text, re.M)


def test_setup_can_install_the_cpu_only_pair(tmp_path: Path) -> None:
    """FXCOURSE_TORCH_INDEX asks for torch and torchvision's +cpu builds, as a pair, from that index."""
    course, log, env = _fake_course(tmp_path)
    run = _setup(course, {**env, "FXCOURSE_TORCH_INDEX": "http://index.invalid/cpu"})
    assert run.returncode == 0, run.stderr
    torch_install = _pip_installs(log)[0]
    assert torch_install == ["-q", "--extra-index-url", "http://index.invalid/cpu", f"torch=={TORCH}+cpu",
                             f"torchvision=={TORCHVISION}+cpu"], torch_install
    assert PIN_TORCH not in torch_install


def _hub_pins() -> dict[str, str]:
    return dict(re.findall(r"^(JUPYTERHUB|CHP)_VERSION=(\S+)$", (ROOT / "scripts" / "workshop.sh").read_text(), re.M))


def test_wheelhouse_script_hub_part_asks_pip_for_the_hub_alone(tmp_path: Path) -> None:
    course, log, fake = _wheelhouse_script_copy(tmp_path)
    run = subprocess.run(["bash", "scripts/wheelhouse.sh", "--hub"], cwd=course,
                         env={**os.environ, "PYTHON": str(fake)}, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    (command,) = [line.split("\t") for line in log.read_text().splitlines()]
    # not wheelhouse/, where setup.sh would take a folder without torch for the whole course's wheelhouse
    assert command == ["pip", "download", "--dest", "wheelhouse-hub", "-r", "wheelhouse-hub/requirements.txt"]
    pins = _hub_pins()
    assert (course / "wheelhouse-hub" / "requirements.txt").read_text().splitlines() == [
        f"jupyterhub=={pins['JUPYTERHUB']}", f"configurable-http-proxy=={pins['CHP']}"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_the_hub_installs_from_its_wheelhouse_and_starts_without_network(tmp_path: Path) -> None:
    """`bash scripts/wheelhouse.sh --hub DIR` for real; then, in a fresh virtual environment and a room
    with no network and no Node.js, the install command the script prints, and jupyterhub from that
    environment: it answers through its proxy, which is the Python configurable-http-proxy."""
    import psutil

    started = time.monotonic()
    folder = tmp_path / "hub-wheels"
    made = subprocess.run(["bash", "scripts/wheelhouse.sh", "--hub", str(folder)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-3000:]
    downloaded = round(time.monotonic() - started, 1)
    pins = _hub_pins()
    wheels = {p.name.lower() for p in folder.iterdir()}
    assert any(n.startswith(f"jupyterhub-{pins['JUPYTERHUB']}-") for n in wheels), wheels
    assert any(n.startswith(f"configurable_http_proxy-{pins['CHP']}-") for n in wheels), wheels
    assert not any(n.startswith(("torch", "nvidia", "jupyterlab-")) for n in wheels), wheels  # the hub alone
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = offline(os.environ, tmp_path / "no-network")
    env.pop("PIP_FIND_LINKS", None)  # the wheelhouse alone, not a folder of this machine's pip set-up
    printed = re.search(r"安装：(\.venv/bin/python -m pip install .+)$", made.stdout, re.M)
    assert printed, made.stdout
    install = shlex.split(printed.group(1))
    install[0] = str(venv / "bin" / "python")
    installed = subprocess.run(install, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-3000:]
    # the room: no Node.js (shadowed first on PATH), the fresh environment's commands next
    no_network, rest = env["PATH"].split(os.pathsep, 1)
    env["PATH"] = os.pathsep.join([no_network, str(venv / "bin"), rest])
    port, hub_port, api_port = _free_port(), _free_port(), _free_port()
    log_path = tmp_path / "hub.log"
    with open(log_path, "w") as log:
        hub = subprocess.Popen([str(venv / "bin" / "jupyterhub"), "--ip=127.0.0.1", f"--port={port}",
                                f"--JupyterHub.hub_bind_url=http://127.0.0.1:{hub_port}",
                                f"--ConfigurableHTTPProxy.api_url=http://127.0.0.1:{api_port}"],
                               cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/api", timeout=2) as r:
                    answer = json.load(r)
                    break
            except OSError:
                pass
            if hub.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the hub did not start:\n" + log_path.read_text()[-4000:])
            time.sleep(0.25)
        assert answer["version"] == pins["JUPYTERHUB"], answer
        proxies = [p for p in psutil.Process(hub.pid).children(recursive=True)
                   if any("configurable-http-proxy" in a for a in p.cmdline())]
        assert len(proxies) == 1, proxies
        assert Path(proxies[0].exe()).name.startswith("python"), proxies[0].exe()
        assert str(venv / "bin" / "configurable-http-proxy") in proxies[0].cmdline(), proxies[0].cmdline()
        assert NO_TOOL not in log_path.read_text()
    finally:
        children = psutil.Process(hub.pid).children(recursive=True) if hub.poll() is None else []
        if hub.poll() is None:
            hub.send_signal(signal.SIGINT)
            try:
                hub.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, signal.SIGKILL)
                hub.wait(timeout=10)
        _, alive = psutil.wait_procs(children, timeout=10)
        for proc in alive:
            proc.kill()
    print(f"hub wheelhouse: downloaded in {downloaded} s; whole test {time.monotonic() - started:.1f} s")
