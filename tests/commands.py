"""Helpers for tests that run the ``fxcourse`` command the way a shell would."""
from __future__ import annotations

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
