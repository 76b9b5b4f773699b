"""``python -m fxcourse.cli`` and the console entry of an install made before the library
was grouped by role: the command line itself lives in :mod:`fxcourse.tooling.cli`."""
from __future__ import annotations

from .tooling.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
