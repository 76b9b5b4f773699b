"""The torch pair is named in one place (src/fxcourse/_pins.py) and every other file agrees.

Files that cannot import Python (pyproject.toml, environment.yml, the README, the book) carry
the numbers themselves; the shell scripts and binder/postBuild read them through scripts/pins.sh.
A version move that misses one of them fails here, and so does a stray mention of the previous
pair where the installed version is meant.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from fxcourse._pins import TORCH, TORCHVISION
from fxcourse.tooling.doctor import REINSTALL, TESTED

ROOT = Path(__file__).resolve().parent.parent
PREVIOUS = ("2.13.0", "0.28.0")  # the pair the course was taught on before

# Files that may name the previous pair, each for a reason that is not "the installed version".
ALLOWED_PREVIOUS = {
    "tests/test_pins.py": "this list",
    "tests/test_doctor.py": "a learner still on the previous pair is told what to do",
    "src/fxcourse/tooling/doctor.py": "its doctest shows that learner's finding",
}


def _pins_sh(env_index: str | None = None) -> list[str]:
    script = ('base_python="$1"; source scripts/pins.sh; '
              'echo "$torch_version $torchvision_version"; printf "%s\\n" "${torch_pair[@]}"')
    env = {"PATH": "/usr/bin:/bin"}
    if env_index:
        env["FXCOURSE_TORCH_INDEX"] = env_index
    run = subprocess.run(["bash", "-c", script, "pins", sys.executable], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_shell_scripts_read_the_pair_from_the_pins_file():
    assert _pins_sh() == [f"{TORCH} {TORCHVISION}", f"torch=={TORCH},!={TORCH}+cpu", f"torchvision=={TORCHVISION}"]
    assert _pins_sh("http://index.invalid/cpu")[1:] == [
        "--extra-index-url", "http://index.invalid/cpu", f"torch=={TORCH}+cpu", f"torchvision=={TORCHVISION}+cpu"]
    for script in ("scripts/setup.sh", "scripts/wheelhouse.sh", "binder/postBuild"):
        text = (ROOT / script).read_text(encoding="utf-8")
        assert "source scripts/pins.sh" in text, script
        assert not re.search(r"torch==\d", text), f"{script} names a torch version itself"


def test_pyproject_environment_and_doctor_name_the_pair():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert f"torch=={TORCH}" in deps and f"torchvision=={TORCHVISION}" in deps
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert f"torch=={TORCH}" in pip_section and f"torchvision=={TORCHVISION}" in pip_section
    assert TESTED["torch"] == TORCH and TESTED["torchvision"] == TORCHVISION
    assert f"'torch=={TORCH},!={TORCH}+cpu' 'torchvision=={TORCHVISION}'" in REINSTALL[0]


@pytest.mark.parametrize("path, phrases", [
    ("README.md", [f"| torch {TORCH}, torchvision {TORCHVISION} |", f"| torch {TORCH}、torchvision {TORCHVISION} |",
                   f"torch {TORCH}+cpu with torchvision {TORCHVISION}+cpu",
                   f"torch {TORCH}+cpu 与 torchvision {TORCHVISION}+cpu"]),
    # the book's landing pages say where stored outputs came from (book/build.py fills them in)
    ("book/build.py", [f"on torch {TORCH} on a CPU-only machine", f"torch {TORCH} 下以中英文对照模式生成"]),
])
def test_the_documents_name_the_pair(path, phrases):
    text = (ROOT / path).read_text(encoding="utf-8")
    for phrase in phrases:
        assert phrase in text, f"{path} should say {phrase!r}"


def _tracked_text_files() -> list[str]:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    # a tracked file deleted in the working tree (moved, not yet committed) is not there to read
    return [f for f in files if (f.endswith((".py", ".sh", ".md", ".toml", ".yml", ".yaml", ".ipynb", ".cfg", ".txt"))
            or f in ("binder/postBuild", ".ci/run")) and (ROOT / f).is_file()]


def _prose_and_code(path: Path) -> str:
    """A notebook's cell sources (not its outputs, which quote torch's own text); other files whole."""
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    import json

    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"])


def test_no_file_names_the_previous_pair_as_the_installed_one():
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to list the tracked files")
    found = []
    for name in _tracked_text_files():
        if name in ALLOWED_PREVIOUS:
            continue
        text = _prose_and_code(ROOT / name)
        for version in PREVIOUS:
            for m in re.finditer(re.escape(version), text):
                line = text[:m.start()].count("\n") + 1
                found.append(f"{name}:{line}: {version}")
    assert not found, "the previous pair is still named:\n" + "\n".join(found)


def test_every_torch_version_named_in_a_pin_is_the_pinned_one():
    if not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to list the tracked files")
    wrong = []
    pattern = re.compile(r"\b(torch|torchvision)\s*(?:==|\s)\s*(\d+\.\d+\.\d+)")
    for name in _tracked_text_files():
        if name in ALLOWED_PREVIOUS or name.startswith("tests/golden/"):
            continue
        for m in pattern.finditer(_prose_and_code(ROOT / name)):
            want = TORCH if m.group(1) == "torch" else TORCHVISION
            if m.group(2) != want:
                wrong.append(f"{name}: {m.group(0)!r} (pinned: {want})")
    assert not wrong, "\n".join(wrong)
