"""Boundary factors vanish on the boundary and not inside; leak-free data differs inside."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdeagent.cases.boundary_factor import (
    NoBoundaryFactor,
    boundary_factor,
    leak_free_solution,
)
from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import EvalGrid
from pdeagent.geometry import GEOMETRY_TEMPLATES, evaluation_mask, get_geometry, grid_points

PLANAR = sorted(n for n in GEOMETRY_TEMPLATES if n not in ("gear", "unit_cube"))


def boundary_samples(geometry, n=400):
    """Points on the boundary: from the exact pieces, or the star's polar curve."""
    if geometry.name == "star":
        p = geometry.params
        theta = np.linspace(0, 2 * math.pi, n, endpoint=False)
        r = p["r0"] * (1 + p["amplitude"] * np.cos(p["n_points"] * theta))
        return p["center"][0] + r * np.cos(theta), p["center"][1] + r * np.sin(theta)
    xs, ys = [], []
    for _, kind, data in geometry.pieces():
        s = np.linspace(0, 1, n)
        if kind == "seg":
            (ax, ay), (bx, by) = data
            xs.append(ax + s * (bx - ax))
            ys.append(ay + s * (by - ay))
        else:
            (cx, cy), r, t0, span = data
            xs.append(cx + r * np.cos(t0 + s * span))
            ys.append(cy + r * np.sin(t0 + s * span))
    return np.concatenate(xs), np.concatenate(ys)


@pytest.mark.parametrize("name", PLANAR)
def test_factor_vanishes_on_the_boundary_and_not_inside(name):
    geometry = get_geometry(name, {})
    phi = compile_expression(boundary_factor(name), 2)
    bx, by = boundary_samples(geometry)
    assert np.abs(phi(bx, by)).max() < 1e-9
    bounds = geometry.bbox()
    grid = EvalGrid(nx=81, ny=81, bbox=[c for pair in bounds for c in pair])
    mask = evaluation_mask(grid, geometry)
    values = np.asarray(phi(*grid_points(grid)))
    inside = values[mask.scored]
    assert np.abs(inside).max() <= 1.01  # scaled on a sample: max |phi| is about 1
    # far from vanishing inside: a Dirichlet-sampling cheat is off by |phi * w|
    assert np.sqrt(np.mean(inside**2)) > 0.05


def test_unit_cube_factor():
    phi = compile_expression(boundary_factor("unit_cube"), 3)
    assert phi(0.0, 0.3, 0.4) == 0 and phi(0.2, 1.0, 0.4) == 0 and phi(0.2, 0.3, 1.0) == 0
    assert phi(0.5, 0.5, 0.5) == pytest.approx(1.0, rel=1e-3)


def test_gear_has_no_factor():
    with pytest.raises(NoBoundaryFactor, match="gear"):
        boundary_factor("gear")


def test_leak_free_solution_differs_inside_only():
    u_star, g = leak_free_solution("circle", None, "x*y", "sin(3*x)+2")
    fu, fg = compile_expression(u_star, 2), compile_expression(g, 2)
    theta = np.linspace(0, 2 * np.pi, 50)
    bx, by = 0.5 + 0.5 * np.cos(theta), 0.5 + 0.5 * np.sin(theta)
    np.testing.assert_allclose(fu(bx, by), fg(bx, by), atol=1e-12)
    assert abs(fu(0.5, 0.5) - fg(0.5, 0.5)) > 0.5
