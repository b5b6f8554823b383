"""Heat family solver of the DOLFINx track (``solvers/heat.py``), run in the DOLFINx runtime.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part, the Dirichlet value being g (never the exact solution itself), and the
forcing f = du*/dt - div(kappa grad u*), Neumann data kappa du*/dn and Robin data
kappa du*/dn + alpha u* derived from u*.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

x, y, z, t = sp.symbols("x y z t")
EXAMPLES = Path(__file__).resolve().parents[3] / "cases" / "examples.jsonl"

# outward unit normals of the boundary parts used below (valid on the part itself)
NORMALS = {
    "xmin": (-1, 0, 0),
    "xmax": (1, 0, 0),
    "ymin": (0, -1, 0),
    "ymax": (0, 1, 0),
    "zmin": (0, 0, -1),
    "zmax": (0, 0, 1),
    "boundary": (2 * (x - sp.Rational(1, 2)), 2 * (y - sp.Rational(1, 2)), 0),  # circle r=1/2
}
FACE = {
    "xmin": (x, 0),
    "xmax": (x, 1),
    "ymin": (y, 0),
    "ymax": (y, 1),
    "zmin": (z, 0),
    "zmax": (z, 1),
}


def _on(expr, tag):
    """Restrict ``expr`` to a straight boundary part (substitute the fixed coordinate)."""
    return expr.subs(*FACE[tag]) if tag in FACE else expr


def heat_case(
    u, kappa, *, t_end, dirichlet=(), neumann=(), robin=(), domain="unit_square", n=41, t0=0.0
):
    """Case for the exact solution ``u`` (sympy): ``dirichlet`` = [(tags, g)] with g = u on
    those tags, ``neumann`` = [tag], ``robin`` = [(tag, alpha)]."""
    dim = 3 if domain == "unit_cube" else 2
    X = (x, y, z)[:dim]
    grad = [sp.diff(u, c) for c in X]
    f = sp.diff(u, t) - sum(sp.diff(kappa * g, c) for g, c in zip(grad, X, strict=True))

    def flux(tag):
        return kappa * sum(g * nc for g, nc in zip(grad, NORMALS[tag][:dim], strict=True))

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(_on(flux(tag), tag))} for tag in neumann],
        "robin": [
            {"boundary": [tag], "alpha": alpha, "value": str(_on(flux(tag) + alpha * u, tag))}
            for tag, alpha in robin
        ],
    }
    spec = case_spec(
        "heat",
        domain=domain,
        params={"kappa": str(kappa)},
        forcing={"f": str(f)},
        bc=bc,
        output={"field": "u"},
        time={"t0": t0, "t_end": t_end},
        ic={"u": str(u.subs(t, t0))},
        n=n,
    )
    return spec, {"u": str(u)}


def _module_settings(family):
    """DEFAULTS and REFERENCE of a solver module, read without importing dolfinx."""
    path = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / f"{family}.py"
    namespace: dict = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and node.targets[0].id in ("DEFAULTS", "REFERENCE"):
            code = compile(ast.Expression(node.value), str(path), "eval")
            namespace[node.targets[0].id] = eval(code, {"__builtins__": {}}, namespace)
    return namespace


def _errors(spec, exact, records):
    return [grid_error(spec, r["arrays"], exact) for r in records]


def _report(label, settings, errors, records):
    for s, e, r in zip(settings, errors, records, strict=True):
        print(f"[heat] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s")


# ----------------------------------------------------------------------------- space


def test_spatial_convergence_unit_square(tmp_path):
    """Linear in t (integrated exactly by BDF2 and its Crank-Nicolson start step), so the
    error is spatial: observed L2(grid) order >= p + 1 - 0.3 for p = 1, 2."""
    g = sp.exp(x / 2) * sp.cos(y) * (1 + t / 2)
    u = g + (1 + t) * sp.sin(sp.pi * x) * sp.sin(2 * sp.pi * y) * (1 + x)
    spec, exact = heat_case(u, 1 + x * y / 2, t_end=0.5, dirichlet=[(["all"], g)])
    settings = [{"degree": p, "resolution": r, "dt": 0.125} for p in (1, 2) for r in (8, 16, 32)]
    records = run_solver("heat", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("space", settings, errors, records)
    for p, errs in ((1, errors[:3]), (2, errors[3:])):
        orders = observed_orders(errs)
        print(f"[heat] P{p} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)


def test_circle_curved_geometry(tmp_path):
    """Circle with second-order geometry, P2: third-order convergence."""
    r2 = (x - sp.Rational(1, 2)) ** 2 + (y - sp.Rational(1, 2)) ** 2
    g = (x + y**2) * (1 + t)
    u = g + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y) * (2 - t)
    spec, exact = heat_case(u, 1 + x**2, t_end=0.4, domain="circle", dirichlet=[(["boundary"], g)])
    settings = [
        {"degree": 2, "geometry_degree": 2, "resolution": r, "dt": 0.1} for r in (8, 16, 32)
    ]
    records = run_solver("heat", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("circle", settings, errors, records)
    orders = observed_orders(errors)
    print(f"[heat] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4


def test_unit_cube(tmp_path):
    g = (x + y * z) * (1 + t)
    u = g + (1 + t) * sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = heat_case(u, 1.0, t_end=0.2, domain="unit_cube", n=17, dirichlet=[(["all"], g)])
    settings = [{"degree": 2, "resolution_3d": r, "dt": 0.05} for r in (4, 8)]
    records = run_solver("heat", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("cube", settings, errors, records)
    assert errors[1] < errors[0] / 4
    assert errors[1] < 2e-3


# ------------------------------------------------------------------------------ time


SCHEMES = [
    ("backward_euler", 1.0, {}),
    ("crank_nicolson", 2.0, {}),
    ("bdf2", 2.0, {}),
    ("bdf2", 2.0, {"bdf2_startup": "crank_nicolson"}),
]


def test_temporal_order(tmp_path):
    """Solution of degree 4 in space (exact in P4), so the error is temporal only:
    backward Euler first order; Crank-Nicolson and BDF2 (either start-up) second order."""
    g = (x**2 + y / 2 + x * y**3) * sp.cos(2 * t)
    u = g + x * (1 - x) * y * (1 - y) * (2 + sp.sin(3 * t))
    spec, exact = heat_case(u, sp.Rational(1, 2), t_end=1.0, dirichlet=[(["all"], g)])
    steps = (40, 80, 160)
    settings = [
        {"degree": 4, "resolution": 4, "n_steps": n, "scheme": scheme, **extra}
        for scheme, _, extra in SCHEMES
        for n in steps
    ]
    records = run_solver("heat", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("time", settings, errors, records)
    for i, (scheme, order, extra) in enumerate(SCHEMES):
        errs = errors[3 * i : 3 * i + 3]
        orders = observed_orders(errs)
        print(f"[heat] {scheme} {extra} orders {orders}")
        assert min(orders) >= order - 0.15, (scheme, extra, errs, orders)
        assert max(orders) <= order + 0.5, (scheme, extra, errs, orders)


# ------------------------------------------------------------------- boundary conditions


def test_mixed_time_dependent_conditions(tmp_path):
    """Time-dependent Dirichlet (xmin), Neumann (ymin, ymax) and Robin (xmax) data, and a
    time-dependent kappa (matrix reassembled every step)."""
    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    cases = {
        "kappa(x)": 1 + x * y / 2,
        "kappa(x,t)": (1 + x * y / 2) * (1 + sp.sin(t) / 2),
    }
    for label, kappa in cases.items():
        spec, exact = heat_case(
            u,
            kappa,
            t_end=0.5,
            dirichlet=[(["xmin"], _on(g, "xmin"))],
            neumann=["ymin", "ymax"],
            robin=[("xmax", 2.0)],
        )
        settings = [
            {"resolution": 16, "dt": 0.01},
            {"resolution": 16, "dt": 0.01, "scheme": "crank_nicolson"},
        ]
        records = run_solver("heat", spec, settings, tmp_path / label.replace(",", "_"))
        errors = _errors(spec, exact, records)
        _report(f"mixed {label}", settings, errors, records)
        for rec, err in zip(records, errors, strict=True):
            info = rec["meta"]["solver_info"]
            assert info["matrix_reassembled_each_step"] is (label == "kappa(x,t)")
            assert err < 2e-4, (label, err)


# -------------------------------------------------------------------------- calibration


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on the example heat case: error in [1e-6, 1e-3]; REFERENCE >= 10x better."""
    reference = _module_settings("heat")["REFERENCE"]
    record = next(
        json.loads(line)
        for line in EXAMPLES.read_text().splitlines()
        if json.loads(line)["id"] == "heat_unit_square_mms_001"
    )
    spec = record["case_spec"]
    exact = record["evaluation_metadata"]["manufactured_solution"]
    records = run_solver("heat", spec, [{}, {}, reference], tmp_path)
    errors = _errors(spec, exact, records)
    _report(
        "calibration (cold, warm) / reference",
        ["DEFAULTS", "DEFAULTS", "REFERENCE"],
        errors,
        records,
    )
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10


