"""The unit square, the periodic square and the unit cube."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from pdeagent.geometry.base import Geometry
from pdeagent.geometry.templates.distances import _REL_TOL, BoolArray, FloatArray, _as_xy
from pdeagent.geometry.templates.pieces import Piece, PiecewiseGeometry2D, _rect_pieces
from pdeagent.geometry.templates.text import _definition_text


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
