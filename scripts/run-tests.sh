#!/usr/bin/env bash
# The test suite as CI runs it (after `bash scripts/setup-dev.sh --tests`): lint, then
# three pytest passes. Extra arguments go to every pass (e.g. -x, --durations=0).
#
#   1. every test except the Firedrake ones and the timing sample, on two workers
#      (pytest-xdist; --dist loadfile keeps a test file and its fixtures on one worker),
#      while the Firedrake runtime builds in the background at the lowest CPU priority;
#   2. the Firedrake tests, on two workers: they wait for that build, which by now has
#      had the first pass's idle moments;
#   3. the tests marked `timing` alone (the DOLFINx calibration baseline graded against
#      the dataset's measured time thresholds: a busy second core, or a running build,
#      would fail the time gate, not the solver).
#
# Unless $PDEAGENT_SANDBOX says otherwise, passes 1 and 2 run the executions of tests
# that do not choose a backend on bubblewrap, which starts a run ~0.3 s sooner than a
# Docker container; the tests that name backends (the `sandbox_backend` fixture, the
# adversarial catalogue on every backend, the `docker`-marked tests) still cover each
# backend, and pass 3 grades on the default (strongest) backend as a user's run does.
# $PDEAGENT_REQUIRE_RUNTIMES=1 (set here unless given) makes a missing track runtime a
# failure instead of a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PDEAGENT_REQUIRE_RUNTIMES="${PDEAGENT_REQUIRE_RUNTIMES:-1}"
PY=.venv/bin/python
WORKERS=(-n 2 --dist loadfile)
FAST_BACKEND="${PDEAGENT_SANDBOX:-bwrap}"

.venv/bin/ruff check .
echo "== pass 1/3: all but Firedrake and timing, two workers (sandbox: $FAST_BACKEND)"
PDEAGENT_SANDBOX="$FAST_BACKEND" "$PY" -m pytest -q "${WORKERS[@]}" --durations=20 \
  -m "not timing and not firedrake" "$@"
echo "== pass 2/3: Firedrake, two workers (sandbox: $FAST_BACKEND)"
PDEAGENT_SANDBOX="$FAST_BACKEND" "$PY" -m pytest -q "${WORKERS[@]}" --durations=20 \
  -m "firedrake and not timing" "$@"
echo "== pass 3/3: timing, alone"
"$PY" -m pytest -q --durations=10 -m timing "$@"
