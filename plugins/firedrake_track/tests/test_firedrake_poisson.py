"""Firedrake Poisson solver (-div(kappa grad u) = f): manufactured-solution tests.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_poisson.py
"""

from __future__ import annotations

import firedrake_harness as H
import pytest
import sympy as sp

pytestmark = pytest.mark.firedrake

x, y, z = sp.symbols("x y z")


def forcing(u, kappa, dim=2):
    return str(-sum(sp.diff(kappa * sp.diff(u, c), c) for c in (x, y, z)[:dim]))


def dirichlet(g, boundary=("all",)):
    return {"boundary": list(boundary), "value": str(g), "quantity": None}


def errors_of(spec, settings, exact, tmp_path):
    recs = H.run_solver("poisson", spec, settings, tmp_path)
    return [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs]


def check_orders(label, errs, p, slack=0.3):
    orders = H.observed_orders(errs)
    print(f"\nfiredrake poisson {label} P{p}: errors {errs} orders {orders}")
    assert min(orders) >= p + 1 - slack, (errs, orders)
    return orders


G = sp.cos(x - 2 * y) + x
U = G + x * (1 - x) * y * (1 - y) * sp.exp(x + y) * sp.sin(3 * x + 1)
KAPPA = 1 + x**2 + sp.sin(y) ** 2 / 2


def test_p1_and_p2_converge_at_their_orders_on_the_unit_square(tmp_path):
    spec = H.case_spec("poisson", params={"kappa": str(KAPPA)}, forcing={"f": forcing(U, KAPPA)},
                       bc={"dirichlet": [dirichlet(U)]}, output={"field": "u"})  # fmt: skip
    settings = [{"resolution": n, "degree": p} for p in (1, 2) for n in (8, 16, 32)]
    errs = errors_of(spec, settings, U, tmp_path)
    check_orders("unit_square", errs[:3], 1)
    check_orders("unit_square", errs[3:], 2)


def test_neumann_and_robin_sides_converge(tmp_path):
    u = sp.sin(2 * x) * sp.cos(y) + x * y
    kappa = 2 + x
    flux = {"xmax": kappa * sp.diff(u, x), "ymax": kappa * sp.diff(u, y)}
    alpha = 3
    spec = H.case_spec(
        "poisson", params={"kappa": str(kappa)}, forcing={"f": forcing(u, kappa)},
        bc={
            "dirichlet": [dirichlet(u, ["xmin", "ymin"])],
            "neumann": [{"boundary": ["xmax"], "value": str(flux["xmax"]), "quantity": None}],
            "robin": [{"boundary": ["ymax"], "alpha": alpha,
                       "value": str(flux["ymax"] + alpha * u)}],
        },
        output={"field": "u"},
    )  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (8, 16, 32)], u, tmp_path)
    check_orders("neumann+robin", errs, 2)


def test_a_gmsh_circle_converges(tmp_path):
    g = sp.sin(2 * x + y)
    exact = g + (0.25 - (x - 0.5) ** 2 - (y - 0.5) ** 2) * sp.exp(x - y)
    kappa = 2 + x * y
    spec = H.case_spec("poisson", domain="circle", params={"kappa": str(kappa)},
                       forcing={"f": forcing(exact, kappa)}, bc={"dirichlet": [dirichlet(exact)]},
                       output={"field": "u"})  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (8, 16, 32)], exact, tmp_path)
    check_orders("circle", errs, 2)


def test_tagged_boundaries_of_an_annulus_carry_their_own_data(tmp_path):
    exact = sp.log(x**2 + y**2) + x
    spec = H.case_spec(
        "poisson", domain="annulus", params={"kappa": 1.0}, forcing={"f": forcing(exact, 1)},
        bc={"dirichlet": [dirichlet(exact, ["outer"])],
            "neumann": [{"boundary": ["inner"], "quantity": None,
                         "value": str(-(x * sp.diff(exact, x) + y * sp.diff(exact, y))
                                      / sp.sqrt(x**2 + y**2))}]},
        output={"field": "u"},
    )  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (12, 24)], exact, tmp_path)
    assert errs[1] < errs[0] / 3 and errs[1] < 2e-3, errs


def test_a_periodic_square_is_truly_periodic(tmp_path):
    exact = sp.sin(2 * sp.pi * x) * sp.exp(y) + y**2
    spec = H.case_spec(
        "poisson", domain="periodic_square", params={"kappa": 1.0},
        forcing={"f": forcing(exact, 1)},
        bc={"dirichlet": [dirichlet(exact, ["ymin", "ymax"])],
            "periodic": [{"axis": "x", "boundary": "xmin", "partner": "xmax"}]},
        output={"field": "u"},
    )  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (8, 16, 32)], exact, tmp_path)
    check_orders("periodic x", errs, 2)


def test_unit_cube_p2(tmp_path):
    exact = sp.sin(x + 2 * y) * sp.exp(z) + x * y * z
    spec = H.case_spec("poisson", domain="unit_cube", params={"kappa": 1.0},
                       forcing={"f": forcing(exact, 1, dim=3)},
                       bc={"dirichlet": [dirichlet(exact)]}, output={"field": "u"},
                       n=17)  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (4, 8)], exact, tmp_path)
    assert errs[1] < errs[0] / 5 and errs[1] < 1e-3, errs


def test_an_unknown_boundary_tag_fails_loudly(tmp_path):
    bc = {"dirichlet": [dirichlet(0, ["inlet"])]}
    spec = H.case_spec("poisson", params={"kappa": 1.0}, forcing={"f": "1"}, bc=bc,
                       output={"field": "u"})  # fmt: skip
    error = H.run_failing("poisson", spec, {"resolution": 4}, tmp_path)
    assert "unknown boundary tag 'inlet'" in error


def test_curved_cells_keep_p2_order_when_the_data_holds_only_on_the_circle(tmp_path):
    """The Dirichlet data g equals u only on the exact circle (u = g + phi with phi = 0
    there): straight-sided cells would put their midside nodes inside the circle, where
    g != u, and lose an order (2.0 measured); second-order cells on the exact outline
    keep P2's third order."""
    g = sp.sin(2 * x + y)
    exact = g + (0.25 - (x - 0.5) ** 2 - (y - 0.5) ** 2) * sp.exp(x - y)
    spec = H.case_spec("poisson", domain="circle", params={"kappa": 1.0},
                       forcing={"f": forcing(exact, 1)}, bc={"dirichlet": [dirichlet(g)]},
                       output={"field": "u"})  # fmt: skip
    errs = errors_of(spec, [{"resolution": n, "degree": 2} for n in (8, 16, 32)], exact, tmp_path)
    check_orders("circle, data only on the circle", errs, 2)
