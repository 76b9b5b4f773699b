"""JupyterHub configuration for a workshop on one machine (read by scripts/workshop.sh).

scripts/workshop.sh sets the FXCOURSE_* environment variables below and starts
``jupyterhub -f scripts/jupyter/workshop_config.py``; nothing here is meant to be edited per room.

Who logs in, and why a shared workshop code
-------------------------------------------
JupyterHub's built-in SharedPasswordAuthenticator: learners log in as ``learner01`` ...
``learnerNN`` (only those names: ``allowed_users``) with one workshop code; the instructor logs
in as ``instructor`` (the only admin) with a separate password of 32+ characters. We chose a
shared code over per-learner passwords because on one machine without per-learner Unix users
every single-user server and kernel runs as the same operating-system user as the hub: any
learner's code can read every other learner's folder (and the hub's files) whatever password
they typed, so per-learner passwords would promise a separation that is not there. The code
keeps strangers out (no open access, no invented user names); the folders keep learners from
overwriting each other by accident. Where learners must be protected from each other, use
per-learner Unix users or containers (Zero to JupyterHub), not this script.

Learner folders
---------------
Each learner's home is ``<workshop dir>/learners/<name>`` and their server opens there, with a
copy of the course's ``labs/`` made when they first start a server; a later start only adds labs
that are missing and never overwrites a file the learner has (their work survives restarts).
The instructor's server opens in the project root (course/, solutions/, and the learners'
folders when the workshop directory is inside it).
"""
from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

ROOT = Path(os.environ["FXCOURSE_ROOT"]).resolve()
WORKSHOP = Path(os.environ["FXCOURSE_WORKSHOP_DIR"]).resolve()
LEARNERS = int(os.environ["FXCOURSE_WORKSHOP_LEARNERS"])
LANG = os.environ.get("FXCOURSE_LANG", "both")
INSTRUCTOR = "instructor"
VENV = ROOT / ".venv"
HUB_STATE = WORKSHOP / "hub"


def learner_names(n: int) -> list[str]:
    """learner01 ... learnerNN (three digits from 100 learners on)."""
    width = max(2, len(str(n)))
    return [f"learner{i:0{width}d}" for i in range(1, n + 1)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- who may log in -------------------------------------------------------------------------
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ["FXCOURSE_WORKSHOP_CODE"]
c.SharedPasswordAuthenticator.admin_password = os.environ["FXCOURSE_INSTRUCTOR_PASSWORD"]
c.Authenticator.allowed_users = set(learner_names(LEARNERS))
c.Authenticator.admin_users = {INSTRUCTOR}
# Names from earlier runs with more learners lose access when the hub restarts with fewer.
c.Authenticator.allow_existing_users = False

# --- where it listens -----------------------------------------------------------------------
# The public side (the proxy) listens where workshop.sh says (127.0.0.1 unless --listen);
# the hub's own API, the proxy's API and every single-user server stay on loopback, on ports
# picked free now so two hubs (a workshop and the test) never collide.
c.JupyterHub.ip = os.environ.get("FXCOURSE_WORKSHOP_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("FXCOURSE_WORKSHOP_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = _free_port()
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.command = [str(VENV / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")]
c.Spawner.ip = "127.0.0.1"

# --- the hub's own state (database, cookie secret), kept with the workshop -----------------------
HUB_STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
c.JupyterHub.db_url = f"sqlite:///{HUB_STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB_STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB_STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server
c.JupyterHub.cleanup_proxy = True

# --- one server per learner: a process of this user, in the learner's folder --------------------
c.JupyterHub.spawner_class = "simple"  # SimpleLocalProcessSpawner: no Unix user per learner
c.SimpleLocalProcessSpawner.home_dir_template = str(WORKSHOP / "learners" / "{username}")
c.Spawner.cmd = [str(VENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
# Many learners starting at once on a small machine: give each server time to come up.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.concurrent_spawn_limit = 10
c.Spawner.args = ["--ServerApp.port_retries=0"]
if hasattr(os, "geteuid") and os.geteuid() == 0:
    c.Spawner.args.append("--allow-root")  # a root-run hub (containers, CI): servers run as root too

# One language for the room (--lang en|zh): the same custom CSS and settings course.sh uses.
_lang_env: dict[str, str] = {}
if LANG in ("en", "zh"):
    sys.path.insert(0, str(ROOT / "scripts" / "jupyter"))
    from language import prepare  # noqa: E402

    _lang_env, _lang_args = prepare(LANG)
    c.Spawner.args += _lang_args

# Shared compile caches: one learner's Inductor compile or C++ extension build serves the room
# (both caches lock their entries, so concurrent learners are safe).
_shared_env = {
    "FXCOURSE_LANG": LANG,
    "PYTHONHASHSEED": "0",
    "TORCHINDUCTOR_CACHE_DIR": os.environ.get("TORCHINDUCTOR_CACHE_DIR", str(VENV / "inductor-cache")),
    "TORCH_EXTENSIONS_DIR": os.environ.get("TORCH_EXTENSIONS_DIR", str(VENV / "torch-extensions")),
    # Each kernel's torch uses cores // learners threads (at least 1), so N learners'
    # kernels do not fight over the machine's cores.
    "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // LEARNERS)),
    "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    "VIRTUAL_ENV": str(VENV),
}


def _copy_labs(home: Path) -> None:
    """Copy the course's labs into ``home/labs``: every lab the learner does not have yet;
    never a file they already have (their edits survive restarts and new labs arrive)."""
    source, target = ROOT / "labs", home / "labs"
    target.mkdir(parents=True, exist_ok=True)
    fresh = []
    for lab in sorted(source.glob("*.ipynb")):
        if not (target / lab.name).exists():
            shutil.copyfile(lab, target / lab.name)
            fresh.append(target / lab.name)
    # Trust the fresh copies in the learner's own signature database (their HOME is their
    # folder), so JupyterLab shows the labs' stored HTML outputs as made, like course.sh does.
    if fresh:
        import nbformat
        from nbformat.sign import NotebookNotary

        data_dir = home / ".local" / "share" / "jupyter"
        data_dir.mkdir(parents=True, exist_ok=True)
        notary = NotebookNotary(data_dir=str(data_dir))
        for path in fresh:
            nb = nbformat.read(path, as_version=4)
            notary.sign(nb)


def pre_spawn_hook(spawner) -> None:
    name = spawner.user.name
    if name == INSTRUCTOR:
        home = WORKSHOP / INSTRUCTOR
        spawner.home_dir = str(home)
        spawner.notebook_dir = str(ROOT)
    else:
        home = Path(spawner.home_dir)
        spawner.notebook_dir = str(home)
    home.mkdir(parents=True, exist_ok=True)
    if name != INSTRUCTOR:
        _copy_labs(home)
    config = home / ".jupyter"
    env = dict(_shared_env)
    if _lang_env:
        # the room's language CSS, and this person's own settings and workspaces
        env.update({
            "JUPYTER_CONFIG_DIR": _lang_env["JUPYTER_CONFIG_DIR"],
            "JUPYTER_CONFIG_PATH": str(config),
            "FXCOURSE_LEARNER_CONFIG_DIR": str(config),
            "JUPYTERLAB_SETTINGS_DIR": str(config / "lab" / "user-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(config / "lab" / "workspaces"),
        })
    spawner.environment = env


c.Spawner.pre_spawn_hook = pre_spawn_hook
