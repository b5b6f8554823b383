#!/usr/bin/env bash
# Create .venv with Python >= 3.12 and install pdeagent, its in-tree plugins, the
# sample third-party track used by the tests, and the test tools. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/find-python.sh)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]' -e plugins/dolfinx_track -e tests/sample_track
echo "pdeagent installed in $(pwd)/.venv"
