"""The timing protocol (SPEC §7), implemented once for baselines and submissions.

Policy: the first execution of a submission is the accuracy run and also serves
as warm-up (JIT and kernel caches in the submission's private ``XDG_CACHE_HOME``,
page cache); it is never timed for the gate.
Only after the accuracy gate passed, the program is executed ``repeats`` more
times, each in a fresh working directory, one at a time; ``t`` is the median of
those wall times, measured outside the program by the sandbox (the program's
self-reported time is never used). Calibration baselines go through exactly the
same path (:func:`pdeagent.evaluation.pipeline.evaluate_source`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from attrs import define

from pdeagent.sandbox.base import ExecutionResult


@define(frozen=True)
class TimingResult:
    samples: list[float]
    median: float
    failure: ExecutionResult | None = None
    """The first repeat that did not finish normally (the protocol stops there)."""


def timed_repeats(run_once: Callable[[], ExecutionResult], repeats: int) -> TimingResult:
    """Run ``repeats`` timed executions sequentially; stop at the first failure."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    samples: list[float] = []
    for _ in range(repeats):
        result = run_once()
        if not result.ok:
            return TimingResult(samples, float("nan"), failure=result)
        samples.append(result.wall_time_sec)
    return TimingResult(samples, statistics.median(samples))
