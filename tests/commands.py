"""Helpers for tests that run the ``fxcourse`` command the way a shell would."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def into_closed_pipe(*args: str, timeout: int = 300) -> str:
    """Run ``fxcourse ARGS | true`` (a reader that goes away at once) from the repository; return
    what the command wrote to stderr."""
    script = (f"import sys; sys.argv = ['fxcourse', *{list(args)!r}]\n"
              "from fxcourse.tooling.cli import main; raise SystemExit(main())")
    run = subprocess.run(f"{sys.executable} -c \"{script}\" | true", shell=True, cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout)
    return run.stderr


#: What a tool shadowed by :func:`offline` prints when something calls it.
NO_TOOL = "called in a room without network or Node.js"


def offline(environ, folder: Path) -> dict:
    """``environ`` as a room with no network would have it: pip may not download (no index, and
    an index address that refuses), and node, npm and npx are commands in ``folder``, first on
    PATH, that only fail with NO_TOOL."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in ("node", "nodejs", "npm", "npx"):
        (folder / tool).write_text(f"#!/bin/sh\necho \"{tool}: {NO_TOOL}\" >&2\nexit 1\n")
        (folder / tool).chmod(0o755)
    return dict(environ, PATH=f"{folder}{os.pathsep}{environ.get('PATH', '')}", PIP_NO_INDEX="1",
                PIP_INDEX_URL="http://127.0.0.1:9/simple", npm_config_offline="true")
