"""t_null: the time of a track's null program under the submission protocol (SPEC §7).

The null program (hook ``pdeagent_null_source``) starts the runtime, loads the library
and writes a valid all-zero artifact. It is graded by the same pipeline, sandbox and
protocol as any submission, without thresholds, so its median timed run is what every
program of the track pays before it solves anything. The time rule
``tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)`` uses it, and the
spread of its timed repeats is part of the timing noise ``t_noise``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attrs import define

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL, EvaluationSetupError, evaluate_source
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import Sandbox
from pdeagent.stages import Track


class NullProgramError(RuntimeError):
    """The track's null program failed (the track, not a submission, is at fault)."""


def null_source(host: PluginHost, track: Track, case: Case) -> str:
    view = agent_view(case, track.name)
    source = host.call_track_hook(track, "pdeagent_null_source", case_view=view)
    if source is None:
        raise EvaluationSetupError(
            f"track {track.name!r} has no null program (pdeagent_null_source): t_null cannot "
            "be measured, so the solve time rule cannot be calibrated"
        )
    return str(source)


@define(frozen=True)
class NullTiming:
    """The null program's timing: the median and every timed repeat."""

    t_null: float
    samples: tuple[float, ...]


def measure_null(
    host: PluginHost,
    track: Track,
    case: Case,
    *,
    sandbox: Sandbox,
    workroot: Path,
    dataset_dir: Path | None = None,
    reference: dict[str, Any] | None = None,
    protocol: int = CURRENT_PROTOCOL,
) -> NullTiming:
    """The track's null program for ``case`` under ``protocol`` (the baseline's: a
    pristine one): its median time and its timed runs (whose spread enters the timing
    noise floor)."""
    report = evaluate_source(
        host,
        track,
        case,
        null_source(host, track, case),
        sandbox=sandbox,
        workroot=workroot,
        thresholds=None,
        dataset_dir=dataset_dir,
        reference=reference,
        protocol=protocol,
    )
    if report.verdict is not None or report.runtime_sec is None:
        raise NullProgramError(
            f"the {track.name} null program failed on {case.id} ({report.reason}): "
            f"{report.message}\n{report.stderr_excerpt[-1500:]}"
        )
    return NullTiming(float(report.runtime_sec), tuple(float(s) for s in report.runtime_samples))
