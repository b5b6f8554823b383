"""Firedrake reaction-diffusion solver ([du/dt] - epsilon laplace(u) + R(u) = f):
manufactured-solution tests.

Exact solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part and the Dirichlet value g; f = [du*/dt] - div(epsilon grad u*) + R(u*)
for the stated reaction law, Neumann data epsilon du*/dn and Robin data
epsilon du*/dn + alpha u*.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_reaction_diffusion.py
"""

from __future__ import annotations

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

FAMILY = "reaction_diffusion"
x, y, z, t = sp.symbols("x y z t")
HALF = sp.Rational(1, 2)
LAWS = {
    "linear": lambda u, s: s * u,
    "cubic": lambda u, s: s * u**3,
    "allen_cahn": lambda u, s: s * (u**3 - u),
    "logistic": lambda u, s: -s * u * (1 - u),
}
OUTWARD = {"xmin": (-1, 0), "xmax": (1, 0), "ymin": (0, -1), "ymax": (0, 1)}
SIDE = {"xmin": (x, 0), "xmax": (x, 1), "ymin": (y, 0), "ymax": (y, 1)}


def rd_case(u, law, eps, sigma=1, *, dirichlet=(), neumann=(), robin=(), domain="unit_square",
            time=None, guess=None, n=41):  # fmt: skip
    """Case with exact solution ``u``: ``dirichlet`` = [(tags, g)], ``neumann`` = [tag],
    ``robin`` = [(tag, alpha)] (straight sides); ``guess`` = ic.u of a steady case."""
    dim = 3 if domain == "unit_cube" else 2
    X = (x, y, z)[:dim]
    grad = [sp.diff(u, c) for c in X]
    f = LAWS[law](u, sigma) - sum(sp.diff(eps * gc, c) for gc, c in zip(grad, X, strict=True))
    if time is not None:
        f += sp.diff(u, t)

    def flux(tag):
        return (eps * sum(gc * nc for gc, nc in zip(grad, OUTWARD[tag], strict=True))).subs(
            *SIDE[tag]
        )

    bc = {
        "dirichlet": [{"boundary": list(tags), "value": str(g)} for tags, g in dirichlet],
        "neumann": [{"boundary": [tag], "value": str(flux(tag))} for tag in neumann],
        "robin": [{"boundary": [tag], "alpha": alpha,
                   "value": str(flux(tag) + alpha * u.subs(*SIDE[tag]))}
                  for tag, alpha in robin],
    }  # fmt: skip
    params = {"epsilon": str(eps), "reaction_law": law, "sigma": str(sigma)}
    if time is not None:
        ic = {"u": str(u.subs(t, time[0]))}
    else:
        ic = None if guess is None else {"u": str(guess)}
    spec = H.case_spec(FAMILY, domain=domain, params=params, forcing={"f": str(f)}, bc=bc,
                       output={"field": "u"}, ic=ic, n=n,
                       time=None if time is None else {"t0": time[0], "t_end": time[1]},
                       )  # fmt: skip
    return spec, {"u": str(u)}


def run(spec, exact, settings, tmp_path, label):
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = [H.grid_error(spec, r["arrays"], exact) for r in records]
    for s, e, r in zip(settings, errors, records, strict=True):
        info = r["meta"]["solver_info"]
        print(f"\n[fd rd] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s "
              f"newton={info.get('newton_iterations')} "
              f"(max {info.get('max_newton_iterations')})", end="")  # fmt: skip
    print()
    return errors, records


G = HALF + 3 * x * y / 10
U_SMOOTH = G + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2)


