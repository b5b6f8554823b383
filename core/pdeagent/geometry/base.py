"""The geometry interface shared by the 14 domain templates.

Tracks mesh these geometries; the core defines them once and uses the analytic
inside-test and boundary distance to build the evaluation mask (SPEC §6).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray


class GeometryError(ValueError):
    """Bad geometry name or parameters (message names the field)."""


class Geometry(ABC):
    """One instance of a domain template with concrete parameters."""

    name: ClassVar[str]
    dim: ClassVar[int]
    boundary_tags: ClassVar[tuple[str, ...]]
    """Named boundary parts a boundary condition may refer to (``all`` is always valid too)."""
    defaults: ClassVar[dict[str, Any]]
    """Default parameters; a case's ``geometry_params`` override them."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        params = dict(params or {})
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise GeometryError(
                f"{self.name}: unknown geometry_params {unknown}; known: {sorted(self.defaults)}"
            )
        merged = {**self.defaults, **params}
        self.params: dict[str, Any] = merged
        self._check_params()

    def _check_params(self) -> None:  # noqa: B027 - optional override
        """Raise :class:`GeometryError` naming the parameter when params are invalid."""

    @abstractmethod
    def bbox(self) -> list[list[float]]:
        """Axis-aligned bounding box, one ``[min, max]`` per axis."""

    @abstractmethod
    def inside(self, *coords: NDArray[np.float64]) -> NDArray[np.bool_]:
        """True where the point lies in the closed domain (boundary included)."""

    @abstractmethod
    def distance_to_boundary(self, *coords: NDArray[np.float64]) -> NDArray[np.float64]:
        """Unsigned Euclidean distance from each point to the domain boundary."""

    def describe(self) -> str:
        """One sentence describing the domain for the prompt summary."""
        return f"{self.name} with parameters {self.params}"

    def definition(self) -> str:
        """The exact set definition of the closed domain, as markdown for the prompt.

        States every parameter with its name and value, the formulas of the set
        (angle origins and orientation included) and which boundary tag names which
        part of the boundary; it must describe exactly what :meth:`inside` computes.
        """
        raise NotImplementedError(f"geometry template {self.name!r} does not define definition()")
