"""Firedrake linear-elasticity solver (-div sigma(u) = f): manufactured-solution tests.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_linear_elasticity.py
"""

from __future__ import annotations

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

FAMILY = "linear_elasticity"
x, y, z = sp.symbols("x y z")
XY, XYZ = (x, y), (x, y, z)


def lame(params):
    """(mu, lam) of the law the case states (plane stress: the effective lam)."""
    if "lambda" in params:
        lam, mu = sp.nsimplify(params["lambda"]), sp.nsimplify(params["mu"])
    else:
        young = sp.nsimplify(params.get("E", params.get("young_modulus")))
        nu = sp.nsimplify(params.get("nu", params.get("poisson_ratio")))
        mu = young / (2 * (1 + nu))
        lam = young * nu / ((1 + nu) * (1 - 2 * nu))
    if params["model"] == "plane_stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    return mu, lam


def stress(u, params, X):
    mu, lam = lame(params)
    d = len(X)
    grad = sp.Matrix(d, d, lambda i, j: sp.diff(u[i], X[j]))
    eps = (grad + grad.T) / 2
    return 2 * mu * eps + lam * eps.trace() * sp.eye(d)


def body_force(u, params, X):
    s = stress(u, params, X)
    return [str(-sum(sp.diff(s[i, j], X[j]) for j in range(len(X)))) for i in range(len(X))]


def traction(u, params, X, normal):
    s = stress(u, params, X)
    return [str(sum(s[i, j] * normal[j] for j in range(len(X)))) for i in range(len(X))]


def strs(exprs):
    return [str(e) for e in exprs]


def exact_of(u, names=("u_x", "u_y", "u_z")):
    return {name: str(c) for name, c in zip(names, u, strict=False)}


def errors_of(spec, settings, exact, tmp_path):
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], exact) for r in records], records


def report(label, errs):
    orders = H.observed_orders(errs) if len(errs) > 1 else []
    shown = ", ".join(f"{e:.3e}" for e in errs)
    rates = [round(o, 2) for o in orders]
    print(f"\nfiredrake elasticity {label}: errors [{shown}] orders {rates}")
    return orders


# unit square: linear Dirichlet data g plus a bubble part vanishing on the boundary
BUBBLE = x * y * (1 - x) * (1 - y)
G2 = [x * y / 10, x / 20 - y**2 / 20]
U2 = [G2[0] + BUBBLE * sp.sin(sp.pi * x), G2[1] + BUBBLE * sp.cos(sp.pi * y)]
OUT2 = {"field": "u", "components": ["u_x", "u_y"]}


def square_case(params):
    bc = {"dirichlet": [{"boundary": ["all"], "value": strs(G2), "quantity": "displacement"}]}
    return H.case_spec(FAMILY, params=params, forcing={"f": body_force(U2, params, XY)}, bc=bc,
                       output=OUT2)  # fmt: skip


def test_plane_strain_p1_p2_orders(tmp_path):
    spec = square_case({"lambda": 1.5, "mu": 0.75, "model": "plane_strain"})
    # P2 meshes chosen so that the P2 nodes do not coincide with the grid
    runs = {1: (8, 16, 32), 2: (6, 12, 24)}
    settings = [{"resolution": r, "degree": p} for p, rs in runs.items() for r in rs]
    errs, recs = errors_of(spec, settings, exact_of(U2), tmp_path)
    for k, p in enumerate(runs):
        orders = report(f"plane strain P{p}", errs[3 * k : 3 * k + 3])
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)
    assert errs[-1] < 1e-4
    assert all(r["meta"]["solver_info"]["formulation"] == "displacement" for r in recs)


def test_plane_stress_p2(tmp_path):
    params = {"E": "2 + x*y/2", "nu": 0.35, "model": "plane_stress"}  # E: an expression
    spec = square_case(params)
    settings = [{"resolution": r} for r in (6, 12, 24)]
    errs, _ = errors_of(spec, settings, exact_of(U2), tmp_path)
    orders = report("plane stress P2", errs)
    assert min(orders) >= 2.7 and errs[-1] < 1e-4
    # the plane-strain law is a different problem: its lam differs noticeably
    mu_s, lam_s = lame({**params, "model": "plane_strain"})
    mu_p, lam_p = lame(params)
    assert mu_s == mu_p and abs(float((lam_s - lam_p).subs({x: 0, y: 0}))) > 0.3


