#!/usr/bin/env bash
# Set everything up (idempotent) and run every test: unit tests and doctests, the notebook
# checks (i18n, labs in sync), strict nbval over course/, labs/ and solutions/, and the
# browser test. Extra arguments go to pytest.
# 安装（可重复运行）并运行全部测试。多余的参数会传给 pytest。
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export PYTHONHASHSEED=0
# Keep Inductor's compile cache with the environment, so repeated runs reuse it.
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$(pwd)/.venv/inductor-cache}"
.venv/bin/fxcourse doctor
start=$(date +%s)
set +e
.venv/bin/python -m pytest -n "${FXCOURSE_WORKERS:-2}" --dist loadscope --nbval \
  --doctest-modules --durations=15 \
  tests src/fxcourse course labs solutions "$@"
status=$?
set -e
echo "[test] wall time: $(( $(date +%s) - start )) s"
exit $status
