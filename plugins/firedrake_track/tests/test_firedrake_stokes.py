"""Firedrake Stokes solver (Taylor-Hood, -nu laplace(u) + grad p = f, div u = 0):
manufactured-solution tests.

Divergence-free velocities come from a stream function psi (2-D, u = curl psi) or a
vector potential A (3-D, u = curl A). Where the velocity is prescribed on the whole
boundary the pressure is defined up to a constant and the solver must return the
zero-mean one; the exact pressures below have zero mean on their domains.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_stokes.py
"""

from __future__ import annotations

import json
from pathlib import Path

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

X, Y, Z = sp.symbols("x y z")
EXAMPLES = Path(__file__).resolve().parents[3] / "cases" / "examples.jsonl"
NULL_SPACE = "constant pressure null space (range projection) + zero-mean shift"


def _s(expr) -> str:
    return str(sp.sympify(expr))


def curl2(psi):
    return [sp.diff(psi, Y), -sp.diff(psi, X)]


def curl3(a):
    return [
        sp.diff(a[2], Y) - sp.diff(a[1], Z),
        sp.diff(a[0], Z) - sp.diff(a[2], X),
        sp.diff(a[1], X) - sp.diff(a[0], Y),
    ]


def stokes_forcing(u, p, nu):
    coords = (X, Y, Z)[: len(u)]
    return [-nu * sum(sp.diff(ui, c, 2) for c in coords) + sp.diff(p, coords[i])
            for i, ui in enumerate(u)]  # fmt: skip


def traction(u, p, nu, normal):
    """nu du/dn - p n of the exact fields."""
    coords = (X, Y, Z)[: len(u)]
    return [nu * sum(sp.diff(ui, c) * nc for c, nc in zip(coords, normal, strict=True))
            - p * normal[i] for i, ui in enumerate(u)]  # fmt: skip


def velocity(boundary, value):
    return {"boundary": list(boundary), "value": [_s(c) for c in value], "quantity": "velocity"}


def flow_case(domain, nu, u, p, bc, n=43):
    names = ["u_x", "u_y", "u_z"][: len(u)]
    return H.case_spec(
        "stokes", domain=domain, params={"nu": nu},
        forcing={"f": [_s(c) for c in stokes_forcing(u, p, sp.sympify(nu))]}, bc=bc,
        output={"field": "velocity", "components": [*names, "p"]}, n=n,
    )  # fmt: skip


def errors(spec, records, u, p):
    names = ["u_x", "u_y", "u_z"][: len(u)]
    exact_u = {k: _s(c) for k, c in zip(names, u, strict=True)}
    ue = [H.grid_error(spec, r["arrays"], exact_u) for r in records]
    pe = [H.grid_error(spec, r["arrays"], {"p": _s(p)}) for r in records]
    return ue, pe


def report(label, ue, pe):
    print(f"\nfiredrake stokes {label}: u {ue} orders {H.observed_orders(ue)}; "
          f"p {pe} orders {H.observed_orders(pe)}")  # fmt: skip


def test_taylor_hood_p2p1_and_p3p2_converge_on_the_enclosed_unit_square(tmp_path):
    """Velocity on the whole boundary (pressure null space): velocity ~ h^(k+2), zero-mean
    pressure ~ h^(k+1); the boundary data is the exact velocity only on the boundary."""
    nu = 0.5
    phi = X * (1 - X) * Y * (1 - Y)
    psi_g = X**2 * Y - Y**3 / 3
    u = curl2(psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y))
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y)  # zero mean on the unit square
    spec = flow_case("unit_square", nu, u, p, {"dirichlet": [velocity(["all"], curl2(psi_g))]})
    settings = [{"resolution": r, "degree": 1} for r in (8, 16, 32)]
    settings += [{"resolution": r, "degree": 2} for r in (4, 8, 16)]
    recs = H.run_solver("stokes", spec, settings, tmp_path)
    ue, pe = errors(spec, recs, u, p)
    for k, sl in ((1, slice(0, 3)), (2, slice(3, 6))):
        report(f"unit_square P{k + 1}-P{k}", ue[sl], pe[sl])
        assert min(H.observed_orders(ue[sl])) >= k + 2 - 0.3, (ue[sl], pe[sl])
        assert min(H.observed_orders(pe[sl])) >= k + 1 - 0.3, (ue[sl], pe[sl])
    assert ue[2] < 1e-4 and pe[2] < 2e-3 and ue[5] < 2e-5, (ue, pe)
    info = recs[-1]["meta"]["solver_info"]
    assert info["pressure_null_space"] == NULL_SPACE
    assert (info["velocity_degree"], info["pressure_degree"]) == (3, 2)


def test_mixed_velocity_traction_pressure_with_variable_viscosity(tmp_path):
    """Velocity on xmin/ymin, traction on xmax, a pressure Dirichlet entry on ymax
    (nu du/dn - p n = -g n): p is determined (no shift). -nu laplace(u), not
    -div(nu grad u), for the variable viscosity."""
    nu = 1 + X * Y / 2
    psi_g = X**2 * Y
    psi = psi_g + 4 * X**2 * Y**2 * (1 - Y) ** 3 * (1 + sp.sin(sp.pi * X))
    u, g = curl2(psi), curl2(psi_g)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y) + X
    bc = {
        "dirichlet": [velocity(["xmin", "ymin"], g),
                      {"boundary": ["ymax"], "value": _s(p - nu * sp.diff(u[1], Y)),
                       "quantity": "pressure"}],
        "neumann": [{"boundary": ["xmax"], "quantity": "traction",
                     "value": [_s(c) for c in traction(u, p, nu, (1, 0))]}],
    }  # fmt: skip
    spec = flow_case("unit_square", "1 + x*y/2", u, p, bc)
    recs = H.run_solver("stokes", spec, [{"resolution": r} for r in (8, 16, 32)], tmp_path)
    ue, pe = errors(spec, recs, u, p)
    report("mixed bc P2-P1", ue, pe)
    assert min(H.observed_orders(ue)) >= 2.7, (ue, pe)
    assert min(H.observed_orders(pe)) >= 1.7, (ue, pe)
    info = recs[-1]["meta"]["solver_info"]
    assert info["pressure_null_space"] == "none" and info["pressure_shift"] == 0.0


