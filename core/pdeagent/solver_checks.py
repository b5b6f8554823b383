"""Helpers for a track's solver tests (library-neutral, run in the harness venv):
agent-view case_specs for manufactured solutions, relative L2 errors on the scored
grid points against exact expressions (the core's own mask and metric), and observed
convergence orders.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import EvalGrid, OutputSpec, converter
from pdeagent.geometry import evaluation_mask, get_geometry, grid_points
from pdeagent.scoring.metrics import case_error, relative_l2


def grid_error(
    case_spec: dict[str, Any], arrays: dict[str, np.ndarray], exact: dict[str, str]
) -> float:
    """The verdict error (:func:`pdeagent.scoring.metrics.case_error`) on the scored grid
    points (core mask) against exact expressions at the final time, over the arrays named
    in ``exact``: with the pressure of ``case_spec["output"]`` among them the velocity and
    the pressure are scored separately (a ``zero_mean`` pressure after subtracting its
    mean), else the relative L2 error of those arrays together. NaN on a scored point
    fails the test."""
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
    output = converter.structure(case_spec["output"], OutputSpec)
    if output.pressure is not None and output.pressure.array in exact:
        return case_error(sub, ref, mask.scored, output)
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
