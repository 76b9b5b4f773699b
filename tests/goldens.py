"""Golden-output files: one normalisation function, one place they live."""
from __future__ import annotations

import re
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"

_RULES = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x…"),                      # addresses
    (re.compile(r"(/[\w.\-]+)+/(site-packages|tests|src)/"), r"…/\2/"),  # machine paths
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"[ \t]+$", re.M), ""),                              # trailing blanks
]


def normalise(text: str) -> str:
    """Remove what legitimately differs between machines and runs."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    return text.rstrip("\n") + "\n"


def check_golden(name: str, text: str, *, update: bool) -> None:
    path = GOLDEN_DIR / f"{name}.txt"
    got = normalise(text)
    if update or not path.exists():
        if not update:
            raise AssertionError(f"no golden file {path.name}; run pytest --update-golden to create it")
        path.write_text(got, encoding="utf-8")
        return
    want = path.read_text(encoding="utf-8")
    assert got == want, f"{path.name} differs; if the change is intended, rerun with --update-golden"
