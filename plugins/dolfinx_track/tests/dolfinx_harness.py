"""Harness-side helpers of the DOLFINx track tests (run in the harness venv).

They build manufactured-solution case_specs with sympy, run the real (bundled) solvers
in the DOLFINx runtime through the core's settings runner
(:data:`pdeagent.contracts.python.SETTINGS_RUNNER`) and score the results with the
core's own mask and metrics.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from pdeagent.contracts.settings_runs import run_settings, solved_runs
from pdeagent.solver_checks import case_spec, grid_error, observed_orders  # noqa: F401
from pdeagent.testing import require_runtime
from pdeagent_dolfinx.bundle import bundle


def dolfinx_python() -> Path:
    """The DOLFINx runtime interpreter; skip the test when absent, unless
    $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where a missing runtime fails it."""
    from pdeagent_dolfinx import runtime_python

    return require_runtime(runtime_python)


def run_job(
    family: str,
    spec: dict[str, Any],
    settings: list[dict[str, Any]],
    out: Path,
    *,
    timeout: float = 1800,
) -> tuple[subprocess.CompletedProcess, list[dict[str, Any]]]:
    """Run the bundled family solver once per settings entry in the DOLFINx runtime
    (:func:`pdeagent.contracts.settings_runs.run_settings`); the process and its per-run
    JSON records."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return run_settings(
        dolfinx_python(), bundle(family), family, spec, settings, out, env=env, timeout=timeout
    )


def run_solver(
    family: str, spec: dict[str, Any], settings: list[dict[str, Any]], out: Path
) -> list[dict[str, Any]]:
    """Run ``solve(spec, s)`` for each s in the DOLFINx runtime; return one record per
    run with its arrays (``arrays``), ``meta`` and ``wall_time_sec``. Fails loudly."""
    return solved_runs(*run_job(family, spec, settings, out), settings, out)
