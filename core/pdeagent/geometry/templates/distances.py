"""Exact distances to segments and arcs, and the polygon inside-test."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

_REL_TOL = 1e-12
"""Relative tolerance (of the domain size) below which a point counts as on the boundary."""


def _as_xy(*coords: Any) -> tuple[FloatArray, ...]:
    arrays = [np.asarray(c, dtype=np.float64) for c in coords]
    return tuple(np.broadcast_arrays(*arrays))


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
