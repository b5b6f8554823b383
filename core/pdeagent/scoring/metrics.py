"""Error metrics on the evaluation grid (SPEC §1, §6).

Every metric takes the submitted and the reference arrays of the scored outputs
(a mapping ``name -> ndarray`` of the grid shape, ``(ny, nx)`` or
``(nz, ny, nx)``; the names are those of :attr:`OutputSpec.arrays`) and a boolean
``scored`` mask of the grid shape. Only scored points are used, of every
component; whatever an array holds at unscored points (NaN, inf, garbage) never
enters an arithmetic operation. A vector output is scored component-wise, so
``u_x`` and ``u_y`` each contribute their own differences, never a magnitude.

Only :func:`case_error` decides a verdict (and every threshold of a dataset build); the
rest are diagnostics. It scores the groups of the case's output
(:attr:`OutputSpec.groups`) separately: a flow case's velocity (components or magnitude)
and its pressure each get their own :func:`relative_l2`, and the case's error is the
larger one. A ``zero_mean`` pressure (determined only up to a constant) is first shifted,
in the submission and in the reference separately, by its own mean over the scored
points, so the constant a submission chose does not matter. With one group (every
non-flow case, and flow cases without a pressure entry, e.g. dataset 1.x) the error is
:func:`relative_l2` of all arrays, computed by the very same call.

A metric called with no scored point raises :class:`ValueError`: a case without
scored points is a broken case, and returning ``0`` would pass anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pdeagent.cases.model import OutputSpec

Arrays = Mapping[str, NDArray[Any]]

BANDS: tuple[str, ...] = ("low", "mid", "high")
"""Frequency band names, in order of increasing normalised wavenumber radius."""
BAND_EDGES: tuple[float, float] = (1.0 / 3.0, 2.0 / 3.0)
"""Band edges on the normalised radius: low ``[0, 1/3)``, mid ``[1/3, 2/3)``, high ``[2/3, 1]``."""


def _check_inputs(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> NDArray[np.bool_]:
    mask = np.asarray(scored)
    if mask.dtype != np.bool_:
        raise ValueError(f"scored mask must be boolean, got dtype {mask.dtype}")
    if not ref:
        raise ValueError("no reference arrays given")
    if set(sub) != set(ref):
        raise ValueError(
            f"submission and reference name different arrays: {sorted(sub)} vs {sorted(ref)}"
        )
    for name in ref:
        for label, arr in (("submission", sub[name]), ("reference", ref[name])):
            if np.shape(arr) != mask.shape:
                raise ValueError(
                    f"{label} array {name!r} has shape {np.shape(arr)}, "
                    f"expected the mask's shape {mask.shape}"
                )
    if not mask.any():
        raise ValueError("the scored mask selects no point")
    return mask


def _scored_values(
    sub: Arrays, ref: Arrays, mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Submitted and reference values at scored points, all components concatenated."""
    names = sorted(ref)
    s = np.concatenate([np.asarray(sub[n], dtype=np.float64)[mask] for n in names])
    r = np.concatenate([np.asarray(ref[n], dtype=np.float64)[mask] for n in names])
    return s, r


def relative_l2(sub: Arrays, ref: Arrays, scored: NDArray[Any], eps_norm: float = 1e-12) -> float:
    """``||u - u_GT||_2 / max(||u_GT||_2, eps_norm)`` over all scored points and components.

    Both norms are plain Euclidean norms of the vector of values at scored points
    of all components together (no quadrature weights).
    """
    mask = _check_inputs(sub, ref, scored)
    s, r = _scored_values(sub, ref, mask)
    return float(np.linalg.norm(s - r) / max(float(np.linalg.norm(r)), eps_norm))


def _check_output_names(ref: Arrays, output: OutputSpec) -> None:
    if set(ref) != set(output.arrays):
        raise ValueError(
            f"the arrays {sorted(ref)} are not those of the output spec {sorted(output.arrays)}"
        )


def normalized_arrays(
    arrays: Arrays, scored: NDArray[Any], output: OutputSpec
) -> dict[str, NDArray[Any]]:
    """``arrays`` as they are scored: a ``zero_mean`` pressure minus its own mean over the
    scored points (computed in float64; unscored points are shifted too and stay unused),
    every other array unchanged (the same object)."""
    mask = np.asarray(scored)
    out: dict[str, NDArray[Any]] = dict(arrays)
    pressure = output.pressure
    if pressure is not None and pressure.normalization == "zero_mean" and pressure.array in out:
        values = np.asarray(out[pressure.array], dtype=np.float64)
        out[pressure.array] = values - float(np.mean(values[mask]))
    return out


