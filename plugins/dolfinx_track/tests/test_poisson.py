"""DOLFINx Poisson solver (-div(kappa grad u) = f): manufactured-solution tests.

Run (harness venv): .venv/bin/python -m pytest plugins/dolfinx_track/tests/test_poisson.py -q -s
"""

from __future__ import annotations

import ast
from pathlib import Path

import dolfinx_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.dolfinx

x, y, z = sp.symbols("x y z")
SOLVER = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx" / "solvers" / "poisson.py"
SQUARE_NORMALS = {"xmin": (-1, 0), "xmax": (1, 0), "ymin": (0, -1), "ymax": (0, 1)}
# high-fidelity settings when poisson.py defines no REFERENCE dict
REFERENCE_FALLBACK = {"resolution": 64, "degree": 3}


def module_dict(name: str) -> dict | None:
    """A literal module-level dict (DEFAULTS / REFERENCE) of the solver, read without dolfinx."""
    tree = ast.parse(SOLVER.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return ast.literal_eval(node.value)
    return None


def forcing(u, kappa, dim=2):
    coords = (x, y, z)[:dim]
    return str(-sum(sp.diff(kappa * sp.diff(u, c), c) for c in coords))


def dirichlet_all(g):
    return {"dirichlet": [{"boundary": ["all"], "value": str(g), "quantity": None}]}


def errors_of(spec, settings, exact, tmp_path):
    recs = H.run_solver("poisson", spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs], recs


def check_orders(label, errs, ns, p, slack=0.3):
    orders = H.observed_orders(errs)
    print(f"\npoisson {label} P{p} n={ns}: errors {errs} orders {orders}")
    assert min(orders) >= p + 1 - slack, (errs, orders)


SMOOTH_G = sp.cos(x - 2 * y) + x
SMOOTH_U = SMOOTH_G + x * (1 - x) * y * (1 - y) * sp.exp(x + y) * sp.sin(3 * x + 1)
SMOOTH_KAPPA = 1 + x**2 + sp.sin(y) ** 2 / 2


def test_convergence_unit_square_variable_kappa(tmp_path):
    spec = H.case_spec(
        "poisson",
        params={"kappa": str(SMOOTH_KAPPA)},
        forcing={"f": forcing(SMOOTH_U, SMOOTH_KAPPA)},
        bc=dirichlet_all(SMOOTH_G),
        output={"field": "u"},
    )
    ns = (8, 16, 32)
    settings = [{"resolution": n, "degree": p} for p in (1, 2) for n in ns]
    errs, _ = errors_of(spec, settings, SMOOTH_U, tmp_path)
    check_orders("unit_square variable kappa", errs[:3], ns, 1)
    check_orders("unit_square variable kappa", errs[3:], ns, 2)


def test_convergence_circle_curved(tmp_path):
    g = sp.sin(2 * x + y)
    exact = g + (0.25 - (x - 0.5) ** 2 - (y - 0.5) ** 2) * sp.exp(x - y)
    kappa = 2 + x * y
    spec = H.case_spec(
        "poisson",
        domain="circle",
        params={"kappa": str(kappa)},
        forcing={"f": forcing(exact, kappa)},
        bc=dirichlet_all(g),
        output={"field": "u"},
    )
    ns = (8, 16, 32)
    settings = [{"resolution": n, "degree": p, "geometry_degree": 2} for p in (1, 2) for n in ns]
    errs, _ = errors_of(spec, settings, exact, tmp_path)
    check_orders("circle geometry_degree 2", errs[:3], ns, 1)
    check_orders("circle geometry_degree 2", errs[3:], ns, 2)


def test_high_contrast_smooth_kappa(tmp_path):
    """kappa = 1 + 100 exp(-50 r^2): contrast 101 over a bump of width ~0.14."""
    kappa = 1 + 100 * sp.exp(-50 * ((x - 0.5) ** 2 + (y - 0.5) ** 2))
    g = x * y + 1
    exact = g + sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * sp.cos(2 * x)
    spec = H.case_spec(
        "poisson",
        params={"kappa": str(kappa)},
        forcing={"f": forcing(exact, kappa)},
        bc=dirichlet_all(g),
        output={"field": "u"},
    )
    ns = (16, 32, 64)
    errs, _ = errors_of(spec, [{"resolution": n, "degree": 2} for n in ns], exact, tmp_path)
    check_orders("high-contrast kappa", errs, ns, 2)


def test_mixed_dirichlet_neumann_robin(tmp_path):
    """Dirichlet (xmin, ymin), Neumann kappa du/dn = g (xmax), Robin
    kappa du/dn + alpha u = g (ymax, variable alpha)."""
    kappa = 1 + x * y
    g = sp.cos(x) * sp.exp(y)
    exact = g + x * y * sp.sin(2 * x + y + 1)
    grad = (sp.diff(exact, x), sp.diff(exact, y))
    flux = {tag: kappa * (n[0] * grad[0] + n[1] * grad[1]) for tag, n in SQUARE_NORMALS.items()}
    alpha = 2 + x
    bc = {
        "dirichlet": [{"boundary": ["xmin", "ymin"], "value": str(g), "quantity": None}],
        "neumann": [{"boundary": ["xmax"], "value": str(flux["xmax"]), "quantity": None}],
        "robin": [
            {"boundary": ["ymax"], "alpha": str(alpha), "value": str(flux["ymax"] + alpha * exact)}
        ],
    }
    spec = H.case_spec(
        "poisson",
        params={"kappa": str(kappa)},
        forcing={"f": forcing(exact, kappa)},
        bc=bc,
        output={"field": "u"},
    )
    ns = (8, 16, 32)
    errs, _ = errors_of(spec, [{"resolution": n, "degree": 2} for n in ns] + [{}], exact, tmp_path)
    check_orders("mixed D/N/R", errs[:3], ns, 2)
    print(f"poisson mixed D/N/R DEFAULTS error {errs[3]:.3e}")
    assert errs[3] < 1e-4


def test_unit_cube_coarse(tmp_path):
    kappa = 1 + z**2
    g = sp.cos(x + y) + z
    exact = g + x * (1 - x) * y * (1 - y) * z * (1 - z) * sp.exp(x - z)
    spec = H.case_spec(
        "poisson",
        domain="unit_cube",
        params={"kappa": str(kappa)},
        forcing={"f": forcing(exact, kappa, dim=3)},
        bc=dirichlet_all(g),
        output={"field": "u"},
        n=14,
    )
    ns = (4, 8)
    errs, recs = errors_of(spec, [{"resolution": n, "degree": 2} for n in ns], exact, tmp_path)
    orders = H.observed_orders(errs)
    print(
        f"\npoisson unit_cube P2 n={ns}: errors {errs} orders {orders} "
        f"times {[round(r['wall_time_sec'], 2) for r in recs]}"
    )
    assert errs[1] < 1e-4
    assert orders[0] >= 2.5


def test_calibration_and_reference(tmp_path):
    """DEFAULTS on a representative smooth case; REFERENCE (or the fallback) >= 10x better."""
    g = sp.sin(x) + y
    exact = g + 16 * x * (1 - x) * y * (1 - y) * sp.sin(3 * sp.pi * x) * sp.cos(2 * y)
    kappa = 1 + x**2 / 2
    spec = H.case_spec(
        "poisson",
        params={"kappa": str(kappa)},
        forcing={"f": forcing(exact, kappa)},
        bc=dirichlet_all(g),
        output={"field": "u"},
        n=65,
    )
    reference = module_dict("REFERENCE")
    if reference is None:
        print("\npoisson.py has no REFERENCE dict; using", REFERENCE_FALLBACK)
        reference = REFERENCE_FALLBACK
    errs, recs = errors_of(spec, [{}, {}, reference], exact, tmp_path)
    e_cal, e_ref = errs[1], errs[2]
    print(
        f"\npoisson calibration unit_square: DEFAULTS error {e_cal:.3e} wall "
        f"{recs[1]['wall_time_sec']:.2f}s (first run incl. JIT {recs[0]['wall_time_sec']:.2f}s);"
        f" reference {reference}: error {e_ref:.3e} wall {recs[2]['wall_time_sec']:.2f}s"
    )
    assert 1e-6 <= e_cal <= 1e-3
    assert e_ref <= e_cal / 10


def test_failures(tmp_path):
    base = dict(forcing={"f": "1"}, bc=dirichlet_all(x), output={"field": "u"}, n=11)
    spec = H.case_spec("poisson", params={}, **base)
    with pytest.raises(AssertionError, match=r"KeyError.*'kappa'"):
        H.run_solver("poisson", spec, [{"resolution": 4}], tmp_path / "a")
    spec = H.case_spec(
        "poisson",
        params={"kappa": 1.0},
        bc={"dirichlet": [{"boundary": ["outlet"], "value": "0"}]},
        **{k: v for k, v in base.items() if k != "bc"},
    )
    with pytest.raises(AssertionError, match="unknown boundary tag 'outlet'"):
        H.run_solver("poisson", spec, [{"resolution": 4}], tmp_path / "b")
