"""The timing protocol (SPEC §7), implemented once for baselines and submissions.

Policy: the first execution of a submission is the accuracy run. Only after the accuracy
gate passed, the program is executed again, one run at a time, each from the same
pristine state (a fresh working directory and, under the pristine protocols, fresh
caches: a program's own JIT compilation is part of every timed run) and each checked
and gated like the accuracy run; ``t`` is the median of the timed runs' wall times,
measured outside the program by the sandbox (the program's self-reported time is never
used). Under protocols 1 and 2 the accuracy run is not timed and ``timed_repeats``
runs follow it; under protocol 3 every run is the same pristine run, so the accuracy
run is the first timed run and ``timed_repeats - 1`` follow it. Calibration baselines go
through exactly the same path (:func:`pdeagent.evaluation.pipeline.evaluate_source`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from attrs import define

from pdeagent.sandbox.base import ExecutionResult


@define(frozen=True)
class TimingResult:
    samples: list[float]
    median: float
    failure: ExecutionResult | None = None
    """The first repeat that did not finish normally (the protocol stops there)."""


def timed_repeats(
    run_once: Callable[[], ExecutionResult],
    repeats: int,
    *,
    stop: Callable[[], bool] | None = None,
    first: Sequence[float] = (),
) -> TimingResult:
    """Run ``repeats`` timed executions sequentially after the samples ``first`` already
    timed (protocol 3: the accuracy run's); stop at the first failure, or when ``stop()``
    says the last run's output failed its checks (the median is then NaN). The median is
    over ``first`` and the new samples; ``repeats`` may be 0 when ``first`` holds one."""
    if repeats < 0 or repeats + len(first) < 1:
        raise ValueError("at least one timed run is needed (repeats >= 1, or a first sample)")
    samples: list[float] = [float(s) for s in first]
    for _ in range(repeats):
        result = run_once()
        if not result.ok:
            return TimingResult(samples, float("nan"), failure=result)
        samples.append(result.wall_time_sec)
        if stop is not None and stop():
            return TimingResult(samples, float("nan"))
    return TimingResult(samples, statistics.median(samples))