def group_errors(
    sub: Arrays,
    ref: Arrays,
    scored: NDArray[Any],
    output: OutputSpec,
    eps_norm: float = 1e-12,
) -> dict[str, float]:
    """:func:`relative_l2` of each group of ``output`` (:attr:`OutputSpec.groups`), keyed
    by group name, over that group's arrays only, after :func:`normalized_arrays`.

    The arrays given must be exactly :attr:`OutputSpec.arrays` (else ValueError). With a
    single group this is ``{name: relative_l2(sub, ref, scored, eps_norm)}`` on the
    arrays as given.
    """
    mask = _check_inputs(sub, ref, scored)
    _check_output_names(ref, output)
    groups = output.groups
    if len(groups) == 1:
        return {groups[0][0]: relative_l2(sub, ref, mask, eps_norm)}
    sub_n = normalized_arrays(sub, mask, output)
    ref_n = normalized_arrays(ref, mask, output)
    return {
        name: relative_l2(
            {n: sub_n[n] for n in names}, {n: ref_n[n] for n in names}, mask, eps_norm
        )
        for name, names in groups
    }


def case_error(
    sub: Arrays,
    ref: Arrays,
    scored: NDArray[Any],
    output: OutputSpec,
    eps_norm: float = 1e-12,
) -> float:
    """The verdict error of a case: the largest of its :func:`group_errors` (NaN when
    any is NaN). Equal to :func:`relative_l2` for an output with one group."""
    return _largest(group_errors(sub, ref, scored, output, eps_norm).values())


def _largest(errors: Iterable[float]) -> float:
    values = list(errors)
    return math.nan if any(math.isnan(e) for e in values) else max(values)


