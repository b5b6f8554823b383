"""The evaluation grid and the mask of scored points (SPEC §6).

A grid point is scored when it lies in the closed domain and at least
:data:`SCORED_BAND_FRACTION` (one half) of the largest grid spacing away from the
boundary: a polygonal mesh of a curved boundary legitimately misses points closer than
that. :func:`scoring_rule` states the rule for one grid; the prompt renders it from
there, so the text the model reads and the mask the checker uses cannot drift apart.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from pdeagent.cases.model import EvalGrid
from pdeagent.geometry.base import Geometry

SCORED_BAND_FRACTION = 0.5
"""Scored points lie at least this fraction of the largest grid spacing from the boundary."""


def _counts(grid: EvalGrid) -> tuple[int, ...]:
    return (grid.nx, grid.ny) if grid.nz is None else (grid.nx, grid.ny, grid.nz)


def grid_axes(grid: EvalGrid) -> tuple[NDArray[np.float64], ...]:
    """The 1-D axes ``(x, y)`` or ``(x, y, z)``, each ``np.linspace(min, max, n)``."""
    counts = _counts(grid)
    if len(grid.bbox) != 2 * len(counts):
        raise ValueError(
            f"eval_grid.bbox has {len(grid.bbox)} entries; expected {2 * len(counts)} "
            f"for a {len(counts)}-D grid"
        )
    for axis, n in zip("xyz", counts, strict=False):
        if n < 2:
            raise ValueError(f"eval_grid.n{axis} must be >= 2, got {n}")
    return tuple(
        np.linspace(float(grid.bbox[2 * k]), float(grid.bbox[2 * k + 1]), int(n))
        for k, n in enumerate(counts)
    )


def grid_points(grid: EvalGrid) -> tuple[NDArray[np.float64], ...]:
    """Coordinate arrays of shape ``grid.shape``.

    2-D: ``X[j, i] = x_i, Y[j, i] = y_j``; 3-D: ``X[k, j, i] = x_i``, ``Y[k, j, i] = y_j``,
    ``Z[k, j, i] = z_k``.
    """
    axes = grid_axes(grid)
    if len(axes) == 2:
        return tuple(np.meshgrid(axes[0], axes[1], indexing="xy"))
    x, y, z = axes
    zz, yy, xx = np.meshgrid(z, y, x, indexing="ij")
    return xx, yy, zz


def grid_spacing(grid: EvalGrid) -> float:
    """The largest spacing of the grid over its axes."""
    return max(float(a[1] - a[0]) for a in grid_axes(grid))


def scored_band(grid: EvalGrid) -> float:
    """Width of the unscored band along the boundary: ``SCORED_BAND_FRACTION`` times the
    largest grid spacing."""
    return SCORED_BAND_FRACTION * grid_spacing(grid)


@attrs.define(frozen=True)
class ScoringRule:
    """Which grid points are scored, as the prompt states it (see :func:`evaluation_mask`)."""

    band_fraction: float
    """:data:`SCORED_BAND_FRACTION`."""
    spacing: float
    """The largest grid spacing."""
    band: float
    """``band_fraction * spacing``: scored points are at least this far from the boundary."""
    mask_outside: bool
    """False: every grid point counts as inside the domain (``eval_grid.mask_outside``)."""


def scoring_rule(grid: EvalGrid) -> ScoringRule:
    """The facts of the scoring rule for ``grid``, from the constants the mask uses."""
    spacing = grid_spacing(grid)
    return ScoringRule(
        band_fraction=SCORED_BAND_FRACTION,
        spacing=spacing,
        band=scored_band(grid),  # the very width the mask uses
        mask_outside=grid.mask_outside,
    )


@attrs.define(frozen=True)
class EvaluationMask:
    inside: NDArray[np.bool_]
    """Grid points in the closed domain (all points when ``mask_outside`` is False)."""
    scored: NDArray[np.bool_]
    """Inside points at distance >= ``band`` from the boundary."""
    band: float
    """``SCORED_BAND_FRACTION`` times the largest grid spacing (:func:`scored_band`)."""


def evaluation_mask(grid: EvalGrid, geometry: Geometry) -> EvaluationMask:
    """Inside and scored masks of ``grid`` for ``geometry`` (arrays of shape ``grid.shape``)."""
    if grid.dim != geometry.dim:
        raise ValueError(
            f"eval_grid is {grid.dim}-D but geometry {geometry.name!r} is {geometry.dim}-D"
        )
    band = scored_band(grid)
    points = grid_points(grid)
    if grid.mask_outside:
        inside = np.asarray(geometry.inside(*points), dtype=bool)
    else:
        inside = np.ones(grid.shape, dtype=bool)
    distance = np.asarray(geometry.distance_to_boundary(*points), dtype=np.float64)
    scored = inside & (distance >= band)
    if not scored.any():
        raise ValueError(
            f"no grid point of the {'x'.join(map(str, grid.shape[::-1]))} eval_grid is scored "
            f"for geometry {geometry.name!r} (inside and at least {band:.3g} from the boundary)"
        )
    return EvaluationMask(inside=inside, scored=scored, band=band)
