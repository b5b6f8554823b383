"""DOLFINx Stokes solver (Taylor-Hood) against manufactured solutions.

Divergence-free velocities come from a stream function psi (2-D, u = curl psi) or a
vector potential A (3-D, u = curl A): psi = psi_g + phi^2 chi with phi vanishing on the
Dirichlet boundary, so the Dirichlet value curl(psi_g) equals the exact velocity on the
boundary only.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import sympy as sp
from dolfinx_harness import case_spec, grid_error, observed_orders, run_solver

pytestmark = pytest.mark.dolfinx

X, Y, Z = sp.symbols("x y z")
EXAMPLES = Path(__file__).resolve().parents[3] / "cases" / "examples.jsonl"
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


def _curl2(psi):
    return [sp.diff(psi, Y), -sp.diff(psi, X)]


def _forcing(u, p, nu, coords):
    f = []
    for i, ui in enumerate(u):
        lap = sum(sp.diff(ui, c, 2) for c in coords)
        f.append(-nu * lap + sp.diff(p, coords[i]))
    return f


def _traction(u, p, nu, normal, coords):
    """nu du/dn - p n for the exact fields."""
    return [
        nu * sum(sp.diff(ui, c) * nc for c, nc in zip(coords, normal, strict=True)) - p * normal[i]
        for i, ui in enumerate(u)
    ]


def _unit_square_mms(nu):
    phi = X * (1 - X) * Y * (1 - Y)
    psi_g = X**2 * Y - Y**3 / 3
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y)  # zero mean on the unit square
    return _curl2(psi), p, _curl2(psi_g)


def _vector_case(domain, nu, u, p, g, n=43, **kw):
    return case_spec(
        "stokes",
        domain=domain,
        params={"nu": nu},
        forcing={"f": [_s(c) for c in _forcing(u, p, nu, (X, Y, Z)[: len(u)])]},
        bc=kw.pop("bc", None)
        or {
            "dirichlet": [
                {"boundary": ["all"], "value": [_s(c) for c in g], "quantity": "velocity"}
            ]
        },
        output={"field": "velocity", "components": [*["u_x", "u_y", "u_z"][: len(u)], "p"]},
        n=n,
        **kw,
    )


def _errors(spec, records, u, p):
    names = ["u_x", "u_y", "u_z"][: len(u)]
    ue = [
        grid_error(spec, r["arrays"], {k: _s(c) for k, c in zip(names, u, strict=True)})
        for r in records
    ]
    pe = [grid_error(spec, r["arrays"], {"p": _s(p)}) for r in records]
    return ue, pe


@pytest.mark.parametrize(("degree", "resolutions"), [(1, (8, 16, 32)), (2, (4, 8, 16))])
def test_velocity_convergence_unit_square(tmp_path, degree, resolutions):
    nu = 0.5
    u, p, g = _unit_square_mms(nu)
    spec = _vector_case("unit_square", nu, u, p, g)  # 43-point grid: no mesh-node alignment
    recs = run_solver(
        "stokes", spec, [{"resolution": r, "degree": degree} for r in resolutions], tmp_path
    )
    ue, pe = _errors(spec, recs, u, p)
    print(
        f"\nstokes unit_square P{degree + 1}-P{degree} res {resolutions}: u {ue} "
        f"orders {observed_orders(ue)}; p {pe} orders {observed_orders(pe)}; "
        f"wall {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    assert min(observed_orders(ue)) >= degree + 2 - 0.3
    assert min(observed_orders(pe)) >= degree + 1 - 0.3
    info = recs[-1]["meta"]["solver_info"]
    assert info["pressure_null_space"] == "range projection + pinned dof + zero-mean shift"
    assert info["velocity_degree"] == degree + 1


def test_circle_enclosed_flow_zero_mean_pressure(tmp_path):
    """Velocity prescribed on the whole (curved) boundary: p only up to a constant; the
    solver must return the zero-mean pressure."""
    nu = 1.0
    phi = sp.Rational(1, 4) - (X - sp.Rational(1, 2)) ** 2 - (Y - sp.Rational(1, 2)) ** 2
    psi_g = X**2 * Y + sp.sin(X + 2 * Y)
    psi = psi_g + 16 * phi**2 * sp.sin(sp.pi * X) * sp.exp(Y)
    u, g = _curl2(psi), _curl2(psi_g)
    p = X * Y - sp.Rational(1, 4)  # zero mean on the disc centred at (1/2, 1/2)
    spec = _vector_case("circle", nu, u, p, g, n=41)
    resolutions = (8, 16, 32)
    recs = run_solver(
        "stokes", spec, [{"resolution": r, "geometry_degree": 2} for r in resolutions], tmp_path
    )
    ue, pe = _errors(spec, recs, u, p)
    print(
        f"\nstokes circle P2-P1 res {resolutions}: u {ue} orders {observed_orders(ue)}; "
        f"p {pe} orders {observed_orders(pe)}"
    )
    assert min(observed_orders(ue)) >= 2.5
    assert min(observed_orders(pe)) >= 1.7
    assert pe[-1] < 2e-2
    assert recs[-1]["meta"]["solver_info"]["pressure_null_space"] != "none"


@pytest.mark.parametrize("nu_value", [0.5, "1 + x*y/2"])
def test_mixed_velocity_traction_pressure(tmp_path, nu_value):
    """Velocity on xmin/ymin, traction on xmax, prescribed pressure (Dirichlet entry with
    quantity pressure: nu du/dn - p n = -g n) on ymax; the pressure is determined. Also
    with a variable viscosity (-nu laplace(u), not -div(nu grad u))."""
    nu = sp.sympify(nu_value)
    psi_g = X**2 * Y
    # x^2 y^2: zero velocity perturbation on xmin/ymin; (1 - y)^3: d u_x/dy = 0 on ymax
    psi = psi_g + 4 * X**2 * Y**2 * (1 - Y) ** 3 * (1 + sp.sin(sp.pi * X))
    u, g = _curl2(psi), _curl2(psi_g)
    p = sp.sin(sp.pi * X) * sp.cos(sp.pi * Y) + X
    traction = _traction(u, p, nu, (1, 0), (X, Y))
    pressure = p - nu * sp.diff(u[1], Y)
    bc = {
        "dirichlet": [
            {"boundary": ["xmin", "ymin"], "value": [_s(c) for c in g], "quantity": "velocity"},
            {"boundary": ["ymax"], "value": _s(pressure), "quantity": "pressure"},
        ],
        "neumann": [
            {"boundary": ["xmax"], "value": [_s(c) for c in traction], "quantity": "traction"}
        ],
    }
    spec = _vector_case("unit_square", nu, u, p, g, bc=bc)
    spec["pde"]["params"]["nu"] = nu_value
    recs = run_solver("stokes", spec, [{"resolution": r} for r in (8, 16)], tmp_path)
    ue, pe = _errors(spec, recs, u, p)
    print(f"\nstokes mixed bc nu={nu_value} res (8, 16): u {ue} p {pe}")
    assert min(observed_orders(ue)) >= 2.5
    assert ue[-1] < 5e-4 and pe[-1] < 5e-3
    assert recs[-1]["meta"]["solver_info"]["pressure_null_space"] == "none"


def test_unit_cube_coarse(tmp_path):
    nu = 1.0
    phi = X * (1 - X) * Y * (1 - Y) * Z * (1 - Z)
    a_g = [0, Z * X, X * Y**2]
    a = [
        a_g[0] + 500 * phi**2 * sp.sin(sp.pi * X),
        a_g[1] + 500 * phi**2 * sp.cos(Y),
        a_g[2] + 500 * phi**2 * Z,
    ]

    def curl(v):
        return [
            sp.diff(v[2], Y) - sp.diff(v[1], Z),
            sp.diff(v[0], Z) - sp.diff(v[2], X),
            sp.diff(v[1], X) - sp.diff(v[0], Y),
        ]

    u, g = curl(a), curl(a_g)
    p = X * Y * Z - sp.Rational(1, 8)
    spec = _vector_case("unit_cube", nu, u, p, g, n=13)
    settings = [{"resolution_3d": r} for r in (4, 8)]
    settings += [{"resolution_3d": r, "degree": 2} for r in (2, 4)]  # P3-P2: face dofs
    recs = run_solver("stokes", spec, settings, tmp_path)
    ue, pe = _errors(spec, recs, u, p)
    print(
        f"\nstokes unit_cube P2-P1 res (4, 8): u {ue[:2]} orders {observed_orders(ue[:2])}; "
        f"p {pe[:2]}; P3-P2 res (2, 4): u {ue[2:]} orders {observed_orders(ue[2:])}; "
        f"wall {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    assert ue[1] < 2e-3
    assert observed_orders(ue[:2])[0] >= 2.3
    assert observed_orders(ue[2:])[0] >= 3.0
    assert ue[3] < ue[0]
    assert recs[1]["meta"]["solver_info"]["dofs"] > 5000


def test_calibration_and_reference(tmp_path):
    """DEFAULTS and REFERENCE on the shipped example case (velocity_magnitude output)."""
    record = next(
        json.loads(line) for line in EXAMPLES.read_text().splitlines() if '"stokes"' in line
    )
    spec = record["case_spec"]
    exact = record["evaluation_metadata"]["manufactured_solution"]
    recs = run_solver("stokes", spec, [{}, {}, solver_settings("stokes", "REFERENCE")], tmp_path)
    errors = [grid_error(spec, r["arrays"], exact) for r in recs]
    print(
        f"\nstokes calibration (DEFAULTS) error {errors[1]:.3e} "
        f"wall {recs[1]['wall_time_sec']:.2f}s"
        f" (first run incl. JIT {recs[0]['wall_time_sec']:.2f}s); REFERENCE error "
        f"{errors[2]:.3e} wall {recs[2]['wall_time_sec']:.2f}s"
    )
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"params": {}}, "nu"),
        ({"robin": True}, "Robin"),
        ({"periodic": True}, "periodic"),
        ({"neumann_velocity": True}, "Neumann quantity"),
    ],
)
def test_failures_raise(tmp_path, change, message):
    nu = 1.0
    u, p, g = _unit_square_mms(nu)
    spec = _vector_case("unit_square", nu, u, p, g, n=11)
    if "params" in change:
        spec["pde"]["params"] = change["params"]
    if change.get("robin"):
        spec["bc"]["robin"] = [{"boundary": ["xmax"], "alpha": 1.0, "value": ["0", "0"]}]
    if change.get("periodic"):
        spec["bc"]["periodic"] = [{"boundary": "xmin", "partner": "xmax", "axis": "x"}]
    if change.get("neumann_velocity"):
        spec["bc"]["neumann"] = [
            {"boundary": ["xmax"], "value": ["0", "0"], "quantity": "velocity"}
        ]
    with pytest.raises(AssertionError, match=message):
        run_solver("stokes", spec, [{"resolution": 4}], tmp_path)
