"""Boundary factors: smooth functions that vanish on a domain's boundary (SPEC §4).

A leak-free manufactured solution is ``u* = g + phi * w`` with ``phi = 0`` on the
boundary: the Dirichlet data is ``g`` alone, which equals ``u*`` on the boundary and
differs from it inside, so sampling the boundary expression on the grid does not
solve the case. ``phi`` is a product of simple factors (lines, circles, the star's
polar curve); its zero set may cross the interior along lines, which is harmless.
It is scaled so that ``max |phi|`` over a fine sample of the domain is 1.

The gear has 4 n straight edges: a product of that many line factors underflows,
so it has no boundary factor here (its cases use Robin data or a numerical reference).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy as sp

from pdeagent.cases.expressions import SYMBOLS, compile_expression
from pdeagent.cases.model import EvalGrid
from pdeagent.geometry import GeometryError, get_geometry, grid_points

X, Y, Z = (SYMBOLS[n] for n in ("x", "y", "z"))


class NoBoundaryFactor(GeometryError):
    """The template has no usable smooth boundary factor."""


def _circle(c: Any, r: float) -> sp.Expr:
    return (X - c[0]) ** 2 + (Y - c[1]) ** 2 - sp.nsimplify(r) ** 2


def _line_through(c: Any, angle: float) -> sp.Expr:
    """Signed distance-like factor of the line through c at ``angle``."""
    return -sp.sin(sp.nsimplify(angle)) * (X - c[0]) + sp.cos(sp.nsimplify(angle)) * (Y - c[1])


def _raw_factor(name: str, p: dict[str, Any]) -> sp.Expr:
    q = {k: (sp.nsimplify(v) if isinstance(v, int | float) else v) for k, v in p.items()}
    if name in ("unit_square", "periodic_square"):
        return X * (1 - X) * Y * (1 - Y)
    if name == "unit_cube":
        return X * (1 - X) * Y * (1 - Y) * Z * (1 - Z)
    if name == "l_shape":
        cx, cy = (sp.nsimplify(v) for v in p["corner"])
        return X * (1 - X) * Y * (1 - Y) * (cx - X) * (cy - Y)
    if name == "square_with_hole":
        return X * (1 - X) * Y * (1 - Y) * _circle(p["center"], p["radius"])
    if name == "multi_hole":
        phi = X * (1 - X) * Y * (1 - Y)
        for cx, cy, r in p["holes"]:
            phi *= _circle((cx, cy), r)
        return phi
    if name == "circle":
        return -_circle(p["center"], p["radius"])
    if name == "annulus":
        return _circle(p["center"], p["r_inner"]) * -_circle(p["center"], p["r_outer"])
    if name == "eccentric_annulus":
        inner = _circle(p["center_inner"], p["r_inner"])
        return inner * -_circle(p["center_outer"], p["r_outer"])
    if name == "sector":
        c = p["center"]
        return (
            -_circle(c, p["radius"])
            * _line_through(c, p["angle_start"])
            * _line_through(c, p["angle_end"])
        )
    if name == "star":
        cx, cy = (sp.nsimplify(v) for v in p["center"])
        n = int(p["n_points"])
        r0, a = q["r0"], q["amplitude"]
        dx, dy = X - cx, Y - cy
        r2 = dx**2 + dy**2
        xr, yr = sp.symbols("xr yr", real=True)
        re_zn = sp.expand((xr + sp.I * yr) ** n).as_real_imag()[0].subs({xr: dx, yr: dy})
        # r^n (R(theta) - r) with R = r0 (1 + a cos(n theta)): smooth, zero on the curve
        return r0 * (r2 ** sp.Rational(n, 2) + a * re_zn) - r2 ** sp.Rational(n + 1, 2)
    if name == "t_junction":
        length, hb = q["bar_length"], q["bar_height"]
        w, hs = q["stem_width"], q["stem_length"]
        xs0, xs1 = length / 2 - w / 2, length / 2 + w / 2
        return X * (length - X) * (X - xs0) * (xs1 - X) * Y * (Y - hs) * (hs + hb - Y)
    if name == "dumbbell":
        r, h = p["radius"], 0.5 * float(p["bar_width"])
        yc = sp.nsimplify(p["center_left"][1])
        return (
            _circle(p["center_left"], r)
            * _circle(p["center_right"], r)
            * (sp.nsimplify(h) ** 2 - (Y - yc) ** 2)
        )
    if name == "gear":
        raise NoBoundaryFactor(
            "gear: no smooth boundary factor (a product of its 4*n_teeth edge lines "
            "underflows); use Robin data or a numerical reference for gear cases"
        )
    raise NoBoundaryFactor(f"no boundary factor for domain template {name!r}")


def boundary_factor(name: str, params: dict[str, Any] | None = None, *, samples: int = 201) -> str:
    """``phi`` for the template (params merged over defaults), scaled to max |phi| = 1."""
    geometry = get_geometry(name, params)
    raw = _raw_factor(name, geometry.params)
    bounds = geometry.bbox()
    n = samples if geometry.dim == 2 else 41
    grid = EvalGrid(
        nx=n,
        ny=n,
        nz=n if geometry.dim == 3 else None,
        bbox=[c for pair in bounds for c in pair],
    )
    points = grid_points(grid)
    values = np.asarray(compile_expression(str(raw), geometry.dim)(*points), dtype=float)
    inside = geometry.inside(*points)
    scale = float(np.abs(values[inside]).max())
    if not math.isfinite(scale) or scale <= 0:
        raise NoBoundaryFactor(f"{name}: the boundary factor vanishes on the whole domain")
    scale = float(f"{scale:.6g}")
    return str(raw / sp.nsimplify(scale, rational=True))


def leak_free_solution(name: str, params: dict[str, Any] | None, g: str, w: str) -> tuple[str, str]:
    """(u*, Dirichlet expression): ``u* = g + phi * w`` and the boundary data ``g``."""
    phi = boundary_factor(name, params)
    return f"({g}) + ({phi})*({w})", g
