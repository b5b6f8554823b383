"""Timing protocol, threshold resolution and execution classification, without a sandbox."""

from __future__ import annotations

import json

import pytest

from pdeagent.cases.model import Thresholds, case_from_dict
from pdeagent.evaluation.pipeline import (
    EvaluationSetupError,
    GradingPolicy,
    classify_execution,
    resolve_thresholds,
)
from pdeagent.evaluation.timing import timed_repeats
from pdeagent.sandbox.base import ExecutionResult
from pdeagent.stages import Invocation

from .conftest import SAMPLE_TRACK_DIR


def result(wall: float, code: int | None = 0, **kw) -> ExecutionResult:
    return ExecutionResult(
        code,
        kw.pop("signal", None),
        kw.pop("timed_out", False),
        kw.pop("memory_exceeded", False),
        wall,
        "",
        "",
    )


def test_timed_repeats_takes_the_median_of_the_repeats():
    walls = iter([3.0, 1.0, 2.0])
    timing = timed_repeats(lambda: result(next(walls)), 3)
    assert timing.samples == [3.0, 1.0, 2.0]
    assert timing.median == 2.0
    assert timing.failure is None


def test_timed_repeats_stops_at_the_first_failure():
    runs = iter([result(1.0), result(9.0, code=1), result(1.0)])
    calls = []

    def run_once():
        calls.append(1)
        return next(runs)

    timing = timed_repeats(run_once, 3)
    assert len(calls) == 2
    assert timing.samples == [1.0]
    assert timing.failure is not None and timing.failure.exit_code == 1


def test_timed_repeats_needs_at_least_one():
    with pytest.raises(ValueError):
        timed_repeats(lambda: result(1.0), 0)
    with pytest.raises(ValueError):
        timed_repeats(lambda: result(1.0), -1, first=[2.0])


def test_timed_repeats_count_the_samples_already_timed():
    """Protocol 3: the accuracy run's time is the first sample; with one timed run in all
    nothing more runs."""
    calls = []

    def run_once():
        calls.append(1)
        return result(4.0)

    alone = timed_repeats(run_once, 0, first=[2.0])
    assert calls == [] and alone.samples == [2.0] and alone.median == 2.0
    more = timed_repeats(run_once, 2, first=[1.0])
    assert len(calls) == 2 and more.samples == [1.0, 4.0, 4.0] and more.median == 4.0


@pytest.fixture
def case():
    record = json.loads((SAMPLE_TRACK_DIR / "cases.jsonl").read_text().splitlines()[0])
    return case_from_dict(record)


def test_thresholds_from_the_dataset(case):
    t = resolve_thresholds(case, "numpy_fd")
    # e_base 1e-3, t_base 10 s with alpha_acc 10, alpha_time 3
    assert (t.tau_acc, t.tau_time, t.source) == (
        pytest.approx(1e-2),
        pytest.approx(30.0),
        "dataset",
    )


def test_thresholds_with_overridden_alphas(case):
    t = resolve_thresholds(case, "numpy_fd", GradingPolicy(alpha_acc=2, alpha_time=1.5))
    assert t.tau_acc == pytest.approx(2e-3)
    assert t.tau_time == pytest.approx(15.0)


def test_tau_min_floors_the_accuracy_threshold(case):
    local = Thresholds(e_base=0.0, t_base=4.0, tau_acc=1e-6, tau_time=12.0)
    t = resolve_thresholds(case, "numpy_fd", GradingPolicy(tau_min=5e-5), calibration=local)
    assert t.tau_acc == pytest.approx(5e-5)
    assert t.tau_time == pytest.approx(12.0)
    assert t.source == "local calibration"


def test_missing_thresholds_is_a_setup_error(case):
    with pytest.raises(EvaluationSetupError, match="no calibrated thresholds for track 'dolfinx'"):
        resolve_thresholds(case, "dolfinx")
    explicit = resolve_thresholds(case, "dolfinx", GradingPolicy(tau_acc=1e-3, tau_time=5.0))
    assert (explicit.tau_acc, explicit.tau_time, explicit.source) == (1e-3, 5.0, "explicit")


@pytest.mark.parametrize(
    ("res", "expected"),
    [
        (result(1.0), None),
        (result(5.0, code=None, signal=9, timed_out=True), "timeout"),
        (result(1.0, code=1, memory_exceeded=True), "memory"),
        (result(1.0, code=3), "import_error"),
        (result(1.0, code=2), "runtime_error"),
        (result(1.0, code=None, signal=11), "runtime_error"),
    ],
)
def test_classify_execution(res, expected):
    inv = Invocation(argv=["x"], exit_code_reasons={3: "import_error"})
    got = classify_execution(res, inv)
    assert (got[0] if got else None) == expected