def test_spatial_convergence_cubic_unit_square(tmp_path):
    """Steady cubic law (Newton): order >= p + 1 - 0.3 for p = 1, 2; Newton counts."""
    spec, exact = rd_case(U_SMOOTH, "cubic", sp.Rational(1, 10), 2, dirichlet=[(["all"], G)])
    runs = [(1, (16, 32, 64)), (2, (8, 16, 32))]
    settings = [{"degree": p, "resolution": r} for p, res in runs for r in res]
    errors, records = run(spec, exact, settings, tmp_path, "space")
    for i, (p, _) in enumerate(runs):
        errs = errors[3 * i : 3 * i + 3]
        orders = H.observed_orders(errs)
        print(f"[fd rd] cubic P{p} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)
    for rec in records:
        info = rec["meta"]["solver_info"]
        assert 2 <= info["newton_iterations"] <= 10, info
        assert info["pc_type"] == "lu" and info["reaction_law"] == "cubic"


def test_mixed_conditions_and_initial_guess(tmp_path):
    """Dirichlet (xmin), Neumann (ymin, ymax), Robin (xmax); logistic law with sigma = 4
    (the Jacobian at u = 0 is indefinite) started from ic.u = 1; a Newton-GMRES/ILU run
    through solver_parameters gives the same solution."""
    g = 1 + x**2 / 2 + y / 4
    u = g + x * sp.sin(sp.pi * y + 1) / 2
    spec, exact = rd_case(u, "logistic", sp.Rational(1, 10), 4, guess=1,
                          dirichlet=[(["xmin"], g.subs(x, 0))], neumann=["ymin", "ymax"],
                          robin=[("xmax", 2.0)])  # fmt: skip
    gmres = {"ksp_type": "gmres", "pc_type": "ilu", "ksp_rtol": 1e-12, "ksp_max_it": 500}
    settings = [{"resolution": r, "degree": 2} for r in (8, 16, 32)]
    settings.append({"resolution": 32, "degree": 2, "solver_parameters": gmres})
    errors, records = run(spec, exact, settings, tmp_path, "mixed logistic")
    orders = H.observed_orders(errors[:3])
    print(f"[fd rd] mixed logistic P2 orders {orders}")
    assert min(orders) >= 2.7, (errors, orders)
    assert errors[2] < 1e-5
    info = records[3]["meta"]["solver_info"]
    assert info["ksp_type"] == "gmres" and info["linear_iterations"] > 0
    assert abs(errors[3] - errors[2]) < 1e-3 * errors[2]


def test_gmsh_circle_allen_cahn(tmp_path):
    """gmsh circle (straight-sided cells), allen_cahn with x-dependent epsilon, P2. The
    Dirichlet data is the exact solution, defined at the boundary nodes of the polygonal
    mesh (midside nodes of boundary edges lie inside the circle): third order."""
    r2 = (x - HALF) ** 2 + (y - HALF) ** 2
    u = x + y**2 / 2 + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y)
    spec, exact = rd_case(u, "allen_cahn", (1 + x) / 10, 2, domain="circle",
                          dirichlet=[(["boundary"], u)])  # fmt: skip
    settings = [{"degree": 2, "resolution": r} for r in (8, 16, 32)]
    errors, _ = run(spec, exact, settings, tmp_path, "circle")
    orders = H.observed_orders(errors)
    print(f"[fd rd] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4


def test_unit_cube_cubic(tmp_path):
    g = HALF + x * y * z
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = rd_case(u, "cubic", sp.Rational(1, 5), 1, domain="unit_cube",
                          dirichlet=[(["all"], g)], n=17)  # fmt: skip
    settings = [{"degree": 2, "resolution_3d": r} for r in (4, 8)]
    errors, _ = run(spec, exact, settings, tmp_path, "cube")
    assert errors[1] < errors[0] / 5 and errors[1] < 2e-3, errors


SCHEMES = [("backward_euler", 1.0), ("crank_nicolson", 2.0), ("bdf2", 2.0)]


def test_temporal_orders_allen_cahn(tmp_path):
    """Transient allen_cahn, quartic in space (exact in P4, cell integrals exact with
    quadrature degree 16): the error is temporal only."""
    g = HALF / 2 + 3 * x * y * sp.cos(t) / 10
    u = g + 4 * x * (1 - x) * y * (1 - y) * sp.sin(2 * t + sp.Rational(3, 10))
    spec, exact = rd_case(u, "allen_cahn", sp.Rational(1, 20), 1, dirichlet=[(["all"], g)],
                          time=(0.0, 1.0))  # fmt: skip
    settings = [{"degree": 4, "resolution": 4, "quadrature_degree": 16, "n_steps": n,
                 "scheme": scheme} for scheme, _ in SCHEMES for n in (10, 20, 40)]  # fmt: skip
    errors, records = run(spec, exact, settings, tmp_path, "time")
    for i, (scheme, order) in enumerate(SCHEMES):
        errs = errors[3 * i : 3 * i + 3]
        orders = H.observed_orders(errs)
        print(f"[fd rd] {scheme} orders {orders}")
        assert min(orders) >= order - 0.15, (scheme, errs, orders)
        assert max(orders) <= order + 0.3, (scheme, errs, orders)
        info = records[3 * i + 2]["meta"]["solver_info"]
        assert info["time_steps"] == 40 and info["scheme"] == scheme
        assert info["max_newton_iterations"] <= 4, info


def test_linear_law_transient_mixed(tmp_path):
    """Linear law (linear solves, 0 Newton iterations) with time-dependent sigma (matrix
    reassembled) and time-dependent Dirichlet, Neumann and Robin data; CN and BDF2."""
    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    spec, exact = rd_case(u, "linear", sp.Rational(1, 10), 2 + sp.sin(t),
                          dirichlet=[(["xmin"], g.subs(x, 0))], neumann=["ymin", "ymax"],
                          robin=[("xmax", 2.0)], time=(0.0, 0.5))  # fmt: skip
    settings = [{"resolution": 16, "dt": 0.01, "scheme": s} for s in ("crank_nicolson", "bdf2")]
    errors, records = run(spec, exact, settings, tmp_path, "linear transient mixed")
    assert max(errors) < 2e-4, errors
    for rec in records:
        assert rec["meta"]["solver_info"]["newton_iterations"] == 0


def test_calibration_transient_allen_cahn(tmp_path):
    """DEFAULTS on a smooth transient allen_cahn case: error in [1e-6, 1e-3]."""
    g = G * (1 + t)
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2) * sp.cos(2 * t)
    spec, exact = rd_case(u, "allen_cahn", sp.Rational(1, 20), 1, dirichlet=[(["all"], g)],
                          time=(0.0, 0.5), n=65)  # fmt: skip
    errors, records = run(spec, exact, [{}], tmp_path, "calibration transient allen_cahn")
    assert 1e-6 <= errors[0] <= 1e-3, errors
    info = records[0]["meta"]["solver_info"]
    assert info["time_steps"] == 50 and info["max_newton_iterations"] <= 4


def test_steady_linear_law_is_a_linear_solve(tmp_path):
    """Steady linear law (solved as one linear system): small error, third order (P2)."""
    spec, exact = rd_case(U_SMOOTH, "linear", sp.Rational(1, 10), 3, dirichlet=[(["all"], G)])
    errors, records = run(spec, exact, [{"degree": 2, "resolution": r} for r in (8, 16)],
                          tmp_path, "steady linear")  # fmt: skip
    assert errors[1] < 1.5e-4 and errors[1] < errors[0] / 6, errors
    for rec in records:
        info = rec["meta"]["solver_info"]
        assert info["newton_iterations"] == 0 and info["reaction_law"] == "linear"


def test_newton_failure_is_loud(tmp_path):
    """A Newton iteration that does not converge raises (never a silent result)."""
    spec, _ = rd_case(U_SMOOTH, "cubic", sp.Rational(1, 10), 2, dirichlet=[(["all"], G)])
    error = H.run_failing(FAMILY, spec, {"resolution": 4, "newton_max_it": 1}, tmp_path)
    assert "reaction_diffusion: Newton did not converge" in error
