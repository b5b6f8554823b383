"""DOLFINx Navier-Stokes solver (Taylor-Hood, Newton) against manufactured solutions.

Velocities are curls of stream functions psi = psi_g + phi^2 chi (phi vanishing on the
Dirichlet boundary), so the Dirichlet value curl(psi_g) equals the exact velocity on the
boundary only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

X, Y, T = sp.symbols("x y t")
SOLVERS = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers"


def solver_settings(family: str, name: str) -> dict:
    """The module-level settings dict ``name`` (DEFAULTS, REFERENCE) of a solver module,
    read without importing it (the harness has no dolfinx)."""
    tree = ast.parse((SOLVERS / f"{family}.py").read_text())
    namespace: dict = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("DEFAULTS", "REFERENCE") for t in node.targets
        ):
            exec(compile(ast.Module([node], []), family, "exec"), namespace)
    return namespace[name]


def _s(expr) -> str:
    return str(sp.sympify(expr))


def _curl(psi):
    return [sp.diff(psi, Y), -sp.diff(psi, X)]


def _forcing(u, p, nu, transient=False):
    f = []
    for i, ui in enumerate(u):
        fi = -nu * (sp.diff(ui, X, 2) + sp.diff(ui, Y, 2)) + sp.diff(p, (X, Y)[i])
        fi += u[0] * sp.diff(ui, X) + u[1] * sp.diff(ui, Y)
        if transient:
            fi += sp.diff(ui, T)
        f.append(fi)
    return f


def _case(nu, u, p, bc, *, domain="unit_square", n=43, time=None, ic=None):
    return case_spec(
        "navier_stokes",
        domain=domain,
        params={"nu": nu},
        forcing={"f": [_s(c) for c in _forcing(u, p, nu, transient=time is not None)]},
        bc=bc,
        output={"field": "velocity", "components": ["u_x", "u_y", "p"]},
        time=time,
        ic=ic,
        n=n,
    )


def _dirichlet_all(g):
    return {
        "dirichlet": [{"boundary": ["all"], "value": [_s(c) for c in g], "quantity": "velocity"}]
    }


def _steady_mms():
    phi = X * (1 - X) * Y * (1 - Y)
    psi_g = X**2 * Y - Y**3 / 3
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y)  # zero mean
    return _curl(psi), p, _curl(psi_g)


def _u_error(spec, rec, u):
    return grid_error(spec, rec["arrays"], {"u_x": _s(u[0]), "u_y": _s(u[1])})


def test_steady_moderate_reynolds_convergence(tmp_path):
    nu = 0.01
    u, p, g = _steady_mms()
    spec = _case(nu, u, p, _dirichlet_all(g))
    resolutions = (8, 16, 32)
    recs = run_solver("navier_stokes", spec, [{"resolution": r} for r in resolutions], tmp_path)
    ue = [_u_error(spec, r, u) for r in recs]
    pe = [grid_error(spec, r["arrays"], {"p": _s(p)}) for r in recs]
    info = recs[-1]["meta"]["solver_info"]
    print(
        f"\nns nu=0.01 res {resolutions}: u {ue} orders {observed_orders(ue)}; p {pe} orders "
        f"{observed_orders(pe)}; newton {info['newton_iterations']}; "
        f"wall {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    assert min(observed_orders(ue)) >= 2.7
    assert min(observed_orders(pe)) >= 1.7
    assert info["plain_newton"]["converged"] and "continuation_path" not in info
    assert info["pressure_null_space"] != "none"


def test_continuation_small_viscosity(tmp_path):
    """nu = 1e-3: Newton from the Stokes solution fails, the nu-continuation converges;
    ``continuation="always"`` takes the path directly; ``"never"`` must raise."""
    nu = 0.001
    u, p, g = _steady_mms()
    spec = _case(nu, u, p, _dirichlet_all(g))
    recs = run_solver(
        "navier_stokes",
        spec,
        [{"resolution": 16}, {"resolution": 16, "continuation": "always"}],
        tmp_path,
    )
    for rec in recs:
        info = rec["meta"]["solver_info"]
        path = info["continuation_path"]
        error = _u_error(spec, rec, u)
        print(
            f"\nns nu=1e-3 res 16 {info.get('plain_newton')}: error {error:.3e}, path "
            f"{[(round(s['nu'], 6), s['newton_iterations']) for s in path]}, "
            f"wall {rec['wall_time_sec']:.2f}s"
        )
        assert len(path) >= 3 and path[-1]["converged"] and path[-1]["nu"] == pytest.approx(nu)
        assert all(s["newton_iterations"] >= 1 for s in path)
        assert error < 5e-3
    assert not recs[0]["meta"]["solver_info"]["plain_newton"]["converged"]
    with pytest.raises(AssertionError, match="Newton from the Stokes solution failed"):
        run_solver(
            "navier_stokes", spec, [{"resolution": 8, "continuation": "never"}], tmp_path / "never"
        )


def test_annulus_velocity_and_traction(tmp_path):
    """Curved domain (geometry degree 2): velocity on the inner circle, traction
    nu du/dn - p n = g on the outer one (exact normal n = x / |x|)."""
    nu = 0.1
    r2 = X**2 + Y**2
    psi_g = X**2 * Y - Y**3 / 3
    psi = psi_g + (r2 - sp.Rational(1, 4)) ** 2 * (sp.sin(X) + Y) / 2
    u, g = _curl(psi), _curl(psi_g)
    p = X * Y + sp.cos(X)
    normal = (X / sp.sqrt(r2), Y / sp.sqrt(r2))
    traction = [
        nu * (sp.diff(ui, X) * normal[0] + sp.diff(ui, Y) * normal[1]) - p * normal[i]
        for i, ui in enumerate(u)
    ]
    bc = {
        "dirichlet": [{"boundary": ["inner"], "value": [_s(c) for c in g], "quantity": "velocity"}],
        "neumann": [
            {"boundary": ["outer"], "value": [_s(c) for c in traction], "quantity": "traction"}
        ],
    }
    spec = _case(nu, u, p, bc, domain="annulus", n=41)
    resolutions = (8, 16, 32)
    recs = run_solver("navier_stokes", spec, [{"resolution": r} for r in resolutions], tmp_path)
    ue = [_u_error(spec, r, u) for r in recs]
    pe = [grid_error(spec, r["arrays"], {"p": _s(p)}) for r in recs]
    print(
        f"\nns annulus res {resolutions}: u {ue} orders {observed_orders(ue)}; p {pe} "
        f"orders {observed_orders(pe)}"
    )
    assert min(observed_orders(ue)) >= 2.5
    assert min(observed_orders(pe)) >= 1.7
    assert recs[-1]["meta"]["solver_info"]["pressure_null_space"] == "none"


def test_mixed_traction_pressure_outflow(tmp_path):
    """Velocity on xmin/ymin (inflow), traction on xmax, prescribed pressure (Neumann entry
    with quantity pressure) on ymax (outflow parts; with inflow through a traction part and
    small nu the steady problem need not have a unique solution)."""
    nu = 0.05
    psi_g = (1 + X) * Y - 2 * X  # g = (1 + x, 2 - y): inflow on xmin/ymin, outflow elsewhere
    psi = psi_g + 4 * X**2 * Y**2 * (1 - Y) ** 3 * (1 + sp.sin(sp.pi * X))
    u, g = _curl(psi), _curl(psi_g)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y) + X
    traction = [nu * sp.diff(u[0], X) - p, nu * sp.diff(u[1], X)]
    pressure = p - nu * sp.diff(u[1], Y)  # d u_x / dy = 0 on ymax
    bc = {
        "dirichlet": [
            {"boundary": ["xmin", "ymin"], "value": [_s(c) for c in g], "quantity": "velocity"}
        ],
        "neumann": [
            {"boundary": ["xmax"], "value": [_s(c) for c in traction], "quantity": "traction"},
            {"boundary": ["ymax"], "value": _s(pressure), "quantity": "pressure"},
        ],
    }
    spec = _case(nu, u, p, bc)
    recs = run_solver("navier_stokes", spec, [{"resolution": r} for r in (8, 16)], tmp_path)
    ue = [_u_error(spec, r, u) for r in recs]
    pe = [grid_error(spec, r["arrays"], {"p": _s(p)}) for r in recs]
    print(f"\nns mixed bc res (8, 16): u {ue} p {pe}")
    assert min(observed_orders(ue)) >= 2.5
    assert ue[-1] < 5e-4 and pe[-1] < 5e-3


def _transient_mms(nu):
    phi = X * (1 - X) * Y * (1 - Y)
    psi_g = (X**2 * Y - Y**3 / 3) * sp.cos(T)
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y) * (1 + sp.sin(2 * T))
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y) * sp.cos(T)
    u, g = _curl(psi), _curl(psi_g)
    spec = _case(
        nu,
        u,
        p,
        _dirichlet_all(g),
        time={"t0": 0.0, "t_end": 1.0},
        ic={"velocity": [_s(c.subs(T, 0)) for c in u]},
        n=31,
    )
    return spec, u


def test_transient_time_order(tmp_path):
    """BDF2 (second order) and backward Euler (first order). The exact velocity is
    quadratic and the pressure linear in space (exact in P2-P1; the Dirichlet value adds
    a bubble vanishing on the boundary), so the error is the time error."""
    nu = 0.1
    psi = sp.cos(T) * (X**2 * Y - Y**3 / 3) + (1 + sp.sin(2 * T)) * (X * Y**2 + X**2 * Y) / 2
    u = _curl(psi)
    p = (X - Y) * sp.cos(T)
    bubble = X * (1 - X) * Y * (1 - Y) * (1 + T)
    g = [u[0] + bubble, u[1] - bubble]
    spec = _case(
        nu,
        u,
        p,
        _dirichlet_all(g),
        time={"t0": 0.0, "t_end": 1.0},
        ic={"velocity": [_s(c.subs(T, 0)) for c in u]},
        n=21,
    )
    base = {"resolution": 6, "min_steps": 1}
    dts = (0.1, 0.05, 0.025, 0.0125)
    settings = [{**base, "dt": dt} for dt in dts]
    settings += [{**base, "dt": dt, "scheme": "backward_euler"} for dt in (0.1, 0.05)]
    settings += [{**base, "dt": 0.05, "convection": "extrapolated"}]
    recs = run_solver("navier_stokes", spec, settings, tmp_path)
    errors = [_u_error(spec, r, u) for r in recs]
    bdf2, euler, extrapolated = errors[:4], errors[4:6], errors[6]
    print(
        f"\nns transient BDF2 dt {dts}: {bdf2} orders {observed_orders(bdf2)}; BE dt (0.1, "
        f"0.05): {euler} order {observed_orders(euler)}; extrapolated dt 0.05: "
        f"{extrapolated:.3e}; wall {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    # the backward-Euler start step makes the coarse-dt rates pre-asymptotic (~1.2-1.7)
    assert observed_orders(bdf2)[-1] >= 1.8
    assert observed_orders([bdf2[0], bdf2[-1]], refinement=8.0)[0] >= 1.5
    assert 0.8 <= observed_orders(euler)[0] <= 1.3
    assert extrapolated < 5 * bdf2[1]
    info = recs[1]["meta"]["solver_info"]
    assert info["time_steps"] == 20 and info["scheme"] == "bdf2"
    assert info["newton_iterations_per_step_max"] <= 4
    assert recs[6]["meta"]["solver_info"]["newton_iterations_per_step_max"] <= 2


def test_calibration_and_reference(tmp_path):
    """DEFAULTS (and REFERENCE on the steady case) on the smooth manufactured solutions."""
    nu = 0.01
    u, p, g = _steady_mms()
    spec = _case(nu, u, p, _dirichlet_all(g), n=65)
    reference = solver_settings("navier_stokes", "REFERENCE")
    recs = run_solver("navier_stokes", spec, [{}, {}, reference], tmp_path)
    errors = [_u_error(spec, r, u) for r in recs]
    print(
        f"\nns steady calibration (DEFAULTS) error {errors[1]:.3e} wall "
        f"{recs[1]['wall_time_sec']:.2f}s (first run incl. JIT {recs[0]['wall_time_sec']:.2f}s);"
        f" REFERENCE error {errors[2]:.3e} wall {recs[2]['wall_time_sec']:.2f}s"
    )
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10
    spec_t, u_t = _transient_mms(0.1)
    rec = run_solver("navier_stokes", spec_t, [{}], tmp_path / "transient")[0]
    error = _u_error(spec_t, rec, u_t)
    info = rec["meta"]["solver_info"]
    print(
        f"ns transient calibration (DEFAULTS) error {error:.3e} wall "
        f"{rec['wall_time_sec']:.2f}s ({info['time_steps']} steps, "
        f"{info['newton_iterations']} Newton iterations)"
    )
    assert 1e-6 <= error <= 1e-3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ic": None}, "ic.velocity"),
        ({"settings": {"scheme": "crank_nicolson"}}, "unknown time scheme"),
        ({"settings": {"resolutoin": 8}}, "unknown solver setting"),
        ({"forcing": {"f": ["0", "0"], "g": ["1", "0"]}}, "forcing"),
    ],
)
def test_failures_raise(tmp_path, change, message):
    spec, _ = _transient_mms(0.1)
    spec["eval_grid"].update(nx=5, ny=5)
    if "ic" in change:
        spec["ic"] = change["ic"]
    if "forcing" in change:
        spec["pde"]["forcing"] = change["forcing"]
    settings = {"resolution": 4, "dt": 0.5, "min_steps": 1, **change.get("settings", {})}
    with pytest.raises(AssertionError, match=message):
        run_solver("navier_stokes", spec, [settings], tmp_path)


def test_t_junction_traction_free_outlets(tmp_path):
    """Parabolic inflow into the stem of the T, no-slip walls, traction-free outlets (not
    named: natural condition): the flow splits symmetrically and conserves mass."""
    nu = 0.01
    bc = {
        "dirichlet": [
            {
                "boundary": ["inlet"],
                "value": ["0", "100*(x - 0.4)*(0.6 - x)"],
                "quantity": "velocity",
            },
            {"boundary": ["walls"], "value": [0, 0.0], "quantity": "velocity"},
        ]
    }
    spec = case_spec(
        "navier_stokes",
        domain="t_junction",
        params={"nu": nu},
        forcing={},
        bc=bc,
        output={"field": "velocity_magnitude", "components": ["u_x", "u_y"]},
        n=41,
    )
    rec = run_solver("navier_stokes", spec, [{"resolution": 40}], tmp_path)[0]
    ux, uy = rec["arrays"]["u_x"], rec["arrays"]["u_y"]
    ys = rec["arrays"]["y"]
    # symmetry about x = 1/2 on the bar (rows y >= 0.6), up to the unstructured mesh
    bar = ys >= 0.6 - 1e-12
    scale = np.nanmax(np.hypot(ux, uy))
    asymmetry = (
        max(
            np.nanmax(np.abs(ux[bar] + ux[bar][:, ::-1])),
            np.nanmax(np.abs(uy[bar] - uy[bar][:, ::-1])),
        )
        / scale
    )
    assert asymmetry < 0.02
    # mass: the flux through the section x = 0.05 is half the inflow 100 * 0.2^3 / 6
    column = ux[bar, 2]
    flux = np.trapezoid(column, ys[bar])
    inflow = 100 * 0.2**3 / 6
    info = rec["meta"]["solver_info"]
    print(
        f"\nns t_junction nu={nu}: left flux {flux:.5f} (expected {-inflow / 2:.5f}), "
        f"asymmetry {asymmetry:.1e}, newton {info['newton_iterations']}, "
        f"wall {rec['wall_time_sec']:.2f}s"
    )
    assert flux == pytest.approx(-inflow / 2, rel=0.03)
    assert info["pressure_null_space"] == "none"


def test_continuation_failure_raises(tmp_path):
    u, p, g = _steady_mms()
    spec = _case(0.001, u, p, _dirichlet_all(g), n=5)
    settings = {"resolution": 8, "newton_max_it": 2, "continuation_max_failures": 2}
    with pytest.raises(AssertionError, match="continuation in nu failed"):
        run_solver("navier_stokes", spec, [settings], tmp_path)
