"""Templates bounded by circular arcs: circle, annulus, eccentric annulus, sector, the
square with one or several holes, and the dumbbell."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pdeagent.geometry.base import GeometryError
from pdeagent.geometry.templates.distances import BoolArray, FloatArray
from pdeagent.geometry.templates.params import _number, _point, _positive
from pdeagent.geometry.templates.pieces import Piece, PiecewiseGeometry2D, _arc, _rect_pieces, _seg
from pdeagent.geometry.templates.text import _definition_text, _fmt, _g, _gpt, _pt


class SquareWithHole(PiecewiseGeometry2D):
    """The unit square minus an open disk (the hole's circle belongs to the closed domain)."""

    name: ClassVar[str] = "square_with_hole"
    boundary_tags: ClassVar[tuple[str, ...]] = ("outer", "hole")
    defaults: ClassVar[dict[str, Any]] = {"center": [0.5, 0.5], "radius": 0.2}

    def _check_params(self) -> None:
        cx, cy = _point(self.params, self.name, "center")
        r = _positive(self.params, self.name, "radius")
        if min(cx, 1 - cx, cy, 1 - cy) <= r:
            raise GeometryError(
                "square_with_hole: the hole (center, radius) must lie strictly inside "
                "the unit square"
            )

    def bbox(self) -> list[list[float]]:
        return [[0.0, 1.0], [0.0, 1.0]]

    def pieces(self) -> list[Piece]:
        c = _point(self.params, self.name, "center")
        return [
            *_rect_pieces(0.0, 1.0, 0.0, 1.0, ("outer",) * 4),
            _arc("hole", c, float(self.params["radius"])),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        square = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
        return square & (np.hypot(x - cx, y - cy) >= r)

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        return _definition_text(
            self,
            [
                f"Set: with (cx, cy) = `center` = {_gpt((cx, cy))} and R = `radius` = {_g(r)}: "
                "Omega = {(x, y) : 0 <= x <= 1, 0 <= y <= 1 and "
                "(x - cx)^2 + (y - cy)^2 >= R^2}, the unit square minus the open disk of "
                "radius R centred at (cx, cy) (the hole's circle belongs to Omega)."
            ],
            {
                "outer": "the four sides of the square (x = 0, x = 1, y = 0, y = 1)",
                "hole": f"the circle of radius {_g(r)} centred at {_gpt((cx, cy))}",
            },
        )

    def describe(self) -> str:
        return (
            f"the unit square [0,1] x [0,1] minus the disk of radius {_fmt(self.params['radius'])} "
            f"centred at {_pt(self.params['center'])}"
        )


class MultiHole(PiecewiseGeometry2D):
    """The unit square minus several disjoint disks ``holes = [[cx, cy, r], ...]``."""

    name: ClassVar[str] = "multi_hole"
    boundary_tags: ClassVar[tuple[str, ...]] = ("outer", "holes")
    defaults: ClassVar[dict[str, Any]] = {
        "holes": [[0.3, 0.3, 0.12], [0.7, 0.3, 0.12], [0.5, 0.7, 0.15]]
    }

    def _holes(self) -> list[tuple[float, float, float]]:
        return [(float(a), float(b), float(c)) for a, b, c in self.params["holes"]]

    def _check_params(self) -> None:
        holes = self.params["holes"]
        if not isinstance(holes, list | tuple) or not holes:
            raise GeometryError("multi_hole: holes must be a non-empty list of [cx, cy, r]")
        parsed = []
        for i, h in enumerate(holes):
            try:
                cx, cy, r = (float(v) for v in h)
            except (TypeError, ValueError) as exc:
                raise GeometryError(
                    f"multi_hole: holes[{i}] must be [cx, cy, r], got {h!r}"
                ) from exc
            if not (math.isfinite(cx) and math.isfinite(cy) and math.isfinite(r)) or r <= 0:
                raise GeometryError(f"multi_hole: holes[{i}] radius must be positive and finite")
            if min(cx, 1 - cx, cy, 1 - cy) <= r:
                raise GeometryError(
                    f"multi_hole: holes[{i}] must lie strictly inside the unit square"
                )
            parsed.append((cx, cy, r))
        for i in range(len(parsed)):
            for j in range(i + 1, len(parsed)):
                (xi, yi, ri), (xj, yj, rj) = parsed[i], parsed[j]
                if math.hypot(xi - xj, yi - yj) <= ri + rj:
                    raise GeometryError(f"multi_hole: holes[{i}] and holes[{j}] overlap or touch")

    def bbox(self) -> list[list[float]]:
        return [[0.0, 1.0], [0.0, 1.0]]

    def pieces(self) -> list[Piece]:
        return [
            *_rect_pieces(0.0, 1.0, 0.0, 1.0, ("outer",) * 4),
            *(_arc("holes", (cx, cy), r) for cx, cy, r in self._holes()),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        out = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
        for cx, cy, r in self._holes():
            out &= np.hypot(x - cx, y - cy) >= r
        return out

    def definition(self) -> str:
        holes = self._holes()
        listed = "; ".join(
            f"`holes[{i}]`: centre ({_g(cx)}, {_g(cy)}), radius {_g(r)}"
            for i, (cx, cy, r) in enumerate(holes)
        )
        return _definition_text(
            self,
            [
                "Each entry [cx_i, cy_i, r_i] of `holes` is a hole centred at (cx_i, cy_i) "
                f"with radius r_i: {listed}.",
                "Set: Omega = {(x, y) : 0 <= x <= 1, 0 <= y <= 1 and "
                "(x - cx_i)^2 + (y - cy_i)^2 >= r_i^2 for every hole i}, the unit square "
                f"minus the {len(holes)} disjoint open disks (the hole circles belong to Omega).",
            ],
            {
                "outer": "the four sides of the square (x = 0, x = 1, y = 0, y = 1)",
                "holes": "the circles of all holes together (one tag for all of them)",
            },
        )

    def describe(self) -> str:
        holes = "; ".join(
            f"radius {_fmt(r)} centred at {_pt((cx, cy))}" for cx, cy, r in self._holes()
        )
        return f"the unit square [0,1] x [0,1] minus {len(self._holes())} disjoint disks ({holes})"


class Circle(PiecewiseGeometry2D):
    """The closed disk of given centre and radius."""

    name: ClassVar[str] = "circle"
    boundary_tags: ClassVar[tuple[str, ...]] = ("boundary",)
    defaults: ClassVar[dict[str, Any]] = {"center": [0.5, 0.5], "radius": 0.5}

    def _check_params(self) -> None:
        _point(self.params, self.name, "center")
        _positive(self.params, self.name, "radius")

    def bbox(self) -> list[list[float]]:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        return [[cx - r, cx + r], [cy - r, cy + r]]

    def pieces(self) -> list[Piece]:
        return [
            _arc("boundary", _point(self.params, self.name, "center"), float(self.params["radius"]))
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        cx, cy = _point(self.params, self.name, "center")
        return np.hypot(x - cx, y - cy) <= float(self.params["radius"])

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        return _definition_text(
            self,
            [
                f"Set: with (cx, cy) = `center` = {_gpt((cx, cy))} and R = `radius` = {_g(r)}: "
                "Omega = {(x, y) : (x - cx)^2 + (y - cy)^2 <= R^2}, the closed disk."
            ],
            {"boundary": f"the circle of radius {_g(r)} centred at {_gpt((cx, cy))}"},
        )

    def describe(self) -> str:
        p = self.params
        return f"the disk of radius {_fmt(p['radius'])} centred at {_pt(p['center'])}"


class Annulus(PiecewiseGeometry2D):
    """The concentric annulus r_inner <= |x - center| <= r_outer."""

    name: ClassVar[str] = "annulus"
    boundary_tags: ClassVar[tuple[str, ...]] = ("inner", "outer")
    defaults: ClassVar[dict[str, Any]] = {"center": [0.0, 0.0], "r_inner": 0.5, "r_outer": 1.0}

    def _check_params(self) -> None:
        _point(self.params, self.name, "center")
        r_in = _positive(self.params, self.name, "r_inner")
        r_out = _positive(self.params, self.name, "r_outer")
        if r_in >= r_out:
            raise GeometryError("annulus: r_inner must be < r_outer")

    def bbox(self) -> list[list[float]]:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["r_outer"])
        return [[cx - r, cx + r], [cy - r, cy + r]]

    def pieces(self) -> list[Piece]:
        c = _point(self.params, self.name, "center")
        return [
            _arc("inner", c, float(self.params["r_inner"])),
            _arc("outer", c, float(self.params["r_outer"])),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        cx, cy = _point(self.params, self.name, "center")
        r = np.hypot(x - cx, y - cy)
        return (r >= float(self.params["r_inner"])) & (r <= float(self.params["r_outer"]))

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "center")
        r_in, r_out = float(self.params["r_inner"]), float(self.params["r_outer"])
        return _definition_text(
            self,
            [
                f"Set: with (cx, cy) = `center` = {_gpt((cx, cy))}: Omega = {{(x, y) : "
                "r_inner <= sqrt((x - cx)^2 + (y - cy)^2) <= r_outer} with "
                f"r_inner = {_g(r_in)} and r_outer = {_g(r_out)} (both circles belong to Omega)."
            ],
            {
                "inner": f"the circle of radius {_g(r_in)} centred at {_gpt((cx, cy))}",
                "outer": f"the circle of radius {_g(r_out)} centred at {_gpt((cx, cy))}",
            },
        )

    def describe(self) -> str:
        p = self.params
        return (
            f"the annulus centred at {_pt(p['center'])} with inner radius {_fmt(p['r_inner'])} "
            f"and outer radius {_fmt(p['r_outer'])}"
        )


class EccentricAnnulus(PiecewiseGeometry2D):
    """A disk minus a smaller, off-centre disk strictly inside it."""

    name: ClassVar[str] = "eccentric_annulus"
    boundary_tags: ClassVar[tuple[str, ...]] = ("inner", "outer")
    defaults: ClassVar[dict[str, Any]] = {
        "center_outer": [0.0, 0.0],
        "r_outer": 1.0,
        "center_inner": [0.2, 0.0],
        "r_inner": 0.4,
    }

    def _check_params(self) -> None:
        co = _point(self.params, self.name, "center_outer")
        ci = _point(self.params, self.name, "center_inner")
        r_out = _positive(self.params, self.name, "r_outer")
        r_in = _positive(self.params, self.name, "r_inner")
        if r_in >= r_out:
            raise GeometryError("eccentric_annulus: r_inner must be < r_outer")
        if math.hypot(co[0] - ci[0], co[1] - ci[1]) + r_in >= r_out:
            raise GeometryError(
                "eccentric_annulus: the inner disk (center_inner, r_inner) must lie strictly "
                "inside the outer disk (center_outer, r_outer)"
            )

    def bbox(self) -> list[list[float]]:
        cx, cy = _point(self.params, self.name, "center_outer")
        r = float(self.params["r_outer"])
        return [[cx - r, cx + r], [cy - r, cy + r]]

    def pieces(self) -> list[Piece]:
        return [
            _arc(
                "inner",
                _point(self.params, self.name, "center_inner"),
                float(self.params["r_inner"]),
            ),
            _arc(
                "outer",
                _point(self.params, self.name, "center_outer"),
                float(self.params["r_outer"]),
            ),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        cox, coy = _point(self.params, self.name, "center_outer")
        cix, ciy = _point(self.params, self.name, "center_inner")
        return (np.hypot(x - cox, y - coy) <= float(self.params["r_outer"])) & (
            np.hypot(x - cix, y - ciy) >= float(self.params["r_inner"])
        )

    def definition(self) -> str:
        co = _point(self.params, self.name, "center_outer")
        ci = _point(self.params, self.name, "center_inner")
        r_in, r_out = float(self.params["r_inner"]), float(self.params["r_outer"])
        return _definition_text(
            self,
            [
                f"Set: with (ox, oy) = `center_outer` = {_gpt(co)}, R = `r_outer` = "
                f"{_g(r_out)}, (ix, iy) = `center_inner` = {_gpt(ci)} and r = `r_inner` = "
                f"{_g(r_in)}: Omega = {{(x, y) : (x - ox)^2 + (y - oy)^2 <= R^2 and "
                "(x - ix)^2 + (y - iy)^2 >= r^2}, the closed outer disk minus the open inner "
                "disk (which lies strictly inside the outer one; both circles belong to Omega)."
            ],
            {
                "inner": f"the circle of radius {_g(r_in)} centred at {_gpt(ci)}",
                "outer": f"the circle of radius {_g(r_out)} centred at {_gpt(co)}",
            },
        )

    def describe(self) -> str:
        p = self.params
        return (
            f"the disk of radius {_fmt(p['r_outer'])} centred at {_pt(p['center_outer'])} minus "
            f"the off-centre disk of radius {_fmt(p['r_inner'])} centred at "
            f"{_pt(p['center_inner'])}"
        )


class Sector(PiecewiseGeometry2D):
    """The circular sector of angles [angle_start, angle_end] (radians, counter-clockwise).

    The default is three quarters of the unit disk (angles 0 to 3 pi / 2), which has a
    re-entrant corner at the centre.
    """

    name: ClassVar[str] = "sector"
    boundary_tags: ClassVar[tuple[str, ...]] = ("arc", "sides")
    defaults: ClassVar[dict[str, Any]] = {
        "center": [0.0, 0.0],
        "radius": 1.0,
        "angle_start": 0.0,
        "angle_end": 1.5 * math.pi,
    }

    def _check_params(self) -> None:
        _point(self.params, self.name, "center")
        _positive(self.params, self.name, "radius")
        a0 = _number(self.params, self.name, "angle_start")
        a1 = _number(self.params, self.name, "angle_end")
        if not (0.0 < a1 - a0 < 2.0 * math.pi):
            raise GeometryError(
                "sector: angle_end - angle_start must lie strictly between 0 and 2*pi"
            )

    def _angles(self) -> tuple[float, float]:
        a0 = float(self.params["angle_start"])
        return a0, float(self.params["angle_end"]) - a0

    def _corners(self) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float]]:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        a0, span = self._angles()
        return (
            (cx, cy),
            (cx + r * math.cos(a0), cy + r * math.sin(a0)),
            (cx + r * math.cos(a0 + span), cy + r * math.sin(a0 + span)),
        )

    def bbox(self) -> list[list[float]]:
        c, e0, e1 = self._corners()
        r = float(self.params["radius"])
        a0, span = self._angles()
        xs, ys = [c[0], e0[0], e1[0]], [c[1], e0[1], e1[1]]
        for k in range(4):  # axis extreme points of the circle lying on the arc
            phi = k * math.pi / 2
            if (phi - a0) % (2 * math.pi) <= span:
                xs.append(c[0] + r * math.cos(phi))
                ys.append(c[1] + r * math.sin(phi))
        return [[min(xs), max(xs)], [min(ys), max(ys)]]

    def pieces(self) -> list[Piece]:
        c, e0, e1 = self._corners()
        a0, span = self._angles()
        return [
            _arc("arc", c, float(self.params["radius"]), a0, span),
            _seg("sides", c, e0),
            _seg("sides", c, e1),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        cx, cy = _point(self.params, self.name, "center")
        a0, span = self._angles()
        phi = np.mod(np.arctan2(y - cy, x - cx) - a0, 2 * math.pi)
        return (np.hypot(x - cx, y - cy) <= float(self.params["radius"])) & (phi <= span)

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["radius"])
        a0, span = self._angles()
        c, e0, e1 = self._corners()
        scale = r + abs(cx) + abs(cy)
        return _definition_text(
            self,
            [
                f"Notation: (cx, cy) = `center` = {_gpt((cx, cy))}, R = `radius` = {_g(r)}, "
                f"a0 = `angle_start` = {_g(a0)} rad, a1 = `angle_end` = "
                f"{_g(a0 + span)} rad; the opening angle a1 - a0 = {_g(span)} rad "
                f"= {_g(span / math.pi)}*pi ({_g(span / (2 * math.pi))} of the full disk).",
                "Set: Omega = {(x, y) : (x - cx)^2 + (y - cy)^2 <= R^2 and "
                "(phi - a0) mod 2*pi <= a1 - a0}, where phi = atan2(y - cy, x - cx) is the "
                "polar angle about the centre and mod 2*pi maps into [0, 2*pi) (angles in "
                "radians, counter-clockwise from the +x direction); i.e. the points at "
                "distance <= R from the centre whose polar angle lies in [a0, a1] going "
                "counter-clockwise from a0 (the centre itself belongs to Omega). "
                f"The straight sides end at {_gpt(e0, scale)} (angle a0) "
                f"and {_gpt(e1, scale)} (angle a1).",
            ],
            {
                "arc": (
                    f"the circular arc of radius {_g(r)} about {_gpt(c)} from angle a0 "
                    "counter-clockwise to angle a1"
                ),
                "sides": (
                    f"the two straight radii from the centre {_gpt(c)} to "
                    f"{_gpt(e0, scale)} and to {_gpt(e1, scale)}"
                ),
            },
        )

    def describe(self) -> str:
        p = self.params
        a0, span = self._angles()
        return (
            f"the circular sector of radius {_fmt(p['radius'])} centred at {_pt(p['center'])} "
            f"covering the polar angles from {_fmt(a0)} to {_fmt(a0 + span)} rad "
            f"({_fmt(span / (2 * math.pi))} of the full disk)"
        )


class Dumbbell(PiecewiseGeometry2D):
    """Two equal disks joined by a horizontal bar; the union boundary is represented exactly.

    Disks of radius ``radius`` centred at ``(x_left, y_c)`` and ``(x_right, y_c)``; the bar
    is ``[x_left, x_right] x [y_c - h, y_c + h]`` with ``h = bar_width / 2 < radius``.  The
    boundary consists of two arcs (the disk circles outside the bar) and two straight bar
    edges (outside the disks), so distances are exact.
    """

    name: ClassVar[str] = "dumbbell"
    boundary_tags: ClassVar[tuple[str, ...]] = ("boundary",)
    defaults: ClassVar[dict[str, Any]] = {
        "center_left": [0.25, 0.5],
        "center_right": [0.75, 0.5],
        "radius": 0.2,
        "bar_width": 0.1,
    }

    def _check_params(self) -> None:
        left = _point(self.params, self.name, "center_left")
        right = _point(self.params, self.name, "center_right")
        r = _positive(self.params, self.name, "radius")
        w = _positive(self.params, self.name, "bar_width")
        if left[1] != right[1]:
            raise GeometryError("dumbbell: center_left and center_right must have the same y")
        if right[0] - left[0] <= 2 * r:
            raise GeometryError(
                "dumbbell: center_right x - center_left x must exceed 2*radius (disjoint disks)"
            )
        if w >= 2 * r:
            raise GeometryError("dumbbell: bar_width must be < 2*radius")

    def _geom(self) -> tuple[float, float, float, float, float]:
        xl, yc = _point(self.params, self.name, "center_left")
        xr, _ = _point(self.params, self.name, "center_right")
        return xl, xr, yc, float(self.params["radius"]), 0.5 * float(self.params["bar_width"])

    def bbox(self) -> list[list[float]]:
        xl, xr, yc, r, _ = self._geom()
        return [[xl - r, xr + r], [yc - r, yc + r]]

    def pieces(self) -> list[Piece]:
        xl, xr, yc, r, h = self._geom()
        alpha = math.asin(h / r)  # half-angle of the circle part covered by the bar
        s = math.sqrt(r * r - h * h)
        span = 2 * math.pi - 2 * alpha
        return [
            _arc("boundary", (xl, yc), r, alpha, span),
            _arc("boundary", (xr, yc), r, math.pi + alpha, span),
            _seg("boundary", (xl + s, yc + h), (xr - s, yc + h)),
            _seg("boundary", (xl + s, yc - h), (xr - s, yc - h)),
        ]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        xl, xr, yc, r, h = self._geom()
        disks = (np.hypot(x - xl, y - yc) <= r) | (np.hypot(x - xr, y - yc) <= r)
        bar = (x >= xl) & (x <= xr) & (np.abs(y - yc) <= h)
        return disks | bar

    def definition(self) -> str:
        xl, xr, yc, r, h = self._geom()
        s = math.sqrt(r * r - h * h)
        alpha = math.asin(h / r)
        return _definition_text(
            self,
            [
                f"Notation: (xl, yc) = `center_left` = {_gpt((xl, yc))}, (xr, yc) = "
                f"`center_right` = {_gpt((xr, yc))} (same y), R = `radius` = {_g(r)}, "
                f"h = `bar_width`/2 = {_g(h)}.",
                "Set: Omega = D_left ∪ D_right ∪ B, with the closed disks "
                "D_left = {(x - xl)^2 + (y - yc)^2 <= R^2}, "
                "D_right = {(x - xr)^2 + (y - yc)^2 <= R^2} and the closed bar "
                f"B = [xl, xr] x [yc - h, yc + h] = [{_g(xl)}, {_g(xr)}] x "
                f"[{_g(yc - h)}, {_g(yc + h)}] joining the two centres.",
                "Its boundary: the left circle except its part facing the bar (polar angles "
                "about (xl, yc) in [alpha, 2*pi - alpha]), the right circle except its part "
                "facing the bar (polar angles about (xr, yc) in [pi + alpha, 3*pi - alpha]), "
                f"with alpha = asin(h/R) = {_g(alpha)} rad, and the two straight bar edges "
                f"y = {_g(yc - h)} and y = {_g(yc + h)} for xl + sqrt(R^2 - h^2) <= x <= "
                f"xr - sqrt(R^2 - h^2), i.e. {_g(xl + s)} <= x <= {_g(xr - s)}.",
            ],
            {"boundary": "the whole outline (both arcs and both bar edges)"},
        )

    def describe(self) -> str:
        xl, xr, yc, r, h = self._geom()
        return (
            f"a dumbbell: the union of the disks of radius {_fmt(r)} centred at {_pt((xl, yc))} "
            f"and {_pt((xr, yc))} and the bar [{_fmt(xl)},{_fmt(xr)}] x "
            f"[{_fmt(yc - h)},{_fmt(yc + h)}]"
        )
