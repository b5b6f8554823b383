"""Manufactured-solution forcing, checked against hand-derived formulas."""

from __future__ import annotations

import pytest
import sympy as sp

from pdeagent.cases.mms import MMSError, divergence_free_from_stream, forcing

x, y, t = sp.symbols("x y t")


def same(a: str, b: str) -> bool:
    return (
        sp.simplify(
            sp.sympify(a, locals={"x": x, "y": y, "t": t})
            - sp.sympify(b, locals={"x": x, "y": y, "t": t})
        )
        == 0
    )


def test_poisson_sin_sin():
    f = forcing("poisson", {"u": "sin(pi*x)*sin(pi*y)"}, {"kappa": 1})["f"]
    assert same(f, "2*pi**2*sin(pi*x)*sin(pi*y)")


def test_poisson_variable_kappa():
    # -(d/dx((1+x) * 2x)) = -(2 + 4x) for u = x**2
    assert same(forcing("poisson", {"u": "x**2"}, {"kappa": "1 + x"})["f"], "-2 - 4*x")


def test_heat_adds_the_time_derivative():
    f = forcing("heat", {"u": "exp(-t)*x*y"}, {"kappa": 2}, transient=True)["f"]
    assert same(f, "-exp(-t)*x*y")


def test_helmholtz():
    assert same(forcing("helmholtz", {"u": "sin(3*x)"}, {"k": 2})["f"], "5*sin(3*x)")


def test_biharmonic_of_a_quartic():
    assert same(forcing("biharmonic", {"u": "x**4"}, {})["f"], "24")


@pytest.mark.parametrize(
    ("law", "expected"),
    [
        ("linear", "2*x"),
        ("cubic", "2*x**3"),
        ("allen_cahn", "2*(x**3 - x)"),
        ("logistic", "-2*x*(1 - x)"),
    ],
)
def test_reaction_laws(law, expected):
    params = {"epsilon": 1, "sigma": 2, "reaction_law": law}
    assert same(forcing("reaction_diffusion", {"u": "x"}, params)["f"], expected)


def test_convection_diffusion():
    params = {"epsilon": "0.1", "beta": ["1", "2"]}
    assert same(forcing("convection_diffusion", {"u": "x*y"}, params)["f"], "y + 2*x")


def test_burgers_convective_term_is_u_b_dot_grad_u():
    params = {"nu": 0, "b": ["1", "1"]}
    f = forcing("burgers", {"u": "x + y"}, params, transient=True)["f"]
    assert same(f, "2*(x + y)")


def test_wave():
    assert same(
        forcing("wave", {"u": "sin(t)*x**2"}, {"c": 3}, transient=True)["f"],
        "-sin(t)*x**2 - 18*sin(t)",
    )


def test_elasticity_plane_strain_linear_field_has_no_body_force():
    out = forcing(
        "linear_elasticity", {"u": ["x", "y"]}, {"E": 1, "nu": 0.3, "model": "plane_strain"}
    )
    assert out["f"] == ["0", "0"]


def test_elasticity_quadratic_field_lame():
    # u = (x**2, 0): sigma_xx = (2 mu + lam) 2x, f_x = -(2 mu + lam) * 2
    out = forcing(
        "linear_elasticity", {"u": ["x**2", "0"]}, {"lambda": 3, "mu": 1, "model": "plane_strain"}
    )
    assert same(out["f"][0], "-10") and same(out["f"][1], "0")


def test_stokes_from_a_stream_function():
    u = divergence_free_from_stream("x**2*(1-x)**2*y**2*(1-y)**2")
    out = forcing("stokes", {"u": u, "p": "x - 0.5"}, {"nu": 1})
    assert len(out["f"]) == 2


def test_stokes_rejects_a_divergent_velocity():
    with pytest.raises(MMSError, match="not divergence-free"):
        forcing("stokes", {"u": ["x", "0"], "p": "0"}, {"nu": 1})


def test_navier_stokes_adds_convection():
    out = forcing("navier_stokes", {"u": ["y", "0"], "p": "0"}, {"nu": 1})
    assert same(out["f"][0], "0") and same(out["f"][1], "0")
    out = forcing("navier_stokes", {"u": ["x", "-y"], "p": "0"}, {"nu": 1})
    assert same(out["f"][0], "x") and same(out["f"][1], "y")


def test_unknown_family():
    with pytest.raises(MMSError):
        forcing("maxwell", {"u": "x"}, {})
