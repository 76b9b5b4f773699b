#!/usr/bin/env bash
# Download everything scripts/setup.sh installs into one folder (a "wheelhouse"), for rooms with
# poor network: run it once where the network is good, copy the course folder with its
# wheelhouse/ to each learner machine, and scripts/setup.sh installs from it without the network.
#   bash scripts/wheelhouse.sh                 into wheelhouse/ (ignored by git)
#   bash scripts/wheelhouse.sh DIR             into DIR (setup.sh finds it with FXCOURSE_WHEELHOUSE=DIR)
#   bash scripts/wheelhouse.sh DIR PIP-OPTIONS for learner machines unlike this one, e.g.
#     --python-version 3.11 --platform manylinux_2_28_x86_64 --only-binary=:all:
#   bash scripts/wheelhouse.sh --hub [DIR [PIP-OPTIONS]]  the workshop hub alone, into DIR (default
#     wheelhouse-hub/, never wheelhouse/, where setup.sh would take it for the whole course):
#     jupyterhub and its Python proxy (configurable-http-proxy) with their dependencies, about 35 MB,
#     for a course .venv set up without them; from the course folder, with no network:
#     .venv/bin/python -m pip install --no-index --find-links DIR -r DIR/requirements.txt
# It holds the pinned torch + torchvision pair, the course's dependencies, the test extras and
# what building the course package needs (setuptools, wheel): several GB, most of it torch and
# its CUDA libraries (the installed .venv is 6.8 GiB).
# Wheels are for the machine that downloads them (its OS, CPU and Python) unless PIP-OPTIONS
# say otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
hub=0
[ "${1:-}" = "--hub" ] && hub=1 && shift
dir="${1:-wheelhouse}"
[ "$hub" = 1 ] && dir="${1:-wheelhouse-hub}"
[ "$#" -gt 0 ] && shift
py="${PYTHON:-python3}"
say() { printf '[wheelhouse] %s\n' "$*"; }

mkdir -p "$dir"
requirements="$dir/requirements.txt"
# The lists in pyproject.toml, read with Python (tomllib from 3.11; a plain reading before).
"$py" - pyproject.toml "$hub" > "$requirements" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
try:
    import tomllib
    data = tomllib.loads(text)
    wanted = (data["build-system"]["requires"] + data["project"]["dependencies"]
              + data["project"]["optional-dependencies"]["test"])
except ImportError:  # Python 3.10: the three arrays are plain lists of quoted strings
    wanted = []
    for name in ("requires", "dependencies", "test"):
        block = re.search(rf"^{name} = \[(.*?)^\]", text, re.S | re.M)
        wanted += re.findall(r'^\s*"([^"]+)"', block.group(1), re.M) if block else []
# torch and torchvision come as a pair below, with the local +cpu build excluded (see setup.sh)
for requirement in wanted:
    if sys.argv[2] == "1":  # --hub: the workshop hub and its proxy only
        if re.match(r"(jupyterhub|configurable-http-proxy)\s*==", requirement):
            print(requirement)
    elif not re.match(r"(torch|torchvision)\s*==", requirement):
        print(requirement)
PY
if [ "$hub" = 1 ]; then
  say "downloading the workshop hub into $dir / 下载工作坊 hub 到 $dir"
  "$py" -m pip download --dest "$dir" -r "$requirements" "$@"
else
  say "downloading into $dir (several GB, most of it torch) / 下载到 $dir（数 GB，大部分是 torch）"
  # The torch pair from src/fxcourse/_pins.py; FXCOURSE_TORCH_INDEX: the CPU-only pair, as setup.sh
  # installs it with the same variable.
  base_python="$py"
  source scripts/pins.sh
  "$py" -m pip download --dest "$dir" "${torch_pair[@]}" -r "$requirements" "$@"
fi
count=$(find "$dir" -maxdepth 1 -name '*.whl' -o -maxdepth 1 -name '*.tar.gz' | wc -l | tr -d ' ')
size=$(du -sh "$dir" | cut -f1)
say "done: $count files, $size in $dir / 完成：$dir 中共 $count 个文件，$size"
if [ "$hub" = 1 ]; then
  say "install it with / 安装：.venv/bin/python -m pip install --no-index --find-links $dir -r $requirements"
else
  say "learners: copy the course folder with $dir, then run bash scripts/setup.sh / 学员：复制课程文件夹（含 $dir）后运行 bash scripts/setup.sh"
fi
