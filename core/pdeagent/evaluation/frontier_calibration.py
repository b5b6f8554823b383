"""Frontier calibration of one case on one track (SPEC §7.1, issue #19).

The track's ladder (hook ``pdeagent_calibration_ladder``) lists configurations of its
calibration baseline; :func:`pdeagent.evaluation.frontier.search` walks it, measuring
each rung here through the real pipeline under the pristine protocol (one run: the
accuracy run's error and wall time), and
picks the baseline by the frontier rule. The chosen configuration is then measured with
the full protocol (:func:`pdeagent.evaluation.calibration.calibrate_case`), which gives
e_base and t_base; the rule, the choice and the whole trial table go into
``Thresholds.selection`` so anyone can recompute why the thresholds are what they are.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case, Thresholds
from pdeagent.evaluation.calibration import CalibrationError, calibrate_case
from pdeagent.evaluation.frontier import (
    RULE_NAME,
    SCREENED_RULE_NAME,
    TARGET_ERROR,
    Choice,
    FrontierError,
    Trial,
    budget_for,
    search_with_floor,
    trials_to_table,
)
from pdeagent.evaluation.null import NullTiming
from pdeagent.evaluation.pipeline import (
    CURRENT_PROTOCOL,
    EvaluationSetupError,
    GradingPolicy,
    evaluate_source,
)
from pdeagent.evaluation.screening import Screener
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Limits, Sandbox
from pdeagent.stages import Track

SCREEN_REPEATS = 0
"""Timed repeats of a ladder rung: none, its time is the accuracy run's own (the same
pristine state as a timed run); the chosen rung is measured again with the case's full
protocol (accuracy run plus its timed repeats), which gives t_base."""
RUNG_WALL_FACTOR = 4.0
"""A rung may run ``t_null + RUNG_WALL_FACTOR * budget + RUNG_WALL_SLACK`` seconds before it
is killed (a timeout: failed, its chain stops; it was far over the budget anyway)."""
RUNG_WALL_SLACK = 20.0


def ladder_for(host: PluginHost, track: Track, case: Case) -> list[list[dict[str, Any]]]:
    chains = host.call_track_hook(
        track, "pdeagent_calibration_ladder", case_view=agent_view(case, track.name)
    )
    if chains is None:
        raise EvaluationSetupError(
            f"track {track.name!r} has no calibration ladder (pdeagent_calibration_ladder)"
        )
    return chains


def baseline_source(host: PluginHost, track: Track, case: Case, config: dict[str, Any]) -> str:
    source = host.call_track_hook(
        track,
        "pdeagent_calibration_source",
        case_view=agent_view(case, track.name),
        calibration_config={track.name: config},
    )
    if source is None:
        raise EvaluationSetupError(f"track {track.name!r} provides no calibration baseline")
    return str(source)


def screening_source(host: PluginHost, track: Track, case: Case) -> str | None:
    """The track's screening program for the case, or None when the track has none."""
    source = host.call_track_hook(
        track, "pdeagent_screening_source", case_view=agent_view(case, track.name)
    )
    return None if source is None else str(source)


RULES = (RULE_NAME, SCREENED_RULE_NAME)


def frontier_rule(host: PluginHost, track: Track, case: Case, rule: str | None = None) -> str:
    """The rule that calibrates ``case`` on ``track``: ``rule`` when given (frontier-2 needs
    the track's screening program), else frontier-2 (screened chains) when the track offers
    a screening program and frontier-1 (a pristine run per rung) when not."""
    return _rule(track, screening_source(host, track, case), rule)


def _rule(track: Track, screening: str | None, rule: str | None) -> str:
    """:func:`frontier_rule` given the track's screening program (None: it has none)."""
    if rule is not None and rule not in RULES:
        raise EvaluationSetupError(f"unknown frontier rule {rule!r}; known: {', '.join(RULES)}")
    if rule == SCREENED_RULE_NAME and screening is None:
        raise EvaluationSetupError(
            f"track {track.name!r} has no screening program (pdeagent_screening_source): "
            f"it can only be calibrated by {RULE_NAME}"
        )
    if rule is not None:
        return rule
    return SCREENED_RULE_NAME if screening is not None else RULE_NAME


SCREENED_ERROR_AGREEMENT = 0.05
"""The chosen rung's error in its full pristine measurement (e_base) and in screening must
agree to this relative difference: the same program on the same configuration."""


