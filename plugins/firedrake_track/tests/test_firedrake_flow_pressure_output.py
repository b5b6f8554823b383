"""The optional pressure output of flow cases (``output.pressure``) with the Firedrake
Stokes solver: the written arrays are the velocity components
followed by ``output.pressure.array``; with ``normalization: zero_mean`` (velocity on the
whole boundary) the reported pressure has zero mean, with ``absolute`` (a pressure /
traction condition fixes it) it is reported as computed, not shifted.

Manufactured solutions: u = curl psi, psi = psi_g + phi^2 chi with phi vanishing on the
velocity boundary (the Dirichlet data curl psi_g equals u on the boundary only).
"""

from __future__ import annotations

import firedrake_harness as H
import numpy as np
import pytest
import sympy as sp

from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import EvalGrid
from pdeagent.geometry import evaluation_mask, get_geometry, grid_points

pytestmark = pytest.mark.firedrake

X, Y = sp.symbols("x y")
ZERO_MEAN = {"array": "p", "normalization": "zero_mean"}


def _s(expr) -> str:
    return str(sp.sympify(expr))


def _curl(psi):
    return [sp.diff(psi, Y), -sp.diff(psi, X)]


def _forcing(u, p, nu):
    return [
        -nu * (sp.diff(ui, X, 2) + sp.diff(ui, Y, 2)) + sp.diff(p, (X, Y)[i])
        for i, ui in enumerate(u)
    ]


def _enclosed_mms():
    """All-Dirichlet velocity on the unit square; p has zero mean there."""
    phi = X * (1 - X) * Y * (1 - Y)
    psi_g = X**2 * Y - Y**3 / 3
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y)
    bc = {
        "dirichlet": [
            {"boundary": ["all"], "value": [_s(c) for c in _curl(psi_g)], "quantity": "velocity"}
        ]
    }
    return _curl(psi), p, bc


def _stokes_case(nu, u, p, bc, pressure, n=41):
    return H.case_spec(
        "stokes",
        params={"nu": nu},
        forcing={"f": [_s(c) for c in _forcing(u, p, nu)]},
        bc=bc,
        output={"field": "velocity", "components": ["u_x", "u_y"], "pressure": pressure},
        n=n,
    )


def _scored(spec, expressions):
    """The scored-point mask and the exact arrays of ``expressions`` on the grid."""
    grid = EvalGrid(**spec["eval_grid"])
    domain = spec["domain"]
    mask = evaluation_mask(grid, get_geometry(domain["type"], domain["geometry_params"]))
    points = grid_points(grid)
    exact = {
        name: np.broadcast_to(
            np.asarray(compile_expression(_s(e), grid.dim)(*points, t=0.0), dtype=float),
            grid.shape,
        )
        for name, e in expressions.items()
    }
    return mask.scored, exact


def _rel(sub, ref):
    return float(np.linalg.norm(sub - ref) / np.linalg.norm(ref))


def _check(spec, record, u, p, *, velocity_tol, pressure_tol):
    """Arrays exactly u_x, u_y, p; relative L2 errors of the velocity and of the pressure
    up to a constant (mean over scored points removed from both); returns the numbers."""
    arrays = record["arrays"]
    assert sorted(set(arrays) - {"x", "y"}) == ["p", "u_x", "u_y"]
    mask, exact = _scored(spec, {"u_x": u[0], "u_y": u[1], "p": p})
    sub = {k: np.asarray(arrays[k], dtype=float)[mask] for k in ("u_x", "u_y", "p")}
    ref = {k: exact[k][mask] for k in sub}
    assert all(np.isfinite(v).all() for v in sub.values())
    e_u = _rel(np.concatenate([sub["u_x"], sub["u_y"]]), np.concatenate([ref["u_x"], ref["u_y"]]))
    e_p = _rel(sub["p"] - sub["p"].mean(), ref["p"] - ref["p"].mean())
    assert e_u < velocity_tol, e_u
    assert e_p < pressure_tol, e_p
    rms = float(np.sqrt(np.mean(sub["p"] ** 2)))
    return e_u, e_p, float(sub["p"].mean()), rms, float(ref["p"].mean())


def test_stokes_zero_mean_pressure_output(tmp_path):
    nu = 1.0
    u, p, bc = _enclosed_mms()
    spec = _stokes_case(nu, u, p, bc, ZERO_MEAN)
    (rec,) = H.run_solver("stokes", spec, [{"resolution": 16}], tmp_path)
    e_u, e_p, mean, rms, _ = _check(spec, rec, u, p, velocity_tol=1e-3, pressure_tol=1e-2)
    print(
        f"\nfiredrake stokes zero_mean res 16: u {e_u:.3e} p {e_p:.3e} mean(p) {mean:.2e} "
        f"rms {rms:.3f}"
    )
    assert abs(mean) < 1e-2 * rms  # the reported pressure has zero mean
    assert rec["meta"]["solver_info"]["pressure_null_space"] != "none"


def test_stokes_absolute_pressure_output_is_not_shifted(tmp_path):
    """Velocity on xmin/ymin, traction on xmax, a pressure condition on ymax: the pressure
    is fixed by the boundary conditions and must be reported as it is (mean about 1/2)."""
    nu = 1.0
    psi_g = X**2 * Y
    psi = psi_g + 4 * X**2 * Y**2 * (1 - Y) ** 3 * (1 + sp.sin(sp.pi * X))
    u, g = _curl(psi), _curl(psi_g)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y) + X
    traction = [nu * sp.diff(u[0], X) - p, nu * sp.diff(u[1], X)]  # nu du/dn - p n, n = e_x
    bc = {
        "dirichlet": [
            {"boundary": ["xmin", "ymin"], "value": [_s(c) for c in g], "quantity": "velocity"},
            {"boundary": ["ymax"], "value": _s(p - nu * sp.diff(u[1], Y)), "quantity": "pressure"},
        ],
        "neumann": [
            {"boundary": ["xmax"], "value": [_s(c) for c in traction], "quantity": "traction"}
        ],
    }
    spec = _stokes_case(nu, u, p, bc, {"array": "p", "normalization": "absolute"})
    (rec,) = H.run_solver("stokes", spec, [{"resolution": 16}], tmp_path)
    e_u, e_p, mean, _, exact_mean = _check(spec, rec, u, p, velocity_tol=1e-3, pressure_tol=1e-2)
    mask, exact = _scored(spec, {"p": p})
    e_abs = _rel(np.asarray(rec["arrays"]["p"])[mask], exact["p"][mask])
    print(
        f"\nfiredrake stokes absolute res 16: u {e_u:.3e} p-up-to-constant {e_p:.3e} p {e_abs:.3e} "
        f"mean(p) {mean:.4f} (exact {exact_mean:.4f})"
    )
    assert e_abs < 1e-2 and abs(mean - exact_mean) < 1e-3
    assert rec["meta"]["solver_info"]["pressure_null_space"] == "none"
