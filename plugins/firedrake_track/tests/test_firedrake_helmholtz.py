"""Firedrake Helmholtz solver (-laplace(u) - k**2 u = f): manufactured-solution tests.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_helmholtz.py
"""

from __future__ import annotations

import math

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

x, y, z = sp.symbols("x y z")
SQUARE_NORMALS = {"xmin": (-1, 0), "xmax": (1, 0), "ymin": (0, -1), "ymax": (0, 1)}


def forcing(u, k, dim=2):
    return str(-sum(sp.diff(u, c, 2) for c in (x, y, z)[:dim]) - k**2 * u)


def dirichlet(g, boundary=("all",)):
    return {"boundary": list(boundary), "value": str(g), "quantity": None}


def errors_of(spec, settings, exact, tmp_path):
    recs = H.run_solver("helmholtz", spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs], recs


def check_orders(label, errs, p, slack=0.3):
    orders = H.observed_orders(errs)
    print(f"\nfiredrake helmholtz {label} P{p}: errors {errs} orders {orders}")
    assert min(orders) >= p + 1 - slack, (errs, orders)
    return orders


def test_p1_and_p2_converge_on_the_unit_square_for_two_wave_numbers(tmp_path):
    """k = 5 (P1 and P2) and k = 15 (P2); the wavelength rule is switched off
    (points_per_wavelength = 0) so that the requested resolutions are used."""
    runs = [(5.0, 1, (16, 32, 64)), (5.0, 2, (8, 16, 32)), (15.0, 2, (8, 16, 32))]
    for k in (5.0, 15.0):
        g = sp.cos(2 * x - y) + x * y
        exact = g + x * (1 - x) * y * (1 - y) * sp.sin(k * (0.6 * x + 0.8 * y) + 1)
        spec = H.case_spec("helmholtz", params={"k": k}, forcing={"f": forcing(exact, k)},
                           bc={"dirichlet": [dirichlet(g)]}, output={"field": "u"})  # fmt: skip
        mine = [(p, ns) for kk, p, ns in runs if kk == k]
        settings = [{"resolution": n, "degree": p, "points_per_wavelength": 0.0}
                    for p, ns in mine for n in ns]  # fmt: skip
        errs, recs = errors_of(spec, settings, exact, tmp_path / f"k{k:g}")
        for i, (p, _) in enumerate(mine):
            check_orders(f"k={k:g} unit_square", errs[3 * i : 3 * i + 3], p)
        assert recs[-1]["meta"]["solver_info"]["resolution"] == 32


def test_mixed_conditions_variable_k_and_the_defaults(tmp_path):
    """Dirichlet (xmin), Neumann (ymin), Robin with constant (xmax) and variable (ymax)
    alpha; k = 4 + 2xy varies in space (k_max = 6 sampled over the bounding box)."""
    k = 4 + 2 * x * y
    g = sp.sin(x + 2 * y)
    exact = g + x * sp.cos(3 * x * y + 1) * sp.exp(y)
    grad = (sp.diff(exact, x), sp.diff(exact, y))
    flux = {tag: n[0] * grad[0] + n[1] * grad[1] for tag, n in SQUARE_NORMALS.items()}
    alpha_x, alpha_y = 6.0, 1 + x
    bc = {
        "dirichlet": [dirichlet(g, ["xmin"])],
        "neumann": [{"boundary": ["ymin"], "value": str(flux["ymin"]), "quantity": None}],
        "robin": [
            {"boundary": ["xmax"], "alpha": alpha_x, "value": str(flux["xmax"] + alpha_x * exact)},
            {"boundary": ["ymax"], "alpha": str(alpha_y),
             "value": str(flux["ymax"] + alpha_y * exact)},
        ],
    }  # fmt: skip
    spec = H.case_spec("helmholtz", params={"k": str(k)}, forcing={"f": forcing(exact, k)},
                       bc=bc, output={"field": "u"})  # fmt: skip
    settings = [{"resolution": n, "points_per_wavelength": 0.0} for n in (8, 16, 32)] + [{}]
    errs, recs = errors_of(spec, settings, exact, tmp_path)
    check_orders("mixed D/N/R k=4+2xy", errs[:3], 2)
    info = recs[3]["meta"]["solver_info"]
    print(f"firedrake helmholtz DEFAULTS error {errs[3]:.3e} resolution {info['resolution']}")
    assert math.isclose(info["k_max"], 6.0, rel_tol=1e-9)
    assert info["resolution"] == 32 and info["element_degree"] == 2
    assert errs[3] < 1e-4


