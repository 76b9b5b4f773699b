"""The repo2docker files (binder/) and the Zero to JupyterHub values agree with the project.

Docker and Kubernetes are not available where the tests run, so these check what can be checked
without them: repo2docker's environment has no `-e .` (it is built before the repository is
copied), postBuild installs the course and the same torch pair as set-up, and the Helm values
name the authenticator and limits the README documents.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"


def test_the_repo2docker_environment_is_built_without_the_repository():
    env = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    deps = env["dependencies"]
    assert "python=3.11" in deps and "graphviz" in deps
    assert not any(isinstance(d, dict) for d in deps), "pip packages belong in postBuild, after the repository is copied"
    assert "fonts-noto-cjk" in (BINDER / "apt.txt").read_text(encoding="utf-8").split()


def test_post_build_installs_the_course_with_set_ups_torch_pair():
    post = (BINDER / "postBuild").read_text(encoding="utf-8")
    assert os.access(BINDER / "postBuild", os.X_OK) and post.startswith("#!/bin/bash")
    setup = (ROOT / "scripts" / "setup.sh").read_text(encoding="utf-8")
    # both read the pair from src/fxcourse/_pins.py through scripts/pins.sh (tests/test_pins.py runs it)
    assert "source scripts/pins.sh" in setup and "source scripts/pins.sh" in post
    assert 'pip install --no-cache-dir "${torch_pair[@]}"' in post
    assert "pip install --no-cache-dir -e ." in post and "jupyter trust" in post
    assert subprocess.run(["bash", "-n", str(BINDER / "postBuild")]).returncode == 0


def test_the_z2jh_values_keep_the_room_closed_and_sized():
    values = yaml.safe_load((BINDER / "z2jh-config.yaml").read_text(encoding="utf-8"))
    hub = values["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == "shared-password"
    assert hub["Authenticator"]["allow_all"] is False and hub["Authenticator"]["admin_users"] == ["instructor"]
    single = values["singleuser"]
    assert single["memory"] == {"guarantee": "1G", "limit": "2G"}
    assert single["storage"]["homeMountPath"] == "/home/jovyan/work"
    assert "cp -rn labs/. work/labs/" in " ".join(single["lifecycleHooks"]["postStart"]["exec"]["command"])