def test_a_gmsh_circle_with_enclosed_flow_returns_the_zero_mean_pressure(tmp_path):
    nu = 1.0
    phi = sp.Rational(1, 4) - (X - sp.Rational(1, 2)) ** 2 - (Y - sp.Rational(1, 2)) ** 2
    u = curl2(X**2 * Y + sp.sin(X + 2 * Y) + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y))
    p = X * Y - sp.Rational(1, 4)  # zero mean on the disc centred at (1/2, 1/2)
    spec = flow_case("circle", nu, u, p, {"dirichlet": [velocity(["all"], u)]}, n=41)
    recs = H.run_solver("stokes", spec, [{"resolution": r} for r in (8, 16, 32)], tmp_path)
    ue, pe = errors(spec, recs, u, p)
    report("circle P2-P1", ue, pe)
    assert min(H.observed_orders(ue)) >= 2.7, (ue, pe)
    assert min(H.observed_orders(pe)) >= 2.3 and pe[-1] < 1e-2, (ue, pe)
    assert recs[-1]["meta"]["solver_info"]["pressure_null_space"] == NULL_SPACE


def test_a_t_junction_with_inlet_walls_and_two_outlets(tmp_path):
    """gmsh t_junction: velocity on inlet and walls, a pressure outlet and a traction
    outlet, each on its own tag."""
    nu = 0.1
    u = curl2(sp.sin(2 * X) * sp.cos(3 * Y) + X * Y**2)
    p = sp.cos(X + Y) + X**2
    bc = {
        "dirichlet": [velocity(["inlet", "walls"], u)],
        "neumann": [
            {"boundary": ["outlet_left"], "quantity": "pressure",
             "value": _s(p - nu * sp.diff(u[0], X))},  # n = (-1, 0); psi_xx(0, y) = 0
            {"boundary": ["outlet_right"], "quantity": "traction",
             "value": [_s(c) for c in traction(u, p, nu, (1, 0))]},
        ],
    }  # fmt: skip
    spec = flow_case("t_junction", nu, u, p, bc, n=61)
    recs = H.run_solver("stokes", spec, [{"resolution": r} for r in (10, 20, 40)], tmp_path)
    ue, pe = errors(spec, recs, u, p)
    report("t_junction P2-P1", ue, pe)
    assert min(H.observed_orders(ue)) >= 2.7, (ue, pe)
    assert min(H.observed_orders(pe)) >= 1.7, (ue, pe)
    assert recs[-1]["meta"]["solver_info"]["pressure_null_space"] == "none"


def test_unit_cube_coarse(tmp_path):
    u = curl3([Y * Z**2, sp.sin(X * Z), X**2 * Y + sp.cos(Y)])
    p = X * Y * Z - sp.Rational(1, 8)  # zero mean on the unit cube
    spec = flow_case("unit_cube", 1.0, u, p, {"dirichlet": [velocity(["all"], u)]}, n=11)
    recs = H.run_solver("stokes", spec, [{"resolution_3d": r} for r in (3, 6)], tmp_path)
    ue, pe = errors(spec, recs, u, p)
    report("unit_cube P2-P1", ue, pe)
    assert H.observed_orders(ue)[0] >= 2.6 and ue[1] < 1e-3, (ue, pe)
    assert H.observed_orders(pe)[0] >= 1.6, (ue, pe)
    info = recs[1]["meta"]["solver_info"]
    assert info["dofs"] > 5000 and info["pressure_null_space"] == NULL_SPACE


def test_calibration_defaults_on_the_example_case(tmp_path):
    """DEFAULTS on the shipped example case (velocity_magnitude output)."""
    record = next(json.loads(line) for line in EXAMPLES.read_text().splitlines()
                  if '"stokes"' in line)  # fmt: skip
    spec = record["case_spec"]
    exact = record["evaluation_metadata"]["manufactured_solution"]
    recs = H.run_solver("stokes", spec, [{}], tmp_path)
    error = H.grid_error(spec, recs[0]["arrays"], exact)
    print(f"\nfiredrake stokes calibration (DEFAULTS) error {error:.3e} "
          f"wall {recs[0]['wall_time_sec']:.2f}s")  # fmt: skip
    assert 1e-6 <= error <= 1e-3


def test_a_neumann_velocity_condition_fails_loudly(tmp_path):
    u = curl2(X**2 * Y)
    bc = {
        "dirichlet": [velocity(["xmin", "ymin", "ymax"], u)],
        "neumann": [{"boundary": ["xmax"], "value": ["0", "0"], "quantity": "velocity"}],
    }
    spec = flow_case("unit_square", 1.0, u, X, bc, n=11)
    error = H.run_failing("stokes", spec, {"resolution": 4}, tmp_path)
    assert "Neumann quantity 'velocity' is not defined" in error
