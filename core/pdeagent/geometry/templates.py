"""The 14 domain templates (SPEC §6).

Every 2-D template except ``star`` describes its boundary exactly as a list of
tagged pieces (straight segments and circular arcs).  The unsigned distance to
the boundary is then the minimum of the exact distances to the pieces, and the
boundary tag of a point is the tag of the nearest piece.  Inside-tests are
analytic (radius comparisons, half-plane tests, or an exact even-odd
point-in-polygon test); points on the boundary count as inside (a relative
tolerance of 1e-12 of the domain size absorbs rounding).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.spatial import cKDTree

from pdeagent.geometry.base import Geometry, GeometryError

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

_REL_TOL = 1e-12
"""Relative tolerance (of the domain size) below which a point counts as on the boundary."""


# --------------------------------------------------------------------------- helpers


def _as_xy(*coords: Any) -> tuple[FloatArray, ...]:
    arrays = [np.asarray(c, dtype=np.float64) for c in coords]
    return tuple(np.broadcast_arrays(*arrays))


def _fmt(v: float) -> str:
    return f"{float(v):.6g}"


def _pt(p: Any) -> str:
    return "(" + ", ".join(_fmt(c) for c in p) + ")"


def _val(v: Any) -> str:
    """A parameter value as the case JSON writes it: ints as they are, floats by their
    shortest round-trip repr, sequences in brackets."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return repr(float(v))
    if isinstance(v, list | tuple | np.ndarray):
        return "[" + ", ".join(_val(e) for e in v) + "]"
    return str(v)


def _g(v: float, scale: float = 1.0) -> str:
    """A derived number to 12 significant digits (rounding noise below 1e-13 of
    ``scale`` prints as 0)."""
    v = float(v)
    if abs(v) <= 1e-13 * max(abs(scale), 1.0):
        v = 0.0
    return f"{v:.12g}"


def _gpt(p: Any, scale: float = 1.0) -> str:
    return "(" + ", ".join(_g(c, scale) for c in p) + ")"


def _definition_text(
    geometry: Geometry,
    set_lines: list[str],
    tags: dict[str, str],
    notes: tuple[str, ...] = (),
) -> str:
    """The markdown of :meth:`Geometry.definition`: parameters, set, notes, boundary tags."""
    if geometry.params:
        plist = ", ".join(f"`{k} = {_val(v)}`" for k, v in geometry.params.items())
        params = f"- Parameters (`domain.geometry_params`, defaults filled in): {plist}."
    else:
        params = "- Parameters: none (this template has no `geometry_params`)."
    if set(tags) != set(geometry.boundary_tags):
        raise RuntimeError(
            f"{geometry.name}: definition() describes the tags {sorted(tags)}, but the "
            f"template's boundary_tags are {sorted(geometry.boundary_tags)}"
        )
    lines = [
        f"Template `{geometry.name}`. Omega is the closed set below: points on its boundary "
        "belong to Omega.",
        params,
        *(f"- {line}" for line in set_lines),
        *(f"- {note}" for note in notes),
        "- Boundary tags (the names `bc` uses; `all` means the whole boundary): "
        + "; ".join(f"`{tag}` = {tags[tag]}" for tag in geometry.boundary_tags)
        + ".",
    ]
    return "\n".join(lines)


def segment_distance(
    x: FloatArray, y: FloatArray, a: tuple[float, float], b: tuple[float, float]
) -> FloatArray:
    """Exact Euclidean distance from points (x, y) to the closed segment [a, b]."""
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    if length2 == 0.0:
        return np.hypot(x - ax, y - ay)
    t = np.clip(((x - ax) * dx + (y - ay) * dy) / length2, 0.0, 1.0)
    return np.hypot(x - (ax + t * dx), y - (ay + t * dy))


def arc_distance(
    x: FloatArray,
    y: FloatArray,
    center: tuple[float, float],
    radius: float,
    theta0: float = 0.0,
    span: float = 2.0 * math.pi,
) -> FloatArray:
    """Exact distance to the circular arc of angles [theta0, theta0 + span] (counter-clockwise).

    If the radial projection of the point lies on the arc the distance is
    ``|r - R|``; otherwise the nearest arc point is the endpoint closest in angle
    (the distance to a circle point grows monotonically with the angle difference).
    """
    cx, cy = center
    rx, ry = x - cx, y - cy
    r = np.hypot(rx, ry)
    radial = np.abs(r - radius)
    if span >= 2.0 * math.pi:
        return radial
    phi = np.mod(np.arctan2(ry, rx) - theta0, 2.0 * math.pi)
    on_arc = phi <= span
    e0 = (cx + radius * math.cos(theta0), cy + radius * math.sin(theta0))
    e1 = (cx + radius * math.cos(theta0 + span), cy + radius * math.sin(theta0 + span))
    ends = np.minimum(np.hypot(x - e0[0], y - e0[1]), np.hypot(x - e1[0], y - e1[1]))
    return np.where(on_arc, radial, ends)


