"""Reaction-diffusion solver of the DOLFINx track (``solvers/reaction_diffusion.py``), run in
the DOLFINx runtime.

Manufactured solutions are built with sympy: u* = g + phi * w with phi vanishing on the
Dirichlet part and the Dirichlet value g (never u* itself); f = [du*/dt] - div(epsilon
grad u*) + R(u*) for the stated reaction law, Neumann data epsilon du*/dn and Robin data
epsilon du*/dn + alpha u* derived from u*.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

FAMILY = "reaction_diffusion"
EXAMPLES = Path(__file__).resolve().parents[3] / "cases" / "examples.jsonl"
x, y, z, t = sp.symbols("x y z t")
HALF = sp.Rational(1, 2)
LAWS = {
    "linear": lambda u, s: s * u,
    "cubic": lambda u, s: s * u**3,
    "allen_cahn": lambda u, s: s * (u**3 - u),
    "logistic": lambda u, s: -s * u * (1 - u),
}
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


def rd_case(
    u,
    law,
    eps,
    sigma=1,
    *,
    dirichlet=(),
    neumann=(),
    robin=(),
    domain="unit_square",
    time=None,
    guess=None,
    n=41,
):
    """Case with exact solution ``u``: ``dirichlet`` = [(tags, g)], ``neumann`` = [tag],
    ``robin`` = [(tag, alpha)]; sigma is always stated; ``guess`` = ic.u of a
    steady case (initial guess)."""
    dim = 3 if domain == "unit_cube" else 2
    X = (x, y, z)[:dim]
    grad = [sp.diff(u, c) for c in X]
    f = LAWS[law](u, sigma) - sum(sp.diff(eps * gc, c) for gc, c in zip(grad, X, strict=True))
    if time is not None:
        f += sp.diff(u, t)

    def flux(tag):
        return (eps * sum(gc * nc for gc, nc in zip(grad, OUTWARD[tag][:dim], strict=True))).subs(
            *SIDE[tag]
        )

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
    params = {"epsilon": text(eps), "reaction_law": law}
    params["sigma"] = text(sigma)
    if time is not None:
        ic = {"u": str(u.subs(t, time[0]))}
    else:
        ic = None if guess is None else {"u": str(guess)}
    spec = case_spec(
        FAMILY,
        domain=domain,
        params=params,
        forcing={"f": str(f)},
        bc=bc,
        output={"field": "u"},
        time=None if time is None else {"t0": time[0], "t_end": time[1]},
        ic=ic,
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
            f"[rd] {label} {s}: err={e:.3e} wall={r['wall_time_sec']:.2f}s "
            f"newton={info.get('newton_iterations')} (max {info.get('max_newton_iterations')})"
        )


G = HALF + 3 * x * y / 10
U_SMOOTH = G + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2)


# ----------------------------------------------------------------------------- space


def test_spatial_convergence_unit_square(tmp_path):
    """Cubic law: order >= p + 1 - 0.3 for p = 1, 2; Newton counts in solver_info."""
    spec, exact = rd_case(U_SMOOTH, "cubic", sp.Rational(1, 10), 2, dirichlet=[(["all"], G)])
    runs = [(1, (16, 32, 64)), (2, (8, 16, 32))]
    settings = [{"degree": p, "resolution": r} for p, res in runs for r in res]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("space", settings, errors, records)
    for k, (p, _) in enumerate(runs):
        errs = errors[3 * k : 3 * k + 3]
        orders = observed_orders(errs)
        print(f"[rd] P{p} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, errs, orders)
    for rec in records:
        assert 2 <= rec["meta"]["solver_info"]["newton_iterations"] <= 10


@pytest.mark.parametrize("law", sorted(LAWS))
def test_reaction_laws(tmp_path, law):
    """Each law on a smooth steady case (P2): small error, decreasing at third order, and
    the Newton iteration count (0 for the linear law, solved as a linear system)."""
    sigma = {"linear": 3, "cubic": 2, "allen_cahn": 1, "logistic": 2}[law]
    spec, exact = rd_case(U_SMOOTH, law, sp.Rational(1, 10), sigma, dirichlet=[(["all"], G)])
    settings = [{"degree": 2, "resolution": r} for r in (8, 16)]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report(law, settings, errors, records)
    assert errors[1] < 1.5e-4 and errors[1] < errors[0] / 6, errors
    for rec in records:
        info = rec["meta"]["solver_info"]
        assert info["reaction_law"] == law
        if law == "linear":
            assert info["newton_iterations"] == 0
        else:
            assert 2 <= info["newton_iterations"] <= 10, info


def test_mixed_conditions_and_initial_guess(tmp_path):
    """Dirichlet (xmin), Neumann (ymin, ymax), Robin (xmax), logistic law with sigma = 4
    (the Jacobian at u = 0, -epsilon laplace - sigma, is indefinite) started from ic.u."""
    g = 1 + x**2 / 2 + y / 4
    u = g + x * sp.sin(sp.pi * y + 1) / 2
    spec, exact = rd_case(
        u,
        "logistic",
        sp.Rational(1, 10),
        4,
        guess=1,
        dirichlet=[(["xmin"], g.subs(x, 0))],
        neumann=["ymin", "ymax"],
        robin=[("xmax", 2.0)],
    )
    gmres = {"ksp_type": "gmres", "pc_type": "ilu", "ksp_rtol": 1e-12, "ksp_max_it": 500}
    settings = [{"resolution": r, "degree": 2} for r in (8, 16, 32)]
    settings.append({"resolution": 32, "degree": 2, "petsc_options": gmres})
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("mixed logistic", settings, errors, records)
    orders = observed_orders(errors[:3])
    assert min(orders) >= 2.7, (errors, orders)
    assert errors[2] < 1e-5
    info = records[3]["meta"]["solver_info"]  # Newton-GMRES + ILU: the same solution
    assert info["ksp_type"] == "gmres" and info["linear_iterations"] > 0
    assert abs(errors[3] - errors[2]) < 1e-3 * errors[2]


def test_circle_curved_geometry(tmp_path):
    """Circle (second-order geometry), allen_cahn with x-dependent epsilon, P2: third order."""
    r2 = (x - HALF) ** 2 + (y - HALF) ** 2
    g = x + y**2 / 2
    u = g + (sp.Rational(1, 4) - r2) * sp.cos(2 * x + y)
    spec, exact = rd_case(
        u, "allen_cahn", (1 + x) / 10, 2, domain="circle", dirichlet=[(["boundary"], g)]
    )
    settings = [{"degree": 2, "geometry_degree": 2, "resolution": r} for r in (8, 16, 32)]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("circle", settings, errors, records)
    orders = observed_orders(errors)
    print(f"[rd] circle P2 orders {orders}")
    assert min(orders) >= 2.5, (errors, orders)
    assert errors[-1] < 1e-4


def test_unit_cube(tmp_path):
    """3-D: steady cubic (P2, 4^3 and 8^3 cells) and a short transient allen_cahn run."""
    g = HALF + x * y * z
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)
    spec, exact = rd_case(
        u, "cubic", sp.Rational(1, 5), 1, domain="unit_cube", dirichlet=[(["all"], g)], n=17
    )
    settings = [{"degree": 2, "resolution_3d": r} for r in (4, 8)]
    records = run_solver(FAMILY, spec, settings, tmp_path / "steady")
    errors = _errors(spec, exact, records)
    _report("cube", settings, errors, records)
    assert errors[1] < errors[0] / 5
    assert errors[1] < 2e-3

    u = (g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.sin(sp.pi * z)) * sp.exp(-t)
    spec, exact = rd_case(
        u,
        "allen_cahn",
        sp.Rational(1, 5),
        1,
        domain="unit_cube",
        dirichlet=[(["all"], g * sp.exp(-t))],
        time=(0.0, 0.2),
        n=17,
    )
    settings = [{"degree": 2, "resolution_3d": 6, "dt": 0.02}]
    records = run_solver(FAMILY, spec, settings, tmp_path / "transient")
    errors = _errors(spec, exact, records)
    _report("cube transient", settings, errors, records)
    assert errors[0] < 5e-3


# ------------------------------------------------------------------------------ time


@pytest.mark.parametrize(
    "scheme, order", [("backward_euler", 1.0), ("crank_nicolson", 2.0), ("bdf2", 2.0)]
)
def test_temporal_order_allen_cahn(tmp_path, scheme, order):
    """Transient allen_cahn, quartic in space (exact in P4, cell integrals exact with
    quadrature degree 16): the error is temporal only."""
    g = HALF / 2 + 3 * x * y * sp.cos(t) / 10
    u = g + 4 * x * (1 - x) * y * (1 - y) * sp.sin(2 * t + sp.Rational(3, 10))
    spec, exact = rd_case(
        u, "allen_cahn", sp.Rational(1, 20), 1, dirichlet=[(["all"], g)], time=(0.0, 1.0)
    )
    settings = [
        {"degree": 4, "resolution": 4, "quadrature_degree": 16, "n_steps": n, "scheme": scheme}
        for n in (10, 20, 40)
    ]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report(f"time {scheme}", settings, errors, records)
    orders = observed_orders(errors)
    print(f"[rd] {scheme} orders {orders}")
    assert min(orders) >= order - 0.15, (errors, orders)
    assert max(orders) <= order + 0.3, (errors, orders)
    info = records[-1]["meta"]["solver_info"]
    assert info["time_steps"] == 40 and info["scheme"] == scheme
    assert info["max_newton_iterations"] <= 4


def test_transient_allen_cahn_example(tmp_path):
    """The example allen_cahn case (epsilon = 0.01, Neumann, no exact solution): DEFAULTS
    against a finer run (P3, smaller dt); the solution stays within [-1, 1]."""
    record = next(
        json.loads(line)
        for line in EXAMPLES.read_text().splitlines()
        if json.loads(line)["id"] == "reaction_diffusion_unit_square_allen_cahn_ref_001"
    )
    spec = record["case_spec"]
    spec["bc"] = {"dirichlet": [], "neumann": [], "robin": [], "periodic": [], **spec["bc"]}
    settings = [{}, {"resolution": 32, "degree": 3, "dt": 0.005}]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    fine = records[1]["arrays"]["u"]
    for s, rec in zip(settings, records, strict=True):
        uh = rec["arrays"]["u"]
        diff = np.linalg.norm(uh - fine) / np.linalg.norm(fine)
        info = rec["meta"]["solver_info"]
        print(
            f"[rd] allen_cahn example {s}: diff to fine={diff:.3e} "
            f"range=[{uh.min():.4f}, {uh.max():.4f}] wall={rec['wall_time_sec']:.2f}s "
            f"steps={info['time_steps']} newton={info['newton_iterations']} "
            f"(max {info['max_newton_iterations']})"
        )
        assert np.abs(uh).max() <= 1.0
        assert info["max_newton_iterations"] <= 4
    assert np.linalg.norm(records[0]["arrays"]["u"] - fine) / np.linalg.norm(fine) < 5e-4


def test_linear_law_transient_mixed(tmp_path):
    """Linear law (linear solves) with time-dependent sigma (matrix reassembled) and
    time-dependent Dirichlet, Neumann and Robin data; Crank-Nicolson and BDF2."""
    g = (1 + x**2 + y) * sp.exp(-t) + sp.sin(2 * t) * y
    u = g + x * sp.sin(sp.pi * y + 1) * sp.cos(t)
    spec, exact = rd_case(
        u,
        "linear",
        sp.Rational(1, 10),
        2 + sp.sin(t),
        dirichlet=[(["xmin"], g.subs(x, 0))],
        neumann=["ymin", "ymax"],
        robin=[("xmax", 2.0)],
        time=(0.0, 0.5),
    )
    settings = [{"resolution": 16, "dt": 0.01, "scheme": s} for s in ("crank_nicolson", "bdf2")]
    records = run_solver(FAMILY, spec, settings, tmp_path)
    errors = _errors(spec, exact, records)
    _report("linear transient mixed", settings, errors, records)
    assert max(errors) < 2e-4, errors


# -------------------------------------------------------------------------- calibration


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on representative smooth cases (steady cubic; transient allen_cahn): error in
    [1e-6, 1e-3]; REFERENCE (steady) >= 10x more accurate."""
    spec, exact = rd_case(U_SMOOTH, "cubic", sp.Rational(1, 20), 2, dirichlet=[(["all"], G)], n=65)
    settings = ["DEFAULTS", "DEFAULTS", "REFERENCE"]
    records = run_solver(FAMILY, spec, [{}, {}, _module_settings("REFERENCE")], tmp_path / "steady")
    errors = _errors(spec, exact, records)
    _report("calibration steady (cold, warm) / reference", settings, errors, records)
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10

    g = G * (1 + t)
    u = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.exp(x / 2) * sp.cos(2 * t)
    spec, exact = rd_case(
        u, "allen_cahn", sp.Rational(1, 20), 1, dirichlet=[(["all"], g)], time=(0.0, 0.5), n=65
    )
    records = run_solver(FAMILY, spec, [{}], tmp_path / "transient")
    errors = _errors(spec, exact, records)
    _report("calibration transient allen_cahn", ["DEFAULTS"], errors, records)
    assert 1e-6 <= errors[0] <= 1e-3


