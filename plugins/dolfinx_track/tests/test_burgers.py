"""Burgers family solver of the DOLFINx track (``solvers/burgers.py``), run in the DOLFINx
runtime.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part, the Dirichlet value being g (never the exact solution itself), the forcing
f = du*/dt + u* (b . grad u*) - nu laplace(u*) (nu laplace, not div(nu grad), exactly as the
template states it), Neumann data nu du*/dn and Robin data nu du*/dn + alpha u*.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import pytest
import sympy as sp
from dolfinx_harness import (
    case_spec,
    grid_error,
    observed_orders,
    run_job,
    run_solver,
)

pytestmark = pytest.mark.dolfinx

x, y, t = sp.symbols("x y t")
HALF = sp.Rational(1, 2)
SOLVER = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / "burgers.py"

# outward unit normals of the boundary parts used below (valid on the part itself)
NORMALS = {
    "xmin": (-1, 0),
    "xmax": (1, 0),
    "ymin": (0, -1),
    "ymax": (0, 1),
    "boundary": (2 * (x - HALF), 2 * (y - HALF)),  # circle, centre (1/2, 1/2), radius 1/2
}
FACE = {"xmin": (x, 0), "xmax": (x, 1), "ymin": (y, 0), "ymax": (y, 1)}
SQUARE_BUBBLE = 16 * x * (1 - x) * y * (1 - y)
CIRCLE_BUBBLE = 4 * (HALF**2 - (x - HALF) ** 2 - (y - HALF) ** 2)


def _on(expr, tag):
    """Restrict ``expr`` to a straight boundary part (substitute the fixed coordinate)."""
    return expr.subs(*FACE[tag]) if tag in FACE else expr


def burgers_case(
    u,
    nu,
    b,
    *,
    t_end,
    dirichlet=(),
    neumann=(),
    robin=(),
    domain="unit_square",
    n=41,
    t0=0.0,
):
    """Case for the exact solution ``u`` (sympy): ``dirichlet`` = [(tags, g)] with g = u on
    those tags, ``neumann`` = [tag], ``robin`` = [(tag, alpha)]."""
    grad = (sp.diff(u, x), sp.diff(u, y))
    lap = sp.diff(u, x, 2) + sp.diff(u, y, 2)
    f = sp.diff(u, t) + u * (b[0] * grad[0] + b[1] * grad[1]) - nu * lap

    def flux(tag):
        return nu * sum(g * nc for g, nc in zip(grad, NORMALS[tag], strict=True))

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(_on(flux(tag), tag))} for tag in neumann],
        "robin": [
            {"boundary": [tag], "alpha": alpha, "value": str(_on(flux(tag) + alpha * u, tag))}
            for tag, alpha in robin
        ],
    }
    nu_value = float(nu) if nu.is_number else str(nu)
    return case_spec(
        "burgers",
        domain=domain,
        params={"nu": nu_value, "b": [float(c) for c in b]},
        forcing={"f": str(f)},
        bc=bc,
        output={"field": "u"},
        time={"t0": t0, "t_end": t_end},
        ic={"u": str(u.subs(t, t0))},
        n=n,
    )


def _errors(spec, u, settings, tmp_path):
    records = run_solver("burgers", spec, settings, tmp_path)
    errors = [grid_error(spec, r["arrays"], {"u": str(u)}) for r in records]
    return errors, records


def _report(label, settings, errors, records):
    orders = observed_orders(errors)
    print(f"\n[burgers] {label}")
    for s, e, r in zip(settings, errors, records, strict=True):
        info = r["meta"]["solver_info"]
        print(
            f"  {json.dumps(s)}: err={e:.3e} wall={r['wall_time_sec']:.2f}s "
            f"newton={info['newton_iterations']} stab_cells={info['max_stabilised_cells']}"
        )
    print("  orders:", [round(o, 2) for o in orders])
    return orders


# --------------------------------------------------------------------------- space


def test_spatial_order_unit_square(tmp_path):
    """p = 1, 2 on unit_square: the exact solution is linear in t, which BE/BDF2 integrate
    exactly, so only the spatial error remains (a few time steps suffice)."""
    g = (1 + x / 2 + y**2 / 4) * (1 + t)
    u = g + SQUARE_BUBBLE * sp.sin(sp.pi * x) * sp.cos(sp.pi * y / 2) * (1 + t)
    spec = burgers_case(
        u, sp.Rational(1, 10), (1.0, 0.5), t_end=0.5, dirichlet=[(["all"], g)], n=41
    )
    settings = [{"degree": 1, "resolution": r, "n_steps": 2} for r in (8, 16, 32)]
    settings += [{"degree": 2, "resolution": r, "n_steps": 2} for r in (4, 8, 16)]
    errors, records = _errors(spec, u, settings, tmp_path)
    p1 = _report("space p=1", settings[:3], errors[:3], records[:3])
    p2 = _report("space p=2", settings[3:], errors[3:], records[3:])
    assert min(p1) >= 2 - 0.3, p1
    assert min(p2) >= 3 - 0.3, p2


def test_circle_geometry_degree_2(tmp_path):
    """Curved boundary (second-order geometry), p = 2, Dirichlet + Robin-free circle."""
    g = (x + y**2) * (1 + t)
    u = g + CIRCLE_BUBBLE * sp.cos(sp.pi * x) * (1 + x * y) * (1 + t)
    spec = burgers_case(
        u,
        sp.Rational(1, 10),
        (0.5, 1.0),
        t_end=0.5,
        dirichlet=[(["boundary"], g)],
        domain="circle",
        n=41,
    )
    settings = [
        {"degree": 2, "geometry_degree": 2, "resolution": r, "n_steps": 2} for r in (8, 16, 32)
    ]
    errors, records = _errors(spec, u, settings, tmp_path)
    orders = _report("circle p=2", settings, errors, records)
    assert min(orders) >= 3 - 0.4, orders
    assert errors[-1] < 1e-4


# ---------------------------------------------------------------------------- time


def test_temporal_order(tmp_path):
    """BE ~ 1, BDF2 and Crank-Nicolson ~ 2, BDF3 ~ 3 (p = 3 so the spatial error is far
    below the time errors)."""
    g = (x + y**2) * sp.cos(t)
    u = g + SQUARE_BUBBLE * sp.sin(sp.pi * x + 2 * t) * (1 + x * y * t)
    spec = burgers_case(
        u, sp.Rational(1, 20), (1.0, 0.5), t_end=1.0, dirichlet=[(["all"], g)], n=33
    )
    plan = {
        "backward_euler": ((5, 10, 20), 1.0, 0.15),
        "bdf2": ((20, 40, 80), 2.0, 0.2),
        "crank_nicolson": ((5, 10, 20), 2.0, 0.15),
        "bdf3": ((10, 20), 3.0, 0.3),
    }
    settings = [
        {"scheme": s, "n_steps": n, "degree": 3, "resolution": 16, "newton_rtol": 1e-11}
        for s, (steps, _, _) in plan.items()
        for n in steps
    ]
    errors, records = _errors(spec, u, settings, tmp_path)
    i = 0
    for scheme, (steps, expected, slack) in plan.items():
        k = len(steps)
        orders = _report(
            f"time {scheme}", settings[i : i + k], errors[i : i + k], records[i : i + k]
        )
        assert min(orders) >= expected - slack, (scheme, orders)
        assert max(orders) <= expected + 0.5, (scheme, orders)
        i += k


# -------------------------------------------------------------- boundary conditions


def test_mixed_dirichlet_neumann_robin_variable_nu(tmp_path):
    """Dirichlet (time-dependent) on xmin + ymin, Neumann nu du/dn = g on xmax, Robin
    nu du/dn + alpha u = g on ymax; nu varies in space (nu laplace(u) as stated)."""
    g = (1 + x / 2 + y**2) * sp.exp(-t / 2)
    u = g + x * y * sp.sin(sp.pi * x / 2 + t) * sp.cos(y)
    nu = (1 + x * y) / 20
    spec = burgers_case(
        u,
        nu,
        (1.0, 0.5),
        t_end=0.5,
        dirichlet=[(["xmin", "ymin"], g)],
        neumann=["xmax"],
        robin=[("ymax", 2.0)],
    )
    # DEFAULTS, then p = 1 on two meshes (time error negligible against the spatial one)
    settings = [{}] + [{"degree": 1, "resolution": r, "dt": 0.05} for r in (16, 32)]
    errors, records = _errors(spec, u, settings, tmp_path)
    _report("mixed D/N/R, variable nu: DEFAULTS", settings[:1], errors[:1], records[:1])
    orders = _report("mixed D/N/R, variable nu: p=1", settings[1:], errors[1:], records[1:])
    assert errors[0] < 1e-4, errors
    assert orders[0] >= 2 - 0.3, orders


def test_small_viscosity_smooth_solution(tmp_path):
    """nu = 1e-3 (cell Peclet >> 1): SUPG switches on ('auto') and the smooth solution is
    still captured accurately; the stabilised run beats plain Galerkin."""
    g = (1 + x / 2 + y / 4) * (1 + t / 2)
    u = g + SQUARE_BUBBLE * sp.sin(sp.pi * (x + y) - t) / 2
    spec = burgers_case(
        u, sp.Rational(1, 1000), (1.0, 0.5), t_end=0.5, dirichlet=[(["all"], g)], n=41
    )
    settings = [{}, {"stabilization": "none"}]
    errors, records = _errors(spec, u, settings, tmp_path)
    _report("nu = 1e-3", settings, errors, records)
    info = records[0]["meta"]["solver_info"]
    assert info["max_cell_peclet"] > 1 and info["max_stabilised_cells"] > 0, info
    assert errors[0] < 1e-3, errors
    assert errors[0] < errors[1], errors


# ------------------------------------------------------------------------ calibration


def _solver_settings():
    """DEFAULTS and REFERENCE of solvers/burgers.py, evaluated without importing dolfinx."""
    found = {}
    for node in ast.parse(SOLVER.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            name = getattr(node.targets[0], "id", None)
            if name in ("DEFAULTS", "REFERENCE"):
                code = compile(ast.Expression(node.value), str(SOLVER), "eval")
                found[name] = eval(code, {"__builtins__": {}}, dict(found))
    return found["DEFAULTS"], found["REFERENCE"]


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on a representative smooth case (error in [1e-6, 1e-3]); REFERENCE at least
    ten times more accurate. Run with -s to see the numbers (the first DEFAULTS run includes
    the JIT compilation; the second one is the timed one)."""
    defaults, reference = _solver_settings()
    assert reference["resolution"] > defaults["resolution"]
    assert reference["degree"] > defaults["degree"] and reference["dt"] < defaults["dt"]
    g = (x + y**2) * sp.cos(t)
    u = g + SQUARE_BUBBLE * sp.sin(sp.pi * x + t) * sp.exp(-t / 2)
    spec = burgers_case(
        u, sp.Rational(1, 20), (1.0, 0.5), t_end=0.5, dirichlet=[(["all"], g)], n=65
    )
    settings = [{}, {}, reference]
    errors, records = _errors(spec, u, settings, tmp_path)
    _report(
        "calibration (DEFAULTS, DEFAULTS, REFERENCE)",
        ["DEFAULTS", "DEFAULTS", "REFERENCE"],
        errors,
        records,
    )
    print(
        f"  CALIBRATION burgers: error={errors[1]:.3e} wall={records[1]['wall_time_sec']:.2f}s"
        f" (first run incl. JIT {records[0]['wall_time_sec']:.2f}s);"
        f" REFERENCE error={errors[2]:.3e} wall={records[2]['wall_time_sec']:.2f}s"
    )
    assert 1e-6 <= errors[1] <= 1e-3, errors
    assert errors[2] <= errors[1] / 10, errors