# ----------------------------------------------------------------------------- failures


def test_failures(tmp_path):
    u = (1 + x) * (1 + t)
    spec, _ = heat_case(u, 1.0, t_end=0.1, dirichlet=[(["all"], u)])
    no_ic = {**spec, "ic": None}
    with pytest.raises(AssertionError, match=r"ic\.u"):
        run_solver("heat", no_ic, [{"resolution": 4}], tmp_path / "ic")
    with pytest.raises(AssertionError, match="unknown scheme"):
        run_solver("heat", spec, [{"resolution": 4, "scheme": "rk4"}], tmp_path / "scheme")


def test_periodic_square_is_truly_periodic(tmp_path):
    u = sp.exp(-t) * sp.sin(2 * sp.pi * x) * sp.cos(2 * sp.pi * y) + sp.Rational(1, 2)
    spec, exact = heat_case(u, 1.0, t_end=0.1, domain="periodic_square")
    spec["bc"]["periodic"] = [
        {"axis": "x", "boundary": "xmin", "partner": "xmax"},
        {"axis": "y", "boundary": "ymin", "partner": "ymax"},
    ]
    records = run_solver(
        "heat",
        spec,
        [{"resolution": r, "degree": 2, "dt": 0.0025} for r in (8, 16)],
        tmp_path / "periodic",
    )
    errors = _errors(spec, exact, records)
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 4
    field = records[1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10  # identical on identified sides