# ----------------------------------------------------------------------------- failures


def test_failures(tmp_path):
    spec, _ = rd_case(U_SMOOTH, "cubic", sp.Rational(1, 10), 2, dirichlet=[(["all"], G)])
    params = spec["pde"]["params"]

    def with_params(**changes):
        new = {k: v for k, v in {**params, **changes}.items() if v is not None}
        return {**spec, "pde": {**spec["pde"], "params": new}}

    periodic = {
        **spec,
        "bc": {
            **spec["bc"],
            "dirichlet": [],
            "periodic": [{"axis": "x", "boundary": "xmin", "partner": "xmax"}],
        },
    }
    transient = {**spec, "pde": {**spec["pde"], "time": {"t0": 0.0, "t_end": 0.1}}}
    cases = [
        (with_params(reaction_law="fisher"), {}, "reaction_law must be one of"),
        (with_params(reaction_law=None), {}, "reaction_law must be one of"),
        (with_params(epsilon=None), {}, "epsilon"),
        (with_params(epsilon="x - 0.5"), {}, "epsilon must be positive"),
        (periodic, {}, "NotImplementedError: periodic"),
        (transient, {}, "ic.u"),
        (spec, {"newton_max_it": 1}, "Newton did not converge"),
        (spec, {"scheme": "rk4"}, "unknown time scheme"),
    ]
    for k, (case, settings, message) in enumerate(cases):
        with pytest.raises(AssertionError, match=message):
            run_solver(FAMILY, case, [{"resolution": 4, **settings}], tmp_path / str(k))
