"""Portable time thresholds: a speed sample (issue #33 item 8, rule ``speed-sample-1``).

The shipped time thresholds were measured on the reference machine. A user on another
machine need not re-time every case (``pdeagent calibrate`` per case): the speed sample
re-times a few and scales the rest.

The rule, in words. Draw ``n`` cases of the track whose shipped thresholds carry the null
program's time (pristine protocol: ``t_null`` recorded; :func:`eligible_cases`) by the
run's stratified sample (``pdeagent.cases.selection.stratified_sample``: families take
turns, geometries spread). On this machine, time the track's null program once
(``t_null'``) and run each sampled case's shipped baseline configuration through the same
pipeline and protocol as a calibration
(:func:`pdeagent.evaluation.calibration.calibrate_case`). The case's speed ratio is its
solve time here over its shipped solve time, ``(t_base' - t_null') / (t_base - t_null)``;
the sample's ratio ``r`` is the median of the ratios of the cases whose shipped solve is
at least :data:`MIN_SOLVE_SEC` (a shorter one is mostly timing noise). Every case of the
track is then graded with the shipped thresholds moved to this machine:

    t_null -> t_null',   t_base -> t_null' + r (t_base - t_null),
    t_noise -> max(r t_noise, the spread of the null program's repeats here)

and ``tau_time`` recomputed by the case's rule; ``e_base`` and ``tau_acc`` are unchanged
(the same configuration gives the same error on any machine: a sampled baseline whose
error here is off by more than :data:`E_BASE_TOLERANCE` stops the sample, since its
library build then differs from the reference machine's). The measurement is
:func:`pdeagent.evaluation.calibration.measure_speed_sample`; this module is the rule. A
case's own local calibration, when there is one, takes precedence; thresholds without
``t_null`` (legacy) cannot be moved and stay as shipped. The report names the calibration
that graded each case.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import attrs
from attrs import define, field

from pdeagent.cases.model import PRISTINE_PROTOCOL, Case, EvaluationConfig, Thresholds
from pdeagent.scoring.verdict import TAU_ACC_MAX
from pdeagent.scoring.verdict import thresholds as compute_thresholds

RULE_NAME = "speed-sample-1"
MIN_SOLVE_SEC = 0.25
"""A sampled case enters the ratio only when its shipped solve ``t_base - t_null`` is at
least this long (seconds)."""
MIN_USABLE = 3
"""Fewest sampled cases the ratio may rest on."""
E_BASE_TOLERANCE = 2.0
"""A sampled baseline's error here may differ from the shipped ``e_base`` by at most this
factor either way."""


class SpeedSampleError(RuntimeError):
    """The speed sample cannot be drawn or measured (the message says why)."""


@define
class SampledCase:
    case: str
    t_base: float
    """Shipped."""
    t_null: float
    """Shipped."""
    t_base_here: float
    e_base: float
    """Shipped."""
    e_base_here: float
    ratio: float | None
    """Solve time here over shipped solve time; None: the shipped solve is too short."""


@define
class SpeedSample:
    ratio: float
    t_null: float
    """The null program's time on this machine."""
    null_spread: float
    """Spread (max - min) of the null program's repeats on this machine."""
    cases: list[SampledCase] = field(factory=list)
    seed: int = 0
    rule: str = RULE_NAME
    calibrated_on: dict[str, Any] = field(factory=dict)

    def label(self) -> str:
        """How the report names this calibration."""
        usable = sum(1 for c in self.cases if c.ratio is not None)
        return f"speed sample ({usable} cases, ratio {self.ratio:.3g})"


def movable(thresholds: Thresholds | None) -> bool:
    """Whether shipped thresholds can be moved to another machine (pristine, t_null)."""
    return (
        thresholds is not None
        and thresholds.protocol >= PRISTINE_PROTOCOL
        and thresholds.t_null is not None
    )


def sample_ratio(cases: Sequence[SampledCase]) -> float:
    """The median ratio of the usable cases (:class:`SpeedSampleError` when fewer than
    :data:`MIN_USABLE`)."""
    ratios = [c.ratio for c in cases if c.ratio is not None]
    if len(ratios) < MIN_USABLE:
        raise SpeedSampleError(
            f"only {len(ratios)} sampled case(s) have a shipped solve of at least "
            f"{MIN_SOLVE_SEC} s; the ratio needs {MIN_USABLE}: sample more cases"
        )
    return float(statistics.median(ratios))


def case_ratio(shipped: Thresholds, t_null_here: float, t_base_here: float) -> float | None:
    """One sampled case's speed ratio (None when its shipped solve is shorter than
    :data:`MIN_SOLVE_SEC`)."""
    assert shipped.t_null is not None
    solve = shipped.t_base - shipped.t_null
    if solve < MIN_SOLVE_SEC:
        return None
    return max(t_base_here - t_null_here, 0.0) / solve


def moved(shipped: Thresholds, sample: SpeedSample, config: EvaluationConfig) -> Thresholds:
    """``shipped`` moved to this machine by the speed sample (module doc)."""
    if not movable(shipped):
        raise SpeedSampleError("legacy thresholds (no t_null) cannot be moved by a speed sample")
    assert shipped.t_null is not None
    t_null = sample.t_null
    t_base = t_null + sample.ratio * max(shipped.t_base - shipped.t_null, 0.0)
    t_noise = max(sample.ratio * (shipped.t_noise or 0.0), sample.null_spread)
    tau_acc, tau_time = compute_thresholds(
        shipped.e_base,
        t_base,
        alpha_acc=config.alpha_acc,
        alpha_time=config.alpha_time,
        tau_min=config.tau_min,
        t_null=t_null,
        tau_acc_max=TAU_ACC_MAX,
        t_noise=t_noise,
    )
    return attrs.evolve(
        shipped,
        t_base=t_base,
        t_null=t_null,
        t_noise=t_noise,
        tau_acc=tau_acc,
        tau_time=tau_time,
        calibrated_on={**sample.calibrated_on, "calibration": sample.label()},
    )


def eligible_cases(cases: Sequence[Case], track: str) -> list[Case]:
    """The cases of ``track`` whose shipped thresholds a speed sample can move."""
    return [
        c
        for c in cases
        if track in c.supported_libraries and movable(c.evaluation_metadata.thresholds.get(track))
    ]