def measure_rung(
    host: PluginHost,
    track: Track,
    case: Case,
    config: dict[str, Any],
    *,
    sandbox: Sandbox,
    workroot: Path,
    t_null: float,
    budget: float,
    dataset_dir: Path | None = None,
    reference: dict[str, Any] | None = None,
) -> Trial:
    """One ladder rung through the pipeline; a failed solve is a Trial with ``failure``."""
    wall = t_null + RUNG_WALL_FACTOR * budget + RUNG_WALL_SLACK
    report = evaluate_source(
        host,
        track,
        case,
        baseline_source(host, track, case, config),
        sandbox=sandbox,
        workroot=workroot,
        thresholds=None,
        policy=GradingPolicy(timed_repeats=SCREEN_REPEATS, timeout_sec=wall),
        limits=Limits(wall_time_sec=wall),
        dataset_dir=dataset_dir,
        reference=reference,
        protocol=CURRENT_PROTOCOL,
    )
    if report.verdict is not None or report.error is None or report.runtime_sec is None:
        why = f"{report.verdict} {report.reason}: {report.message}".strip()
        return Trial(config=config, error=None, time=None, t_null=t_null, failure=why[:300])
    return Trial(config=config, error=report.error, time=report.runtime_sec, t_null=t_null)


def calibrate_frontier(
    host: PluginHost,
    track: Track,
    case: Case,
    *,
    sandbox: Sandbox,
    workroot: Path,
    null: NullTiming,
    dataset_dir: Path | None = None,
    reference: dict[str, Any] | None = None,
    progress: Callable[[int, Trial], None] | None = None,
    rule: str | None = None,
) -> Thresholds:
    """Thresholds of ``case`` on ``track`` from the frontier rule (see the module doc).

    ``rule``: :func:`frontier_rule` (default: the track's best).
    Raises :class:`CalibrationError` when no rung qualifies or the chosen configuration
    fails its full measurement, :class:`EvaluationSetupError` for a track without a ladder.
    """
    workroot.mkdir(parents=True, exist_ok=True)
    chains = ladder_for(host, track, case)
    budget = budget_for(case.case_spec.eval_grid.dim)
    counter = itertools.count()
    screening = screening_source(host, track, case)
    if _rule(track, screening, rule) != SCREENED_RULE_NAME:
        screening = None  # frontier-1: every rung a pristine run

    def measure(config: dict[str, Any]) -> Trial:
        return measure_rung(
            host, track, case, config, sandbox=sandbox,
            workroot=workroot / f"rung-{next(counter)}", t_null=null.t_null, budget=budget,
            dataset_dir=dataset_dir, reference=reference,
        )  # fmt: skip

    try:
        if screening is None:
            trials, choice = search_with_floor(chains, measure, budget=budget, progress=progress)
        else:
            with Screener(
                host, track, case, screening, sandbox=sandbox, workroot=workroot / "screening",
                t_null=null.t_null, dataset_dir=dataset_dir, reference=reference,
            ) as screener:  # fmt: skip
                trials, choice = search_with_floor(
                    chains, screener.measure, budget=budget, progress=progress, screened=True,
                    on_chain=lambda _c, chain, budget_sec: screener.start_chain(chain, budget_sec),
                )  # fmt: skip
    except FrontierError as exc:
        raise CalibrationError(
            f"case {case.id}: no {track.name} configuration qualifies: {exc}"
        ) from None
    chosen = trials[choice.index].config
    final = calibrate_case(
        host,
        track,
        case,
        sandbox=sandbox,
        workroot=workroot / "chosen",
        dataset_dir=dataset_dir,
        reference=reference,
        source=baseline_source(host, track, case, chosen),
        null=null,
        protocol=CURRENT_PROTOCOL,
    )
    screened = trials[choice.index].error
    if screening is not None and screened is not None and final.e_base is not None:
        if abs(final.e_base - screened) > SCREENED_ERROR_AGREEMENT * max(final.e_base, screened):
            raise CalibrationError(
                f"case {case.id}: the chosen {track.name} configuration {chosen!r} has error "
                f"{final.e_base:.3e} in its pristine runs but {screened:.3e} when screened: "
                "the screening program does not run the baseline as a submission would"
            )
    return attrs.evolve(final, selection=selection_record(trials, choice, budget))


def selection_record(trials: list[Trial], choice: Choice, nominal_budget: float) -> dict[str, Any]:
    """What goes into ``Thresholds.selection`` (recomputable by
    :func:`pdeagent.evaluation.frontier.recompute` from ``trials``)."""
    return {
        "rule": choice.rule,
        "target_error": choice.target_error,
        "budget_sec": choice.budget,
        "nominal_budget_sec": nominal_budget,
        "chosen": choice.index,
        "why": choice.why,
        "config": trials[choice.index].config,
        "trials": trials_to_table(trials),
    }


__all__ = [
    "RULE_NAME",
    "TARGET_ERROR",
    "baseline_source",
    "calibrate_frontier",
    "frontier_rule",
    "ladder_for",
    "measure_rung",
    "screening_source",
    "selection_record",
]