def test_impedance_plane_waves_raise_the_resolution(tmp_path):
    """k = 20 with impedance (Robin, alpha = k) conditions all round: the wavelength rule
    must lift the DEFAULTS resolution above 32 and the solution stays accurate."""
    k = 20.0
    exact = sp.cos(k * (0.6 * x + 0.8 * y)) + x * sp.sin(k * (0.8 * x - 0.6 * y))
    grad = (sp.diff(exact, x), sp.diff(exact, y))
    robin = [{"boundary": [tag], "alpha": k,
              "value": str(n[0] * grad[0] + n[1] * grad[1] + k * exact)}
             for tag, n in SQUARE_NORMALS.items()]  # fmt: skip
    spec = H.case_spec("helmholtz", params={"k": k}, forcing={"f": forcing(exact, k)},
                       bc={"robin": robin}, output={"field": "u"}, n=81)  # fmt: skip
    errs, recs = errors_of(spec, [{}], exact, tmp_path)
    info = recs[0]["meta"]["solver_info"]
    n_waves = k / (2 * math.pi)
    expected = math.ceil(30.0 * n_waves**0.25 * n_waves / 2)
    print(f"\nfiredrake helmholtz k=20 impedance DEFAULTS: error {errs[0]:.3e} "
          f"resolution {info['resolution']} (rule {expected})")  # fmt: skip
    assert info["resolution"] == expected > 32
    assert errs[0] < 5e-3


def test_a_gmsh_circle_converges(tmp_path):
    k = 6.0
    g = sp.cos(2 * x - y)
    exact = g + (0.25 - (x - 0.5) ** 2 - (y - 0.5) ** 2) * sp.sin(3 * x + 2 * y)
    spec = H.case_spec("helmholtz", domain="circle", params={"k": k},
                       forcing={"f": forcing(exact, k)}, bc={"dirichlet": [dirichlet(exact)]},
                       output={"field": "u"})  # fmt: skip
    settings = [{"resolution": n, "points_per_wavelength": 0.0} for n in (8, 16, 32)]
    errs, _ = errors_of(spec, settings, exact, tmp_path)
    # straight-sided cells: the Dirichlet data is the exact solution, interpolated at the
    # boundary nodes of the polygon (where it is defined too), so P2 keeps its order
    # (with data g, exact only on the true circle, the O(h^2) geometry error shows)
    check_orders("circle", errs, 2)


def test_a_periodic_square_is_truly_periodic(tmp_path):
    k = 5.0
    exact = sp.sin(2 * sp.pi * x) * sp.exp(y) + sp.cos(3 * y)
    spec = H.case_spec(
        "helmholtz", domain="periodic_square", params={"k": k},
        forcing={"f": forcing(exact, k)},
        bc={"dirichlet": [dirichlet(exact, ["ymin", "ymax"])],
            "periodic": [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]},
        output={"field": "u"},
    )  # fmt: skip
    settings = [{"resolution": n, "points_per_wavelength": 0.0} for n in (8, 16, 32)]
    errs, recs = errors_of(spec, settings, exact, tmp_path)
    check_orders("periodic x", errs, 2)
    field = recs[-1]["arrays"]["u"]
    assert abs(field[:, 0] - field[:, -1]).max() < 1e-10


def test_unit_cube_p2(tmp_path):
    k = 3.0
    g = sp.cos(x + y - z)
    exact = g + x * (1 - x) * y * (1 - y) * z * (1 - z) * sp.exp(x + 2 * z)
    spec = H.case_spec("helmholtz", domain="unit_cube", params={"k": k},
                       forcing={"f": forcing(exact, k, dim=3)}, bc={"dirichlet": [dirichlet(g)]},
                       output={"field": "u"}, n=14)  # fmt: skip
    settings = [{"resolution": n, "points_per_wavelength": 0.0} for n in (4, 8)]
    errs, _ = errors_of(spec, settings, exact, tmp_path)
    orders = H.observed_orders(errs)
    print(f"\nfiredrake helmholtz unit_cube P2 n=(4, 8): errors {errs} orders {orders}")
    assert errs[1] < 1e-3 and orders[0] >= 2.5, (errs, orders)


def test_a_missing_wave_number_fails_loudly(tmp_path):
    spec = H.case_spec("helmholtz", params={}, forcing={"f": "1"},
                       bc={"dirichlet": [dirichlet(0)]}, output={"field": "u"}, n=11)  # fmt: skip
    error = H.run_failing("helmholtz", spec, {"resolution": 4}, tmp_path / "k")
    assert "KeyError" in error and "'k'" in error, error
    spec = H.case_spec("helmholtz", params={"k": 1.0}, forcing={"f": "1"},
                       bc={"dirichlet": [dirichlet(0)]}, output={"field": "u"},
                       time={"t0": 0.0, "t_end": 1.0}, n=11)  # fmt: skip
    error = H.run_failing("helmholtz", spec, {"resolution": 4}, tmp_path / "t")
    assert "steady" in error, error
