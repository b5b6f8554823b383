"""Firedrake biharmonic solver (laplace(laplace(u)) = f): manufactured-solution tests.

Manufactured solutions u* = g + phi*w with phi vanishing on the boundary: the Dirichlet
value of u is g, the second condition is derived side by side with sympy (laplace(u*) or
du*/dn with the outward normal of each part). Expected L2 orders: splitting ("mixed")
with P_p: p + 1; C0 interior penalty with P2: 2 (suboptimal, as known for CIP), with
P3: 4.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_biharmonic.py
"""

from __future__ import annotations

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

FAMILY = "biharmonic"
x, y, z = sp.symbols("x y z")
SIDES = {"xmin": (x, 0, -1), "xmax": (x, 1, 1), "ymin": (y, 0, -1), "ymax": (y, 1, 1)}
NAVIER = {tag: "laplacian_u" for tag in SIDES}
CLAMPED = {tag: "normal_derivative" for tag in SIDES}
MIXED_BC = {"xmin": "laplacian_u", "xmax": "normal_derivative",
            "ymin": "normal_derivative", "ymax": "laplacian_u"}  # fmt: skip


def lap(e, X=(x, y)):
    return sum(sp.diff(e, c, 2) for c in X)


def second_data(u, q, var, val, sign):
    data = lap(u) if q == "laplacian_u" else sign * sp.diff(u, var)
    return str(sp.simplify(data.subs(var, val)))


def square_case(kinds):
    """u* = g + x(1-x)y(1-y) w; u = g on all sides, each side's second condition in
    bc.neumann."""
    g = x**2 * y + sp.cos(x - y)
    u = g + x * (1 - x) * y * (1 - y) * (sp.cos(x + 2 * y) + 2)
    neumann = [{"boundary": [tag], "value": second_data(u, q, *SIDES[tag]), "quantity": q}
               for tag, q in kinds.items()]  # fmt: skip
    bc = {"dirichlet": [{"boundary": ["all"], "value": str(g), "quantity": "u"}],
          "neumann": neumann}  # fmt: skip
    spec = H.case_spec(FAMILY, params={}, forcing={"f": str(sp.simplify(lap(lap(u))))}, bc=bc,
                       output={"field": "u"})  # fmt: skip
    return spec, {"u": str(u)}


def circle_case(q):
    """gmsh circle (center 0.5, radius 0.5); both conditions in bc.dirichlet."""
    c = sp.Rational(1, 2)
    g = x * y + sp.exp(x / 2)
    u = g + (sp.Rational(1, 4) - (x - c) ** 2 - (y - c) ** 2) * (sp.cos(x + y) + 1)
    if q == "laplacian_u":
        data = lap(u)
    else:
        data = ((x - c) * sp.diff(u, x) + (y - c) * sp.diff(u, y)) / c
    bc = {"dirichlet": [
        {"boundary": ["boundary"], "value": str(g), "quantity": "u"},
        {"boundary": ["boundary"], "value": str(sp.simplify(data)), "quantity": q},
    ]}  # fmt: skip
    spec = H.case_spec(FAMILY, domain="circle", params={},
                       forcing={"f": str(sp.simplify(lap(lap(u))))}, bc=bc,
                       output={"field": "u"})  # fmt: skip
    return spec, {"u": str(u)}


def run(spec, exact, settings, tmp_path):
    recs = H.run_solver(FAMILY, spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], exact) for r in recs], recs


def report(label, errs):
    orders = H.observed_orders(errs)
    shown = ", ".join(f"{e:.3e}" for e in errs)
    rates = [round(o, 2) for o in orders]
    print(f"\nfiredrake biharmonic {label}: errors [{shown}] orders {rates}")
    return orders


