"""Verdicts, thresholds and the staged decision (SPEC §1).

Stages are applied in order and the first failing one decides:
generation (F-Gen) -> executability (F-Exec, with a machine-readable reason) ->
accuracy (F-Acc) -> efficiency (F-Time) -> PASS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

from pdeagent.cases.model import EvaluationConfig


class Verdict(StrEnum):
    PASS = "PASS"
    F_EXEC = "F-Exec"
    F_ACC = "F-Acc"
    F_TIME = "F-Time"
    F_GEN = "F-Gen"


FEXEC_REASONS: frozenset[str] = frozenset(
    {
        "compile_error",
        "import_error",
        "runtime_error",
        "timeout",
        "memory",
        "missing_artifact",
        "bad_artifact",
        "bad_dtype",
        "bad_shape",
        "bad_components",
        "non_finite",
        "sandbox_violation",
    }
)
"""Every reason an F-Exec verdict may carry."""

ACC_ABOVE_TAU = "error_above_tau"
"""F-Acc reason: the error is finite and larger than ``tau_acc``."""
ACC_NOT_FINITE = "error_not_finite"
"""F-Acc reason: the error is NaN or infinite."""
TIME_ABOVE_TAU = "runtime_above_tau"
"""F-Time reason: the measured runtime is larger than ``tau_time``."""
GEN_FAILED = "generation_failed"
"""F-Gen reason used when the caller gives none."""


def _check_nonneg(name: str, value: float) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")


def _check_positive(name: str, value: float) -> None:
    _check_nonneg(name, value)
    if value == 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


TAU_ACC_MAX = 1e-2
"""Upper bound of tau_acc under the pristine protocol (issue #19): a solution 1 % off is
never accurate, however loose the baseline."""
TIME_RULES = ("solve", "paper")
"""``solve``: ``tau_time = t_null + alpha_time * (t_base - t_null)`` (SPEC §7, the gate
bounds the solve, not start-up); ``paper``: ``tau_time = alpha_time * t_base`` (the
published rule, kept to reproduce published numbers)."""


def thresholds(
    e_base: float,
    t_base: float,
    *,
    alpha_acc: float = 10.0,
    alpha_time: float = 3.0,
    tau_min: float = 1e-6,
    t_null: float | None = None,
    tau_acc_max: float | None = None,
    t_noise: float | None = None,
) -> tuple[float, float]:
    """``(tau_acc, tau_time)``.

    ``tau_acc = max(alpha_acc * e_base, tau_min)``, capped at ``tau_acc_max`` when given.
    Without ``t_null`` (the paper's rule) ``tau_time = alpha_time * t_base``; with it (the
    solve rule)

        tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)

    the start-up every program pays is allowed once, the baseline's solve
    ``alpha_time`` times, and the solve allowance is never smaller than the timing
    noise ``t_noise`` (the largest spread, max - min, of the null program's and the
    baseline's timed repeats; :func:`timing_noise`): where the baseline's solve is at
    noise level (t_base at or below t_null), tau_time does not collapse onto the null
    program's own time. ``t_noise`` None counts as 0 (thresholds measured before it was
    recorded). Inputs must be finite and >= 0, the alphas and ``tau_acc_max`` > 0
    (``ValueError`` otherwise).
    """
    _check_nonneg("e_base", e_base)
    _check_nonneg("t_base", t_base)
    _check_positive("alpha_acc", alpha_acc)
    _check_positive("alpha_time", alpha_time)
    _check_nonneg("tau_min", tau_min)
    tau_acc = max(alpha_acc * e_base, tau_min)
    if tau_acc_max is not None:
        _check_positive("tau_acc_max", tau_acc_max)
        tau_acc = min(tau_acc, tau_acc_max)
    if t_null is None:
        return tau_acc, alpha_time * t_base
    _check_nonneg("t_null", t_null)
    floor = 0.0
    if t_noise is not None:
        _check_nonneg("t_noise", t_noise)
        floor = t_noise
    return tau_acc, t_null + alpha_time * max(t_base - t_null, floor)


def spread(samples: Sequence[float]) -> float:
    """``max - min`` of timed repeats (0 for fewer than two); samples must be finite."""
    values = [float(s) for s in samples]
    for value in values:
        if not math.isfinite(value):
            raise ValueError(f"timed samples must be finite, got {value!r}")
    return max(values) - min(values) if len(values) >= 2 else 0.0


def timing_noise(*sample_sets: Sequence[float]) -> float:
    """The timing noise of a calibration: the largest :func:`spread` of the given sets of
    timed repeats (the null program's and the baseline's)."""
    return max((spread(s) for s in sample_sets), default=0.0)


def thresholds_from_config(
    e_base: float, t_base: float, config: EvaluationConfig
) -> tuple[float, float]:
    """:func:`thresholds` with the alphas and ``tau_min`` of a case's evaluation config."""
    return thresholds(
        e_base,
        t_base,
        alpha_acc=config.alpha_acc,
        alpha_time=config.alpha_time,
        tau_min=config.tau_min,
    )


def _check_tau(name: str, value: float) -> None:
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be >= 0 (inf allowed), got {value!r}")


def staged_verdict(
    *,
    gen_ok: bool,
    gen_reason: str | None = None,
    exec_reason: str | None = None,
    error: float | None = None,
    tau_acc: float,
    runtime: float | None = None,
    tau_time: float,
) -> tuple[Verdict, str | None]:
    """Apply the stages in order and return ``(verdict, reason)``.

    1. ``gen_ok`` false -> ``F-Gen`` with ``gen_reason`` (default
       ``"generation_failed"``); nothing else is looked at.
    2. ``exec_reason`` set -> ``F-Exec`` with that reason, which must be in
       :data:`FEXEC_REASONS` (``ValueError`` otherwise).
    3. ``error`` NaN/inf -> ``F-Acc`` ``"error_not_finite"``; ``error > tau_acc``
       -> ``F-Acc`` ``"error_above_tau"`` (``error == tau_acc`` passes).
    4. ``runtime > tau_time`` -> ``F-Time`` ``"runtime_above_tau"``
       (``runtime == tau_time`` passes).
    5. ``PASS`` with reason ``None``.

    A stage that is reached needs its input: ``error`` after a successful
    execution and ``runtime`` after a passed accuracy gate (``ValueError`` when
    missing, negative, or a NaN runtime).
    """
    _check_tau("tau_acc", tau_acc)
    _check_tau("tau_time", tau_time)
    if not gen_ok:
        return Verdict.F_GEN, gen_reason or GEN_FAILED
    if exec_reason is not None:
        if exec_reason not in FEXEC_REASONS:
            raise ValueError(
                f"unknown F-Exec reason {exec_reason!r}; expected one of {sorted(FEXEC_REASONS)}"
            )
        return Verdict.F_EXEC, exec_reason
    if error is None:
        raise ValueError("error is required when execution succeeded")
    if not math.isfinite(error):
        if error == -math.inf:
            raise ValueError(f"error must be >= 0, got {error!r}")
        return Verdict.F_ACC, ACC_NOT_FINITE
    if error < 0:
        raise ValueError(f"error must be >= 0, got {error!r}")
    if error > tau_acc:
        return Verdict.F_ACC, ACC_ABOVE_TAU
    if runtime is None:
        raise ValueError("runtime is required when the accuracy gate passed")
    if math.isnan(runtime) or runtime < 0:
        raise ValueError(f"runtime must be >= 0, got {runtime!r}")
    if runtime > tau_time:
        return Verdict.F_TIME, TIME_ABOVE_TAU
    return Verdict.PASS, None
