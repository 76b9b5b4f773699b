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

# 1. Debian packages. Graphviz's `dot` draws the course's pictures and fonts-noto-cjk lets
#    plots (and the browser test's screenshots) show 中文: both for the course and the tests.
#    The test command also needs Chromium for the browser test.
apt_packages=()
command -v dot >/dev/null 2>&1 || apt_packages+=(graphviz)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || apt_packages+=(fonts-noto-cjk)
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
  "${PYTHON:-python3}" -m venv .venv
fi
py=.venv/bin/python

# 3. torch + torchvision as a matching pair. A local CPU-only torch wheel (2.13.0+cpu) does
#    not pair with the index's torchvision ("operator torchvision::nms does not exist"),
#    so the +cpu build is excluded; the index's build runs on CPU-only machines.
if ! "$py" -c "import torch, torchvision; assert torch.__version__.split('+')[0] == '2.13.0'" >/dev/null 2>&1; then
  say "installing torch 2.13.0 + torchvision 0.28.0 (a few minutes) / 安装 torch 与 torchvision（需几分钟）"
  "$py" -m pip install -q 'torch==2.13.0,!=2.13.0+cpu' 'torchvision==0.28.0'
fi

# 4. The package itself (editable) and its pinned dependencies.
extras=""
[ "$want_test" = 1 ] && extras="[test]"
stamp=".venv/.fxcourse-installed${extras}"
want_hash=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want_hash" ]; then
  say "installing fxcourse${extras} / 安装 fxcourse${extras}"
  "$py" -m pip install -q -e ".${extras}"
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
say "ready: $root/.venv / 环境就绪"