def polygon_contains_strict(x: FloatArray, y: FloatArray, vertices: FloatArray) -> BoolArray:
    """Even-odd (crossing-number) test; boundary points may land on either side."""
    inside = np.zeros(x.shape, dtype=bool)
    n = len(vertices)
    for k in range(n):
        x0, y0 = vertices[k]
        x1, y1 = vertices[(k + 1) % n]
        if y0 == y1:
            continue  # horizontal edges never cross a horizontal ray
        straddles = (y0 > y) != (y1 > y)
        x_cross = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
        inside ^= straddles & (x < x_cross)
    return inside


class Polygon:
    """A simple closed polygon: exact inside-test (edges included) and edge distances."""

    def __init__(self, vertices: Any) -> None:
        self.vertices = np.asarray(vertices, dtype=np.float64)
        if self.vertices.ndim != 2 or self.vertices.shape[1] != 2 or len(self.vertices) < 3:
            raise ValueError("polygon needs at least 3 vertices of 2 coordinates")
        span = self.vertices.max(axis=0) - self.vertices.min(axis=0)
        self.tol = _REL_TOL * float(max(span.max(), 1.0))

    def edges(self) -> list[tuple[tuple[float, float], tuple[float, float]]]:
        v = [tuple(map(float, p)) for p in self.vertices]
        return [(v[k], v[(k + 1) % len(v)]) for k in range(len(v))]

    def distance(self, x: FloatArray, y: FloatArray) -> FloatArray:
        """Distance to the polygon outline (minimum over edges)."""
        d = np.full(x.shape, np.inf)
        for a, b in self.edges():
            d = np.minimum(d, segment_distance(x, y, a, b))
        return d

    def contains(self, x: FloatArray, y: FloatArray) -> BoolArray:
        """True inside or on the outline."""
        x, y = _as_xy(x, y)
        return polygon_contains_strict(x, y, self.vertices) | (self.distance(x, y) <= self.tol)

    def area(self) -> float:
        """Shoelace area (absolute)."""
        v = self.vertices
        xs, ys = v[:, 0], v[:, 1]
        return 0.5 * abs(float(np.dot(xs, np.roll(ys, -1)) - np.dot(ys, np.roll(xs, -1))))


def _point(params: dict[str, Any], template: str, key: str) -> tuple[float, float]:
    value = params[key]
    try:
        px, py = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a pair of numbers, got {value!r}") from exc
    if not (math.isfinite(px) and math.isfinite(py)):
        raise GeometryError(f"{template}: {key} must be finite, got {value!r}")
    return px, py


def _positive(params: dict[str, Any], template: str, key: str) -> float:
    value = params[key]
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a number, got {value!r}") from exc
    if not (math.isfinite(v) and v > 0.0):
        raise GeometryError(f"{template}: {key} must be a positive number, got {value!r}")
    return v


def _number(params: dict[str, Any], template: str, key: str) -> float:
    value = params[key]
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise GeometryError(f"{template}: {key} must be finite, got {value!r}")
    return v


# A boundary piece: (tag, kind, data); kind "seg" -> (a, b), kind "arc" -> (c, R, theta0, span).
Piece = tuple[str, str, tuple[Any, ...]]


def _seg(tag: str, a: tuple[float, float], b: tuple[float, float]) -> Piece:
    return (tag, "seg", (a, b))


def _arc(
    tag: str, c: tuple[float, float], r: float, theta0: float = 0.0, span: float = 2 * math.pi
) -> Piece:
    return (tag, "arc", (c, r, theta0, span))


def _rect_pieces(x0: float, x1: float, y0: float, y1: float, tags: tuple[str, ...]) -> list[Piece]:
    """Edges of an axis-aligned rectangle tagged (xmin, xmax, ymin, ymax)."""
    return [
        _seg(tags[0], (x0, y0), (x0, y1)),
        _seg(tags[1], (x1, y0), (x1, y1)),
        _seg(tags[2], (x0, y0), (x1, y0)),
        _seg(tags[3], (x0, y1), (x1, y1)),
    ]