def rmse(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> float:
    """Root mean square of ``u - u_GT`` over all scored points and components."""
    mask = _check_inputs(sub, ref, scored)
    s, r = _scored_values(sub, ref, mask)
    return float(np.sqrt(np.mean((s - r) ** 2)))


def mae(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> float:
    """Mean absolute value of ``u - u_GT`` over all scored points and components."""
    mask = _check_inputs(sub, ref, scored)
    s, r = _scored_values(sub, ref, mask)
    return float(np.mean(np.abs(s - r)))


def r_squared(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot``.

    ``SS_res = sum_j sum_i (u_ij - g_ij)^2`` and
    ``SS_tot = sum_j sum_i (g_ij - mean_i g_ij)^2`` over scored points ``i`` and
    components ``j``: each component is centred on its own mean, so an offset
    between components (``u_x ~ 1``, ``u_y ~ 0``) does not inflate ``SS_tot``.

    When the reference is constant on the scored points (every component;
    detected exactly, so ``SS_tot`` is exactly 0), R^2 is undefined: the result
    is ``1.0`` if the submission matches exactly (``SS_res == 0``) and ``nan``
    otherwise. The value may be negative (worse than the mean).
    """
    mask = _check_inputs(sub, ref, scored)
    ss_res = 0.0
    ss_tot = 0.0
    constant = True
    for name in sorted(ref):
        s = np.asarray(sub[name], dtype=np.float64)[mask]
        r = np.asarray(ref[name], dtype=np.float64)[mask]
        ss_res += float(np.sum((s - r) ** 2))
        if np.ptp(r) != 0:
            constant = False
            ss_tot += float(np.sum((r - r.mean()) ** 2))
    if constant:
        return 1.0 if ss_res == 0 else math.nan
    return 1.0 - ss_res / ss_tot


def _normalised_radius(shape: tuple[int, ...]) -> NDArray[np.float64]:
    """Normalised wavenumber radius in ``[0, 1]`` for each FFT index of ``shape``."""
    dim = len(shape)
    sq = np.zeros(shape, dtype=np.float64)
    for axis, n in enumerate(shape):
        k = np.fft.fftfreq(n) * n  # integer frequencies 0, 1, ..., -1
        kn = k / (n / 2.0)  # divided by the Nyquist frequency: in [-1, 1]
        view = [1] * dim
        view[axis] = n
        sq = sq + kn.reshape(view) ** 2
    return np.sqrt(sq) / math.sqrt(dim)


def frequency_band_energies(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> dict[str, float]:
    """Energy of the masked error field in each wavenumber band.

    Per component: ``e = u - u_GT`` at scored points and ``0`` elsewhere, and
    ``E = numpy.fft.fftn(e)`` (unnormalised DFT over all grid axes). Along an
    axis of length ``n`` the wavenumber is the integer frequency
    ``k = fftfreq(n) * n``, divided by the Nyquist frequency ``n / 2``; the
    normalised radius of a mode is ``r = sqrt(sum_axes (k / (n/2))^2) / sqrt(dim)``,
    which lies in ``[0, 1]``. Bands: low ``r < 1/3``, mid ``1/3 <= r < 2/3``,
    high ``r >= 2/3``.

    The energy of band ``b`` is ``(1/N) * sum_j sum_{k in b} |E_jk|^2`` with ``N``
    the number of grid points; by Parseval the three energies add up to
    ``sum_j sum_i e_ij^2``, the spatial sum of squared errors over scored points.
    """
    mask = _check_inputs(sub, ref, scored)
    radius = _normalised_radius(mask.shape)
    lo, hi = BAND_EDGES
    band_masks = {"low": radius < lo, "mid": (radius >= lo) & (radius < hi), "high": radius >= hi}
    n_points = mask.size
    energies = dict.fromkeys(BANDS, 0.0)
    for name in sorted(ref):
        e = np.zeros(mask.shape, dtype=np.float64)
        e[mask] = (
            np.asarray(sub[name], dtype=np.float64)[mask]
            - np.asarray(ref[name], dtype=np.float64)[mask]
        )
        power = np.abs(np.fft.fftn(e)) ** 2
        for band, bmask in band_masks.items():
            energies[band] += float(power[bmask].sum()) / n_points
    return energies


def frequency_rmse(sub: Arrays, ref: Arrays, scored: NDArray[Any]) -> dict[str, float]:
    """Frequency-domain RMSE per band: ``{"low": ..., "mid": ..., "high": ...}``.

    ``frmse_b = sqrt(energy_b / M)``, with ``energy_b`` from
    :func:`frequency_band_energies` and ``M`` the number of scored values (scored
    points times components). So ``low^2 + mid^2 + high^2 == rmse^2``: the bands
    split the spatial RMSE by scale. Explicitly,
    ``frmse_b = sqrt(sum_j sum_{k in b} |E_jk|^2 / (N * M))``.
    """
    mask = _check_inputs(sub, ref, scored)
    m = int(mask.sum()) * len(ref)
    energies = frequency_band_energies(sub, ref, mask)
    return {band: math.sqrt(energies[band] / m) for band in BANDS}


def total_variation(field: NDArray[Any], scored: NDArray[Any]) -> float:
    """Discrete anisotropic total variation of one array over scored points.

    ``TV = sum_axes sum_{(p, q)} |u_q - u_p|`` over pairs of grid neighbours
    ``p, q`` (adjacent along one axis) that are both scored. Differences are not
    divided by the grid spacing, so the value does not depend on it: a step of
    height ``h`` crossed by ``c`` scored neighbour pairs contributes ``h * c``.
    """
    mask = np.asarray(scored)
    if mask.dtype != np.bool_:
        raise ValueError(f"scored mask must be boolean, got dtype {mask.dtype}")
    if np.shape(field) != mask.shape:
        raise ValueError(f"array has shape {np.shape(field)}, expected {mask.shape}")
    u = np.where(mask, np.asarray(field, dtype=np.float64), 0.0)
    tv = 0.0
    for axis in range(mask.ndim):
        n = mask.shape[axis]
        if n < 2:
            continue
        first = [slice(None)] * mask.ndim
        second = [slice(None)] * mask.ndim
        first[axis] = slice(0, n - 1)
        second[axis] = slice(1, n)
        pair = mask[tuple(first)] & mask[tuple(second)]
        diff = np.abs(u[tuple(second)] - u[tuple(first)])
        tv += float(diff[pair].sum())
    return tv


def _jsonable(value: float) -> float | None:
    return value if math.isfinite(value) else None


def compute_metrics(
    sub: Arrays,
    ref: Arrays,
    scored: NDArray[Any],
    eps_norm: float = 1e-12,
    output: OutputSpec | None = None,
) -> dict[str, Any]:
    """All metrics as a JSON-able dict (floats; ``None`` where a value is not finite).

    Keys: ``rel_l2``, ``rmse``, ``mae``, ``r_squared``, ``frequency_rmse``
    (``{"low", "mid", "high"}``) and ``total_variation``:
    ``{name: {"submission", "reference", "ratio"}}`` per scored array, where
    ``ratio = submission / reference`` (``None`` when the reference TV is 0).

    With ``output`` (the case's :class:`OutputSpec`): ``rel_l2`` is the verdict error
    :func:`case_error`, ``rel_l2_groups`` holds :func:`group_errors`
    (``{"velocity": ..., "p": ...}``), and the diagnostics are computed on
    :func:`normalized_arrays` (a ``zero_mean`` pressure's constant does not count).
    Without it, ``rel_l2`` is :func:`relative_l2` of all arrays together.
    """
    mask = _check_inputs(sub, ref, scored)
    groups: dict[str, float] | None = None
    if output is not None:
        groups = group_errors(sub, ref, mask, output, eps_norm)
        rel_l2 = _largest(groups.values())
        sub = normalized_arrays(sub, mask, output)
        ref = normalized_arrays(ref, mask, output)
    else:
        rel_l2 = relative_l2(sub, ref, mask, eps_norm)
    tv: dict[str, dict[str, float | None]] = {}
    for name in sorted(ref):
        tv_sub = total_variation(sub[name], mask)
        tv_ref = total_variation(ref[name], mask)
        ratio = tv_sub / tv_ref if tv_ref != 0 else math.nan
        tv[name] = {
            "submission": _jsonable(tv_sub),
            "reference": _jsonable(tv_ref),
            "ratio": _jsonable(ratio),
        }
    metrics: dict[str, Any] = {
        "rel_l2": _jsonable(rel_l2),
        "rmse": _jsonable(rmse(sub, ref, mask)),
        "mae": _jsonable(mae(sub, ref, mask)),
        "r_squared": _jsonable(r_squared(sub, ref, mask)),
        "frequency_rmse": {
            band: _jsonable(v) for band, v in frequency_rmse(sub, ref, mask).items()
        },
        "total_variation": tv,
    }
    if groups is not None:
        metrics["rel_l2_groups"] = {name: _jsonable(e) for name, e in groups.items()}
    return metrics
