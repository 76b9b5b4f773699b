#!/usr/bin/env bash
# Build the course book as static HTML, one per language, from the committed notebooks
# (nothing is re-executed): build/book/en/index.html and build/book/zh/index.html.
# 从提交的笔记本（不重新执行）生成静态 HTML 课程书，每种语言一本：
# build/book/en/index.html 与 build/book/zh/index.html。
# Options / 选项: --out DIR (default build/book), --lang en|zh ...
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/python book/build.py "$@"
