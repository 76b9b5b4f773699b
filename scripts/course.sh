#!/usr/bin/env bash
# Set everything up (idempotent) and open the course in JupyterLab, on 127.0.0.1 with a token.
# 安装（可重复运行）并在 JupyterLab 中打开课程，仅监听 127.0.0.1，并使用 token。
#   bash scripts/course.sh [--lang en|zh|both] [jupyter lab options...]
# --lang (default: $FXCOURSE_LANG, else both) shows one language's prose cells only, makes
# check(), hints and errors speak it, and with zh switches JupyterLab's menus to 中文.
# --lang 只显示一种语言的说明单元格；zh 时 JupyterLab 的菜单也显示中文。
set -euo pipefail
cd "$(dirname "$0")/.."
lang="${FXCOURSE_LANG:-both}"
rest=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --lang=*) lang="${1#--lang=}" ;;
    --lang)
      if [ "$#" -lt 2 ]; then
        echo "course.sh: --lang needs en, zh or both / --lang 需要 en、zh 或 both" >&2; exit 2
      fi
      lang="$2"; shift ;;
    *) rest+=("$1") ;;
  esac
  shift
done
bash scripts/setup.sh
# The language: FXCOURSE_LANG for the kernels (check() and errors follow it), custom CSS that
# hides the other language's cells and the interface locale for JupyterLab. Notebook files
# are never changed, so switching language is just starting again with another --lang.
lang_args=()
lang_setup="$(.venv/bin/python scripts/jupyter/language.py "$lang")" || exit 2
eval "$lang_setup"
export FXCOURSE_LANG
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
echo "fxcourse: language / 语言：${FXCOURSE_LANG} (--lang en|zh|both)"
echo "fxcourse: open the course at / 在浏览器中打开课程：${url}"
echo "fxcourse: (PORT=... picks another port; Ctrl-C stops JupyterLab / 按 Ctrl-C 停止 JupyterLab)"
exec .venv/bin/jupyter lab "${args[@]}" "${lang_args[@]}" "${rest[@]}"
