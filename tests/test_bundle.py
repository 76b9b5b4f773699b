"""The one-language bundle of course/INSTRUCTORS.md, end to end: the instructor's recipe as the
guide writes it, then a learner's machine that unpacks the archive and runs `bash scripts/course.sh`.

The recipe's command lines are read from the guide (both languages must give the same ones) and run
one by one with bash, in a clone of this checkout whose HEAD holds the working tree (tracked files as
they are now and new files git does not ignore, so what is tested is what the next commit hands
out; in CI the two are the same), with a scratch folder in place of /tmp. One change, for time: the
export is of lecture 00 and lab 00 (`EXPORTED`), not all of course/ and labs/ (about 20 minutes on
2 cores); every other step is the guide's, `labs check` of all 14 labs included.

The learner's side: the archive is unpacked in a new folder and `bash scripts/course.sh` sets it up
from nothing (its own .venv, torch included) through its own scripts, from a wheelhouse the course's
`scripts/wheelhouse.sh` made (the guide's way for a room with poor network), with package downloads
refused. The wheelhouse is kept between runs (several GB, in .venv/test-wheelhouses/, or the folder
$FXCOURSE_TEST_WHEELHOUSES names) while the lists it was made from stay the same: a first run
downloads it (about 2.5 minutes here); PIP_NO_COMPILE=1 skips pip's byte-compiling, so Python
compiles what it imports on first use instead. Then JupyterLab must serve lecture 00, 中文 only,
behind the printed token, and the bundle's own checks must pass in its own environment:
`fxcourse i18n check` and `pytest --nbval` on the exported lab (pyproject.toml's pytest options
must not need the removed tests/). The time of each step goes to test-output/bundle/timings.json.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from commands import offline

from fxcourse._pins import TORCH, TORCHVISION

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "course" / "INSTRUCTORS.md"
OUTPUT = REPO / "test-output" / "bundle"
HEADINGS = {"en": "## A workshop bundle in one language, without the answer key",
            "zh": "## 只含一种语言、不含答案的课程包"}
#: what the test exports instead of the guide's `course labs` (the whole course takes ~20 minutes)
EXPORTED = "course/00_overview.ipynb labs/lab00_warmup.ipynb"


def _recipe(lang: str) -> list[str]:
    """The command lines of the guide's bundle recipe in ``lang``'s part, comments removed."""
    section = GUIDE.read_text(encoding="utf-8").split(HEADINGS[lang] + "\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```bash\n(.*?)^```", section, re.S | re.M)
    assert block, f"no bash block under {HEADINGS[lang]}"
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_guide_gives_the_same_recipe_in_both_languages() -> None:
    en, zh = _recipe("en"), _recipe("zh")
    assert en == zh
    assert en[0].startswith("git archive ") and "HEAD" in en[0]
    assert any(line.startswith("rm -rf /tmp/fxcourse-zh/solutions /tmp/fxcourse-zh/tests") for line in en)
    assert any(line.endswith(" i18n export --lang zh /tmp/fxcourse-zh course labs") for line in en)


def _checkout_as_committed(dest: Path) -> Path:
    """A git repository at ``dest`` whose HEAD holds this checkout's working tree (tracked files as
    they are, untracked ones git does not ignore), with .venv a link to this checkout's. Nothing in
    this checkout's own git state is changed."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is left out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git = ["git", "-c", "user.name=fxcourse test", "-c", "user.email=test@example.invalid",
           "-c", "commit.gpgsign=false"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the working tree"]):
        subprocess.run([*git, *args], cwd=dest, check=True, capture_output=True)
    (dest / ".venv").symlink_to(REPO / ".venv")  # the instructor's environment (.venv is ignored)
    return dest


