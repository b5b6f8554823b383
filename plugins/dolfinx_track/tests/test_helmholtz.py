"""DOLFINx Helmholtz solver (-laplace(u) - k**2 u = f): manufactured-solution tests.

Run (harness venv): .venv/bin/python -m pytest plugins/dolfinx_track/tests/test_helmholtz.py -q -s
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import dolfinx_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.dolfinx

x, y, z = sp.symbols("x y z")
SOLVER = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / "helmholtz.py"
SQUARE_NORMALS = {"xmin": (-1, 0), "xmax": (1, 0), "ymin": (0, -1), "ymax": (0, 1)}


def module_dict(name: str) -> dict:
    """A literal module-level dict (DEFAULTS / REFERENCE) of the solver, read without dolfinx."""
    tree = ast.parse(SOLVER.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise KeyError(name)


def forcing(u, k, dim=2):
    coords = (x, y, z)[:dim]
    return str(-sum(sp.diff(u, c, 2) for c in coords) - k**2 * u)


def dirichlet_all(g):
    return {"dirichlet": [{"boundary": ["all"], "value": str(g), "quantity": None}]}


def errors_of(spec, settings, exact, tmp_path):
    recs = H.run_solver("helmholtz", spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs], recs


@pytest.mark.parametrize("k", [5.0, 15.0])
def test_convergence_unit_square(k, tmp_path):
    g = sp.cos(2 * x - y) + x * y
    exact = g + x * (1 - x) * y * (1 - y) * sp.sin(k * (0.6 * x + 0.8 * y) + 1)
    spec = H.case_spec(
        "helmholtz",
        params={"k": k},
        forcing={"f": forcing(exact, k)},
        bc=dirichlet_all(g),
        output={"field": "u"},
    )
    runs = {1: (16, 32, 64), 2: (8, 16, 32)}
    settings = [
        {"resolution": n, "degree": p, "points_per_wavelength": 0.0}
        for p, ns in runs.items()
        for n in ns
    ]
    errs, _ = errors_of(spec, settings, exact, tmp_path)
    for i, p in enumerate(runs):
        e = errs[3 * i : 3 * i + 3]
        orders = H.observed_orders(e)
        print(f"\nhelmholtz k={k} unit_square P{p} n={runs[p]}: errors {e} orders {orders}")
        assert min(orders) >= p + 1 - 0.3, (p, e, orders)


def test_convergence_circle_curved(tmp_path):
    k = 6.0
    g = sp.cos(2 * x - y)
    exact = g + (0.25 - (x - 0.5) ** 2 - (y - 0.5) ** 2) * sp.sin(3 * x + 2 * y)
    spec = H.case_spec(
        "helmholtz",
        domain="circle",
        params={"k": k},
        forcing={"f": forcing(exact, k)},
        bc=dirichlet_all(g),
        output={"field": "u"},
    )
    ns = (8, 16, 32)
    settings = [
        {"resolution": n, "degree": 2, "geometry_degree": 2, "points_per_wavelength": 0.0}
        for n in ns
    ]
    errs, _ = errors_of(spec, settings, exact, tmp_path)
    orders = H.observed_orders(errs)
    print(f"\nhelmholtz circle P2 geo2 n={ns}: errors {errs} orders {orders}")
    assert min(orders) >= 2.7


def test_mixed_conditions_variable_k(tmp_path):
    """Dirichlet (xmin), Neumann (ymin), impedance-like Robin with constant (xmax) and
    variable (ymax) real alpha; k varies in space."""
    k = 4 + 2 * x * y
    g = sp.sin(x + 2 * y)
    exact = g + x * sp.cos(3 * x * y + 1) * sp.exp(y)
    grad = (sp.diff(exact, x), sp.diff(exact, y))
    flux = {tag: n[0] * grad[0] + n[1] * grad[1] for tag, n in SQUARE_NORMALS.items()}
    alpha_x, alpha_y = 6.0, 1 + x
    bc = {
        "dirichlet": [{"boundary": ["xmin"], "value": str(g), "quantity": None}],
        "neumann": [{"boundary": ["ymin"], "value": str(flux["ymin"]), "quantity": None}],
        "robin": [
            {"boundary": ["xmax"], "alpha": alpha_x, "value": str(flux["xmax"] + alpha_x * exact)},
            {
                "boundary": ["ymax"],
                "alpha": str(alpha_y),
                "value": str(flux["ymax"] + alpha_y * exact),
            },
        ],
    }
    f = str(-sp.diff(exact, x, 2) - sp.diff(exact, y, 2) - k**2 * exact)
    spec = H.case_spec(
        "helmholtz", params={"k": str(k)}, forcing={"f": f}, bc=bc, output={"field": "u"}
    )
    ns = (8, 16, 32)
    errs, recs = errors_of(
        spec, [{"resolution": n, "points_per_wavelength": 0.0} for n in ns] + [{}], exact, tmp_path
    )
    orders = H.observed_orders(errs[:3])
    print(
        f"\nhelmholtz mixed D/N/R, k=4+2xy, P2 n={ns}: errors {errs[:3]} orders {orders}; "
        f"DEFAULTS error {errs[3]:.3e} (k_max {recs[3]['meta']['solver_info']['k_max']:.3f})"
    )
    assert min(orders) >= 2.7
    assert errs[3] < 1e-4
    assert math.isclose(recs[3]["meta"]["solver_info"]["k_max"], 6.0, rel_tol=1e-9)


def test_unit_cube_coarse(tmp_path):
    k = 3.0
    g = sp.cos(x + y - z)
    exact = g + x * (1 - x) * y * (1 - y) * z * (1 - z) * sp.exp(x + 2 * z)
    spec = H.case_spec(
        "helmholtz",
        domain="unit_cube",
        params={"k": k},
        forcing={"f": forcing(exact, k, dim=3)},
        bc=dirichlet_all(g),
        output={"field": "u"},
        n=14,
    )
    ns = (4, 8)
    errs, recs = errors_of(
        spec, [{"resolution": n, "points_per_wavelength": 0.0} for n in ns], exact, tmp_path
    )
    orders = H.observed_orders(errs)
    print(
        f"\nhelmholtz unit_cube P2 n={ns}: errors {errs} orders {orders} "
        f"times {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    assert errs[1] < 1e-3
    assert orders[0] >= 2.5


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on a representative smooth oscillatory case (k = 10); REFERENCE much finer.
    Also a k = 40 plane-wave-type case with impedance conditions, where the wavelength rule
    must raise the resolution above the default."""
    k = 10.0
    g = sp.sin(x) * sp.cos(y) + 1
    exact = g + 16 * x * (1 - x) * y * (1 - y) * (sp.cos(k * (0.8 * x - 0.6 * y)) + x)
    spec = H.case_spec(
        "helmholtz",
        params={"k": k},
        forcing={"f": forcing(exact, k)},
        bc=dirichlet_all(g),
        output={"field": "u"},
        n=65,
    )
    reference = module_dict("REFERENCE")
    errs, recs = errors_of(spec, [{}, {}, reference], exact, tmp_path)
    e_cal, e_ref = errs[1], errs[2]
    print(
        f"\nhelmholtz calibration k=10 unit_square: DEFAULTS error {e_cal:.3e} wall "
        f"{recs[1]['wall_time_sec']:.2f}s (first run incl. JIT {recs[0]['wall_time_sec']:.2f}s), "
        f"res {recs[1]['meta']['solver_info']['resolution']}; REFERENCE error {e_ref:.3e} wall "
        f"{recs[2]['wall_time_sec']:.2f}s res {recs[2]['meta']['solver_info']['resolution']}"
    )
    assert 1e-6 <= e_cal <= 1e-3
    assert e_ref <= e_cal / 10

    k = 40.0
    exact = sp.cos(k * (0.6 * x + 0.8 * y)) + x * sp.sin(k * (0.8 * x - 0.6 * y))
    grad = (sp.diff(exact, x), sp.diff(exact, y))
    robin = [
        {"boundary": [tag], "alpha": k, "value": str(n[0] * grad[0] + n[1] * grad[1] + k * exact)}
        for tag, n in SQUARE_NORMALS.items()
    ]
    spec = H.case_spec(
        "helmholtz",
        params={"k": k},
        forcing={"f": forcing(exact, k)},
        bc={"robin": robin},
        output={"field": "u"},
        n=101,
    )
    errs, recs = errors_of(spec, [{}], exact, tmp_path / "k40")
    info = recs[0]["meta"]["solver_info"]
    n_waves = k / (2 * math.pi)
    expected = math.ceil(30.0 * n_waves**0.25 * n_waves / 2)
    print(
        f"helmholtz k=40 impedance plane waves, DEFAULTS: error {errs[0]:.3e} resolution "
        f"{info['resolution']} dofs {info['dofs']} wall {recs[0]['wall_time_sec']:.2f}s"
    )
    assert info["resolution"] == max(32, expected) > 32
    assert errs[0] < 5e-3


def test_failures(tmp_path):
    g = sp.sin(x)
    base = dict(forcing={"f": "1"}, bc=dirichlet_all(g), output={"field": "u"}, n=11)
    spec = H.case_spec("helmholtz", params={}, **base)
    with pytest.raises(AssertionError, match=r"KeyError.*'k'"):
        H.run_solver("helmholtz", spec, [{"resolution": 4}], tmp_path / "a")
    spec = H.case_spec("helmholtz", params={"k": 1.0}, **base)
    with pytest.raises(AssertionError, match="unknown solver setting"):
        H.run_solver("helmholtz", spec, [{"resolutoin": 4}], tmp_path / "b")
    spec = H.case_spec("helmholtz", params={"k": 1.0}, time={"t0": 0.0, "t_end": 1.0}, **base)
    with pytest.raises(AssertionError, match="steady"):
        H.run_solver("helmholtz", spec, [{"resolution": 4}], tmp_path / "c")
