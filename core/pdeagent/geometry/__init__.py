"""Domain templates, the evaluation grid and the scored-point mask (SPEC §6)."""

from pdeagent.geometry.base import Geometry, GeometryError
from pdeagent.geometry.mask import EvaluationMask, evaluation_mask, grid_axes, grid_points
from pdeagent.geometry.templates import GEOMETRY_TEMPLATES, Polygon, get_geometry

__all__ = [
    "GEOMETRY_TEMPLATES",
    "EvaluationMask",
    "Geometry",
    "GeometryError",
    "Polygon",
    "evaluation_mask",
    "get_geometry",
    "grid_axes",
    "grid_points",
]
