"""The 14 domain templates (SPEC §6).

Every 2-D template except ``star`` describes its boundary exactly as a list of
tagged pieces (straight segments and circular arcs).  The unsigned distance to
the boundary is then the minimum of the exact distances to the pieces, and the
boundary tag of a point is the tag of the nearest piece.  Inside-tests are
analytic (radius comparisons, half-plane tests, or an exact even-odd
point-in-polygon test); points on the boundary count as inside (a relative
tolerance of 1e-12 of the domain size absorbs rounding).

Modules: :mod:`.distances` (segments, arcs, polygons), :mod:`.pieces` (tagged boundary
pieces), :mod:`.params` and :mod:`.text` (parameter checks, the definition markdown), one
module per group of templates (:mod:`.squares`, :mod:`.polygons`, :mod:`.circles`,
:mod:`.star`) and :mod:`.registry` (:data:`GEOMETRY_TEMPLATES`, :func:`get_geometry`).
"""

from pdeagent.geometry.base import Geometry, GeometryError
from pdeagent.geometry.templates.circles import (
    Annulus,
    Circle,
    Dumbbell,
    EccentricAnnulus,
    MultiHole,
    Sector,
    SquareWithHole,
)
from pdeagent.geometry.templates.distances import (
    BoolArray,
    FloatArray,
    Polygon,
    arc_distance,
    polygon_contains_strict,
    segment_distance,
)
from pdeagent.geometry.templates.pieces import Piece, PiecewiseGeometry2D
from pdeagent.geometry.templates.polygons import Gear, LShape, PolygonGeometry, TJunction
from pdeagent.geometry.templates.registry import GEOMETRY_TEMPLATES, get_geometry
from pdeagent.geometry.templates.squares import PeriodicSquare, UnitCube, UnitSquare
from pdeagent.geometry.templates.star import Star

__all__ = [
    "GEOMETRY_TEMPLATES",
    "Annulus",
    "BoolArray",
    "Circle",
    "Dumbbell",
    "EccentricAnnulus",
    "FloatArray",
    "Gear",
    "Geometry",
    "GeometryError",
    "LShape",
    "MultiHole",
    "PeriodicSquare",
    "Piece",
    "PiecewiseGeometry2D",
    "Polygon",
    "PolygonGeometry",
    "Sector",
    "SquareWithHole",
    "Star",
    "TJunction",
    "UnitCube",
    "UnitSquare",
    "arc_distance",
    "get_geometry",
    "polygon_contains_strict",
    "segment_distance",
]
