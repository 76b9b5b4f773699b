#!/usr/bin/env bash
# Build the course book as static HTML, one per language: build/book/en/index.html and
# build/book/zh/index.html. Each book's notebooks are first run in its language (as
# `fxcourse i18n export` does), so what the course prints is in that language: about 20 minutes
# a language on 2 cores. --stored renders the committed outputs instead (English and 中文
# side by side in what the library prints; about a minute, nothing executed).
# 生成静态 HTML 课程书，每种语言一本：build/book/en/index.html 与 build/book/zh/index.html。
# 每本书的笔记本先以该语言运行一遍（与 `fxcourse i18n export` 相同），输出即为该语言：
# 在 2 核机器上每种语言约 20 分钟。--stored 直接使用提交的输出（库打印的内容中英文对照；
# 约一分钟，不执行任何代码）。
# Options / 选项: --stored, --out DIR (default build/book), --lang en|zh ..., [PATH ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || bash scripts/setup.sh
exec .venv/bin/python book/build.py "$@"