def _piece_distance(x: FloatArray, y: FloatArray, piece: Piece) -> FloatArray:
    _, kind, data = piece
    if kind == "seg":
        return segment_distance(x, y, data[0], data[1])
    return arc_distance(x, y, *data)


class PiecewiseGeometry2D(Geometry):
    """A 2-D domain whose boundary is an exact union of tagged segments and arcs."""

    dim: ClassVar[int] = 2

    def pieces(self) -> list[Piece]:
        raise NotImplementedError

    def _tol(self) -> float:
        (x0, x1), (y0, y1) = self.bbox()
        return _REL_TOL * max(x1 - x0, y1 - y0, 1.0)

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        raise NotImplementedError

    def inside(self, *coords: FloatArray) -> BoolArray:
        x, y = _as_xy(*coords)
        return self._analytic_inside(x, y) | (self.distance_to_boundary(x, y) <= self._tol())

    def _distances(self, x: FloatArray, y: FloatArray) -> FloatArray:
        return np.stack([_piece_distance(x, y, p) for p in self.pieces()])

    def distance_to_boundary(self, *coords: FloatArray) -> FloatArray:
        x, y = _as_xy(*coords)
        return self._distances(x, y).min(axis=0)

    def boundary_tag_of(self, *coords: FloatArray) -> NDArray[np.str_]:
        """Tag of the boundary piece nearest to each point."""
        x, y = _as_xy(*coords)
        tags = np.array([p[0] for p in self.pieces()])
        return tags[self._distances(x, y).argmin(axis=0)]


# --------------------------------------------------------------------------- rectangles


class UnitSquare(PiecewiseGeometry2D):
    """The unit square [0,1] x [0,1]."""

    name: ClassVar[str] = "unit_square"
    boundary_tags: ClassVar[tuple[str, ...]] = ("xmin", "xmax", "ymin", "ymax")
    defaults: ClassVar[dict[str, Any]] = {}

    def bbox(self) -> list[list[float]]:
        return [[0.0, 1.0], [0.0, 1.0]]

    def pieces(self) -> list[Piece]:
        return _rect_pieces(0.0, 1.0, 0.0, 1.0, self.boundary_tags)

    def _analytic_inside(self, x: FloatArray, y: FloatArray) -> BoolArray:
        return (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)

    def definition(self) -> str:
        return _definition_text(
            self,
            ["Set: Omega = [0, 1] x [0, 1] = {(x, y) : 0 <= x <= 1 and 0 <= y <= 1}."],
            {
                "xmin": "the side x = 0 (0 <= y <= 1)",
                "xmax": "the side x = 1 (0 <= y <= 1)",
                "ymin": "the side y = 0 (0 <= x <= 1)",
                "ymax": "the side y = 1 (0 <= x <= 1)",
            },
            self._definition_notes(),
        )

    def _definition_notes(self) -> tuple[str, ...]:
        return ()

    def describe(self) -> str:
        return "the unit square [0,1] x [0,1]"


class PeriodicSquare(UnitSquare):
    """The unit square whose periodic pairs of opposite sides are listed in the case's
    ``bc.periodic`` (x only, y only, or both)."""

    name: ClassVar[str] = "periodic_square"

    def _definition_notes(self) -> tuple[str, ...]:
        return (
            "Periodicity: only the pairs of opposite sides listed in `bc.periodic` are "
            "identified (`xmin` with `xmax`: x = 0 with x = 1; `ymin` with `ymax`: y = 0 "
            "with y = 1); a side not listed there is an ordinary boundary.",
        )

    def describe(self) -> str:
        return (
            "the unit square [0,1] x [0,1] whose pairs of opposite sides listed in "
            "`bc.periodic` are identified (x=0 with x=1, y=0 with y=1)"
        )


