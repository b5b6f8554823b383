"""Mesh nodes on evaluation grid points: the rule that keeps calibration rungs off them.

A finite-element solution can be far more accurate at its mesh nodes than between them
(nodal superconvergence): a P2 solution on 32 x 32 cells of the unit square, whose
nodes fall on every point of the 65 x 65 evaluation grid, measured a grid error 50-200x
below its true error. A calibration baseline measured that way sets tau_acc far below
what any solver on another mesh can reach. So the frontier ladders (SPEC §7.1) never
offer a rung whose nodes cover too much of the grid:

    at most MAX_ALIGNED_FRACTION = 30% of the evaluation grid's points may be nodes of
    the rung's mesh,

so at least 70% of the points measure the solution between nodes and superconvergence
can lower the grid error by at most a factor sqrt(0.7) ~ 0.84. (Half the points of each
axis on nodes, e.g. P2 on 48 cells against 64 grid intervals, puts 26% of a 2-D grid on
nodes: allowed; a whole axis on nodes and half of the other, 51%: refused.)

A track describes where a rung's nodes can lie as one uniform *lattice* per axis,
``(lo, hi, intervals)``: every node coordinate along that axis is ``lo + k (hi - lo) /
intervals``. For Lagrange elements of degree p on a structured mesh of n cells per axis
that is ``intervals = p n`` (the equispaced node positions, which contain the vertices
and, for other node variants, at least the nodes that matter here); a track with mixed
elements gives the lattice of the finest scored field's degree and the fraction is
taken over each lattice it names. Unstructured meshes (gmsh) have no lattice: their
nodes fall on grid points only by accident. Arithmetic is exact (fractions of the
decimal bounds), so a coincidence is never lost or invented by rounding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from functools import cache
from typing import Any

MAX_ALIGNED_FRACTION = 0.3
"""The largest share of the evaluation grid's points that may be mesh nodes."""

Lattice = tuple[float, float, int]
"""One axis: ``(lo, hi, intervals)``: nodes at ``lo + k (hi - lo) / intervals``."""


def _exact(value: float) -> Fraction:
    return Fraction(repr(float(value)))


@cache
def axis_aligned_count(lo: float, hi: float, points: int, lattice: Lattice) -> int:
    """How many of ``linspace(lo, hi, points)`` are lattice nodes (exact arithmetic;
    remembered: a dataset's ladders ask about a few grids and lattices thousands of
    times)."""
    if points < 1:
        raise ValueError(f"an axis needs at least one point, got {points}")
    a, b, n = _exact(lattice[0]), _exact(lattice[1]), int(lattice[2])
    if n < 1 or b <= a:
        raise ValueError(f"a lattice needs lo < hi and intervals >= 1, got {lattice}")
    g_lo, g_hi = _exact(lo), _exact(hi)
    step = (g_hi - g_lo) / (points - 1) if points > 1 else Fraction(0)
    spacing = (b - a) / n
    count = 0
    for j in range(points):
        k = (g_lo + j * step - a) / spacing
        if k.denominator == 1 and 0 <= k <= n:
            count += 1
    return count


def grid_axes_of(eval_grid: Mapping[str, Any]) -> list[tuple[float, float, int]]:
    """``(lo, hi, points)`` per axis of a case's ``eval_grid`` (x, y[, z])."""
    bbox = [float(v) for v in eval_grid["bbox"]]
    sizes = [int(eval_grid["nx"]), int(eval_grid["ny"])]
    if eval_grid.get("nz") is not None:
        sizes.append(int(eval_grid["nz"]))
    if len(bbox) != 2 * len(sizes):
        raise ValueError(f"bbox {bbox} does not match {len(sizes)} axes")
    return [(bbox[2 * k], bbox[2 * k + 1], sizes[k]) for k in range(len(sizes))]


def aligned_fraction(eval_grid: Mapping[str, Any], lattices: Sequence[Lattice]) -> float:
    """The share of the grid's points (all of its bounding box) that are lattice nodes:
    the product over the axes of each axis' share."""
    axes = grid_axes_of(eval_grid)
    if len(lattices) != len(axes):
        raise ValueError(f"{len(lattices)} lattices for a {len(axes)}-axis grid")
    share = 1.0
    for (lo, hi, points), lattice in zip(axes, lattices, strict=True):
        lattice = (float(lattice[0]), float(lattice[1]), int(lattice[2]))
        share *= axis_aligned_count(lo, hi, points, lattice) / points
    return share


def is_grid_aligned(
    eval_grid: Mapping[str, Any], lattice_sets: Sequence[Sequence[Lattice]]
) -> bool:
    """Whether any of the rung's lattices (one per scored field's node layout) puts more
    than :data:`MAX_ALIGNED_FRACTION` of the grid on nodes."""
    return any(aligned_fraction(eval_grid, ls) > MAX_ALIGNED_FRACTION for ls in lattice_sets)


def first_off_grid(
    eval_grid: Mapping[str, Any],
    start: int,
    lattices_of: Callable[[int], Sequence[Sequence[Lattice]] | None],
    *,
    limit: int,
) -> int:
    """The least resolution >= ``start`` whose rung is not grid-aligned on ``eval_grid``:
    ``lattices_of(r)`` gives the lattice sets of the rung at resolution ``r`` (None: an
    unstructured mesh, never aligned). The one place a ladder moves a rung off the grid;
    RuntimeError when ``limit`` resolutions in a row are all aligned."""
    for resolution in range(start, start + limit):
        lattices = lattices_of(resolution)
        if lattices is None or not is_grid_aligned(eval_grid, lattices):
            return resolution
    raise RuntimeError(f"no resolution in [{start}, {start + limit}) keeps the nodes off the grid")
