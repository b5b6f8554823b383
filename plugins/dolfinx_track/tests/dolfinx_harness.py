"""Harness-side helpers of the DOLFINx track tests (run in the harness venv).

They build manufactured-solution case_specs with sympy, run the real solvers in the
DOLFINx runtime through ``runtime_runner.py`` and score the results with the core's
own mask and metrics.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from pdeagent.solver_checks import case_spec, grid_error, observed_orders  # noqa: F401
from pdeagent.testing import require_runtime

RUNNER = Path(__file__).with_name("runtime_runner.py")


def dolfinx_python() -> Path:
    """The DOLFINx runtime interpreter; skip the test when absent, unless
    $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where a missing runtime fails it."""
    from pdeagent_dolfinx import runtime_python

    return require_runtime(runtime_python)


def run_solver(
    family: str, spec: dict[str, Any], settings: list[dict[str, Any]], out: Path
) -> list[dict[str, Any]]:
    """Run ``solve(spec, s)`` for each s in the DOLFINx runtime; return one record per
    run with its arrays (``arrays``), ``meta`` and ``wall_time_sec``. Fails loudly."""
    python = dolfinx_python()
    job = {"family": family, "case_spec": spec, "settings": settings, "out": str(out)}
    proc = subprocess.run(
        [str(python), str(RUNNER)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    if proc.returncode != 0:
        raise AssertionError(f"runtime runner failed:\n{proc.stderr[-4000:]}")
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(records) == len(settings), proc.stdout + proc.stderr[-3000:]
    for rec in records:
        if not rec["ok"]:
            raise AssertionError(
                f"solver failed with settings {settings[rec['index']]}:\n{rec['error']}"
            )
        workdir = out / str(rec["index"])
        with np.load(workdir / "solution.npz", allow_pickle=False) as data:
            rec["arrays"] = {k: data[k] for k in data.files}
        rec["meta"] = json.loads((workdir / "meta.json").read_text())
    return records
