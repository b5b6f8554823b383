"""2-D boundaries as exact unions of tagged segments and circular arcs."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from pdeagent.geometry.base import Geometry
from pdeagent.geometry.templates.distances import (
    _REL_TOL,
    BoolArray,
    FloatArray,
    _as_xy,
    arc_distance,
    segment_distance,
)

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
