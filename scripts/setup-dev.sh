#!/usr/bin/env bash
# Create .venv with Python >= 3.12 and install pdeagent, its in-tree plugins (tracks and
# providers), the sample third-party track used by the tests, and the test tools.
# Idempotent.
#
#   --tests   also start building the Firedrake runtime (`pdeagent env setup firedrake`,
#             ~17 min the first time, seconds after) in the background at the lowest CPU
#             priority, for the firedrake-marked tests, which wait for it; its log is
#             .venv/firedrake-setup.log; and install Chromium (the OS package) for the
#             report pages' browser tests
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TESTS=0
for arg in "$@"; do
  case "$arg" in
    --tests) WITH_TESTS=1 ;;
    *) echo "usage: $0 [--tests]" >&2; exit 2 ;;
  esac
done
PY=$(bash scripts/find-python.sh)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]' -e plugins/dolfinx_track -e plugins/dealii_track \
  -e plugins/firedrake_track \
  -e tests/sample_track \
  -e plugins/providers/anthropic -e plugins/providers/openai \
  -e plugins/providers/baseline -e plugins/providers/replay -e plugins/providers/command
# Sandbox backends: bubblewrap (Debian's bwrap, as root via apt; before the track set-ups,
# whose apt steps must not run at the same time) and, at the end, the docker backend's
# image (built locally, where a Docker daemon answers). Without them the strongest
# remaining backend is used; `pdeagent sandbox status` tells which.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null; }
  else
    echo "note: bubblewrap is not installed: the bwrap sandbox backend is unavailable" >&2
  fi
fi
# A headless Chromium for the report pages' browser tests (driven by playwright).
if [ "$WITH_TESTS" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get install -y -qq --no-install-recommends chromium >/dev/null \
      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }
  else
    echo "note: chromium is not installed: the report's browser tests will fail" >&2
  fi
fi
# The track runtimes (DOLFINx: a separate venv the sandbox runs solvers in); set
# PDEAGENT_SKIP_RUNTIMES=1 to skip it (its tests then skip, or fail under
# PDEAGENT_REQUIRE_RUNTIMES=1 as in CI).
if [ "${PDEAGENT_SKIP_RUNTIMES:-0}" != 1 ]; then
  # The DOLFINx runtime (pip: mostly network and disk, no apt) in the background while
  # deal.II's apt step and precompiled header run; its output is shown when it ends.
  .venv/bin/pdeagent env setup dolfinx >.venv/dolfinx-setup.log 2>&1 &
  DOLFINX_SETUP=$!
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
  if [ "$WITH_TESTS" = 1 ]; then
    # Firedrake builds PETSc, h5py and petsc4py from source: in the background, niced, so
    # the other tests keep the CPU; the Firedrake tests run in their own pass after them
    # (scripts/run-tests.sh) and wait for the build if it still runs
    # (pdeagent_firedrake.environment.wait_for_setup).
    nohup nice -n 19 .venv/bin/pdeagent env setup firedrake >.venv/firedrake-setup.log 2>&1 &
    echo "Firedrake runtime: building in the background (pid $!, log .venv/firedrake-setup.log)"
    MARKER=$(.venv/bin/python -c 'from pdeagent_firedrake import environment as e; print(e.setup_marker())')
    for _ in $(seq 60); do  # the build announces itself before the tests can wait for it
      if [ -f "$MARKER" ] || ! kill -0 $! 2>/dev/null; then break; fi
      sleep 1
    done
  fi
  if ! wait "$DOLFINX_SETUP"; then
    cat .venv/dolfinx-setup.log >&2
    echo "error: pdeagent env setup dolfinx failed (log above: .venv/dolfinx-setup.log)" >&2
    exit 1
  fi
  cat .venv/dolfinx-setup.log
  # pytest inside the runtime, for the runtime-side tests (plugins/*/tests/runtime/)
  DOLFINX_PY=$(.venv/bin/python -c 'from pdeagent_dolfinx import runtime_python; print(runtime_python())')
  "$DOLFINX_PY" -m pip install --quiet --disable-pip-version-check pytest
fi
if .venv/bin/python -c 'import docker; docker.from_env(timeout=10).ping()' >/dev/null 2>&1; then
  .venv/bin/pdeagent env setup --sandbox docker >/dev/null
fi
.venv/bin/pdeagent sandbox status
echo "pdeagent installed in $(pwd)/.venv"
