"""Firedrake heat solver (du/dt - div(kappa grad u) = f): manufactured-solution tests.

Exact solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part and the Dirichlet value g (never u* itself); f = du*/dt - div(kappa
grad u*), Neumann data kappa du*/dn and Robin data kappa du*/dn + alpha u*.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_heat.py
"""

from __future__ import annotations

import json
from pathlib import Path

import firedrake_harness as H
import pytest
import sympy as sp
from pdeagent_firedrake.bundle import module_settings

pytestmark = pytest.mark.firedrake

x, y, z, t = sp.symbols("x y z t")
EXAMPLES = Path(__file__).resolve().parents[3] / "cases" / "examples.jsonl"
NORMALS = {
    "xmin": (-1, 0, 0),
    "xmax": (1, 0, 0),
    "ymin": (0, -1, 0),
    "ymax": (0, 1, 0),
}
FACE = {"xmin": (x, 0), "xmax": (x, 1), "ymin": (y, 0), "ymax": (y, 1)}


def heat_case(u, kappa, *, t_end, dirichlet=(), neumann=(), robin=(), domain="unit_square",
              n=41):  # fmt: skip
    """Case with exact solution ``u``: ``dirichlet`` = [(tags, g)], ``neumann`` = [tag],
    ``robin`` = [(tag, alpha)] (straight sides only)."""
    dim = 3 if domain == "unit_cube" else 2
    X = (x, y, z)[:dim]
    grad = [sp.diff(u, c) for c in X]
    f = sp.diff(u, t) - sum(sp.diff(kappa * g, c) for g, c in zip(grad, X, strict=True))

    def flux(tag):
        return kappa * sum(g * nc for g, nc in zip(grad, NORMALS[tag][:dim], strict=True))

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(flux(tag).subs(*FACE[tag]))}
                    for tag in neumann],
        "robin": [{"boundary": [tag], "alpha": alpha,
                   "value": str((flux(tag) + alpha * u).subs(*FACE[tag]))}
                  for tag, alpha in robin],
    }  # fmt: skip
    spec = H.case_spec("heat", domain=domain, params={"kappa": str(kappa)},
                       forcing={"f": str(f)}, bc=bc, output={"field": "u"},
                       time={"t0": 0.0, "t_end": t_end}, ic={"u": str(u.subs(t, 0))},
                       n=n)  # fmt: skip
    return spec, {"u": str(u)}


def run(spec, exact, settings, tmp_path, label):
    records = H.run_solver("heat", spec, settings, tmp_path)
    errors = [H.grid_error(spec, r["arrays"], exact) for r in records]
    for s, e, r in zip(settings, errors, records, strict=True):
        print(f"\n[fd heat] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s", end="")
    print()
    return errors, records


