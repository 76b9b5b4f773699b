"""JupyterHub configuration for a workshop on one machine (read by scripts/workshop.sh).

scripts/workshop.sh sets the FXCOURSE_* environment variables below and starts
``jupyterhub -f scripts/jupyter/workshop_config.py``; nothing here is meant to be edited per room.

Who logs in, and how learners are kept apart
--------------------------------------------
JupyterHub's built-in SharedPasswordAuthenticator, with a limit on failed logins
(login_limits.py): learners log in as ``learner01`` ... ``learnerNN`` (only those names:
``allowed_users``) with one workshop code; the instructor logs in as ``instructor`` (the only
admin) with a separate password of 32+ characters.

Run as root (``FXCOURSE_WORKSHOP_USERS=1``, set by workshop.sh), every learner and the instructor
has a Unix user of their own (made by workshop.sh) and JupyterHub's LocalProcessSpawner starts
each server as that user: a learner's code cannot read or change another learner's folder
(mode 700, owned by its learner), the hub's state (``hub/``, mode 700, root's) or the hub's and
other servers' environments (where the secrets and tokens live); no server runs as root. Each
learner's compile caches are their own (a shared, writable cache would let one learner plant
code another learner's kernel loads).

Run as an ordinary user, there is no way to make users: every server and kernel runs as the
hub's own user, so any learner's code can read and change every other learner's folder and read
the hub's secrets; workshop.sh says so at start and serves beyond this machine only with
``--trusted-room``.

Learner folders
---------------
Each learner's home is ``<workshop dir>/learners/<name>`` and their server opens there, with a
copy of the course's ``labs/`` made when they first start a server; a later start only adds labs
that are missing and never overwrites a file the learner has (their work survives restarts).
The instructor's server opens in the project root (course/, solutions/, and the learners'
folders when the workshop directory is inside it).
"""
from __future__ import annotations

import asyncio
import os
import pwd
import socket
import subprocess
import sys
from pathlib import Path

from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from jupyterhub.spawner import set_user_setuid

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)

ROOT = Path(os.environ["FXCOURSE_ROOT"]).resolve()
WORKSHOP = Path(os.environ["FXCOURSE_WORKSHOP_DIR"]).resolve()
LEARNERS = int(os.environ["FXCOURSE_WORKSHOP_LEARNERS"])
LANG = os.environ.get("FXCOURSE_LANG", "both")
INSTRUCTOR = "instructor"
VENV = ROOT / ".venv"
HUB_STATE = WORKSHOP / "hub"
USERS = os.environ.get("FXCOURSE_WORKSHOP_USERS") == "1"  # a Unix user per person (root mode)
# The interpreter each person's server and kernels run: .venv's, or (root mode, when .venv's
# interpreter is in a folder other users cannot enter) workshop.sh's view of .venv.
PYTHON = Path(os.environ.get("FXCOURSE_WORKSHOP_PYTHON") or VENV / "bin" / "python")
sys.path.insert(0, str(ROOT / "scripts" / "jupyter"))
from login_limits import DELAY_S, FailedLogins  # noqa: E402
from workshop_copy import copy_labs  # noqa: E402