def test_nearly_incompressible_mixed_does_not_lock(tmp_path):
    """nu = 0.4999: u = g + curl(psi) + grad(phi) / lam (lam div u = O(1)); Dirichlet on
    xmin/ymin/ymax, traction on xmax. auto -> mixed P2-P1; the displacement form locks."""
    params = {"E": 1.0, "nu": 0.4999, "model": "plane_strain"}
    _mu, lam = lame(params)
    g = [y / 5 + x / 10, x / 4 - y / 10]
    b = (x * (1 - x) * y * (1 - y)) ** 2
    psi = 4 * b * sp.sin(sp.pi * x + 1)
    phi = 10 * b * sp.cos(sp.pi * y)
    u = [g[0] + sp.diff(psi, y) + sp.diff(phi, x) / lam,
         g[1] - sp.diff(psi, x) + sp.diff(phi, y) / lam]  # fmt: skip
    bc = {
        "dirichlet": [{"boundary": ["xmin", "ymin", "ymax"], "value": strs(g), "quantity": "u"}],
        "neumann": [{"boundary": ["xmax"], "value": traction(u, params, XY, (1, 0)),
                     "quantity": "traction"}],
    }  # fmt: skip
    spec = H.case_spec(FAMILY, params=params, forcing={"f": body_force(u, params, XY)}, bc=bc,
                       output=OUT2)  # fmt: skip
    fieldsplit = {
        "ksp_type": "minres", "ksp_rtol": 1e-12, "pc_type": "fieldsplit",
        "pc_fieldsplit_type": "additive",
        "fieldsplit_u_ksp_type": "preonly", "fieldsplit_u_pc_type": "gamg",
        "fieldsplit_p_ksp_type": "preonly", "fieldsplit_p_pc_type": "jacobi",
    }  # fmt: skip
    settings = [{"resolution": r} for r in (6, 12, 24)]
    settings += [{"resolution": 24, "formulation": "displacement"},
                 {"resolution": 12, "solver_parameters_mixed": fieldsplit}]  # fmt: skip
    errs, recs = errors_of(spec, settings, exact_of(u), tmp_path)
    mixed = report("nu=0.4999 mixed P2-P1", errs[:3])
    report("nu=0.4999 displacement P2 (24), mixed MINRES+fieldsplit (12)", errs[3:])
    kinds = [r["meta"]["solver_info"]["formulation"] for r in recs]
    assert kinds == ["mixed"] * 3 + ["displacement", "mixed"]
    assert min(mixed) >= 2.7 and errs[2] < 1e-4
    assert errs[3] > 5 * errs[2]  # locking
    info = recs[4]["meta"]["solver_info"]
    assert info["pc_type"] == "fieldsplit" and info["linear_iterations"] > 0
    assert abs(errs[4] - errs[1]) < 1e-4 * errs[1]


def test_annulus_dirichlet_and_traction(tmp_path):
    """gmsh annulus: displacement on the inner circle, traction with n = (x, y) / r on the
    outer circle (young_modulus/poisson_ratio); also through the mixed formulation."""
    params = {"young_modulus": 1.0, "poisson_ratio": 0.25, "model": "plane_strain"}
    r2 = x**2 + y**2
    g = [sp.Rational(1, 10) * x - y / 5, x * y / 10]
    u = [g[0] + (r2 - sp.Rational(1, 4)) * sp.sin(x + 2 * y) / 5,
         g[1] + (r2 - sp.Rational(1, 4)) * sp.cos(2 * x - y) / 5]  # fmt: skip
    normal = (x / sp.sqrt(r2), y / sp.sqrt(r2))
    bc = {
        "dirichlet": [{"boundary": ["inner"], "value": strs(g), "quantity": None}],
        "neumann": [{"boundary": ["outer"], "value": traction(u, params, XY, normal),
                     "quantity": None}],
    }  # fmt: skip
    spec = H.case_spec(FAMILY, domain="annulus", params=params,
                       forcing={"f": body_force(u, params, XY)}, bc=bc, output=OUT2)  # fmt: skip
    settings = [{"resolution": r} for r in (8, 16, 32)]
    settings.append({"resolution": 16, "formulation": "mixed"})
    errs, _ = errors_of(spec, settings, exact_of(u), tmp_path)
    orders = report("annulus P2 (curved cells)", errs[:3])
    report("annulus mixed P2-P1 (16)", errs[3:])
    # curved cells: the traction acts on the exact circle, so P2 keeps order ~3
    assert min(orders) >= 2.6 and errs[2] < 1e-4, (errs, orders)
    assert errs[3] < 2 * errs[1]  # the mixed form solves the same problem