def _course_wheelhouse() -> Path:
    """`bash scripts/wheelhouse.sh DIR`, kept between runs while the lists it downloads are the same."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = (project["build-system"]["requires"] + project["project"]["dependencies"]
              + project["project"]["optional-dependencies"]["test"])
    key = hashlib.sha256(json.dumps([wanted, TORCH, TORCHVISION]).encode()).hexdigest()[:16]
    home = Path(os.environ.get("FXCOURSE_TEST_WHEELHOUSES", REPO / ".venv" / "test-wheelhouses"))
    folder = home / key
    if not (folder / "complete").exists():
        shutil.rmtree(home, ignore_errors=True)  # an older one, for other pins: several GB
        home.mkdir(parents=True)
        made = subprocess.run(["bash", "scripts/wheelhouse.sh", str(folder)], cwd=REPO, capture_output=True,
                              text=True, timeout=1800)
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-4000:]
        (folder / "complete").write_text(made.stdout)
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:  # nothing listening yet
        return 0


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


@pytest.mark.slow
def test_the_bundle_recipe_hands_learners_a_course_that_sets_up_and_opens(tmp_path: Path) -> None:
    timings: dict[str, float] = {}

    def timed(name: str, *args, **kwargs) -> subprocess.CompletedProcess:
        start = time.monotonic()
        result = subprocess.run(*args, capture_output=True, text=True, **kwargs)
        timings[name] = round(time.monotonic() - start, 1)
        return result

    started = time.monotonic()
    log = tmp_path / "course.log"
    try:
        scratch = tmp_path / "tmp"  # the guide's /tmp
        scratch.mkdir()
        checkout = _checkout_as_committed(tmp_path / "checkout")
        timings["a checkout of the working tree"] = round(time.monotonic() - started, 1)
        labs_in_course = len(list((checkout / "labs").glob("lab*.ipynb")))
        instructor = {k: v for k, v in os.environ.items() if k != "FXCOURSE_LANG"}
        for line in _recipe("en"):
            command = re.sub(r"(?<![\w.])/tmp(?=/|\s|$)", shlex.quote(str(scratch)), line)
            if " i18n export " in command:
                assert command.endswith(" course labs"), command
                command = command.removesuffix(" course labs") + " " + EXPORTED
            run = timed(line, ["bash", "-c", f"set -euo pipefail\n{command}"], cwd=checkout, env=instructor,
                        timeout=900)
            assert run.returncode == 0, f"{line}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
            if " labs check" in command:
                assert f"{labs_in_course} labs open as built and run" in run.stdout, run.stdout
        archive = checkout / "fxcourse-zh.tar.gz"
        assert archive.is_file()

        # A learner's machine: the archive unpacked in a new place, nothing else of the course there.
        learner = tmp_path / "learner"
        learner.mkdir()
        subprocess.run(["tar", "-xzf", str(archive), "-C", str(learner)], check=True)
        bundle = learner / "fxcourse-zh"
        assert not {"solutions", "tests", "backups", ".venv"} & {p.name for p in bundle.iterdir()}
        assert (bundle / "scripts" / "course.sh").is_file() and (bundle / "pyproject.toml").is_file()
        for name in EXPORTED.split():
            nb = json.loads((bundle / name).read_text(encoding="utf-8"))
            prose = [_tags(c) for c in nb["cells"] if c["cell_type"] == "markdown"]
            assert prose and all("lang-zh" in t and "lang-en" not in t for t in prose), name
            assert any('fxcourse.language("zh")' in "".join(c["source"]) for c in nb["cells"]), name

        wheelhouse = _course_wheelhouse()
        port = _free_port()
        venv_bin = str(REPO / ".venv" / "bin")
        env = offline(os.environ, tmp_path / "no-network")
        env.update(PATH=os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin),
                   FXCOURSE_WHEELHOUSE=str(wheelhouse), PIP_NO_COMPILE="1", PORT=str(port),
                   JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"), JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
                   JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
        for name in ("FXCOURSE_LANG", "VIRTUAL_ENV", "PYTHONPATH", "TORCHINDUCTOR_CACHE_DIR"):
            env.pop(name, None)
        start = time.monotonic()
        with open(log, "w") as out:
            proc = subprocess.Popen(["bash", "scripts/course.sh", "--no-browser"], cwd=bundle, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        try:
            printed = (rf"open the course at / 在浏览器中打开课程：(http://127\.0\.0\.1:{port}"
                       r"/lab/tree/course/00_overview\.ipynb\?token=([0-9a-f]+))\n")
            base, token = f"http://127.0.0.1:{port}", None
            while token is None or _status(f"{base}/api/status?token={token}") != 200:
                match = re.search(printed, log.read_text())
                if match:
                    url, token = match.groups()
                if proc.poll() is not None or time.monotonic() - start > 900:
                    pytest.fail("the bundle's course.sh did not set up and serve the course:\n"
                                + log.read_text()[-4000:])
                time.sleep(1)
            timings["bash scripts/course.sh: set-up until JupyterLab answers"] = round(time.monotonic() - start, 1)
            text = log.read_text()
            assert "[setup] creating .venv" in text and "packages come from the wheelhouse" in text, text[-3000:]
            assert "Traceback" not in text and "FileNotFoundError" not in text, text[-3000:]
            assert _status(url) == 200  # the printed address opens lecture 00
            assert _status(f"{base}/api/contents/course/00_overview.ipynb") == 403  # not without the token
            with urllib.request.urlopen(f"{base}/api/contents/course/00_overview.ipynb?token={token}",
                                        timeout=10) as response:
                served = json.load(response)["content"]
            prose = [_tags(c) for c in served["cells"] if c["cell_type"] == "markdown"]
            assert prose and all("lang-zh" in t and "lang-en" not in t for t in prose)  # 中文 only
            assert _status(f"{base}/api/contents/solutions?token={token}") == 404  # no answer key here
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)

        # The bundle's own checks, in its own environment.
        python = bundle / ".venv" / "bin" / "python"
        where = timed("the bundle's own environment", [str(python), "-c", "import fxcourse, torch, torchvision; "
                      "print(fxcourse.__file__, torch.__version__, torchvision.__version__)"], cwd=tmp_path, env=env,
                      timeout=300)
        assert where.returncode == 0, where.stderr[-3000:]
        assert where.stdout.startswith(str(bundle / "src" / "fxcourse")), where.stdout  # its own copy, editable
        assert f" {TORCH}" in where.stdout and f" {TORCHVISION}" in where.stdout, where.stdout
        i18n = timed(".venv/bin/fxcourse i18n check", [str(bundle / ".venv" / "bin" / "fxcourse"), "i18n", "check"],
                     cwd=bundle, env=env, timeout=300)
        assert i18n.returncode == 0, i18n.stdout[-3000:] + i18n.stderr[-3000:]
        nbval = timed(".venv/bin/pytest --nbval labs/lab00_warmup.ipynb",
                      [str(bundle / ".venv" / "bin" / "pytest"), "--nbval", "labs/lab00_warmup.ipynb"],
                      cwd=bundle, env=env, timeout=600)
        assert nbval.returncode == 0, nbval.stdout[-4000:] + nbval.stderr[-2000:]
        assert re.search(r"\b\d+ passed\b", nbval.stdout) and "error" not in nbval.stdout.splitlines()[-1], \
            nbval.stdout[-2000:]
    finally:
        timings["total"] = round(time.monotonic() - started, 1)
        OUTPUT.mkdir(parents=True, exist_ok=True)
        (OUTPUT / "timings.json").write_text(json.dumps(timings, indent=1, ensure_ascii=False) + "\n")
        if log.exists():
            shutil.copyfile(log, OUTPUT / "course.log")
        # several GB; pytest keeps the tmp folders of the last runs
        shutil.rmtree(tmp_path / "learner" / "fxcourse-zh" / ".venv", ignore_errors=True)
        (tmp_path / "checkout" / ".venv").unlink(missing_ok=True)