# -------------------------------------------------------------------------- failures


def _run_expecting_failure(spec, settings, tmp_path):
    """Run the solver on ``spec`` once per settings entry; every run must fail: returns the
    error texts."""
    proc, records = run_job("burgers", spec, settings, tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(records) == len(settings), proc.stdout + proc.stderr[-3000:]
    for rec in records:
        assert not rec["ok"], f"settings {settings[rec['index']]} did not fail"
        assert not (tmp_path / str(rec["index"]) / "solution.npz").exists()
    return [rec["error"] for rec in records]


def test_failures_raise(tmp_path):
    """Missing b, missing ic, periodic conditions, bad settings: loud failures, no output."""
    g = (1 + x) * (1 + t)
    u = g + SQUARE_BUBBLE * (1 + t)
    good = burgers_case(u, sp.Rational(1, 10), (1.0, 0.5), t_end=0.1, dirichlet=[(["all"], g)], n=9)
    no_b = copy.deepcopy(good)
    del no_b["pde"]["params"]["b"]
    no_ic = copy.deepcopy(good)
    no_ic["ic"] = None
    short_b = copy.deepcopy(good)
    short_b["pde"]["params"]["b"] = [1.0]
    periodic = copy.deepcopy(good)
    periodic["bc"]["periodic"] = [{"boundary": ["xmin"], "partner": "xmax", "axis": "x"}]
    cases = [
        (no_b, "'b'"),
        (no_ic, "ic.u"),
        (short_b, "one entry per component"),
        (periodic, "periodic"),
    ]
    for i, (spec, needle) in enumerate(cases):
        (error,) = _run_expecting_failure(spec, [{"n_steps": 1}], tmp_path / f"case{i}")
        assert needle in error, error
    errors = _run_expecting_failure(
        good,
        [{"scheme": "rk4"}, {"stabilization": "gls"}, {"time_step": 0.1}],
        tmp_path / "settings",
    )
    for needle, error in zip(
        ["unknown scheme", "unknown stabilization", "unknown solver setting"], errors, strict=True
    ):
        assert needle in error, error
