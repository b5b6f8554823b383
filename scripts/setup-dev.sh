#!/usr/bin/env bash
# Create .venv with Python >= 3.12 and install pdeagent, its in-tree plugins (tracks and
# providers), the sample third-party track used by the tests, and the test tools.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/find-python.sh)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]' -e plugins/dolfinx_track -e plugins/dealii_track \
  -e plugins/firedrake_track \
  -e tests/sample_track \
  -e plugins/providers/anthropic -e plugins/providers/openai \
  -e plugins/providers/baseline -e plugins/providers/replay
# The track runtimes (DOLFINx: a separate venv the sandbox runs solvers in); set
# PDEAGENT_SKIP_RUNTIMES=1 to skip it (its tests then skip, or fail under
# PDEAGENT_REQUIRE_RUNTIMES=1 as in CI).
if [ "${PDEAGENT_SKIP_RUNTIMES:-0}" != 1 ]; then
  .venv/bin/pdeagent env setup dolfinx
  # pytest inside the runtime, for the runtime-side tests (plugins/*/tests/runtime/)
  DOLFINX_PY=$(.venv/bin/python -c 'from pdeagent_dolfinx import runtime_python; print(runtime_python())')
  "$DOLFINX_PY" -m pip install --quiet --disable-pip-version-check pytest
  # The deal.II toolchain: Debian's libdeal.ii-dev (apt, as root; otherwise it says
  # what to install), its compile flags and a precompiled header (~2 min the first
  # time, seconds after).
  if [ "$(id -u)" = 0 ] || dpkg -s libdeal.ii-dev >/dev/null 2>&1; then
    .venv/bin/pdeagent env setup dealii
  else
    echo "warning: deal.II is not installed and this is not root: its tests will skip" >&2
    echo "  (as root: apt-get install -y libdeal.ii-dev nlohmann-json3-dev, then" >&2
    echo "   .venv/bin/pdeagent env setup dealii)" >&2
  fi
fi
echo "pdeagent installed in $(pwd)/.venv"
