"""The grid-alignment rule of the frontier ladders (SPEC §7.1): counts are exact, and
the documented examples come out as stated."""

from __future__ import annotations

import pytest

from pdeagent.evaluation.grid_alignment import (
    MAX_ALIGNED_FRACTION,
    aligned_fraction,
    axis_aligned_count,
    first_off_grid,
    is_grid_aligned,
)

SQUARE = {"nx": 65, "ny": 65, "bbox": [0.0, 1.0, 0.0, 1.0]}
CUBE = {"nx": 25, "ny": 25, "nz": 25, "bbox": [0.0, 1.0, 0.0, 1.0, 0.0, 1.0]}


def test_p2_on_32_cells_puts_every_point_of_the_65_grid_on_a_node():
    assert axis_aligned_count(0.0, 1.0, 65, (0.0, 1.0, 64)) == 65
    assert aligned_fraction(SQUARE, [(0.0, 1.0, 64)] * 2) == 1.0
    assert is_grid_aligned(SQUARE, [[(0.0, 1.0, 2 * 32)] * 2])


def test_half_of_each_axis_is_allowed_a_whole_axis_and_half_another_is_not():
    half = (0.0, 1.0, 96)  # P2 on 48 cells: j/64 = k/96 for even j only
    assert axis_aligned_count(0.0, 1.0, 65, half) == 33
    assert aligned_fraction(SQUARE, [half, half]) == pytest.approx((33 / 65) ** 2)
    assert not is_grid_aligned(SQUARE, [[half, half]])
    assert is_grid_aligned(SQUARE, [[(0.0, 1.0, 64), half]])
    assert (33 / 65) ** 2 < MAX_ALIGNED_FRACTION < 33 / 65


@pytest.mark.parametrize("intervals", [17, 35, 51, 67, 135])
def test_lattices_prime_to_the_grid_share_only_the_ends(intervals):
    assert axis_aligned_count(0.0, 1.0, 65, (0.0, 1.0, intervals)) == 2
    assert not is_grid_aligned(SQUARE, [[(0.0, 1.0, intervals)] * 2])


def test_exact_arithmetic_on_decimal_bounds_and_offset_lattices():
    # grid over [-1, 1] with 41 points (spacing 1/20); lattice over [-1, 1] with 40 cells
    assert axis_aligned_count(-1.0, 1.0, 41, (-1.0, 1.0, 40)) == 41
    # 0.1 is not exactly representable; the decimal bounds still compare exactly
    assert axis_aligned_count(0.1, 0.7, 7, (0.1, 0.7, 6)) == 7
    # a lattice shorter than the grid covers only the points inside it
    assert axis_aligned_count(0.0, 1.0, 65, (0.0, 0.5, 32)) == 33


def test_three_d_grids_and_bad_input():
    assert aligned_fraction(CUBE, [(0.0, 1.0, 48)] * 3) == 1.0
    assert not is_grid_aligned(CUBE, [[(0.0, 1.0, 25)] * 3])
    with pytest.raises(ValueError, match="2 lattices for a 3-axis grid"):
        aligned_fraction(CUBE, [(0.0, 1.0, 24)] * 2)
    with pytest.raises(ValueError, match="lo < hi"):
        axis_aligned_count(0.0, 1.0, 65, (1.0, 0.0, 4))


def test_first_off_grid_moves_to_the_next_unaligned_resolution():
    p2 = lambda n: [[(0.0, 1.0, 2 * n)] * 2]  # noqa: E731 (P2 on n cells per axis)
    assert first_off_grid(SQUARE, 31, p2, limit=8) == 31
    assert first_off_grid(SQUARE, 32, p2, limit=8) == 33  # 64 intervals: every point a node
    assert first_off_grid(SQUARE, 32, lambda n: None, limit=8) == 32  # unstructured
    with pytest.raises(RuntimeError, match=r"\[32, 33\)"):
        first_off_grid(SQUARE, 32, p2, limit=1)
