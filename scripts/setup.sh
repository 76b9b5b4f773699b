#!/usr/bin/env bash
# Idempotent set-up for fxcourse: a virtual environment in .venv with the pinned packages.
#   scripts/setup.sh           what the course needs
#   scripts/setup.sh --test    also the test extras and Debian's chromium for the browser test
# Both install Debian's graphviz (pictures) and fonts-noto-cjk (中文 in plots) when missing.
# Re-running reuses what is installed: torch is checked by importing it, the package by a
# stamp holding pyproject.toml's hash.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
want_test=0
[ "${1:-}" = "--test" ] && want_test=1
say() { printf '[setup] %s\n' "$*"; }
base_python="${PYTHON:-python3}"
# Hashing with Python, not sha256sum (absent on macOS): the stamps below compare these.
sha256_of_stdin() { "$base_python" -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'; }
# A wheelhouse (bash scripts/wheelhouse.sh) in wheelhouse/ or $FXCOURSE_WHEELHOUSE: pip installs
# from it alone, without the network. ${pip_from[@]+...}: an empty array is fine under set -u.
wheelhouse="${FXCOURSE_WHEELHOUSE:-wheelhouse}"
pip_from=()
if [ -d "$wheelhouse" ] && [ -n "$(find "$wheelhouse" -maxdepth 1 -name '*.whl' 2>/dev/null | head -n 1)" ]; then
  pip_from=(--no-index --find-links "$wheelhouse")
  say "packages come from the wheelhouse $wheelhouse, not the network / 软件包从 $wheelhouse 安装，不联网"
fi

# 0. What set-up needs, checked before anything long starts: Python 3.10-3.13 with venv and
#    pip, and room on the disk for torch (about 5 GB in .venv, plus the download).
if [ ! -x .venv/bin/python ]; then
  "$base_python" - <<'PY' || exit 1
import shutil, sys
problems = []
if not (3, 10) <= sys.version_info[:2] <= (3, 13):
    problems.append(f"Python {sys.version.split()[0]} is not supported: use 3.10-3.13 (3.11 is tested), "
                    "e.g. PYTHON=python3.11 bash scripts/setup.sh / 不支持该 Python 版本：请使用 3.10-3.13")
try:
    import ensurepip, venv  # noqa: F401
except ImportError:
    problems.append("Python's venv/ensurepip modules are missing (Debian/Ubuntu: apt-get install python3-venv) "
                    "/ 缺少 venv 模块（Debian/Ubuntu：apt-get install python3-venv）")
free_gb = shutil.disk_usage(".").free / 1e9
if free_gb < 8:
    problems.append(f"only {free_gb:.1f} GB free here; set-up needs about 8 GB (torch is large) "
                    f"/ 磁盘只剩 {free_gb:.1f} GB，安装约需 8 GB")
for p in problems:
    print(f"[setup] {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
fi

# 1. Debian packages. Graphviz's `dot` draws the course's pictures and fonts-noto-cjk lets
#    plots (and the browser test's screenshots) show 中文: both for the course and the tests.
#    The test command also needs Chromium for the browser test.
apt_packages=()
command -v dot >/dev/null 2>&1 || apt_packages+=(graphviz)
fc-list 2>/dev/null | grep -i "Noto Sans CJK" >/dev/null || apt_packages+=(fonts-noto-cjk)  # no -q: it would cut the pipe (pipefail)
if [ "$want_test" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  apt_packages+=(chromium)
fi
if [ "${#apt_packages[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${apt_packages[*]} / 安装 Debian 软件包：${apt_packages[*]}"
    sudo_cmd=""
    [ "$(id -u)" != 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${apt_packages[@]}" >/dev/null
  else
    say "please install ${apt_packages[*]} with your system's package manager (conda: environment.yml has graphviz)"
    say "请用系统的包管理器安装 ${apt_packages[*]}（conda 用户：environment.yml 已包含 graphviz）"
  fi
fi

# 2. The virtual environment.
if [ ! -x .venv/bin/python ]; then
  say "creating .venv / 创建虚拟环境 .venv"
  "$base_python" -m venv .venv
fi
py=.venv/bin/python

# 3. torch + torchvision as a matching pair, read from src/fxcourse/_pins.py (scripts/pins.sh
#    says why the local +cpu build is excluded and how FXCOURSE_TORCH_INDEX picks a CPU pair).
source scripts/pins.sh
if ! "$py" -c "import torch, torchvision, sys; sys.exit(torch.__version__.split('+')[0] != '$torch_version' or torchvision.__version__.split('+')[0] != '$torchvision_version')" >/dev/null 2>&1; then
  say "installing torch $torch_version + torchvision $torchvision_version (a few minutes) / 安装 torch 与 torchvision（需几分钟）"
  "$py" -m pip install -q ${pip_from[@]+"${pip_from[@]}"} "${torch_pair[@]}"
fi

# 4. The package itself (editable) and its pinned dependencies.
extras=""
[ "$want_test" = 1 ] && extras="[test]"
stamp=".venv/.fxcourse-installed${extras}"
want_hash=$(sha256_of_stdin < pyproject.toml)
# The test command's install (with [test]) holds everything the course needs: a plain set-up after it
# (workshop.sh, course.sh) reinstalls nothing.
installed=0
for done_stamp in "$stamp" ".venv/.fxcourse-installed[test]"; do
  if [ -f "$done_stamp" ] && [ "$(cat "$done_stamp")" = "$want_hash" ]; then installed=1; fi
  [ "$want_test" = 1 ] && break  # a plain install does not hold the test extras
done
if [ "$installed" = 0 ]; then
  say "installing fxcourse${extras} / 安装 fxcourse${extras}"
  "$py" -m pip install -q ${pip_from[@]+"${pip_from[@]}"} -e ".${extras}"
  # nbgrader is for instructors, from the command line (`fxcourse grading`); its JupyterLab
  # panels (assignment list, formgrader) would only confuse a learner, so they stay off here.
  .venv/bin/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
  echo "$want_hash" > "$stamp"
fi

# 5. JupyterLab settings: no "Jupyter news" prompt (it would ask the network and a learner).
settings=".venv/share/jupyter/lab/settings"
mkdir -p "$settings"
if [ ! -f "$settings/overrides.json" ]; then
  cat > "$settings/overrides.json" <<'JSON'
{
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}
}
JSON
fi

# 6. Trust the course's own notebooks, so JupyterLab shows their stored HTML outputs (tables,
#    styled checker results) as they were made instead of sanitised. The signatures live in
#    the notebook secret database of the Jupyter data directory (`jupyter --data-dir`); an
#    edited notebook is untrusted again until it is re-run or signed. Skipped when neither
#    the notebooks nor that directory changed since the last run.
shopt -s nullglob  # a learners' bundle has no solutions/: its pattern then matches nothing
notebooks=(course/*.ipynb labs/*.ipynb solutions/*.ipynb)
shopt -u nullglob
trust_key=$( { .venv/bin/jupyter --data-dir; "$py" -c 'import os, sys
for p in sys.argv[1:]: st = os.stat(p); print(p, st.st_size, int(st.st_mtime))' "${notebooks[@]}"; } | sha256_of_stdin)
trust_stamp=".venv/.fxcourse-trusted"
if [ ! -f "$trust_stamp" ] || [ "$(cat "$trust_stamp")" != "$trust_key" ]; then
  say "trusting the course notebooks / 信任课程笔记本"
  .venv/bin/jupyter trust "${notebooks[@]}" >/dev/null
  echo "$trust_key" > "$trust_stamp"
fi
say "ready: $root/.venv / 环境就绪"
