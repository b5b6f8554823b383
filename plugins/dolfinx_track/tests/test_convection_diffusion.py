"""Convection-diffusion solver of the DOLFINx track (``solvers/convection_diffusion.py``),
run in the DOLFINx runtime.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part and the Dirichlet value g (never u* itself); f = [du*/dt] - epsilon
laplace(u*) + beta . grad(u*), Neumann data epsilon du*/dn and Robin data
epsilon du*/dn + alpha u* derived from u*.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

FAMILY = "convection_diffusion"
x, y, z, t = sp.symbols("x y z t")
HALF = sp.Rational(1, 2)
OUTWARD = {
    "xmin": (-1, 0, 0),
    "xmax": (1, 0, 0),
    "ymin": (0, -1, 0),
    "ymax": (0, 1, 0),
    "zmin": (0, 0, -1),
    "zmax": (0, 0, 1),
}
SIDE = {
    "xmin": (x, 0),
    "xmax": (x, 1),
    "ymin": (y, 0),
    "ymax": (y, 1),
    "zmin": (z, 0),
    "zmax": (z, 1),
}


def cd_case(
    u, eps, beta, *, dirichlet=(), neumann=(), robin=(), domain="unit_square", time=None, n=41
):
    """Case with exact solution ``u``: ``dirichlet`` = [(tags, g)], ``neumann`` = [tag],
    ``robin`` = [(tag, alpha)] (data derived from u on straight sides)."""
    dim = 3 if domain == "unit_cube" else 2
    X = (x, y, z)[:dim]
    grad = [sp.diff(u, c) for c in X]
    f = sum(b * gc for b, gc in zip(beta, grad, strict=True)) - sum(
        sp.diff(eps * gc, c) for gc, c in zip(grad, X, strict=True)
    )
    if time is not None:
        f += sp.diff(u, t)

    def flux(tag):
        value = eps * sum(gc * nc for gc, nc in zip(grad, OUTWARD[tag][:dim], strict=True))
        return value.subs(*SIDE[tag])

    def text(e):
        return str(e) if isinstance(e, sp.Basic) else e

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(flux(tag))} for tag in neumann],
        "robin": [
            {
                "boundary": [tag],
                "alpha": alpha,
                "value": str(flux(tag) + alpha * u.subs(*SIDE[tag])),
            }
            for tag, alpha in robin
        ],
    }
    spec = case_spec(
        FAMILY,
        domain=domain,
        params={"epsilon": text(eps), "beta": [text(b) for b in beta]},
        forcing={"f": str(f)},
        bc=bc,
        output={"field": "u"},
        time=None if time is None else {"t0": time[0], "t_end": time[1]},
        ic=None if time is None else {"u": str(u.subs(t, time[0]))},
        n=n,
    )
    return spec, {"u": str(u)}


def _module_settings(name):
    """DEFAULTS and REFERENCE of the solver module, read without importing dolfinx."""
    path = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / f"{FAMILY}.py"
    namespace: dict = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) in (
            "DEFAULTS",
            "REFERENCE",
        ):
            code = compile(ast.Expression(node.value), str(path), "eval")
            namespace[node.targets[0].id] = eval(code, {"__builtins__": {}}, namespace)
    return namespace[name]


def _errors(spec, exact, records):
    return [grid_error(spec, r["arrays"], exact) for r in records]


def _report(label, settings, errors, records):
    for s, e, r in zip(settings, errors, records, strict=True):
        info = r["meta"]["solver_info"]
        print(
            f"[cd] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s "
            f"stab={info.get('stabilization')} Pe={info.get('max_cell_peclet', 0):.2g}"
        )


# ----------------------------------------------------------------------------- space


def test_spatial_convergence_unit_square(tmp_path):
    """Moderate Peclet (epsilon = 0.05, beta = (1, 0.5)): order >= p + 1 - 0.3 for p = 1, 2
    with the automatic choice, and with SUPG forced (consistent: no loss of order)."""
    g = x * y + x / 2
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x)
    spec, exact = cd_case(u, 0.05, (1, HALF), dirichlet=[(["all"], g)])
    runs = [(1, "auto", (16, 32, 64)), (2, "auto", (8, 16, 32)), (2, "supg", (8, 16, 32))]
    settings = [
        {"degree": p, "resolution": r, "stabilization": s} for p, s, res in runs for r in res
    ]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("space", settings, errors, records)
    for k, (p, stab, _) in enumerate(runs):
        errs = errors[3 * k : 3 * k + 3]
        orders = observed_orders(errs)
        print(f"[cd] P{p} {stab} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, stab, errs, orders)
    assert records[-1]["meta"]["solver_info"]["stabilization"] == "supg"


def test_high_peclet_supg(tmp_path):
    """epsilon = 1e-3, beta = (1, 0.5): exponential outflow layers of width 1e-3 at x = 1
    and y = 1 that no mesh here resolves. SUPG ("auto" picks it) is accurate away from the
    layers (no oscillations there; the overshoot is confined to the layer cells);
    plain Galerkin oscillates through the whole domain."""
    eps = sp.Rational(1, 1000)
    u = (x - sp.exp((x - 1) / eps)) * (y - sp.exp((y - 1) / (2 * eps)))  # 0 on the boundary
    spec, _ = cd_case(u, eps, (1, HALF), dirichlet=[(["all"], sp.Integer(0))])
    settings = [
        {"degree": p, "resolution": 32, "stabilization": s}
        for p in (1, 2)
        for s in ("auto", "none")
    ]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    xs, ys = records[0]["arrays"]["x"], records[0]["arrays"]["y"]
    X, Y = np.meshgrid(xs, ys)
    exact = (X - np.exp((X - 1) / 1e-3)) * (Y - np.exp((Y - 1) / 2e-3))
    away = (X <= 0.9) & (Y <= 0.9)  # outside the layers
    errs, wiggle, overshoot = [], [], []
    for s, rec in zip(settings, records, strict=True):
        uh = rec["arrays"]["u"]
        errs.append(np.linalg.norm((uh - exact)[away]) / np.linalg.norm(exact[away]))
        wiggle.append(np.abs(uh - exact)[away].max())
        overshoot.append(max(uh.max() - 1.0, -uh.min()))  # the exact u lies in [0, 1]
        info = rec["meta"]["solver_info"]
        print(
            f"[cd] high Pe {s}: err(away)={errs[-1]:.3e} maxerr(away)={wiggle[-1]:.3e} "
            f"overshoot={overshoot[-1]:.3f} stab={info['stabilization']} "
            f"Pe={info['max_cell_peclet']:.1f} wall={rec['wall_time_sec']:.2f}s"
        )
    for k, bound in ((0, 5e-3), (2, 5e-4)):  # (auto, none) pairs for P1, P2
        assert records[k]["meta"]["solver_info"]["stabilization"] == "supg"
        assert records[k + 1]["meta"]["solver_info"]["stabilization"] == "none"
        assert errs[k] < bound, errs
        assert errs[k + 1] > 20 * errs[k], errs
        assert wiggle[k] < 2 * bound and wiggle[k + 1] > 0.2, wiggle
        assert overshoot[k + 1] > 0.2 and overshoot[k] < overshoot[k + 1] / 3, overshoot
    assert overshoot[0] < 1e-3, overshoot  # P1 SUPG: no over- or undershoot at all here


def test_circle_curved_geometry(tmp_path):
    """Circle (second-order geometry), P2, x-dependent beta and epsilon: third order."""
    r2 = (x - HALF) ** 2 + (y - HALF) ** 2
    g = x + y**2
    u = g + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y)
    spec, exact = cd_case(
        u, (1 + x) / 20, (1 + y, -HALF), domain="circle", dirichlet=[(["boundary"], g)]
    )
    settings = [{"degree": 2, "geometry_degree": 2, "resolution": r} for r in (8, 16, 32)]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("circle", settings, errors, records)
    orders = observed_orders(errors)
    print(f"[cd] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4


def test_unit_cube(tmp_path):
    g = x + y * z
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = cd_case(
        u, 0.1, (1, HALF, -HALF), domain="unit_cube", dirichlet=[(["all"], g)], n=17
    )
    settings = [{"degree": 2, "resolution_3d": r} for r in (4, 8)]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("cube", settings, errors, records)
    assert errors[1] < errors[0] / 5
    assert errors[1] < 2e-3


# ------------------------------------------------------------------------------ time


@pytest.mark.parametrize(
    "scheme, order, steps",
    [
        ("backward_euler", 1.0, (10, 20, 40)),
        ("crank_nicolson", 2.0, (10, 20, 40)),
        ("bdf2", 2.0, (20, 40, 80)),
    ],
)
def test_temporal_order(tmp_path, scheme, order, steps):
    """Quartic in space (exact in P4), time-dependent beta (matrix reassembled, both time
    levels of Crank-Nicolson), with and without SUPG: the error is temporal only."""
    g = 1 + x * y * sp.cos(t) + x / 2
    u = g + 4 * x * (1 - x) * y * (1 - y) * sp.sin(2 * t + sp.Rational(3, 10))
    spec, exact = cd_case(
        u, sp.Rational(1, 20), (1 + sp.sin(t) / 2, HALF), dirichlet=[(["all"], g)], time=(0.0, 1.0)
    )
    settings = [
        {"degree": 4, "resolution": 4, "n_steps": n, "scheme": scheme, "stabilization": s}
        for s in ("none", "supg")
        for n in steps
    ]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report(f"time {scheme}", settings, errors, records)
    for errs in (errors[:3], errors[3:]):
        orders = observed_orders(errs)
        print(f"[cd] {scheme} orders {orders}")
        assert orders[-1] >= order - 0.2, (errs, orders)
        assert min(orders) >= order - 0.5, (errs, orders)
    info = records[-1]["meta"]["solver_info"]
    assert info["matrix_assemblies"] == steps[-1] + 1  # beta(t): every step
    assert info["time_steps"] == steps[-1] and info["scheme"] == scheme


# ------------------------------------------------------------------- boundary conditions


def test_mixed_conditions(tmp_path):
    """Dirichlet (xmin), Neumann (ymin, ymax) and Robin (xmax): steady (P2 convergence) and
    transient with time-dependent data (Crank-Nicolson and BDF2)."""
    g = 1 + x**2 + y
    u = g + x * sp.sin(sp.pi * y + 1)
    spec, exact = cd_case(
        u,
        sp.Rational(1, 10),
        (1, HALF),
        dirichlet=[(["xmin"], g.subs(x, 0))],
        neumann=["ymin", "ymax"],
        robin=[("xmax", 2.0)],
    )
    gmres = {"ksp_type": "gmres", "pc_type": "ilu", "ksp_rtol": 1e-12, "ksp_max_it": 500}
    settings = [{"resolution": r, "degree": 2} for r in (8, 16, 32)]
    settings.append({"resolution": 32, "degree": 2, "petsc_options": gmres})
    records = run_solver(FAMILY, spec, settings, tmp_path / "steady")
    errors = _errors(spec, exact, records)
    _report("mixed steady", settings, errors, records)
    orders = observed_orders(errors[:3])
    assert min(orders) >= 2.7, (errors, orders)
    info = records[3]["meta"]["solver_info"]  # GMRES + ILU: the same solution
    assert info["ksp_type"] == "gmres" and info["linear_iterations"] > 0
    assert abs(errors[3] - errors[2]) < 1e-3 * errors[2]

    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    spec, exact = cd_case(
        u,
        sp.Rational(1, 10),
        (1, HALF),
        dirichlet=[(["xmin"], g.subs(x, 0))],
        neumann=["ymin", "ymax"],
        robin=[("xmax", 2.0)],
        time=(0.0, 0.5),
    )
    settings = [{"resolution": 16, "dt": 0.01, "scheme": s} for s in ("crank_nicolson", "bdf2")]
    records = run_solver(FAMILY, spec, settings, tmp_path / "transient")
    errors = _errors(spec, exact, records)
    _report("mixed transient", settings, errors, records)
    assert max(errors) < 2e-4, errors
    assert records[0]["meta"]["solver_info"]["matrix_assemblies"] == 1


# -------------------------------------------------------------------------- calibration


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on representative smooth cases: steady (epsilon = 0.01, cell Peclet ~ 1.2,
    so SUPG is on) and transient; error in [1e-6, 1e-3]; REFERENCE (steady) >= 10x better."""
    g = x * y + sp.cos(y) / 2
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2)
    spec, exact = cd_case(u, sp.Rational(1, 100), (1, HALF), dirichlet=[(["all"], g)], n=65)
    settings = ["DEFAULTS", "DEFAULTS", "REFERENCE"]
    records = run_solver(FAMILY, spec, [{}, {}, _module_settings("REFERENCE")], tmp_path / "steady")
    errors = _errors(spec, exact, records)
    _report("calibration steady (cold, warm) / reference", settings, errors, records)
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10

    g = (x * y + sp.cos(y) / 2) * (1 + t)
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2) * sp.cos(2 * t)
    spec, exact = cd_case(
        u, sp.Rational(1, 100), (1, HALF), dirichlet=[(["all"], g)], time=(0.0, 0.5), n=65
    )
    records = run_solver(FAMILY, spec, [{}], tmp_path / "transient")
    errors = _errors(spec, exact, records)
    _report("calibration transient", ["DEFAULTS"], errors, records)
    assert 1e-6 <= errors[0] <= 1e-3


