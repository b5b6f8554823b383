"""Firedrake convection-diffusion solver ([du/dt] - eps laplace(u) + beta . grad(u) = f):
manufactured-solution tests.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part; f = [du*/dt] - div(eps grad u*) + beta . grad(u*), Neumann data
eps du*/dn and Robin data eps du*/dn + alpha u* derived from u*.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_convection_diffusion.py
"""

from __future__ import annotations

import firedrake_harness as H
import numpy as np
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

FAMILY = "convection_diffusion"
x, y, z, t = sp.symbols("x y z t")
HALF = sp.Rational(1, 2)
OUTWARD = {"xmin": (-1, 0, 0), "xmax": (1, 0, 0), "ymin": (0, -1, 0), "ymax": (0, 1, 0),
           "zmin": (0, 0, -1), "zmax": (0, 0, 1)}  # fmt: skip
SIDE = {"xmin": (x, 0), "xmax": (x, 1), "ymin": (y, 0), "ymax": (y, 1), "zmin": (z, 0),
        "zmax": (z, 1)}  # fmt: skip


def cd_case(u, eps, beta, *, dirichlet=(), neumann=(), robin=(), domain="unit_square",
            time=None, n=41):  # fmt: skip
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
        "robin": [{"boundary": [tag], "alpha": alpha,
                   "value": str(flux(tag) + alpha * u.subs(*SIDE[tag]))}
                  for tag, alpha in robin],
    }  # fmt: skip
    spec = H.case_spec(
        FAMILY, domain=domain, params={"epsilon": text(eps), "beta": [text(b) for b in beta]},
        forcing={"f": str(f)}, bc=bc, output={"field": "u"},
        time=None if time is None else {"t0": time[0], "t_end": time[1]},
        ic=None if time is None else {"u": str(u.subs(t, time[0]))}, n=n,
    )  # fmt: skip
    return spec, {"u": str(u)}


def run(spec, exact, settings, out, label):
    records = H.run_solver(FAMILY, spec, settings, out)
    errors = [H.grid_error(spec, r["arrays"], exact) for r in records]
    for s, e, r in zip(settings, errors, records, strict=True):
        info = r["meta"]["solver_info"]
        print(f"[fd cd] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s "
              f"stab={info['stabilization']} Pe={info['max_cell_peclet']:.2g}")  # fmt: skip
    return errors, records


def orders_of(label, errs):
    orders = H.observed_orders(errs)
    print(f"[fd cd] {label}: errors {errs} orders {orders}")
    return orders


# ----------------------------------------------------------------------------- space


def test_spatial_convergence_unit_square(tmp_path):
    """Moderate Peclet (eps = 0.05, beta = (1, 0.5)): order >= p + 1 - 0.3 for P1 and P2
    with the automatic choice, and with SUPG forced (consistent: no loss of order)."""
    g = x * y + x / 2
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x)
    spec, exact = cd_case(u, 0.05, (1, HALF), dirichlet=[(["all"], g)])
    runs = [(1, "auto", (16, 32, 64)), (2, "auto", (8, 16, 32)), (2, "supg", (8, 16, 32))]
    settings = [{"degree": p, "resolution": r, "stabilization": s}
                for p, s, res in runs for r in res] + [{}]  # fmt: skip
    errors, records = run(spec, exact, settings, tmp_path, "space")
    # calibration: DEFAULTS (P2, resolution 24) on this smooth case
    assert 1e-6 <= errors[-1] <= 1e-4, errors[-1]
    assert records[-1]["meta"]["solver_info"]["resolution"] == 24
    for k, (p, stab, _) in enumerate(runs):
        orders = orders_of(f"unit_square P{p} {stab}", errors[3 * k : 3 * k + 3])
        assert min(orders) >= p + 1 - 0.3, (p, stab, orders)
    infos = [r["meta"]["solver_info"] for r in records]
    # P1 at n = 16: Pe_K = |beta| h / (2 eps) = 1.118 * sqrt(2)/16 / 0.1 ~ 0.99 < 1
    assert infos[0]["stabilization"] == "none" and infos[-2]["stabilization"] == "supg"
    assert abs(infos[0]["max_cell_peclet"] - 1.118034 * 2**0.5 / 16 / 0.1) < 1e-3


