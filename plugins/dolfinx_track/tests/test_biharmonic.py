"""DOLFINx biharmonic solver: convergence of both methods, curved geometry, calibration.

Manufactured solutions u* = g + phi*w with phi vanishing on the boundary: the
Dirichlet value of u is g (not u*), the second condition is derived side by side
with sympy (laplace(u*) or du*/dn with the outward normal of each part).
Expected L2 orders: splitting ("mixed") with P_p: p + 1; C0 interior penalty with
P2: 2 (suboptimal, as known for CIP), with P3: 4.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

SOLVER = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / "biharmonic.py"

x, y = sp.symbols("x y")
SIDES = {"xmin": (x, 0, -1), "xmax": (x, 1, 1), "ymin": (y, 0, -1), "ymax": (y, 1, 1)}
NAVIER = {tag: "laplacian_u" for tag in SIDES}
CLAMPED = {tag: "normal_derivative" for tag in SIDES}
MIXED_BC = {
    "xmin": "laplacian_u",
    "xmax": "normal_derivative",
    "ymin": "normal_derivative",
    "ymax": "laplacian_u",
}


def lap(e):
    return sp.diff(e, x, 2) + sp.diff(e, y, 2)


def second_data(u, q, var, val, sign):
    data = lap(u) if q == "laplacian_u" else sign * sp.diff(u, var)
    return str(sp.simplify(data.subs(var, val)))


def square_case(kinds, *, g=None, w=None, n=41):
    """u* = g + x(1-x)y(1-y) w; u = g on all sides, the side's second condition in bc.neumann."""
    g = x**2 * y + sp.cos(x - y) if g is None else g
    w = sp.cos(x + 2 * y) + 2 if w is None else w
    u = g + x * (1 - x) * y * (1 - y) * w
    neumann = [
        {"boundary": [tag], "value": second_data(u, q, *SIDES[tag]), "quantity": q}
        for tag, q in kinds.items()
    ]
    spec = case_spec(
        "biharmonic",
        params={},
        forcing={"f": str(sp.simplify(lap(lap(u))))},
        bc={
            "dirichlet": [{"boundary": ["all"], "value": str(g), "quantity": "u"}],
            "neumann": neumann,
        },
        output={"field": "u"},
        n=n,
    )
    return spec, {"u": str(u)}


def circle_case(q):
    """Circle (center 0.5, radius 0.5); both conditions in bc.dirichlet (quantity u and q)."""
    c = sp.Rational(1, 2)
    g = x * y + sp.exp(x / 2)
    u = g + (sp.Rational(1, 4) - (x - c) ** 2 - (y - c) ** 2) * (sp.cos(x + y) + 1)
    if q == "laplacian_u":
        data = lap(u)
    else:
        data = ((x - c) * sp.diff(u, x) + (y - c) * sp.diff(u, y)) / c
    spec = case_spec(
        "biharmonic",
        domain="circle",
        params={},
        forcing={"f": str(sp.simplify(lap(lap(u))))},
        bc={
            "dirichlet": [
                {"boundary": ["boundary"], "value": str(g), "quantity": "u"},
                {"boundary": ["boundary"], "value": str(sp.simplify(data)), "quantity": q},
            ]
        },
        output={"field": "u"},
    )
    return spec, {"u": str(u)}


def errors_of(spec, exact, settings, tmp_path, label):
    recs = run_solver("biharmonic", spec, settings, tmp_path)
    errs = [grid_error(spec, r["arrays"], exact) for r in recs]
    orders = observed_orders(errs)
    shown = ", ".join(f"{e:.3e}" for e in errs)
    rates = ", ".join(f"{o:.2f}" for o in orders)
    times = ", ".join(f"{r['wall_time_sec']:.2f}" for r in recs)
    print(f"\n{label}: errors [{shown}] orders [{rates}] times [{times}]")
    return errs, orders, recs


@pytest.mark.parametrize("degree,resolutions", [(1, (8, 16, 32)), (2, (4, 8, 16))])
def test_navier_splitting_converges(tmp_path, degree, resolutions):
    spec, exact = square_case(NAVIER)
    settings = [{"resolution": r, "degree": degree} for r in resolutions]
    errs, orders, recs = errors_of(spec, exact, settings, tmp_path, f"navier mixed P{degree}")
    assert all(r["meta"]["solver_info"]["method"] == "mixed" for r in recs)  # auto choice
    assert min(orders) >= degree + 1 - 0.3
    assert errs[-1] < 1e-3


