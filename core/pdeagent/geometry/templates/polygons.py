"""Polygonal templates: L-shape, T-junction and gear."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from pdeagent.geometry.base import GeometryError
from pdeagent.geometry.templates.distances import (
    BoolArray,
    FloatArray,
    Polygon,
    polygon_contains_strict,
)
from pdeagent.geometry.templates.params import _point, _positive
from pdeagent.geometry.templates.pieces import Piece, PiecewiseGeometry2D, _seg
from pdeagent.geometry.templates.text import _definition_text, _fmt, _g, _gpt, _pt


class PolygonGeometry(PiecewiseGeometry2D):
    """A polygonal domain; subclasses give tagged vertices (tag of edge k -> k+1)."""

    def tagged_vertices(self) -> list[tuple[tuple[float, float], str]]:
        raise NotImplementedError

    def polygon(self) -> Polygon:
        if not hasattr(self, "_polygon"):
            self._polygon = Polygon([v for v, _ in self.tagged_vertices()])
        return self._polygon

    def bbox(self) -> list[list[float]]:
        v = self.polygon().vertices
        return [
            [float(v[:, 0].min()), float(v[:, 0].max())],
            [float(v[:, 1].min()), float(v[:, 1].max())],
        ]

    def pieces(self) -> list[Piece]:
        tv = self.tagged_vertices()
        return [_seg(tag, tv[k][0], tv[(k + 1) % len(tv)][0]) for k, (_, tag) in enumerate(tv)]

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        return polygon_contains_strict(x, y, self.polygon().vertices)


class LShape(PolygonGeometry):
    """Unit square minus the upper-right rectangle [cx,1] x [cy,1] (default corner (0.5, 0.5))."""

    name: ClassVar[str] = "l_shape"
    boundary_tags: ClassVar[tuple[str, ...]] = ("outer", "reentrant")
    defaults: ClassVar[dict[str, Any]] = {"corner": [0.5, 0.5]}

    def _check_params(self) -> None:
        cx, cy = _point(self.params, self.name, "corner")
        if not (0.0 < cx < 1.0 and 0.0 < cy < 1.0):
            raise GeometryError(
                f"l_shape: corner must lie strictly inside (0,1) x (0,1), got {_pt((cx, cy))}"
            )

    def tagged_vertices(self) -> list[tuple[tuple[float, float], str]]:
        cx, cy = _point(self.params, self.name, "corner")
        return [
            ((0.0, 0.0), "outer"),
            ((1.0, 0.0), "outer"),
            ((1.0, cy), "reentrant"),
            ((cx, cy), "reentrant"),
            ((cx, 1.0), "outer"),
            ((0.0, 1.0), "outer"),
        ]

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "corner")
        c = _gpt((cx, cy))
        vertices = ", ".join(_gpt(v) for v, _ in self.tagged_vertices())
        return _definition_text(
            self,
            [
                f"Set: with (cx, cy) = `corner` = {c}: Omega = {{(x, y) : 0 <= x <= 1, "
                "0 <= y <= 1, "
                f"and (x <= cx or y <= cy)}}, i.e. the unit square [0, 1] x [0, 1] minus the "
                f"upper-right rectangle {{x > {_g(cx)} and y > {_g(cy)}}}.",
                f"Equivalently the closed polygon with the vertices, counter-clockwise, "
                f"(0, 0), (1, 0), (1, cy), (cx, cy), (cx, 1), (0, 1) = {vertices}; the "
                f"re-entrant corner is {c}.",
            ],
            {
                "outer": (
                    f"the four edges y = 0 (0 <= x <= 1), x = 1 (0 <= y <= {_g(cy)}), "
                    f"y = 1 (0 <= x <= {_g(cx)}) and x = 0 (0 <= y <= 1)"
                ),
                "reentrant": (
                    f"the two edges meeting at the re-entrant corner: y = {_g(cy)} "
                    f"({_g(cx)} <= x <= 1) and x = {_g(cx)} ({_g(cy)} <= y <= 1)"
                ),
            },
        )

    def describe(self) -> str:
        cx, cy = _point(self.params, self.name, "corner")
        return (
            f"the L-shaped domain [0,1] x [0,1] minus the upper-right rectangle "
            f"[{_fmt(cx)},1] x [{_fmt(cy)},1], with the re-entrant corner at {_pt((cx, cy))}"
        )


class TJunction(PolygonGeometry):
    """A vertical stem x in [L/2 - w/2, L/2 + w/2], y in [0, H] joined to a bar y in [H, H + h]."""

    name: ClassVar[str] = "t_junction"
    boundary_tags: ClassVar[tuple[str, ...]] = ("inlet", "outlet_left", "outlet_right", "walls")
    defaults: ClassVar[dict[str, Any]] = {
        "bar_length": 1.0,
        "bar_height": 0.2,
        "stem_width": 0.2,
        "stem_length": 0.6,
    }

    def _check_params(self) -> None:
        for key in self.defaults:
            _positive(self.params, self.name, key)
        if float(self.params["stem_width"]) >= float(self.params["bar_length"]):
            raise GeometryError("t_junction: stem_width must be < bar_length")

    def _dims(self) -> tuple[float, float, float, float]:
        p = self.params
        return (
            float(p["bar_length"]),
            float(p["bar_height"]),
            float(p["stem_width"]),
            float(p["stem_length"]),
        )

    def tagged_vertices(self) -> list[tuple[tuple[float, float], str]]:
        length, hb, w, hs = self._dims()
        xs0, xs1 = 0.5 * length - 0.5 * w, 0.5 * length + 0.5 * w
        return [
            ((xs0, 0.0), "inlet"),
            ((xs1, 0.0), "walls"),
            ((xs1, hs), "walls"),
            ((length, hs), "outlet_right"),
            ((length, hs + hb), "walls"),
            ((0.0, hs + hb), "outlet_left"),
            ((0.0, hs), "walls"),
            ((xs0, hs), "walls"),
        ]

    def definition(self) -> str:
        length, hb, w, hs = self._dims()
        xs0, xs1 = 0.5 * length - 0.5 * w, 0.5 * length + 0.5 * w
        top = hs + hb
        vertices = ", ".join(_gpt(v) for v, _ in self.tagged_vertices())
        return _definition_text(
            self,
            [
                "Set: with L = `bar_length`, H_bar = `bar_height`, w = `stem_width` and "
                "H_stem = `stem_length`: Omega = S ∪ B, the union of the vertical stem "
                f"S = [L/2 - w/2, L/2 + w/2] x [0, H_stem] = [{_g(xs0)}, {_g(xs1)}] x "
                f"[0, {_g(hs)}] and the horizontal bar B = [0, L] x [H_stem, H_stem + H_bar] "
                f"= [0, {_g(length)}] x [{_g(hs)}, {_g(top)}] (the stem is centred under "
                "the bar and meets it along y = H_stem).",
                "Equivalently the closed polygon with the vertices, counter-clockwise, "
                "(L/2 - w/2, 0), (L/2 + w/2, 0), (L/2 + w/2, H_stem), (L, H_stem), "
                "(L, H_stem + H_bar), (0, H_stem + H_bar), (0, H_stem), (L/2 - w/2, H_stem) "
                f"= {vertices}.",
            ],
            {
                "inlet": f"the bottom end of the stem, y = 0 ({_g(xs0)} <= x <= {_g(xs1)})",
                "outlet_left": f"the left end of the bar, x = 0 ({_g(hs)} <= y <= {_g(top)})",
                "outlet_right": (
                    f"the right end of the bar, x = {_g(length)} ({_g(hs)} <= y <= {_g(top)})"
                ),
                "walls": (
                    f"all other edges: the stem sides x = {_g(xs0)} and x = {_g(xs1)} "
                    f"(0 <= y <= {_g(hs)}), the bar bottom y = {_g(hs)} (0 <= x <= {_g(xs0)} "
                    f"and {_g(xs1)} <= x <= {_g(length)}) and the bar top y = {_g(top)} "
                    f"(0 <= x <= {_g(length)})"
                ),
            },
        )

    def describe(self) -> str:
        length, hb, w, hs = self._dims()
        xs0, xs1 = 0.5 * length - 0.5 * w, 0.5 * length + 0.5 * w
        return (
            f"a T-junction: the union of the vertical stem [{_fmt(xs0)},{_fmt(xs1)}] x "
            f"[0,{_fmt(hs)}] (inlet at its bottom end y=0) and the horizontal bar "
            f"[0,{_fmt(length)}] x [{_fmt(hs)},{_fmt(hs + hb)}] (outlets at x=0 and "
            f"x={_fmt(length)})"
        )


class Gear(PolygonGeometry):
    """A gear outline: ``n_teeth`` straight-sided trapezoidal teeth between root and tip radius.

    Tooth k is centred at angle ``2 pi k / n_teeth``; its base spans ``root_fraction``
    and its top ``tip_fraction`` of the angular pitch.  Consecutive tooth bases are
    joined by straight chords at the root radius, so the outline is a polygon with
    ``4 n_teeth`` vertices.
    """

    name: ClassVar[str] = "gear"
    boundary_tags: ClassVar[tuple[str, ...]] = ("boundary",)
    defaults: ClassVar[dict[str, Any]] = {
        "center": [0.5, 0.5],
        "r_root": 0.3,
        "r_tip": 0.4,
        "n_teeth": 12,
        "root_fraction": 0.5,
        "tip_fraction": 0.3,
    }

    def _check_params(self) -> None:
        _point(self.params, self.name, "center")
        r_root = _positive(self.params, self.name, "r_root")
        r_tip = _positive(self.params, self.name, "r_tip")
        if r_root >= r_tip:
            raise GeometryError("gear: r_root must be < r_tip")
        n = self.params["n_teeth"]
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 3:
            raise GeometryError(f"gear: n_teeth must be an integer >= 3, got {n!r}")
        fr = _positive(self.params, self.name, "root_fraction")
        ft = _positive(self.params, self.name, "tip_fraction")
        if fr >= 1.0:
            raise GeometryError("gear: root_fraction must be < 1")
        if ft > fr:
            raise GeometryError("gear: tip_fraction must be <= root_fraction")

    def tagged_vertices(self) -> list[tuple[tuple[float, float], str]]:
        cx, cy = _point(self.params, self.name, "center")
        r_root, r_tip = float(self.params["r_root"]), float(self.params["r_tip"])
        n = int(self.params["n_teeth"])
        fr, ft = float(self.params["root_fraction"]), float(self.params["tip_fraction"])
        pitch = 2.0 * math.pi / n
        out: list[tuple[tuple[float, float], str]] = []
        for k in range(n):
            t = k * pitch
            for r, a in (
                (r_root, t - 0.5 * fr * pitch),
                (r_tip, t - 0.5 * ft * pitch),
                (r_tip, t + 0.5 * ft * pitch),
                (r_root, t + 0.5 * fr * pitch),
            ):
                out.append(((cx + r * math.cos(a), cy + r * math.sin(a)), "boundary"))
        return out

    def definition(self) -> str:
        cx, cy = _point(self.params, self.name, "center")
        r_root, r_tip = float(self.params["r_root"]), float(self.params["r_tip"])
        n = int(self.params["n_teeth"])
        fr, ft = float(self.params["root_fraction"]), float(self.params["tip_fraction"])
        pitch = 2.0 * math.pi / n
        scale = r_tip + abs(cx) + abs(cy)
        tooth0 = ", ".join(_gpt(v, scale) for v, _ in self.tagged_vertices()[:4])
        return _definition_text(
            self,
            [
                f"Notation: (cx, cy) = `center` = {_gpt((cx, cy))}, n = `n_teeth` = {n}, "
                f"root radius r_root = {_g(r_root)}, tip radius r_tip = {_g(r_tip)}, "
                f"root_fraction = {_g(fr)}, tip_fraction = {_g(ft)}, "
                f"angular pitch p = 2*pi/n = {_g(pitch)} rad, and "
                "P(r, a) = (cx + r*cos(a), cy + r*sin(a)) is the point at distance r from the "
                "centre at polar angle a (radians, counter-clockwise from the +x direction).",
                "Teeth: tooth k (k = 0, 1, ..., n-1) is centred on the polar angle "
                "theta_k = k*p; tooth 0 points along the +x direction from the centre and "
                "the teeth follow counter-clockwise. The tooth base (at radius `r_root`) "
                "spans the angles theta_k ± `root_fraction`*p/2 "
                f"(= ± {_g(0.5 * fr * pitch)} rad) and the tooth top (at radius `r_tip`) the "
                f"angles theta_k ± `tip_fraction`*p/2 (= ± {_g(0.5 * ft * pitch)} rad).",
                "Set: Omega is the closed polygon (its interior plus its edges) with the "
                f"{4 * n} vertices, in this (counter-clockwise) order, for k = 0, ..., n-1: "
                "P(r_root, theta_k - root_fraction*p/2), P(r_tip, theta_k - tip_fraction*p/2), "
                "P(r_tip, theta_k + tip_fraction*p/2), P(r_root, theta_k + root_fraction*p/2); "
                "consecutive vertices, and the last with the first, are joined by straight "
                "segments. So each tooth is a trapezoid with straight flanks and a straight "
                "top, and consecutive teeth are joined by a straight chord between "
                "P(r_root, theta_k + root_fraction*p/2) and "
                "P(r_root, theta_(k+1) - root_fraction*p/2) (no circular arcs anywhere: the "
                "chords dip inside the circle of radius r_root and the tooth tops inside the "
                "circle of radius r_tip).",
                f"The four vertices of tooth 0 are {tooth0}.",
            ],
            {"boundary": "the whole polygonal outline"},
        )

    def describe(self) -> str:
        p = self.params
        return (
            f"a gear centred at {_pt(p['center'])} with {int(p['n_teeth'])} straight-sided "
            f"trapezoidal teeth between root radius {_fmt(p['r_root'])} and tip radius "
            f"{_fmt(p['r_tip'])} (tooth base {_fmt(p['root_fraction'])} and tooth top "
            f"{_fmt(p['tip_fraction'])} of the angular pitch; polygonal outline)"
        )
