#!/usr/bin/env bash
# Set everything up (idempotent) and open the course in JupyterLab, on 127.0.0.1 with a token.
# 安装（可重复运行）并在 JupyterLab 中打开课程，仅监听 127.0.0.1，并使用 token。
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Serve the whole project (course/, labs/, solutions/) and open lecture 00 first.
args=(--ServerApp.ip=127.0.0.1 --port="${PORT:-8888}" --ServerApp.root_dir="$(pwd)"
      --LabApp.default_url=/lab/tree/course/00_overview.ipynb)
[ "$(id -u)" = 0 ] && args+=(--allow-root)
# No token given: JupyterLab makes a random one and prints the URL that carries it.
exec .venv/bin/jupyter lab "${args[@]}" "$@"