def learner_names(n: int) -> list[str]:
    """learner01 ... learnerNN (three digits from 100 learners on)."""
    width = max(2, len(str(n)))
    return [f"learner{i:0{width}d}" for i in range(1, n + 1)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- who may log in -------------------------------------------------------------------------
class WorkshopAuthenticator(SharedPasswordAuthenticator):
    """The shared code, with failed attempts limited per name and per address."""

    failures = FailedLogins()

    async def authenticate(self, handler, data):
        name = self.normalize_username(str(data.get("username", "")))
        address = handler.request.remote_ip if handler is not None else "?"
        if self.failures.blocked(name, address):
            self.log.warning("login refused: too many failed attempts for %s or from %s", name, address)
            await asyncio.sleep(DELAY_S)
            return None
        user = await super().authenticate(handler, data)
        if user is None:
            self.failures.failed(name, address)
            await asyncio.sleep(DELAY_S)
        else:
            self.failures.succeeded(name)
        return user


c.JupyterHub.authenticator_class = WorkshopAuthenticator
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
# JupyterHub's proxy API, served by the Python implementation (a pinned course dependency), so the
# hub needs no Node.js and sets up from a wheelhouse with no network.
c.ConfigurableHTTPProxy.command = [str(VENV / "bin" / "configurable-http-proxy")]
c.Spawner.ip = "127.0.0.1"

# --- the hub's own state (database, cookie secret), kept with the workshop -----------------------
HUB_STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
c.JupyterHub.db_url = f"sqlite:///{HUB_STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(HUB_STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(HUB_STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every learner's server
c.JupyterHub.cleanup_proxy = True

# --- one server per learner, in the learner's folder ---------------------------------------------
if os.geteuid() == 0 and not USERS:  # never: a server of a hub run as root would run as root
    raise SystemExit("workshop_config: run as root, every learner needs a Unix user of their own "
                     "(start the hub with scripts/workshop.sh)")
if USERS:  # root: each server runs as its person's own Unix user (made by workshop.sh)
    c.JupyterHub.spawner_class = "localprocess"
else:  # an ordinary user: every server runs as this user
    c.JupyterHub.spawner_class = "simple"
    c.SimpleLocalProcessSpawner.home_dir_template = str(WORKSHOP / "learners" / "{username}")
c.Spawner.cmd = [str(PYTHON), "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
# Many learners starting at once on a small machine: give each server time to come up.
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.JupyterHub.concurrent_spawn_limit = 10
c.Spawner.args = ["--ServerApp.port_retries=0"]

# One language for the room (--lang en|zh): the same custom CSS and settings course.sh uses.
_lang_env: dict[str, str] = {}
if LANG in ("en", "zh"):
    from language import prepare  # noqa: E402

    _lang_env, _lang_args = prepare(LANG)
    c.Spawner.args += _lang_args

# What every person's server gets; the compile caches are set per person in pre_spawn_hook.
_shared_env = {
    "FXCOURSE_LANG": LANG,
    "PYTHONHASHSEED": "0",
    # Each kernel's torch uses cores // learners threads (at least 1), so N learners'
    # kernels do not fight over the machine's cores.
    "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // LEARNERS)),
    # the kernel spec runs `python`: the first on PATH is the person's interpreter
    "PATH": os.pathsep.join(dict.fromkeys([str(PYTHON.parent), str(VENV / "bin"), os.environ.get("PATH", "")])),
    "VIRTUAL_ENV": str(VENV),
}


def _copy_labs_as(name: str, home: Path) -> None:
    """``copy_labs`` run as the learner's own Unix user: the hub (root) never writes into a
    folder the learner controls, where a link could send the write elsewhere."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "import workshop_copy; workshop_copy.copy_labs(Path(sys.argv[2]), Path(sys.argv[3]))")
    subprocess.run([str(PYTHON), "-c", code, str(ROOT / "scripts" / "jupyter"), str(home),
                    str(ROOT / "labs")], preexec_fn=set_user_setuid(name), env={"HOME": str(home)},
                   check=True, timeout=120)


def pre_spawn_hook(spawner) -> None:
    name = spawner.user.name
    if USERS:
        account = pwd.getpwnam(name)  # made by workshop.sh; KeyError (no server) if not
        if account.pw_uid == 0:
            raise RuntimeError(f"{name} is root: no server runs as root")
        home = Path(account.pw_dir)
    elif name == INSTRUCTOR:
        home = WORKSHOP / INSTRUCTOR
        spawner.home_dir = str(home)
    else:
        home = Path(spawner.home_dir)
    spawner.notebook_dir = str(ROOT if name == INSTRUCTOR else home)
    if not USERS:
        home.mkdir(parents=True, exist_ok=True)
    if name != INSTRUCTOR:
        if USERS:
            _copy_labs_as(name, home)
        else:
            copy_labs(home, ROOT / "labs")
    config = home / ".jupyter"
    env = dict(_shared_env)
    # Compile caches of one's own, in one's own folder: nobody else's code can end up in a learner's
    # kernel (as root), nothing a learner compiles lands in the shared .venv, and removing a learner's
    # folder removes all they left. The price: each learner compiles cold once.
    env["TORCHINDUCTOR_CACHE_DIR"] = str(home / ".cache" / "torchinductor")
    env["TORCH_EXTENSIONS_DIR"] = str(home / ".cache" / "torch_extensions")
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