@pytest.mark.parametrize("degree,resolutions,expected", [(2, (8, 16, 32), 2), (3, (8, 16, 32), 4)])
def test_clamped_cip_converges(tmp_path, degree, resolutions, expected):
    spec, exact = square_case(CLAMPED)
    settings = [{"resolution_cip": r, "degree_cip": degree} for r in resolutions]
    errs, orders, recs = errors_of(spec, exact, settings, tmp_path, f"clamped cip P{degree}")
    assert all(r["meta"]["solver_info"]["method"] == "cip" for r in recs)  # auto choice
    assert min(orders) >= expected - 0.3
    assert errs[-1] < 1e-3


def test_cip_mixed_navier_clamped_parts_and_navier(tmp_path):
    """CIP on a boundary with Navier and clamped parts, and CIP on the pure Navier case."""
    spec, exact = square_case(MIXED_BC)
    errs, orders, _ = errors_of(
        spec, exact, [{"resolution_cip": r} for r in (8, 16)], tmp_path / "a", "mixed bc cip P3"
    )
    assert min(orders) >= 4 - 0.3 and errs[-1] < 1e-5
    spec, exact = square_case(NAVIER)
    errs, orders, recs = errors_of(
        spec,
        exact,
        [{"resolution_cip": r, "method": "cip"} for r in (8, 16)],
        tmp_path / "b",
        "navier cip P3",
    )
    assert recs[0]["meta"]["solver_info"]["method"] == "cip"
    assert min(orders) >= 4 - 0.3 and errs[-1] < 1e-5


@pytest.mark.parametrize("q,expected", [("laplacian_u", 3), ("normal_derivative", 4)])
def test_circle_geometry_degree_2(tmp_path, q, expected):
    """Curved boundary (second-order geometry): mixed P2 (Navier) / CIP P3 (clamped)."""
    spec, exact = circle_case(q)
    settings = [{"resolution": r, "resolution_cip": r, "geometry_degree": 2} for r in (8, 16)]
    errs, orders, _ = errors_of(spec, exact, settings, tmp_path, f"circle {q}")
    assert orders[0] >= expected - 0.3
    assert errs[-1] < 1e-4


def representative(q):
    """u* = x*y + s on the unit square with s = sin(pi x) sin(pi y) (Navier: u = x*y,
    laplace(u) = 0 on the boundary) or s = (sin(pi x) sin(pi y))**2 (clamped: u = x*y,
    du/dn = d(x*y)/dn side by side)."""
    s = sp.sin(sp.pi * x) * sp.sin(sp.pi * y)
    u = x * y + (s if q == "laplacian_u" else s**2)
    if q == "laplacian_u":
        second = [{"boundary": ["all"], "value": "0", "quantity": q}]
    else:
        second = [
            {"boundary": [tag], "value": second_data(u, q, *SIDES[tag]), "quantity": q}
            for tag in SIDES
        ]
    spec = case_spec(
        "biharmonic",
        params={},
        forcing={"f": str(sp.simplify(lap(lap(u))))},
        bc={"dirichlet": [{"boundary": ["all"], "value": "x*y", "quantity": "u"}, *second]},
        output={"field": "u"},
        n=65,
    )
    return spec, {"u": str(u)}


def module_dict(name):
    """A literal dict assigned at module level in the solver source (runtime-only module)."""
    tree = ast.parse(SOLVER.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not found in {SOLVER}")


@pytest.mark.parametrize("q", ["laplacian_u", "normal_derivative"])
def test_calibration_defaults_and_reference(tmp_path, q):
    defaults, reference = module_dict("DEFAULTS"), module_dict("REFERENCE")
    assert set(reference) == set(defaults)
    spec, exact = representative(q)
    errs, _, recs = errors_of(spec, exact, [{}, reference], tmp_path, f"calibration {q}")
    print(
        f"CALIBRATION biharmonic {q}: method {recs[0]['meta']['solver_info']['method']} "
        f"degree {recs[0]['meta']['solver_info']['element_degree']} error {errs[0]:.3e} "
        f"wall {recs[0]['wall_time_sec']:.2f} s; REFERENCE error {errs[1]:.3e} "
        f"wall {recs[1]['wall_time_sec']:.2f} s"
    )
    assert 1e-6 <= errs[0] <= 1e-3
    assert errs[1] <= errs[0] / 10


def test_only_one_condition_raises(tmp_path):
    spec, _ = square_case(NAVIER)
    spec["bc"]["neumann"] = []
    with pytest.raises(AssertionError, match="exactly one condition on u"):
        run_solver("biharmonic", spec, [{"resolution": 4}], tmp_path / "a")
    spec, _ = square_case(CLAMPED)
    with pytest.raises(AssertionError, match="needs laplacian_u on the whole boundary"):
        run_solver("biharmonic", spec, [{"resolution": 4, "method": "mixed"}], tmp_path / "b")