class UnitCube(Geometry):
    """The unit cube [0,1]^3 (the only 3-D template)."""

    name: ClassVar[str] = "unit_cube"
    dim: ClassVar[int] = 3
    boundary_tags: ClassVar[tuple[str, ...]] = ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax")
    defaults: ClassVar[dict[str, Any]] = {}

    def bbox(self) -> list[list[float]]:
        return [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]

    def inside(self, *coords: FloatArray) -> BoolArray:
        x, y, z = _as_xy(*coords)
        tol = _REL_TOL
        lo, hi = -tol, 1 + tol
        return (x >= lo) & (x <= hi) & (y >= lo) & (y <= hi) & (z >= lo) & (z <= hi)

    def _face_distances(self, x: FloatArray, y: FloatArray, z: FloatArray) -> FloatArray:
        return np.stack([x, 1 - x, y, 1 - y, z, 1 - z])

    def distance_to_boundary(self, *coords: FloatArray) -> FloatArray:
        x, y, z = _as_xy(*coords)
        inner = self._face_distances(x, y, z).min(axis=0)
        dx = np.maximum(np.maximum(-x, x - 1), 0.0)
        dy = np.maximum(np.maximum(-y, y - 1), 0.0)
        dz = np.maximum(np.maximum(-z, z - 1), 0.0)
        outer = np.sqrt(dx * dx + dy * dy + dz * dz)
        strictly_inside = (x > 0) & (x < 1) & (y > 0) & (y < 1) & (z > 0) & (z < 1)
        return np.where(strictly_inside, inner, outer)

    def boundary_tag_of(self, *coords: FloatArray) -> NDArray[np.str_]:
        """Tag of the nearest face (by distance to the face's plane, clipped to the cube)."""
        x, y, z = _as_xy(*coords)
        tags = np.array(self.boundary_tags)
        return tags[np.abs(self._face_distances(x, y, z)).argmin(axis=0)]

    def definition(self) -> str:
        return _definition_text(
            self,
            [
                "Set: Omega = [0, 1] x [0, 1] x [0, 1] = {(x, y, z) : 0 <= x <= 1, "
                "0 <= y <= 1 and 0 <= z <= 1}."
            ],
            {
                "xmin": "the face x = 0",
                "xmax": "the face x = 1",
                "ymin": "the face y = 0",
                "ymax": "the face y = 1",
                "zmin": "the face z = 0",
                "zmax": "the face z = 1",
            },
        )

    def describe(self) -> str:
        return "the unit cube [0,1] x [0,1] x [0,1]"


# --------------------------------------------------------------------------- polygons


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


# --------------------------------------------------------------------------- disks and holes


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


# --------------------------------------------------------------------------- star


