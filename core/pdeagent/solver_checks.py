"""Helpers for a track's solver tests (library-neutral, run in the harness venv):
agent-view case_specs for manufactured solutions, relative L2 errors on the scored
grid points against exact expressions (the core's own mask and metric), and observed
convergence orders.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import sympy as sp
from attrs import define

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


# --- flow cases with a pressure output (Stokes, Navier-Stokes) --------------------------

_X, _Y = sp.symbols("x y")
ZERO_MEAN_PRESSURE = {"array": "p", "normalization": "zero_mean"}
ABSOLUTE_PRESSURE = {"array": "p", "normalization": "absolute"}


def _curl(psi: sp.Expr) -> list[sp.Expr]:
    return [sp.diff(psi, _Y), -sp.diff(psi, _X)]


def enclosed_flow_mms() -> tuple[list[sp.Expr], sp.Expr, dict[str, Any]]:
    """A manufactured flow on the unit square with the velocity prescribed on the whole
    boundary (so the pressure is fixed only up to a constant; this p has zero mean):
    ``(u, p, bc)``, u = curl psi divergence-free."""
    phi = _X * (1 - _X) * _Y * (1 - _Y)
    psi_g = _X**2 * _Y - _Y**3 / 3
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * _X) * sp.exp(_Y)
    p = sp.sin(sp.pi * _X) * sp.cos(sp.pi * _Y)
    g = [str(c) for c in _curl(psi_g)]
    return _curl(psi), p, {"dirichlet": [{"boundary": ["all"], "value": g, "quantity": "velocity"}]}


def open_flow_mms(nu: float) -> tuple[list[sp.Expr], sp.Expr, dict[str, Any]]:
    """A manufactured Stokes flow on the unit square whose pressure the boundary fixes:
    velocity on xmin/ymin, traction ``nu du/dn - p n`` on xmax, a pressure condition on
    ymax (mean of p about 1/2): ``(u, p, bc)``."""
    psi_g = _X**2 * _Y
    psi = psi_g + 4 * _X**2 * _Y**2 * (1 - _Y) ** 3 * (1 + sp.sin(sp.pi * _X))
    u, g = _curl(psi), _curl(psi_g)
    p = sp.sin(sp.pi * _X) * sp.cos(sp.pi * _Y) + _X
    traction = [nu * sp.diff(u[0], _X) - p, nu * sp.diff(u[1], _X)]  # n = e_x
    bc = {
        "dirichlet": [
            {"boundary": ["xmin", "ymin"], "value": [str(c) for c in g], "quantity": "velocity"},
            {
                "boundary": ["ymax"],
                "value": str(p - nu * sp.diff(u[1], _Y)),
                "quantity": "pressure",
            },
        ],
        "neumann": [
            {"boundary": ["xmax"], "value": [str(c) for c in traction], "quantity": "traction"}
        ],
    }
    return u, p, bc


def flow_case_spec(
    family: str,
    nu: float,
    u: list[sp.Expr],
    p: sp.Expr,
    bc: dict[str, Any],
    pressure: dict[str, Any] | None,
    n: int = 41,
) -> dict[str, Any]:
    """The case_spec of a manufactured flow: forcing ``-nu lap u + grad p`` (plus ``(u .
    grad) u`` for Navier-Stokes), output u_x, u_y and the ``pressure`` entry."""
    f = []
    for i, ui in enumerate(u):
        fi = -nu * (sp.diff(ui, _X, 2) + sp.diff(ui, _Y, 2)) + sp.diff(p, (_X, _Y)[i])
        if family == "navier_stokes":
            fi += u[0] * sp.diff(ui, _X) + u[1] * sp.diff(ui, _Y)
        f.append(str(fi))
    output: dict[str, Any] = {"field": "velocity", "components": ["u_x", "u_y"]}
    if pressure is not None:
        output["pressure"] = pressure
    return case_spec(family, params={"nu": nu}, forcing={"f": f}, bc=bc, output=output, n=n)


@define(frozen=True)
class FlowErrors:
    """A flow solver's output against the manufactured (u, p) on the scored points."""

    velocity: float
    """Relative L2 error of u_x and u_y together."""
    pressure: float
    """Relative L2 error of p up to a constant (each minus its mean over scored points)."""
    pressure_absolute: float
    """Relative L2 error of p as written."""
    mean: float
    """Mean of the written p over the scored points."""
    rms: float
    """Root mean square of the written p over the scored points."""
    exact_mean: float
    """Mean of the exact p over the scored points."""


def flow_errors(
    spec: dict[str, Any], arrays: dict[str, np.ndarray], u: list[sp.Expr], p: sp.Expr
) -> FlowErrors:
    """:class:`FlowErrors` of ``arrays`` (u_x, u_y, p on the grid; NaN on a scored point
    fails the test)."""
    grid = EvalGrid(**spec["eval_grid"])
    domain = spec["domain"]
    mask = evaluation_mask(grid, get_geometry(domain["type"], domain["geometry_params"])).scored
    points = grid_points(grid)

    def exact(expr: sp.Expr) -> np.ndarray:
        values = compile_expression(str(expr), grid.dim)(*points, t=0.0)
        return np.broadcast_to(np.asarray(values, dtype=float), grid.shape)[mask]

    sub = {k: np.asarray(arrays[k], dtype=float)[mask] for k in ("u_x", "u_y", "p")}
    for name, values in sub.items():
        assert np.isfinite(values).all(), f"{name}: a scored point is not finite"

    def rel(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    ref_u = np.concatenate([exact(u[0]), exact(u[1])])
    ref_p = exact(p)
    return FlowErrors(
        velocity=rel(np.concatenate([sub["u_x"], sub["u_y"]]), ref_u),
        pressure=rel(sub["p"] - sub["p"].mean(), ref_p - ref_p.mean()),
        pressure_absolute=rel(sub["p"], ref_p),
        mean=float(sub["p"].mean()),
        rms=float(np.sqrt(np.mean(sub["p"] ** 2))),
        exact_mean=float(ref_p.mean()),
    )