def test_high_peclet_supg(tmp_path):
    """eps = 1e-3, beta = (1, 0.5): outflow layers of width 1e-3 at x = 1 and y = 1 that
    no mesh here resolves. SUPG ("auto" picks it) is accurate away from the layers;
    plain Galerkin oscillates through the whole domain."""
    eps = sp.Rational(1, 1000)
    u = (x - sp.exp((x - 1) / eps)) * (y - sp.exp((y - 1) / (2 * eps)))  # 0 on the boundary
    spec, _ = cd_case(u, eps, (1, HALF), dirichlet=[(["all"], sp.Integer(0))])
    settings = [{"degree": p, "resolution": 32, "stabilization": s}
                for p in (1, 2) for s in ("auto", "none")]  # fmt: skip
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    X, Y = np.meshgrid(records[0]["arrays"]["x"], records[0]["arrays"]["y"])
    exact = (X - np.exp((X - 1) / 1e-3)) * (Y - np.exp((Y - 1) / 2e-3))
    away = (X <= 0.9) & (Y <= 0.9)  # outside the layers
    errs, wiggle, overshoot = [], [], []
    for s, rec in zip(settings, records, strict=True):
        uh = rec["arrays"]["u"]
        errs.append(np.linalg.norm((uh - exact)[away]) / np.linalg.norm(exact[away]))
        wiggle.append(np.abs(uh - exact)[away].max())
        overshoot.append(max(uh.max() - 1.0, -uh.min()))  # the exact u lies in [0, 1]
        stab = rec["meta"]["solver_info"]["stabilization"]
        print(f"[fd cd] high Pe {s}: err(away)={errs[-1]:.3e} maxerr(away)={wiggle[-1]:.3e} "
              f"overshoot={overshoot[-1]:.3f} stab={stab}")  # fmt: skip
    for k, bound in ((0, 5e-3), (2, 5e-4)):  # (auto, none) pairs for P1, P2
        assert records[k]["meta"]["solver_info"]["stabilization"] == "supg"
        assert records[k + 1]["meta"]["solver_info"]["stabilization"] == "none"
        assert errs[k] < bound and errs[k + 1] > 20 * errs[k], errs
        assert wiggle[k] < 2 * bound and wiggle[k + 1] > 0.2, wiggle
        assert overshoot[k + 1] > 0.2 and overshoot[k] < overshoot[k + 1] / 3, overshoot
    assert overshoot[0] < 1e-3, overshoot  # P1 SUPG: no over- or undershoot here


def test_gmsh_circle_with_variable_coefficients(tmp_path):
    """Circle (gmsh, straight-sided cells), P2, x-dependent eps and y-dependent beta."""
    r2 = (x - HALF) ** 2 + (y - HALF) ** 2
    u = x + y**2 + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y)
    # the Dirichlet data is u itself: it is interpolated at the polygon's boundary nodes
    spec, exact = cd_case(u, (1 + x) / 20, (1 + y, -HALF), domain="circle",
                          dirichlet=[(["boundary"], u)])  # fmt: skip
    settings = [{"degree": 2, "resolution": r} for r in (8, 16, 32)]
    errors, _ = run(spec, exact, settings, tmp_path, "circle")
    orders = orders_of("circle P2", errors)
    assert min(orders) >= 2.5 and errors[-1] < 1e-4, (errors, orders)


def test_unit_cube(tmp_path):
    g = x + y * z
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = cd_case(u, 0.1, (1, HALF, -HALF), domain="unit_cube",
                          dirichlet=[(["all"], g)], n=17)  # fmt: skip
    settings = [{"degree": 2, "resolution_3d": r} for r in (4, 8)]
    errors, records = run(spec, exact, settings, tmp_path, "cube")
    orders_of("unit_cube P2", errors)
    assert errors[1] < errors[0] / 5 and errors[1] < 2e-3, errors
    assert records[1]["meta"]["solver_info"]["cells"] == 6 * 8**3


