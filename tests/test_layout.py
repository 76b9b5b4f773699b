"""The library is laid out by role, and its imports run one way only.

Floors, lowest first (src/fxcourse/README.md says the same in words):

    ground     errors, _lang, _toggle, _text, _render, _values, _caller_state, _pins, zoo (top level)
    viewers/   may import ground
    pictures/  may import ground, viewers
    checks/    may import ground, viewers
    tooling/   may import everything above
    door       fxcourse.cli (the old entry point) may import tooling

Every import counts, including one inside a function: an import put in a function to hide
a circle is still a circle. The checker is tried on a small made-up tree first, so a test
that finds nothing in the library has shown that it can find something.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "src" / "fxcourse"

#: folder -> the folders its modules may import (its own always allowed)
ALLOWED = {
    "ground": {"ground"},
    "viewers": {"ground"},
    "pictures": {"ground", "viewers"},
    "checks": {"ground", "viewers"},
    "tooling": {"ground", "viewers", "pictures", "checks"},
    "door": {"tooling"},
}
FOLDERS = ("viewers", "pictures", "checks", "tooling")
GROUND = {"__init__", "errors", "_lang", "_toggle", "_text", "_render", "_values", "_caller_state", "_pins", "zoo"}
DOOR = {"cli"}


def modules_in(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (anywhere in the file).

    ``from X import name`` counts as importing ``X.name`` when that is a module of the
    package (``from . import nbrun``), else ``X``.
    """
    modules = modules_in(package_dir)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                while target and target not in modules:  # import a.b.c of a module a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def folder_of(module: str, package: str = "fxcourse") -> str | None:
    """The floor a module stands on, or None when it has no room on the map."""
    rest = module[len(package) + 1:].split(".") if module != package else ["__init__"]
    if rest[0] in FOLDERS:
        return rest[0]
    if len(rest) == 1 and rest[0] in GROUND:
        return "ground"
    if len(rest) == 1 and rest[0] in DOOR:
        return "door"
    return None


def upward(graph: dict[str, set[str]], package: str = "fxcourse") -> list[str]:
    """'a -> b (floor -> floor)' for each import the floors do not allow."""
    bad = []
    for source, targets in sorted(graph.items()):
        here = folder_of(source, package)
        for target in sorted(targets):
            there = folder_of(target, package)
            if here is None or there is None or (there != here and there not in ALLOWED[here]):
                bad.append(f"{source} -> {target} ({here} -> {there})")
    return bad


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "fxcourse" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "fxcourse"


def test_the_checker_finds_a_circle_and_an_upward_import(tmp_path):
    """A made-up package: errors <-> _lang through an import inside a function, and a viewer
    that reaches up into tooling; both are reported, a plain downward import is not."""
    package = _write(tmp_path, {
        "__init__.py": "",
        "errors.py": "from ._lang import pick\n",
        "_lang.py": "def language():\n    from .errors import FxCourseError\n",
        "viewers/__init__.py": "",
        "viewers/table.py": "from .._lang import pick\nfrom ..tooling import nbrun\n",
        "tooling/__init__.py": "",
        "tooling/cli.py": "from ..viewers.table import x\nfrom . import nbrun\n",
        "tooling/nbrun.py": "import os\n",
        "stray.py": "",
    })
    graph = import_graph(package)
    assert graph["fxcourse.tooling.cli"] == {"fxcourse.viewers.table", "fxcourse.tooling.nbrun"}
    assert circles(graph) == [["fxcourse._lang", "fxcourse.errors"]]
    assert upward(graph) == ["fxcourse.viewers.table -> fxcourse.tooling.nbrun (viewers -> tooling)"]
    assert folder_of("fxcourse.stray") is None


def test_no_import_circles():
    assert circles(import_graph(LIBRARY)) == []


def test_no_upward_imports_between_floors():
    assert upward(import_graph(LIBRARY)) == []


def test_every_module_has_a_room():
    homeless = [m for m in modules_in(LIBRARY) if folder_of(m) is None]
    assert homeless == [], f"add these to a folder (see src/fxcourse/README.md): {homeless}"


def test_the_readme_names_every_folder_and_ground_file():
    readme = (LIBRARY / "README.md").read_text(encoding="utf-8")
    for name in (*FOLDERS, *sorted(GROUND - {"__init__"})):
        assert name in readme, name


def test_the_console_command_and_the_old_module_path_both_run():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["fxcourse"] == "fxcourse.tooling.cli:main"
    for module in ("fxcourse.cli", "fxcourse.tooling.cli"):
        done = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: fxcourse"), done.stdout[:200]


@pytest.mark.parametrize("name", ["graph_table", "draw", "language", "progress", "check", "compare_capture"])
def test_public_names_are_functions_not_the_modules_that_define_them(name):
    """Importing a viewer's module (fxcourse.viewers.graph_table) must not replace the function
    of the same name on the package."""
    import importlib

    import fxcourse

    for module in ("viewers.graph_table", "pictures.draw", "tooling.progress", "viewers.compare"):
        importlib.import_module(f"fxcourse.{module}")
    assert callable(getattr(fxcourse, name)) and not isinstance(getattr(fxcourse, name), type(fxcourse))
