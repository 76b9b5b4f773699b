"""Gather the words lab13.3's checker puts on its made-up rows: every word, and every pair of
words that occurs at least three times, in the messages torch's capture and compile stack can
write (string literals under ``torch/_dynamo``, ``_inductor``, ``jit``, ``export``, ``fx`` …,
Dynamo's graph-break registry) and in this library's own messages, in English and 中文.

A rule that drops a row whose text holds some word (``re.search("falls back", row.reason)``)
meets, somewhere in the check, a winning row whose text holds that word. The checker splits the
list into slices and gives each slice to a winner of each path in turn, so no one row carries
it all (a right answer that prints its rows stays quick).

Run ``python -m fxcourse.checks._lab13_words`` after a torch upgrade to gather them again; the
list only widens what the check tries, so an old list still checks soundly.
"""
from __future__ import annotations

import ast
import collections
import json
import re
import sys
from pathlib import Path

#: where the list lives, beside the checker
WORDS = Path(__file__).with_name("lab13_words.json")
#: torch's folders (and files) whose string literals are messages about capture, compiling and timing
TORCH_PARTS = ("_dynamo", "_inductor", "jit", "export", "_export", "fx", "_functorch", "_subclasses", "_logging",
               "_guards.py", "utils/benchmark")
_WORD = re.compile(r"[A-Za-z][A-Za-z'_\-]*[A-Za-z]|[A-Za-z]")
_HAN = re.compile(r"[\u4e00-\u9fff]+")


def _literals(path: Path) -> list[str]:
    """The message-like string literals of one Python file (with a space, 13 to 599 characters)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value \
                and 12 < len(node.value) < 600 and node.value.count("\n") <= 20:
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):  # an f-string: its fixed parts
            found.append(" ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)))
    return found


def gather() -> list[str]:
    """Words and frequent word pairs of torch's messages and the library's, each graph-break type
    whole, and 中文 runs of the library's messages (whole, and
    their two- to four-character pieces), sorted."""
    import torch

    import fxcourse

    root = Path(torch.__file__).parent
    texts: list[str] = []
    for part in TORCH_PARTS:
        where = root / part
        for path in sorted([where] if where.is_file() else where.rglob("*.py")):
            texts += _literals(path)
    registry = root / "_dynamo" / "graph_break_registry.json"
    whole: set[str] = set()  # each graph-break type whole
    if registry.is_file():
        for entries in json.loads(registry.read_text(encoding="utf-8")).values():
            for entry in entries:
                texts += [entry.get("Gb_type", ""), entry.get("Explanation", ""), *entry.get("Hints", [])]
                whole.add(entry.get("Gb_type", ""))
    own = [text for path in sorted(Path(fxcourse.__file__).parent.rglob("*.py")) for text in _literals(path)]
    words: set[str] = set()
    pairs: collections.Counter[str] = collections.Counter()
    for text in texts + own:
        found = _WORD.findall(text)
        words.update(found)
        pairs.update(" ".join(pair) for pair in zip(found, found[1:]))
    han: set[str] = set()
    for text in own:
        for run in _HAN.findall(text):
            han.add(run)
            han.update(run[i:i + n] for n in (2, 3, 4) for i in range(len(run) - n + 1))
    return sorted(words | {pair for pair, count in pairs.items() if count >= 3} | han | whole - {""})


def main(argv: list[str] | None = None) -> int:
    words = gather()
    WORDS.write_text(json.dumps(words, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(words)} words and phrases written to {WORDS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