# ----------------------------------------------------------------------------- failures


def test_failures(tmp_path):
    u = 1 + x * y
    spec, _ = cd_case(u, 0.1, (1, 0), dirichlet=[(["all"], u)])
    no_beta = {**spec, "pde": {**spec["pde"], "params": {"epsilon": 0.1}}}
    bad_beta = {**spec, "pde": {**spec["pde"], "params": {"epsilon": 0.1, "beta": [1.0]}}}
    negative = {**spec, "pde": {**spec["pde"], "params": {"epsilon": "x - 0.5", "beta": [1, 0]}}}
    transient = {**spec, "pde": {**spec["pde"], "time": {"t0": 0.0, "t_end": 0.1}}}
    cases = [
        (no_beta, {}, "beta"),
        (bad_beta, {}, "list of 2"),
        (negative, {}, "epsilon must be positive"),
        (transient, {}, "ic.u"),
        (spec, {"stabilization": "gls"}, "unknown stabilization"),
        (spec, {"scheme": "rk4"}, "unknown time scheme"),
        (spec, {"resolutoin": 8}, "unknown solver setting"),
    ]
    for k, (case, settings, message) in enumerate(cases):
        with pytest.raises(AssertionError, match=message):
            run_solver(FAMILY, case, [{"resolution": 4, **settings}], tmp_path / str(k))


def test_periodic_in_x_with_dirichlet_in_y(tmp_path):
    u = sp.sin(2 * sp.pi * x) * sp.sin(sp.pi * y) + y
    spec, exact = cd_case(
        u,
        sp.Rational(1, 20),
        (1, sp.Rational(1, 2)),
        dirichlet=[(["ymin", "ymax"], u)],
        domain="periodic_square",
    )
    spec["bc"]["periodic"] = [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]
    records = run_solver(FAMILY, spec, [{"resolution": r, "degree": 2} for r in (8, 16)], tmp_path)
    errors = _errors(spec, exact, records)
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 5, errors
    field = records[1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10
