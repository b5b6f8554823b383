"""Harness-side helpers of the Firedrake track tests (run in the harness venv).

They run the real (bundled) family solvers in the Firedrake runtime through the core's
settings runner (:data:`pdeagent.contracts.python.SETTINGS_RUNNER`) and score the
results with the core's own mask and metrics (:mod:`pdeagent.solver_checks`). A test
session that starts while a background ``pdeagent env setup firedrake`` builds (CI)
waits for it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from pdeagent_firedrake import environment
from pdeagent_firedrake.bundle import bundle

from pdeagent.contracts.settings_runs import run_settings, solved_runs
from pdeagent.solver_checks import case_spec, grid_error, observed_orders  # noqa: F401
from pdeagent.stages import TrackUnavailable
from pdeagent.testing import runtime_missing

SETUP_LOG = Path(__file__).resolve().parents[3] / ".venv" / "firedrake-setup.log"
SETUP_WAIT = 3600.0  # a background build on a loaded 2-vCPU machine: < 40 min measured


def firedrake_record() -> dict[str, Any]:
    """The Firedrake runtime record, after waiting for a running setup; skip the test
    when there is none, unless $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where it fails."""
    finished = environment.wait_for_setup(SETUP_WAIT, log=lambda m: print(m, file=sys.stderr))
    try:
        if not finished:
            raise TrackUnavailable(f"the Firedrake setup still runs after {SETUP_WAIT:.0f} s")
        return environment.load_record()
    except TrackUnavailable as exc:
        message = str(exc)
        if SETUP_LOG.is_file():  # a background setup (scripts/setup-dev.sh --tests) failed
            tail = SETUP_LOG.read_text(errors="replace")[-3000:]
            message += f"\n{SETUP_LOG} ends with:\n{tail}"
        runtime_missing(message)


def _run_job(
    family: str, spec: dict[str, Any], settings: list[dict[str, Any]], out: Path
) -> tuple[subprocess.CompletedProcess, list[dict[str, Any]]]:
    """Run the bundled family solver once per settings entry in the Firedrake runtime
    (:func:`pdeagent.contracts.settings_runs.run_settings`); the process and its per-run
    JSON records."""
    record = firedrake_record()
    env = environment.runtime_env(record)
    return run_settings(record["python"], bundle(family), family, spec, settings, out, env=env)


def run_solver(
    family: str, spec: dict[str, Any], settings: list[dict[str, Any]], out: Path
) -> list[dict[str, Any]]:
    """Run the bundled ``solve(spec, s)`` for each s in the Firedrake runtime; return one
    record per run with its arrays (``arrays``), ``meta`` and ``wall_time_sec``. Fails
    loudly."""
    return solved_runs(*_run_job(family, spec, settings, out), settings, out)


def run_failing(family: str, spec: dict[str, Any], settings: dict[str, Any], out: Path) -> str:
    """Run a solver that must fail; return its traceback (fails the test if it succeeds)."""
    _, records = _run_job(family, spec, [settings], out)
    assert records and not records[0]["ok"], "the solver was expected to fail"
    return records[0]["error"]
