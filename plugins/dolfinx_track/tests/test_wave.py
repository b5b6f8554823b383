"""Wave family solver of the DOLFINx track (``solvers/wave.py``), run in the DOLFINx runtime.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part, the Dirichlet value being g (never the exact solution itself), the
forcing f = d2u*/dt2 - div(c^2 grad u*), Neumann data c^2 du*/dn and Robin data
c^2 du*/dn + alpha u* derived from u*, and the initial data u*(t0), du*/dt(t0).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

x, y, t = sp.symbols("x y t")
PI = sp.pi

# outward unit normals of the boundary parts used below (valid on the part itself)
NORMALS = {
    "xmin": (-1, 0),
    "xmax": (1, 0),
    "ymin": (0, -1),
    "ymax": (0, 1),
    "boundary": (2 * (x - sp.Rational(1, 2)), 2 * (y - sp.Rational(1, 2))),  # circle r=1/2
}
FACE = {"xmin": (x, 0), "xmax": (x, 1), "ymin": (y, 0), "ymax": (y, 1)}


def _on(expr, tag):
    """Restrict ``expr`` to a straight boundary part (substitute the fixed coordinate)."""
    return expr.subs(*FACE[tag]) if tag in FACE else expr


def wave_case(
    u, c, *, t_end, dirichlet=(), neumann=(), robin=(), domain="unit_square", n=41, t0=0.0
):
    """Case for the exact solution ``u`` (sympy): ``dirichlet`` = [(tags, g)] with g = u on
    those tags, ``neumann`` = [tag], ``robin`` = [(tag, alpha)]."""
    grad = [sp.diff(u, x), sp.diff(u, y)]
    f = sp.diff(u, t, 2) - sp.diff(c**2 * grad[0], x) - sp.diff(c**2 * grad[1], y)

    def flux(tag):
        return c**2 * sum(g * nc for g, nc in zip(grad, NORMALS[tag], strict=True))

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(_on(flux(tag), tag))} for tag in neumann],
        "robin": [
            {"boundary": [tag], "alpha": alpha, "value": str(_on(flux(tag) + alpha * u, tag))}
            for tag, alpha in robin
        ],
    }
    ic = {"u": str(u.subs(t, t0)), "u_t": str(sp.diff(u, t).subs(t, t0))}
    spec = case_spec(
        "wave",
        domain=domain,
        params={"c": str(c)},
        forcing={"f": str(f)},
        bc=bc,
        output={"field": "u"},
        time={"t0": t0, "t_end": t_end},
        ic=ic,
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
        print(f"[wave] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s")


# standing wave plus time-dependent boundary data: the representative smooth case
G_STD = (x + y**2) * sp.cos(t)
U_STD = G_STD + sp.sin(PI * x) * sp.sin(PI * y) * sp.cos(sp.sqrt(2) * PI * t)


# ----------------------------------------------------------------------------- space


def test_spatial_convergence_unit_square(tmp_path):
    """Standing wave; Richardson-extrapolated Newmark (fourth order in time) makes the time
    error negligible: observed L2(grid) order >= p + 1 - 0.3 for p = 1, 2."""
    spec, exact = wave_case(U_STD, 1, t_end=0.5, dirichlet=[(["all"], G_STD)])
    settings = [
        {"degree": p, "resolution": r, "dt": 0.01, "richardson": True}
        for p in (1, 2)
        for r in (8, 16, 32)
    ]
    records = run_solver("wave", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("space", settings, errors, records)
    for p, errs in ((1, errors[:3]), (2, errors[3:])):
        orders = observed_orders(errs)
        print(f"[wave] P{p} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)


def test_circle_curved_geometry(tmp_path):
    """Circle with second-order geometry, P2, variable c: third-order convergence."""
    r2 = (x - sp.Rational(1, 2)) ** 2 + (y - sp.Rational(1, 2)) ** 2
    g = (x + y**2) * sp.cos(2 * t)
    u = g + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y) * sp.sin(3 * t + 1)
    spec, exact = wave_case(u, 1 + x / 2, t_end=0.5, domain="circle", dirichlet=[(["boundary"], g)])
    settings = [
        {"degree": 2, "geometry_degree": 2, "resolution": r, "dt": 0.02, "richardson": True}
        for r in (8, 16, 32)
    ]
    records = run_solver("wave", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("circle", settings, errors, records)
    orders = observed_orders(errors)
    print(f"[wave] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4


# ------------------------------------------------------------------------------ time


def test_temporal_order(tmp_path):
    """Solution of degree 4 in space (exact in P4), so the error is temporal only:
    Newmark is second order; with Richardson extrapolation fourth order."""
    g = (x**2 + y / 2 + x * y**3) * sp.cos(2 * t)
    u = g + x * (1 - x) * y * (1 - y) * (2 + sp.sin(3 * t))
    spec, exact = wave_case(u, sp.Rational(3, 4), t_end=1.0, dirichlet=[(["all"], g)])
    steps = (20, 40, 80)
    settings = [{"degree": 4, "resolution": 4, "n_steps": n} for n in steps]
    settings += [{"degree": 4, "resolution": 4, "n_steps": n, "richardson": True} for n in steps]
    records = run_solver("wave", spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("time", settings, errors, records)
    plain, extrapolated = observed_orders(errors[:3]), observed_orders(errors[3:])
    print(f"[wave] orders newmark {plain}, richardson {extrapolated}")
    assert all(1.85 <= o <= 2.3 for o in plain), (errors, plain)
    assert min(extrapolated) >= 3.6, (errors, extrapolated)


def test_energy_conservation(tmp_path):
    """f = 0, homogeneous Dirichlet / Neumann / Robin data: the discrete energy
    1/2 (v, v) + 1/2 (c^2 grad u, grad u) + 1/2 (alpha u, u)_Robin is conserved."""
    u0 = sp.sin(PI * x) * y * (1 - y / 2) + x * (1 - x) * sp.exp(y)
    spec = case_spec(
        "wave",
        params={"c": "1 + x*y"},
        forcing={},
        bc={
            "dirichlet": [{"boundary": ["xmin"], "value": "0"}],
            "neumann": [{"boundary": ["ymin", "ymax"], "value": "0"}],
            "robin": [{"boundary": ["xmax"], "alpha": 2.0, "value": "0"}],
        },
        output={"field": "u"},
        time={"t0": 0.0, "t_end": 2.0},
        ic={"u": str(u0), "u_t": "sin(pi*x)*cos(y)"},
    )
    records = run_solver(
        "wave", spec, [{"resolution": 16, "dt": 0.05, "report_energy": True}], tmp_path
    )
    info = records[0]["meta"]["solver_info"]
    e0, e1 = info["energy_initial"], info["energy_final"]
    print(f"[wave] energy {e0:.12e} -> {e1:.12e} (rel. drift {abs(e1 - e0) / e0:.2e})")
    assert e0 > 0.1
    assert abs(e1 - e0) <= 1e-10 * e0


# ------------------------------------------------------------------- boundary conditions


def test_mixed_time_dependent_conditions(tmp_path):
    """Time-dependent Dirichlet (xmin), Neumann (ymin, ymax) and Robin (xmax) data with a
    variable wave speed; and c depending on t (matrix reassembled every step)."""
    g = (1 + x**2 + y) * sp.cos(2 * t) + sp.sin(t) * y
    u = g + x * sp.sin(PI * y + 1) * sp.cos(3 * t)
    for label, c in (("c(x)", 1 + x * y / 2), ("c(x,t)", (1 + x * y / 2) * (1 + t / 4))):
        spec, exact = wave_case(
            u,
            c,
            t_end=0.5,
            dirichlet=[(["xmin"], _on(g, "xmin"))],
            neumann=["ymin", "ymax"],
            robin=[("xmax", 1.5)],
        )
        settings = [{"resolution": 16, "dt": 0.005}]
        records = run_solver("wave", spec, settings, tmp_path / label.replace(",", "_"))
        errors = _errors(spec, exact, records)
        _report(f"mixed {label}", settings, errors, records)
        info = records[0]["meta"]["solver_info"]
        assert info["matrix_reassembled_each_step"] is (label == "c(x,t)")
        assert errors[0] < 5e-4, (label, errors)


# -------------------------------------------------------------------------- calibration


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on the standing-wave case: error in [1e-6, 1e-3]; REFERENCE >= 10x better."""
    reference = _module_settings("wave")["REFERENCE"]
    spec, exact = wave_case(U_STD, 1, t_end=0.5, dirichlet=[(["all"], G_STD)], n=65)
    records = run_solver("wave", spec, [{}, {}, reference], tmp_path)
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
    spec, _ = wave_case(u, 1, t_end=0.1, dirichlet=[(["all"], u)])
    no_velocity = {**spec, "ic": {"u": spec["ic"]["u"]}}
    with pytest.raises(AssertionError, match=r"ic\.u_t"):
        run_solver("wave", no_velocity, [{"resolution": 4}], tmp_path / "ic")
    no_speed = {**spec, "pde": {**spec["pde"], "params": {}}}
    with pytest.raises(AssertionError, match="'c'"):
        run_solver("wave", no_speed, [{"resolution": 4}], tmp_path / "c")
    with pytest.raises(AssertionError, match="unknown scheme"):
        run_solver("wave", spec, [{"resolution": 4, "scheme": "leapfrog"}], tmp_path / "scheme")


def test_periodic_square_is_truly_periodic(tmp_path):
    u = sp.cos(2 * sp.pi * t) * sp.sin(2 * sp.pi * x) * sp.cos(2 * sp.pi * y) / 2
    spec, exact = wave_case(u, sp.sqrt(2) / 2, t_end=0.2, domain="periodic_square")
    spec["bc"]["periodic"] = [
        {"axis": "x", "boundary": "xmin", "partner": "xmax"},
        {"axis": "y", "boundary": "ymin", "partner": "ymax"},
    ]
    records = run_solver(
        "wave",
        spec,
        [{"resolution": r, "degree": 2, "dt": 0.0025} for r in (8, 16)],
        tmp_path / "periodic",
    )
    errors = _errors(spec, exact, records)
    assert errors[1] < 2e-3 and errors[1] < errors[0] / 4
    field = records[1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10