def test_spatial_convergence_p1_p2_unit_square(tmp_path):
    """Linear in t (every scheme and start-up is exact in time), so the error is spatial:
    observed order >= p + 1 - 0.3 for p = 1, 2."""
    g = sp.exp(x / 2) * sp.cos(y) * (1 + t / 2)
    u = g + (1 + t) * sp.sin(sp.pi * x) * sp.sin(2 * sp.pi * y) * (1 + x)
    spec, exact = heat_case(u, 1 + x * y / 2, t_end=0.5, dirichlet=[(["all"], g)])
    settings = [{"degree": p, "resolution": r, "dt": 0.125} for p in (1, 2) for r in (8, 16, 32)]
    errors, _ = run(spec, exact, settings, tmp_path, "space")
    for p, errs in ((1, errors[:3]), (2, errors[3:])):
        orders = H.observed_orders(errs)
        print(f"[fd heat] P{p} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)


SCHEMES = [
    ("backward_euler", 1.0, {}),
    ("crank_nicolson", 2.0, {}),
    ("bdf2", 2.0, {}),
    ("bdf2", 2.0, {"bdf2_startup": "crank_nicolson"}),
]


def test_temporal_orders(tmp_path):
    """Quartic in space (exact in P4), so the error is temporal only: backward Euler
    first order; Crank-Nicolson and BDF2 (either start-up) second order."""
    g = (x**2 + y / 2 + x * y**3) * sp.cos(2 * t)
    u = g + x * (1 - x) * y * (1 - y) * (2 + sp.sin(3 * t))
    spec, exact = heat_case(u, sp.Rational(1, 2), t_end=1.0, dirichlet=[(["all"], g)])
    steps = (40, 80, 160)
    settings = [{"degree": 4, "resolution": 4, "n_steps": n, "scheme": scheme, **extra}
                for scheme, _, extra in SCHEMES for n in steps]  # fmt: skip
    errors, records = run(spec, exact, settings, tmp_path, "time")
    for i, (scheme, order, extra) in enumerate(SCHEMES):
        errs = errors[3 * i : 3 * i + 3]
        orders = H.observed_orders(errs)
        print(f"[fd heat] {scheme} {extra} orders {orders}")
        assert min(orders) >= order - 0.15, (scheme, extra, errs, orders)
        assert max(orders) <= order + 0.5, (scheme, extra, errs, orders)
    info = records[-1]["meta"]["solver_info"]
    assert info["time_steps"] == 160 and info["scheme"] == "bdf2"
    assert info["startup"] == "crank_nicolson" and info["pc_type"] == "lu"


def test_mixed_time_dependent_conditions_and_kappa(tmp_path):
    """Time-dependent Dirichlet (xmin), Neumann (ymin, ymax) and Robin (xmax) data with a
    time-dependent kappa (matrix reassembled every step); BDF2 and Crank-Nicolson."""
    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    kappa = (1 + x * y / 2) * (1 + sp.sin(t) / 2)
    spec, exact = heat_case(u, kappa, t_end=0.5, dirichlet=[(["xmin"], g.subs(x, 0))],
                            neumann=["ymin", "ymax"], robin=[("xmax", 2.0)])  # fmt: skip
    settings = [{"resolution": 16, "dt": 0.025}, {"resolution": 16, "dt": 0.025,
                                                   "scheme": "crank_nicolson"}]  # fmt: skip
    errors, records = run(spec, exact, settings, tmp_path, "mixed kappa(x,t)")
    for rec, err in zip(records, errors, strict=True):
        assert rec["meta"]["solver_info"]["matrix_reassembled_each_step"] is True
        assert err < 2e-4, errors


def test_gmsh_circle(tmp_path):
    """gmsh circle (straight-sided cells), x-dependent kappa, P2. The Dirichlet data is
    the exact solution, defined at the boundary nodes of the polygonal mesh (the midside
    nodes of boundary edges lie inside the circle), so P2 keeps its third order."""
    r2 = (x - sp.Rational(1, 2)) ** 2 + (y - sp.Rational(1, 2)) ** 2
    g = (x + y**2) * (1 + t)
    u = g + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y) * (2 - t)
    spec, exact = heat_case(u, 1 + x**2, t_end=0.4, domain="circle",
                            dirichlet=[(["boundary"], u)])  # fmt: skip
    settings = [{"degree": 2, "resolution": r, "dt": 0.1} for r in (8, 16, 32)]
    errors, records = run(spec, exact, settings, tmp_path, "circle")
    orders = H.observed_orders(errors)
    print(f"[fd heat] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4
    assert records[-1]["meta"]["solver_info"]["matrix_reassembled_each_step"] is False


def test_unit_cube(tmp_path):
    g = (x + y * z) * (1 + t)
    u = g + (1 + t) * sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = heat_case(u, 1.0, t_end=0.2, domain="unit_cube", n=17,
                            dirichlet=[(["all"], g)])  # fmt: skip
    settings = [{"degree": 2, "resolution_3d": r, "dt": 0.05} for r in (4, 8)]
    errors, _ = run(spec, exact, settings, tmp_path, "cube")
    assert errors[1] < errors[0] / 4 and errors[1] < 2e-3, errors


def test_periodic_square_is_truly_periodic(tmp_path):
    u = sp.exp(-t) * sp.sin(2 * sp.pi * x) * sp.cos(2 * sp.pi * y) + sp.Rational(1, 2)
    spec, exact = heat_case(u, 1.0, t_end=0.1, domain="periodic_square")
    spec["bc"]["periodic"] = [
        {"axis": "x", "boundary": "xmin", "partner": "xmax"},
        {"axis": "y", "boundary": "ymin", "partner": "ymax"},
    ]
    settings = [{"resolution": r, "degree": 2, "dt": 0.0025} for r in (8, 16)]
    errors, records = run(spec, exact, settings, tmp_path, "periodic")
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 4, errors
    field = records[1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10  # identical on identified sides


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on the example heat case: error in [1e-6, 1e-3]. (REFERENCE, 500 steps of
    P3 on 48 x 48 cells, takes ~15 s here and is checked by hand: error 1.5e-8.)"""
    record = next(
        json.loads(line)
        for line in EXAMPLES.read_text().splitlines()
        if json.loads(line)["id"] == "heat_unit_square_mms_001"
    )
    spec = record["case_spec"]
    exact = record["evaluation_metadata"]["manufactured_solution"]
    assert module_settings("heat", "REFERENCE")["degree"] == 3
    errors, records = run(spec, exact, [{}], tmp_path, "DEFAULTS")
    assert 1e-6 <= errors[0] <= 1e-3, errors
    info = records[0]["meta"]["solver_info"]
    assert info["scheme"] == "bdf2" and info["time_steps"] == 25


def test_unknown_scheme_fails_loudly(tmp_path):
    u = (1 + x) * (1 + t)
    spec, _ = heat_case(u, 1.0, t_end=0.1, dirichlet=[(["all"], u)])
    error = H.run_failing("heat", spec, {"resolution": 4, "scheme": "rk4"}, tmp_path / "s")
    assert "heat: unknown scheme 'rk4'" in error