def test_periodic_in_x_with_dirichlet_in_y(tmp_path):
    u = sp.sin(2 * sp.pi * x) * sp.sin(sp.pi * y) + y
    spec, exact = cd_case(u, sp.Rational(1, 20), (1, HALF), dirichlet=[(["ymin", "ymax"], u)],
                          domain="periodic_square")  # fmt: skip
    spec["bc"]["periodic"] = [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]
    errors, records = run(spec, exact, [{"resolution": r} for r in (8, 16)], tmp_path, "periodic")
    orders_of("periodic x P2", errors)
    assert errors[1] < 1e-3 and errors[1] < errors[0] / 5, errors
    field = records[1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10


# ------------------------------------------------------------------------------ time


def test_temporal_orders_of_the_three_schemes(tmp_path):
    """Quartic in space (exact in P4), time-dependent beta (matrix reassembled every step,
    both time levels of Crank-Nicolson), with and without SUPG: the error is temporal."""
    g = 1 + x * y * sp.cos(t) + x / 2
    u = g + 4 * x * (1 - x) * y * (1 - y) * sp.sin(2 * t + sp.Rational(3, 10))
    spec, exact = cd_case(u, sp.Rational(1, 20), (1 + sp.sin(t) / 2, HALF),
                          dirichlet=[(["all"], g)], time=(0.0, 1.0), n=21)  # fmt: skip
    runs = [("backward_euler", 1.0, (10, 20, 40)), ("crank_nicolson", 2.0, (10, 20, 40)),
            ("bdf2", 2.0, (20, 40, 80))]  # fmt: skip
    settings = [{"degree": 4, "resolution": 4, "n_steps": n, "scheme": scheme, "stabilization": s}
                for scheme, _, steps in runs for s in ("none", "supg") for n in steps]  # fmt: skip
    errors, records = run(spec, exact, settings, tmp_path, "time")
    for i, (scheme, order, steps) in enumerate(runs):
        for j, stab in enumerate(("none", "supg")):
            first = 6 * i + 3 * j
            orders = orders_of(f"{scheme} {stab}", errors[first : first + 3])
            assert orders[-1] >= order - 0.2 and min(orders) >= order - 0.5, orders
            info = records[first + 2]["meta"]["solver_info"]
            assert info["stabilization"] == stab and info["scheme"] == scheme
            assert info["time_steps"] == steps[-1]
            assert info["matrix_assemblies"] == steps[-1]  # beta(t): every step


def test_mixed_conditions_steady_and_transient(tmp_path):
    """Dirichlet (xmin), Neumann (ymin, ymax) and Robin (xmax): steady (P2 convergence,
    and GMRES + ILU) and transient with time-dependent data (Crank-Nicolson and BDF2)."""
    g = 1 + x**2 + y
    u = g + x * sp.sin(sp.pi * y + 1)
    spec, exact = cd_case(u, sp.Rational(1, 10), (1, HALF), dirichlet=[(["xmin"], g.subs(x, 0))],
                          neumann=["ymin", "ymax"], robin=[("xmax", 2.0)])  # fmt: skip
    gmres = {"ksp_type": "gmres", "pc_type": "ilu", "ksp_rtol": 1e-12, "ksp_max_it": 500}
    settings = [{"resolution": r} for r in (8, 16, 32)]
    settings.append({"resolution": 32, "solver_parameters": gmres})
    errors, records = run(spec, exact, settings, tmp_path / "steady", "mixed steady")
    orders = orders_of("mixed steady P2", errors[:3])
    assert min(orders) >= 2.7, orders
    info = records[3]["meta"]["solver_info"]
    assert info["ksp_type"] == "gmres" and info["linear_iterations"] > 0
    assert abs(errors[3] - errors[2]) < 1e-3 * errors[2]

    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    spec, exact = cd_case(u, sp.Rational(1, 10), (1, HALF), dirichlet=[(["xmin"], g.subs(x, 0))],
                          neumann=["ymin", "ymax"], robin=[("xmax", 2.0)],
                          time=(0.0, 0.5))  # fmt: skip
    settings = [{"resolution": 16, "dt": 0.01, "scheme": s} for s in ("crank_nicolson", "bdf2")]
    errors, records = run(spec, exact, settings, tmp_path / "transient", "mixed transient")
    assert max(errors) < 2e-4, errors
    infos = [r["meta"]["solver_info"] for r in records]
    assert [i["matrix_assemblies"] for i in infos] == [1, 2]  # constant matrix (bdf2: + start)
    assert all(i["time_steps"] == 50 for i in infos)


# ----------------------------------------------------------------------------- failures


def test_a_sign_changing_epsilon_fails_loudly(tmp_path):
    u = 1 + x * y
    spec, _ = cd_case(u, 0.1, (1, 0), dirichlet=[(["all"], u)])
    negative = {**spec, "pde": {**spec["pde"], "params": {"epsilon": "x - 0.5", "beta": [1, 0]}}}
    error = H.run_failing(FAMILY, negative, {"resolution": 4}, tmp_path / "eps")
    assert "epsilon must be positive (min -0.4" in error, error