class Star(Geometry):
    """The star-shaped domain r <= r0 (1 + amplitude cos(n_points theta)) around ``center``.

    The inside-test is analytic.  The distance to the (curved, non-circular) boundary
    is computed from a dense sampling of the boundary curve (``N_SAMPLES`` = 32768
    points, uniform in theta): a k-d tree finds the nearest sample and the distance
    is refined to the two polyline chords adjacent to it.  The chord-to-curve gap is
    at most ``kappa ds^2 / 8`` and the nearest-sample step is at most ``ds / 2``
    (ds = sample spacing, about 1e-4 of the size for the defaults), so the error is
    far below 1e-3 of the domain size.
    """

    name: ClassVar[str] = "star"
    dim: ClassVar[int] = 2
    boundary_tags: ClassVar[tuple[str, ...]] = ("boundary",)
    defaults: ClassVar[dict[str, Any]] = {
        "center": [0.5, 0.5],
        "r0": 0.35,
        "amplitude": 0.25,
        "n_points": 5,
    }
    N_SAMPLES: ClassVar[int] = 32768

    def _check_params(self) -> None:
        _point(self.params, self.name, "center")
        _positive(self.params, self.name, "r0")
        a = _number(self.params, self.name, "amplitude")
        if not (0.0 <= a < 1.0):
            raise GeometryError(f"star: amplitude must satisfy 0 <= amplitude < 1, got {a}")
        n = self.params["n_points"]
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
            raise GeometryError(f"star: n_points must be an integer >= 2, got {n!r}")

    def radius_at(self, theta: FloatArray) -> FloatArray:
        p = self.params
        return float(p["r0"]) * (1 + float(p["amplitude"]) * np.cos(int(p["n_points"]) * theta))

    def bbox(self) -> list[list[float]]:
        cx, cy = _point(self.params, self.name, "center")
        r = float(self.params["r0"]) * (1 + float(self.params["amplitude"]))
        return [[cx - r, cx + r], [cy - r, cy + r]]

    def _samples(self) -> tuple[FloatArray, cKDTree]:
        if not hasattr(self, "_tree"):
            cx, cy = _point(self.params, self.name, "center")
            theta = np.linspace(0.0, 2 * math.pi, self.N_SAMPLES, endpoint=False)
            r = self.radius_at(theta)
            pts = np.column_stack([cx + r * np.cos(theta), cy + r * np.sin(theta)])
            self._pts = pts
            self._tree = cKDTree(pts)
        return self._pts, self._tree

    def inside(self, *coords: FloatArray) -> BoolArray:
        x, y = _as_xy(*coords)
        cx, cy = _point(self.params, self.name, "center")
        rb = self.radius_at(np.arctan2(y - cy, x - cx))
        return np.hypot(x - cx, y - cy) <= rb * (1 + _REL_TOL) + _REL_TOL

    def distance_to_boundary(self, *coords: FloatArray) -> FloatArray:
        x, y = _as_xy(*coords)
        pts, tree = self._samples()
        flat = np.column_stack([x.ravel(), y.ravel()])
        _, idx = tree.query(flat)
        n = len(pts)
        px, py = flat[:, 0], flat[:, 1]
        best = np.full(len(flat), np.inf)
        for off in (-1, 1):
            a = pts[idx]
            b = pts[(idx + off) % n]
            d = b - a
            t = np.clip(((px - a[:, 0]) * d[:, 0] + (py - a[:, 1]) * d[:, 1]) / (d**2).sum(1), 0, 1)
            best = np.minimum(
                best, np.hypot(px - a[:, 0] - t * d[:, 0], py - a[:, 1] - t * d[:, 1])
            )
        return best.reshape(x.shape)

    def boundary_tag_of(self, *coords: FloatArray) -> NDArray[np.str_]:
        x, _ = _as_xy(*coords)
        return np.full(x.shape, "boundary")

    def definition(self) -> str:
        p = self.params
        cx, cy = _point(p, self.name, "center")
        r0, a, n = float(p["r0"]), float(p["amplitude"]), int(p["n_points"])
        return _definition_text(
            self,
            [
                f"Notation: (cx, cy) = `center` = {_gpt((cx, cy))}, r0 = `r0` = {_g(r0)}, "
                f"A = `amplitude` = {_g(a)}, n = `n_points` = {n}; for a point (x, y), "
                "rho = sqrt((x - cx)^2 + (y - cy)^2) is its distance from the centre and "
                "theta = atan2(y - cy, x - cx) its polar angle about the centre (radians, "
                "counter-clockwise from the +x direction).",
                "Set: Omega = {(x, y) : rho <= r0*(1 + A*cos(n*theta))} = "
                f"{{rho <= {_g(r0)}*(1 + {_g(a)}*cos({n}*theta))}}, the region bounded by the "
                "closed polar curve r(theta) = r0*(1 + A*cos(n*theta)) (the centre belongs to "
                "Omega).",
                f"Hence the {n} tips (radius r0*(1 + A) = {_g(r0 * (1 + a))}) lie at the polar "
                f"angles theta = 2*pi*k/n, k = 0, ..., n-1 (one tip on the +x ray from the "
                f"centre), and the {n} innermost points (radius r0*(1 - A) = "
                f"{_g(r0 * (1 - a))}) at theta = (2*k + 1)*pi/n.",
            ],
            {"boundary": "the whole curve r = r(theta)"},
        )

    def describe(self) -> str:
        p = self.params
        return (
            f"the star-shaped domain around {_pt(p['center'])} bounded by the polar curve "
            f"r(theta) = {_fmt(p['r0'])} (1 + {_fmt(p['amplitude'])} "
            f"cos({int(p['n_points'])} theta))"
        )


GEOMETRY_TEMPLATES: dict[str, type[Geometry]] = {
    cls.name: cls
    for cls in (
        UnitSquare,
        UnitCube,
        LShape,
        SquareWithHole,
        MultiHole,
        Circle,
        Annulus,
        EccentricAnnulus,
        Sector,
        Star,
        Gear,
        TJunction,
        Dumbbell,
        PeriodicSquare,
    )
}


def get_geometry(name: str, params: dict[str, Any] | None = None) -> Geometry:
    """Instantiate template ``name`` with ``params`` (merged over its defaults)."""
    try:
        cls = GEOMETRY_TEMPLATES[name]
    except KeyError:
        raise GeometryError(
            f"unknown geometry template {name!r}; known: {sorted(GEOMETRY_TEMPLATES)}"
        ) from None
    return cls(params)
