"""The 14 templates by name."""

from __future__ import annotations

from typing import Any

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
from pdeagent.geometry.templates.polygons import Gear, LShape, TJunction
from pdeagent.geometry.templates.squares import PeriodicSquare, UnitCube, UnitSquare
from pdeagent.geometry.templates.star import Star

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