def test_traction_and_traction_free_magnitude(tmp_path):
    """Displacement on xmin; traction on xmax and ymin; ymax is unnamed (traction free):
    u = rigid motion + x (1 - y)^2 w has zero stress on y = 1. Output: the magnitude."""
    params = {"lambda": 2.0, "mu": 1.0, "model": "plane_strain"}
    rigid = [sp.Rational(1, 10) - y / 5, sp.Rational(1, 20) + x / 5]
    w = [sp.sin(sp.pi * x) + y, sp.cos(x * y)]
    u = [rigid[i] + x * (1 - y) ** 2 * w[i] / 2 for i in range(2)]
    bc = {
        "dirichlet": [{"boundary": ["xmin"], "value": strs(rigid), "quantity": "displacement"}],
        "neumann": [
            {"boundary": ["xmax"], "value": traction(u, params, XY, (1, 0)),
             "quantity": "traction"},
            {"boundary": ["ymin"], "value": traction(u, params, XY, (0, -1)), "quantity": "u"},
        ],
    }  # fmt: skip
    spec = H.case_spec(FAMILY, params=params, forcing={"f": body_force(u, params, XY)}, bc=bc,
                       output={"field": "displacement_magnitude"})  # fmt: skip
    magnitude = sp.sqrt(u[0] ** 2 + u[1] ** 2)
    errs, _ = errors_of(spec, [{"resolution": r} for r in (6, 12, 24)],
                        {"displacement_magnitude": str(magnitude)}, tmp_path)  # fmt: skip
    orders = report("traction + traction-free, magnitude", errs)
    assert min(orders) >= 2.7 and errs[-1] < 1e-4


def test_unit_cube_3d_direct_and_gamg(tmp_path):
    params = {"E": 1.0, "nu": 0.3, "model": "3d"}
    g = [x * y / 10, y * z / 10 - x / 20, z / 10]
    b = x * y * z * (1 - x) * (1 - y) * (1 - z)
    u = [g[0] + b * sp.sin(sp.pi * x), g[1] + b * sp.cos(y), g[2] + 2 * b]
    bc = {
        "dirichlet": [{"boundary": ["xmin", "xmax", "ymin", "ymax", "zmin"], "value": strs(g)}],
        "neumann": [{"boundary": ["zmax"], "value": traction(u, params, XYZ, (0, 0, 1)),
                     "quantity": "traction"}],
    }  # fmt: skip
    spec = H.case_spec(FAMILY, domain="unit_cube", params=params,
                       forcing={"f": body_force(u, params, XYZ)}, bc=bc,
                       output={"field": "u", "components": ["ux", "uy", "uz"]}, n=17)  # fmt: skip
    gamg = {"ksp_type": "cg", "ksp_rtol": 1e-12, "pc_type": "gamg",
            "mg_levels_ksp_type": "chebyshev", "mg_levels_pc_type": "jacobi"}  # fmt: skip
    settings = [{"resolution_3d": r} for r in (3, 6)]
    settings.append({"resolution_3d": 6, "solver_parameters_3d": gamg})
    errs, recs = errors_of(spec, settings, exact_of(u, ("ux", "uy", "uz")), tmp_path)
    orders = report("unit cube P2 (direct, direct, CG+GAMG)", errs)
    assert orders[0] >= 2.5 and errs[1] < 2e-3
    info = recs[2]["meta"]["solver_info"]
    assert info["pc_type"] == "gamg" and info["linear_iterations"] > 0
    assert abs(errs[2] - errs[1]) < 1e-3 * errs[1]


def test_unsupported_inputs_fail_loudly(tmp_path):
    spec = square_case({"E": 1.0, "nu": 0.3, "model": "plane_strain"})
    spec["bc"]["robin"] = [{"boundary": ["xmax"], "alpha": 1.0, "value": ["0", "0"]}]
    error = H.run_failing(FAMILY, spec, {"resolution": 4}, tmp_path / "robin")
    assert "Robin conditions are not defined" in error
    spec = square_case({"E": 1.0, "nu": 0.5, "model": "plane_strain"})
    error = H.run_failing(FAMILY, spec, {"resolution": 4}, tmp_path / "nu")
    assert "must lie in (-1, 0.5)" in error
