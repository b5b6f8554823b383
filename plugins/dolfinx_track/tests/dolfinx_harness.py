"""Harness-side helpers of the DOLFINx track tests (run in the harness venv).

They build manufactured-solution case_specs with sympy, run the real solvers in the
DOLFINx runtime through ``runtime_runner.py`` and score the results with the core's
own mask and metrics.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import EvalGrid
from pdeagent.geometry import evaluation_mask, get_geometry, grid_points
from pdeagent.scoring.metrics import relative_l2

RUNNER = Path(__file__).with_name("runtime_runner.py")
REQUIRE_ENV = "PDEAGENT_REQUIRE_RUNTIMES"


def dolfinx_python() -> Path:
    """The DOLFINx runtime interpreter; skip the test when absent, unless
    $PDEAGENT_REQUIRE_RUNTIMES=1 (CI), where a missing runtime fails it."""
    from pdeagent.stages import TrackUnavailable
    from pdeagent_dolfinx import runtime_python

    try:
        return runtime_python()
    except TrackUnavailable as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def run_solver(
    family: str, case_spec: dict[str, Any], settings: list[dict[str, Any]], out: Path
) -> list[dict[str, Any]]:
    """Run ``solve(case_spec, s)`` for each s in the DOLFINx runtime; return one record per
    run with its arrays (``arrays``), ``meta`` and ``wall_time_sec``. Fails loudly."""
    python = dolfinx_python()
    job = {"family": family, "case_spec": case_spec, "settings": settings, "out": str(out)}
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


def grid_error(
    case_spec: dict[str, Any], arrays: dict[str, np.ndarray], exact: dict[str, str]
) -> float:
    """Relative L2 error on the scored grid points (core mask) against exact expressions
    at the final time; NaN on a scored point fails the test."""
    grid = EvalGrid(**{k: v for k, v in case_spec["eval_grid"].items()})
    domain = case_spec["domain"]
    mask = evaluation_mask(grid, get_geometry(domain["type"], domain.get("geometry_params")))
    time_spec = case_spec["pde"].get("time")
    t = time_spec["t_end"] if time_spec else 0.0
    points = grid_points(grid)
    ref, sub = {}, {}
    for name, expr in exact.items():
        fn = compile_expression(expr, grid.dim, parameters=case_spec["pde"].get("params"))
        ref[name] = np.broadcast_to(np.asarray(fn(*points, t=t), dtype=float), grid.shape)
        values = np.asarray(arrays[name], dtype=float)
        assert values.shape == grid.shape, (name, values.shape, grid.shape)
        bad = ~np.isfinite(values[mask.scored])
        assert not bad.any(), f"{bad.sum()} scored points of {name} are not finite"
        sub[name] = values
    return relative_l2(sub, ref, mask.scored)


def observed_orders(errors: list[float], refinement: float = 2.0) -> list[float]:
    """log_r(e_k / e_{k+1}) for successive refinements by the factor ``refinement``."""
    return [float(np.log(a / b) / np.log(refinement)) for a, b in itertools.pairwise(errors)]


def case_spec(
    family: str,
    *,
    domain: str = "unit_square",
    geometry_params: dict[str, Any] | None = None,
    params: dict[str, Any],
    forcing: dict[str, Any],
    bc: dict[str, Any],
    output: dict[str, Any],
    time: dict[str, float] | None = None,
    ic: dict[str, Any] | None = None,
    n: int = 41,
) -> dict[str, Any]:
    """An agent-view case_spec dict (the form a solver receives)."""
    geom = get_geometry(domain, geometry_params)
    bounds = geom.bbox()
    bbox = [c for pair in bounds for c in pair]
    grid: dict[str, Any] = {
        "type": "cartesian",
        "nx": n,
        "ny": n,
        "nz": n if geom.dim == 3 else None,
        "bbox": bbox,
        "mask_outside": True,
    }
    full_bc = {"dirichlet": [], "neumann": [], "robin": [], "periodic": []}
    full_bc.update(bc)
    return {
        "pde": {"type": family, "params": params, "forcing": forcing, "time": time},
        "domain": {"type": domain, "bounds": bounds, "geometry_params": dict(geom.params)},
        "bc": full_bc,
        "ic": ic,
        "eval_grid": grid,
        "output": {"format": "npz", "components": None, **output},
    }
