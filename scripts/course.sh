#!/usr/bin/env bash
# Set everything up (idempotent) and open the course in JupyterLab, on 127.0.0.1 with a token.
# 安装（可重复运行）并在 JupyterLab 中打开课程，仅监听 127.0.0.1，并使用 token。
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
port="${PORT:-8888}"
# Our own random token, whatever JupyterLab's defaults are. It reaches JupyterLab through
# JUPYTER_TOKEN (not the command line, which other users of the machine can read).
token="$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(24))')"
export JUPYTER_TOKEN="$token"
url="http://127.0.0.1:${port}/lab/tree/course/00_overview.ipynb?token=${token}"
# Serve the whole project (course/, labs/, solutions/, backups/) and open lecture 00 first.
# port_retries=0: fail on a busy port rather than serve on another one than the URL says.
args=(--ServerApp.ip=127.0.0.1 --port="$port" --ServerApp.port_retries=0
      --ServerApp.root_dir="$(pwd)" --LabApp.default_url=/lab/tree/course/00_overview.ipynb)
[ "$(id -u)" = 0 ] && args+=(--allow-root)
echo "fxcourse: open the course at / 在浏览器中打开课程：${url}"
echo "fxcourse: (PORT=... picks another port; Ctrl-C stops JupyterLab / 按 Ctrl-C 停止 JupyterLab)"
exec .venv/bin/jupyter lab "${args[@]}" "$@"
