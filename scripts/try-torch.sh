#!/usr/bin/env bash
# A maintainer's measured step to another torch release, before moving the course to it:
#   bash scripts/try-torch.sh VERSION [TORCHVISION] [-- PYTEST-ARGS]
# 1. builds a side environment .venv-try/torch-VERSION (ignored by git; the course's .venv is not
#    touched) with torch VERSION, torchvision TORCHVISION (or the one pip picks for that torch)
#    and every other pin of pyproject.toml;
# 2. runs the strict notebook tests (course/, labs/, solutions/ under nbval) and the claim tests
#    (tests/test_lectures_*.py) in it, or the pytest arguments given after --;
# 3. prints a summary per notebook, each failed cell sorted into "output drift" (it ran, its
#    output is not the stored one) or "exception" (it raised or timed out), then the failed tests.
# The summary is kept in .venv-try/torch-VERSION/summary.txt, each item's outcome in report.jsonl;
# the exit status is pytest's.
# A pip configuration that caps torch (a constraints file) is set aside for the side environment
# only. Needs several GB of disk and, for a release not on this machine, a download of the same.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '[try-torch] %s\n' "$*"; }
usage() { echo "usage: bash scripts/try-torch.sh VERSION [TORCHVISION] [-- PYTEST-ARGS]" >&2; exit 2; }
[ "$#" -ge 1 ] || usage
version="$1"; shift
torchvision=""
torchvision_given=0
if [ "$#" -gt 0 ] && [ "$1" != "--" ]; then torchvision="$1"; torchvision_given=1; shift; fi
[ "$#" -gt 0 ] && { [ "$1" = "--" ] || usage; shift; }
# A release number as pip writes one: 2.15.0, 2.15, 2.16.0rc1, 2.16.0.dev20261201, 2.15.0+cpu.
release='^[0-9]+\.[0-9]+(\.[0-9]+)?((a|b|rc)[0-9]+)?(\.dev[0-9]+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?$'
[[ "$version" =~ $release ]] || { echo "not a torch version: '$version'" >&2; usage; }
if [ "${torchvision_given:-0}" = 1 ] && ! [[ "$torchvision" =~ $release ]]; then
  echo "not a torchvision version: '$torchvision'" >&2; usage
fi
base_python="${PYTHON:-python3}"
side=".venv-try/torch-$version"
py="$side/bin/python"
export PIP_CONSTRAINT=/dev/null   # an empty constraints file: no cap on torch for this side environment
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$py" ]; then
  say "creating $side"
  "$base_python" -m venv "$side"
fi
want="torch==$version"
if [[ "$version" != *+* ]]; then want="torch==$version,!=$version+cpu"; fi  # the +cpu build does not pair
pair=("$want" "torchvision${torchvision:+==$torchvision}")
say "installing ${pair[*]} and the course's other pins"
"$py" -m pip install -q "${pair[@]}"
# Every other pin of pyproject.toml (not torch, not torchvision), the test extras, then the
# course package itself without its dependencies (its metadata still names the taught pair).
"$py" - pyproject.toml > "$side/requirements.txt" <<'PY'
import re, sys, tomllib
data = tomllib.loads(open(sys.argv[1], encoding="utf-8").read())
for requirement in data["project"]["dependencies"] + data["project"]["optional-dependencies"]["test"]:
    if not re.match(r"(torch|torchvision)\s*[=<>!~]", requirement):
        print(requirement)
PY
"$py" -m pip install -q -r "$side/requirements.txt" "${pair[@]}"
"$py" -m pip install -q --no-deps -e .
versions=$("$py" -c "import torch, torchvision; print(f'torch {torch.__version__} + torchvision {torchvision.__version__}')")
checked=$("$py" -m pip check 2>&1 | grep -v "^fxcourse " || true)
say "side environment: $versions"
[ -z "$checked" ] || say "pip check: $checked"

tests=(course labs solutions tests/test_lectures_*.py)
[ "$#" -gt 0 ] && tests=("$@")
report="$side/report.jsonl"
export PYTHONHASHSEED=0 TORCHINDUCTOR_CACHE_DIR="$(pwd)/$side/inductor-cache"
rm -f "$report"  # a report from an earlier run in this side environment is not this run's
start=$(date +%s)
set +e
"$py" -m pytest -p fxcourse.tooling.trytorch --try-torch-report "$report" -n "${FXCOURSE_WORKERS:-2}" \
  --dist loadscope --nbval -q --continue-on-collection-errors -o addopts="--nbval-sanitize-with=nbval_sanitize.cfg --nbval-cell-timeout=600 -p no:cacheprovider" \
  "${tests[@]}" > "$side/pytest.log" 2>&1
status=$?
set -e
wall=$(( $(date +%s) - start ))
title="$versions, pytest exit $status in $wall s (log: $side/pytest.log)"
if [ -s "$report" ]; then
  "$py" -m fxcourse.tooling.trytorch "$report" "$title" | tee "$side/summary.txt" \
    || say "the summary failed; the outcomes are in $report, pytest's output in $side/pytest.log"
else
  say "$title: no test reported anything: read $side/pytest.log" | tee "$side/summary.txt"
fi
exit $status
