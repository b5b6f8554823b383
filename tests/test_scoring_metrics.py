"""Hand-computed checks of the scoring metrics."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from pdeagent.scoring.metrics import (
    compute_metrics,
    frequency_band_energies,
    frequency_rmse,
    mae,
    r_squared,
    relative_l2,
    rmse,
    total_variation,
)

ALL_2X2 = np.ones((2, 2), dtype=bool)


def test_offset_by_one_gives_rmse_and_mae_one() -> None:
    ref = {"u": np.array([[1.0, -2.0], [3.5, 0.0]])}
    sub = {"u": ref["u"] + 1.0}
    assert rmse(sub, ref, ALL_2X2) == pytest.approx(1.0)
    assert mae(sub, ref, ALL_2X2) == pytest.approx(1.0)


def test_rmse_and_mae_differ_for_uneven_errors() -> None:
    # errors 1, -1, 3, -3: rmse = sqrt((1 + 1 + 9 + 9) / 4) = sqrt(5), mae = (1 + 1 + 3 + 3) / 4 = 2
    ref = {"u": np.zeros((2, 2))}
    sub = {"u": np.array([[1.0, -1.0], [3.0, -3.0]])}
    assert rmse(sub, ref, ALL_2X2) == pytest.approx(math.sqrt(5))
    assert mae(sub, ref, ALL_2X2) == pytest.approx(2.0)


def test_relative_l2_2x2_by_hand() -> None:
    # ref = [[1, 2], [2, 0]]: ||ref|| = sqrt(1 + 4 + 4 + 0) = 3
    # error = [[0.6, 0], [0, 0.8]]: ||error|| = sqrt(0.36 + 0.64) = 1  ->  e = 1 / 3
    ref = {"u": np.array([[1.0, 2.0], [2.0, 0.0]])}
    sub = {"u": np.array([[1.6, 2.0], [2.0, 0.8]])}
    assert relative_l2(sub, ref, ALL_2X2) == pytest.approx(1.0 / 3.0)


def test_relative_l2_uses_eps_norm_for_zero_reference() -> None:
    ref = {"u": np.zeros((2, 2))}
    sub = {"u": np.full((2, 2), 1e-13)}
    # ||error|| = 2e-13, ||ref|| = 0 -> divided by eps_norm = 1e-12
    assert relative_l2(sub, ref, ALL_2X2) == pytest.approx(0.2)
    assert relative_l2(sub, ref, ALL_2X2, eps_norm=1e-10) == pytest.approx(2e-3)


def test_vector_sign_error_caught_component_wise() -> None:
    # u_GT = (3, 4) everywhere, submission (3, -4): same magnitude 5 at every point,
    # so a magnitude-based error would be 0. Component-wise: error (0, 8) per point,
    # ||error|| / ||u_GT|| = 8 / 5 = 2 * |u_y| / |u| = 1.6.
    shape = (3, 4)
    mask = np.ones(shape, dtype=bool)
    ref = {"u_x": np.full(shape, 3.0), "u_y": np.full(shape, 4.0)}
    sub = {"u_x": np.full(shape, 3.0), "u_y": np.full(shape, -4.0)}
    mag_ref = {"m": np.hypot(ref["u_x"], ref["u_y"])}
    mag_sub = {"m": np.hypot(sub["u_x"], sub["u_y"])}
    assert relative_l2(mag_sub, mag_ref, mask) == 0.0
    assert relative_l2(sub, ref, mask) == pytest.approx(1.6)


def test_components_pooled_in_one_norm() -> None:
    # u_x error 3 at one point, u_y error 4 at another: ||error|| = 5 over both components;
    # ||u_GT|| = sqrt(4 * 1^2 + 4 * 2^2) = sqrt(20)
    ref = {"u_x": np.ones((2, 2)), "u_y": np.full((2, 2), 2.0)}
    sub = {"u_x": ref["u_x"].copy(), "u_y": ref["u_y"].copy()}
    sub["u_x"][0, 0] += 3.0
    sub["u_y"][1, 1] -= 4.0
    assert relative_l2(sub, ref, ALL_2X2) == pytest.approx(5 / math.sqrt(20))
    # rmse over 8 values: sqrt(25 / 8); mae: 7 / 8
    assert rmse(sub, ref, ALL_2X2) == pytest.approx(math.sqrt(25 / 8))
    assert mae(sub, ref, ALL_2X2) == pytest.approx(7 / 8)


def test_r_squared_by_hand() -> None:
    # ref [0, 1, 2, 3]: mean 1.5, SS_tot = 2.25 + 0.25 + 0.25 + 2.25 = 5; SS_res = 1 -> 0.8
    ref = {"u": np.array([[0.0, 1.0], [2.0, 3.0]])}
    sub = {"u": np.array([[0.0, 1.0], [2.0, 4.0]])}
    assert r_squared(sub, ref, ALL_2X2) == pytest.approx(0.8)
    assert r_squared(ref, ref, ALL_2X2) == 1.0


def test_r_squared_centres_each_component() -> None:
    # u_x ref [10, 10, 10, 12]: mean 10.5, SS = 3 * 0.25 + 2.25 = 3
    # u_y ref [0, 0, 0, 2]:     mean 0.5,  SS = 3
    # SS_tot = 6, SS_res = 1 -> R^2 = 1 - 1/6 (a pooled mean would give SS_tot = 246)
    ref = {"u_x": np.array([[10.0, 10.0], [10.0, 12.0]]), "u_y": np.array([[0.0, 0.0], [0.0, 2.0]])}
    sub = {"u_x": ref["u_x"] + np.array([[1.0, 0.0], [0.0, 0.0]]), "u_y": ref["u_y"].copy()}
    assert r_squared(sub, ref, ALL_2X2) == pytest.approx(1 - 1 / 6)


def test_r_squared_constant_reference() -> None:
    ref = {"u": np.full((2, 2), 0.1)}
    assert r_squared({"u": ref["u"].copy()}, ref, ALL_2X2) == 1.0
    assert math.isnan(r_squared({"u": ref["u"] + 1e-3}, ref, ALL_2X2))
    # constant on scored points only counts as constant
    ref2 = {"u": np.array([[0.1, 0.1], [0.1, 99.0]])}
    mask = np.array([[True, True], [True, False]])
    assert math.isnan(r_squared({"u": ref2["u"] + 1.0}, ref2, mask))


def test_r_squared_can_be_negative() -> None:
    ref = {"u": np.array([[0.0, 1.0], [2.0, 3.0]])}
    sub = {"u": np.array([[3.0, 2.0], [1.0, 0.0]])}
    # SS_res = 9 + 1 + 1 + 9 = 20, SS_tot = 5 -> -3
    assert r_squared(sub, ref, ALL_2X2) == pytest.approx(-3.0)


def _garbage_copy(arr: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = arr.copy()
    n = int((~mask).sum())
    garbage = rng.choice(np.array([np.nan, np.inf, -np.inf, 1e300, -7.0]), size=n)
    out[~mask] = garbage
    return out


@pytest.mark.parametrize("shape", [(6, 7), (3, 4, 5)])
def test_unscored_garbage_does_not_affect_any_metric(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(0)
    mask = rng.random(shape) < 0.7
    ref = {"u_x": rng.normal(size=shape), "u_y": rng.normal(size=shape)}
    sub = {k: v + 0.1 * rng.normal(size=shape) for k, v in ref.items()}
    clean = compute_metrics(sub, ref, mask)
    sub_g = {k: _garbage_copy(v, mask, rng) for k, v in sub.items()}
    ref_g = {k: _garbage_copy(v, mask, rng) for k, v in ref.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dirty = compute_metrics(sub_g, ref_g, mask)
    assert dirty == clean
    assert all(v is not None for v in (dirty["rel_l2"], dirty["rmse"], dirty["r_squared"]))


def test_three_dimensional_constant_offset() -> None:
    shape = (2, 3, 4)
    mask = np.ones(shape, dtype=bool)
    ref = {"u": np.full(shape, 2.0)}
    sub = {"u": np.full(shape, 2.5)}
    # 24 points: ||error|| = 0.5 * sqrt(24), ||ref|| = 2 * sqrt(24) -> 0.25
    assert relative_l2(sub, ref, mask) == pytest.approx(0.25)
    assert rmse(sub, ref, mask) == pytest.approx(0.5)
    assert mae(sub, ref, mask) == pytest.approx(0.5)
    # a constant error is the k = 0 mode only
    f = frequency_rmse(sub, ref, mask)
    assert f["low"] == pytest.approx(0.5)
    assert f["mid"] == pytest.approx(0.0, abs=1e-15)
    assert f["high"] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("shape", [(8, 8), (7, 10), (5, 6, 7), (4, 4, 4)])
def test_parseval_band_energies_sum_to_spatial_energy(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(1)
    mask = rng.random(shape) < 0.8
    ref = {"a": rng.normal(size=shape), "b": rng.normal(size=shape)}
    sub = {k: v + rng.normal(size=shape) for k, v in ref.items()}
    spatial = sum(float(np.sum((sub[k][mask] - ref[k][mask]) ** 2)) for k in ref)
    energies = frequency_band_energies(sub, ref, mask)
    assert set(energies) == {"low", "mid", "high"}
    assert all(e > 0 for e in energies.values())
    assert sum(energies.values()) == pytest.approx(spatial, rel=1e-12)
    f = frequency_rmse(sub, ref, mask)
    assert f["low"] ** 2 + f["mid"] ** 2 + f["high"] ** 2 == pytest.approx(
        rmse(sub, ref, mask) ** 2, rel=1e-12
    )


def _single_band(err: np.ndarray) -> dict[str, float]:
    ref = {"u": np.zeros(err.shape)}
    return frequency_band_energies({"u": err}, ref, np.ones(err.shape, dtype=bool))


def test_bands_of_single_modes() -> None:
    j, i = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    # k_x = 1 of 16: |k|/Nyquist = 1/8, radius (1/8)/sqrt(2) < 1/3 -> low
    low = _single_band(np.cos(2 * np.pi * 1 * i / 16))
    # k_x = 6 of 16: 6/8 = 0.75, radius 0.75/sqrt(2) = 0.53 -> mid
    mid = _single_band(np.cos(2 * np.pi * 6 * i / 16))
    # checkerboard: k = (8, 8) = Nyquist on both axes, radius 1 -> high
    high = _single_band((-1.0) ** (i + j))
    assert low["mid"] == pytest.approx(0, abs=1e-9) and low["high"] == pytest.approx(0, abs=1e-9)
    assert mid["low"] == pytest.approx(0, abs=1e-9) and mid["high"] == pytest.approx(0, abs=1e-9)
    assert high["low"] == pytest.approx(0, abs=1e-9) and high["mid"] == pytest.approx(0, abs=1e-9)
    assert low["low"] == pytest.approx(128.0)  # sum cos^2 over 256 points
    assert mid["mid"] == pytest.approx(128.0)
    assert high["high"] == pytest.approx(256.0)


def test_total_variation_of_a_step() -> None:
    # 4 rows x 5 columns, step of height 2.5 between columns 1 and 2:
    # one crossing pair per row -> 4 pairs -> TV = 2.5 * 4 = 10, nothing along y
    u = np.zeros((4, 5))
    u[:, 2:] = 2.5
    mask = np.ones(u.shape, dtype=bool)
    assert total_variation(u, mask) == pytest.approx(10.0)
    # unscore a point next to the step in row 0: that crossing pair disappears;
    # garbage there changes nothing else
    mask[0, 2] = False
    u[0, 2] = np.nan
    assert total_variation(u, mask) == pytest.approx(7.5)


def test_total_variation_3d_step_and_both_axes() -> None:
    # (nz, ny, nx) = (3, 4, 2); step of 1.5 along z between layers 0 and 1:
    # crossing pairs = ny * nx = 8 -> 12
    u = np.zeros((3, 4, 2))
    u[1:] = 1.5
    assert total_variation(u, np.ones(u.shape, dtype=bool)) == pytest.approx(12.0)
    # u = i + j on a 3x3 grid: 6 pairs along each axis with |du| = 1 -> 12
    j, i = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    assert total_variation((i + j).astype(float), np.ones((3, 3), dtype=bool)) == pytest.approx(
        12.0
    )


def test_compute_metrics_is_json_able() -> None:
    u = np.zeros((4, 5))
    u[:, 2:] = 1.0
    ref = {"u": u}
    sub = {"u": u + 0.1}
    sub["u"][0, 0] = 0.5
    mask = np.ones(u.shape, dtype=bool)
    m = compute_metrics(sub, ref, mask)
    assert set(m) == {"rel_l2", "rmse", "mae", "r_squared", "frequency_rmse", "total_variation"}
    assert m["rel_l2"] == pytest.approx(relative_l2(sub, ref, mask))
    tv = m["total_variation"]["u"]
    assert tv["reference"] == pytest.approx(4.0)
    assert tv["ratio"] == pytest.approx(tv["submission"] / 4.0)
    json.dumps(m, allow_nan=False)


def test_compute_metrics_non_finite_become_none() -> None:
    ref = {"u": np.full((2, 2), 1.0)}
    m = compute_metrics({"u": ref["u"] + 1.0}, ref, ALL_2X2)
    assert m["r_squared"] is None  # constant reference, submission differs
    assert m["total_variation"]["u"]["ratio"] is None  # reference TV is 0
    json.dumps(m, allow_nan=False)


def test_nan_at_a_scored_point_propagates() -> None:
    ref = {"u": np.ones((2, 2))}
    sub = {"u": np.array([[1.0, np.nan], [1.0, 1.0]])}
    assert math.isnan(relative_l2(sub, ref, ALL_2X2))


def test_bad_inputs_raise() -> None:
    ref = {"u": np.ones((2, 2))}
    with pytest.raises(ValueError, match="no point"):
        relative_l2(ref, ref, np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="different arrays"):
        rmse({"v": np.ones((2, 2))}, ref, ALL_2X2)
    with pytest.raises(ValueError, match="shape"):
        mae({"u": np.ones((2, 3))}, ref, ALL_2X2)
    with pytest.raises(ValueError, match="boolean"):
        rmse(ref, ref, np.ones((2, 2)))
