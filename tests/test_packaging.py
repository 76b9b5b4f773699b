"""pyproject.toml and environment.yml pin the same things; the README's commands exist."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_environment_yml_has_the_same_pins_as_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    env = yaml.safe_load((REPO / "environment.yml").read_text(encoding="utf-8"))
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    from_env = {req.replace(" ", "") for req in pip_section if not req.startswith("-e")}
    from_pyproject = {req.replace(" ", "") for req in project["dependencies"]}
    assert from_env == from_pyproject
    from fxcourse._pins import TORCH, TORCHVISION

    assert f"torch=={TORCH}" in from_pyproject and f"torchvision=={TORCHVISION}" in from_pyproject


def test_readme_commands_are_the_scripts_ci_runs():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/course.sh" in readme and "bash scripts/test.sh" in readme
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # both languages are present
    assert re.search(r"[\u4e00-\u9fff]", readme)


def test_import_fxcourse_stays_light():
    import subprocess
    import sys

    code = ("import sys, fxcourse; heavy = [m for m in ('torch', 'depyf', 'matplotlib', 'torch_mlir') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