def test_navier_splitting_p1_p2_and_cip(tmp_path):
    spec, exact = square_case(NAVIER)
    settings = [{"resolution": r, "degree": 1} for r in (8, 16, 32)]
    settings += [{"resolution": r, "degree": 2} for r in (4, 8, 16)]
    settings += [{"resolution_cip": r, "method": "cip"} for r in (8, 16)]
    errs, recs = run(spec, exact, settings, tmp_path)
    methods = [r["meta"]["solver_info"]["method"] for r in recs]
    assert methods == ["mixed"] * 6 + ["cip"] * 2  # auto: Navier only -> mixed
    for k, p in enumerate((1, 2)):
        orders = report(f"navier mixed P{p}", errs[3 * k : 3 * k + 3])
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)
    assert errs[5] < 1e-3
    orders = report("navier cip P3", errs[6:])
    assert min(orders) >= 4 - 0.3 and errs[-1] < 1e-5


def test_clamped_cip_p2_p3(tmp_path):
    spec, exact = square_case(CLAMPED)
    settings = [{"resolution_cip": r, "degree_cip": 2} for r in (8, 16, 32)]
    settings += [{"resolution_cip": r} for r in (8, 16)]  # default degree_cip 3
    errs, recs = run(spec, exact, settings, tmp_path)
    assert all(r["meta"]["solver_info"]["method"] == "cip" for r in recs)  # auto choice
    orders = report("clamped cip P2", errs[:3])
    assert min(orders) >= 2 - 0.3 and errs[2] < 1e-4, (errs, orders)
    orders = report("clamped cip P3", errs[3:])
    assert min(orders) >= 4 - 0.3 and errs[4] < 1e-6, (errs, orders)


def test_cip_with_navier_and_clamped_parts(tmp_path):
    spec, exact = square_case(MIXED_BC)
    errs, recs = run(spec, exact, [{"resolution_cip": r} for r in (8, 16)], tmp_path)
    assert recs[0]["meta"]["solver_info"]["method"] == "cip"
    orders = report("navier+clamped parts cip P3", errs)
    assert min(orders) >= 4 - 0.3 and errs[-1] < 1e-5


@pytest.mark.parametrize("q", ["laplacian_u", "normal_derivative"])
def test_gmsh_circle(tmp_path, q):
    """Curved boundary (second-order cells on the exact circle): mixed P2 (Navier) /
    CIP P3 (clamped) keep their orders (measured 2.97 and 2.68 from 8 to 16 cells)."""
    spec, exact = circle_case(q)
    settings = [{"resolution": r, "resolution_cip": r} for r in (8, 16)]
    errs, _ = run(spec, exact, settings, tmp_path)
    orders = report(f"circle {q}", errs)
    assert min(orders) >= 2.4 and errs[-1] < 1e-4, (errs, orders)


def test_unit_cube_navier_splitting(tmp_path):
    X = (x, y, z)
    g = x * y + z**2
    u = g + x * (1 - x) * y * (1 - y) * z * (1 - z) * (sp.exp(x) + 1)
    bc = {"dirichlet": [{"boundary": ["all"], "value": str(g), "quantity": "u"}],
          "neumann": [{"boundary": ["all"], "value": str(sp.simplify(lap(u, X))),
                       "quantity": "laplacian_u"}]}  # fmt: skip
    spec = H.case_spec(FAMILY, domain="unit_cube", params={},
                       forcing={"f": str(sp.simplify(lap(lap(u, X), X)))}, bc=bc,
                       output={"field": "u"}, n=15)  # fmt: skip
    errs, recs = run(spec, {"u": str(u)}, [{"resolution_3d": r} for r in (4, 8)], tmp_path)
    report("unit cube navier mixed P2", errs)
    assert recs[0]["meta"]["solver_info"]["method"] == "mixed"
    assert errs[1] < errs[0] / 5 and errs[1] < 1e-4, errs


def test_missing_or_unsupported_conditions_fail_loudly(tmp_path):
    spec, _ = square_case(NAVIER)
    spec["bc"]["neumann"] = spec["bc"]["neumann"][:3]  # ymax has no second condition
    error = H.run_failing(FAMILY, spec, {"resolution": 4}, tmp_path / "a")
    assert "exactly one condition on u" in error
    assert "boundary facets without laplacian_u or normal_derivative" in error
    spec, _ = square_case(CLAMPED)
    error = H.run_failing(FAMILY, spec, {"resolution": 4, "method": "mixed"}, tmp_path / "b")
    assert "needs laplacian_u on the whole boundary" in error
