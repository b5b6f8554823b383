#!/usr/bin/env bash
# The test suite as CI runs it (after `bash scripts/setup-dev.sh --tests`): lint, then
# three pytest passes. Extra arguments go to every pass (e.g. -x, --durations=0).
#
#   1. the tests marked `timing`, alone: the DOLFINx calibration baseline graded against
#      the dataset's measured time thresholds (tau_time = 3 t_base). A second busy test
#      worker could fail the time gate, not the solver; the Firedrake build that
#      setup-dev.sh --tests started runs at the lowest CPU priority and takes the core
#      this serial pass leaves idle;
#   2. every other test except the Firedrake ones, on two workers (pytest-xdist;
#      --dist loadfile keeps a test file and its fixtures on one worker), while the
#      build finishes in the gaps;
#   3. the Firedrake tests, on two workers (they wait for the build if it still runs).
#
# Unless $PDEAGENT_SANDBOX says otherwise, the executions of tests that do not choose a
# sandbox backend run on bubblewrap, which starts and ends a run ~0.2 s sooner than a
# Docker container (~0.8 s per graded evaluation) and measures the same runtime: the
# time gate's runtime is taken by the launcher inside the sandbox (the DOLFINx Poisson
# calibration solve: 0.612 s on bwrap, 0.610 s on docker; benchmarks/RESULTS.md,
# "sandbox_backends"). The tests that name backends (the `sandbox_backend` fixture, the
# adversarial catalogue on every backend, the `docker`-marked tests) still cover each.
# $PDEAGENT_REQUIRE_RUNTIMES=1 (set here unless given) makes a missing track runtime a
# failure instead of a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export PDEAGENT_REQUIRE_RUNTIMES="${PDEAGENT_REQUIRE_RUNTIMES:-1}"
PY=.venv/bin/python
WORKERS=(-n 2 --dist loadfile)
export PDEAGENT_SANDBOX="${PDEAGENT_SANDBOX:-bwrap}"

.venv/bin/ruff check .
echo "== pass 1/3: timing, alone (sandbox: $PDEAGENT_SANDBOX; $(date -u +%T) UTC)"
"$PY" -m pytest -q --durations=10 -m timing "$@"
echo "== pass 2/3: all but timing and Firedrake, two workers ($(date -u +%T) UTC)"
"$PY" -m pytest -q "${WORKERS[@]}" --durations=20 -m "not timing and not firedrake" "$@"
echo "== pass 3/3: Firedrake, two workers ($(date -u +%T) UTC)"
"$PY" -m pytest -q "${WORKERS[@]}" --durations=20 -m "firedrake and not timing" "$@"
echo "== done ($(date -u +%T) UTC)"
