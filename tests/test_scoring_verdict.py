"""Thresholds and the staged verdict."""

from __future__ import annotations

import math

import pytest

from pdeagent.cases.model import EvaluationConfig
from pdeagent.scoring.verdict import (
    FEXEC_REASONS,
    Verdict,
    staged_verdict,
    thresholds,
    thresholds_from_config,
)


def test_verdict_values() -> None:
    assert [v.value for v in Verdict] == ["PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen"]
    assert Verdict("F-Exec") is Verdict.F_EXEC
    assert Verdict.F_ACC == "F-Acc"
    assert f"{Verdict.F_TIME}" == "F-Time"


def test_fexec_reasons() -> None:
    assert {
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
    } == FEXEC_REASONS


def test_threshold_defaults() -> None:
    tau_acc, tau_time = thresholds(2.3e-4, 2.0)
    assert tau_acc == pytest.approx(2.3e-3)
    assert tau_time == pytest.approx(6.0)


def test_threshold_floor_at_tau_min() -> None:
    assert thresholds(0.0, 1.0)[0] == 1e-6
    assert thresholds(5e-8, 1.0)[0] == 1e-6  # 10 * 5e-8 = 5e-7 < tau_min
    assert thresholds(0.0, 1.0, tau_min=1e-4)[0] == 1e-4


def test_threshold_alpha_overrides() -> None:
    tau_acc, tau_time = thresholds(1e-3, 4.0, alpha_acc=2.0, alpha_time=1.5)
    assert tau_acc == pytest.approx(2e-3)
    assert tau_time == pytest.approx(6.0)


def test_thresholds_from_config() -> None:
    cfg = EvaluationConfig(alpha_acc=5.0, alpha_time=2.0, tau_min=1e-5)
    assert thresholds_from_config(1e-3, 10.0, cfg) == pytest.approx((5e-3, 20.0))
    assert thresholds_from_config(0.0, 10.0, cfg)[0] == 1e-5


@pytest.mark.parametrize(
    "kwargs",
    [
        {"e_base": -1e-3, "t_base": 1.0},
        {"e_base": math.nan, "t_base": 1.0},
        {"e_base": 1e-3, "t_base": math.inf},
        {"e_base": 1e-3, "t_base": -1.0},
        {"e_base": 1e-3, "t_base": 1.0, "alpha_acc": 0.0},
        {"e_base": 1e-3, "t_base": 1.0, "alpha_time": -3.0},
        {"e_base": 1e-3, "t_base": 1.0, "alpha_acc": math.inf},
        {"e_base": 1e-3, "t_base": 1.0, "tau_min": -1e-6},
    ],
)
def test_threshold_validation(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        thresholds(**kwargs)


TAU = {"tau_acc": 2.3e-3, "tau_time": 6.0}


def test_pass() -> None:
    assert staged_verdict(gen_ok=True, error=1e-3, runtime=2.5, **TAU) == (Verdict.PASS, None)


def test_boundaries_pass() -> None:
    assert staged_verdict(gen_ok=True, error=2.3e-3, runtime=6.0, **TAU) == (Verdict.PASS, None)


def test_generation_failure_wins() -> None:
    assert staged_verdict(gen_ok=False, gen_reason="no_code_block", **TAU) == (
        Verdict.F_GEN,
        "no_code_block",
    )
    # later-stage inputs are irrelevant once generation failed
    assert staged_verdict(gen_ok=False, exec_reason="timeout", error=1.0, runtime=99.0, **TAU) == (
        Verdict.F_GEN,
        "generation_failed",
    )


@pytest.mark.parametrize("reason", sorted(FEXEC_REASONS))
def test_exec_failure(reason: str) -> None:
    assert staged_verdict(gen_ok=True, exec_reason=reason, **TAU) == (Verdict.F_EXEC, reason)


def test_exec_failure_before_accuracy() -> None:
    # a good error value does not rescue a failed execution
    assert staged_verdict(gen_ok=True, exec_reason="non_finite", error=0.0, runtime=0.1, **TAU) == (
        Verdict.F_EXEC,
        "non_finite",
    )


def test_unknown_exec_reason_raises() -> None:
    with pytest.raises(ValueError, match="unknown F-Exec reason"):
        staged_verdict(gen_ok=True, exec_reason="it broke", **TAU)


def test_accuracy_failure() -> None:
    assert staged_verdict(gen_ok=True, error=2.31e-3, runtime=1.0, **TAU) == (
        Verdict.F_ACC,
        "error_above_tau",
    )
    # F-Acc comes before F-Time: slow and inaccurate is F-Acc, runtime may be unknown
    assert staged_verdict(gen_ok=True, error=0.5, runtime=100.0, **TAU)[0] is Verdict.F_ACC
    assert staged_verdict(gen_ok=True, error=0.5, **TAU)[0] is Verdict.F_ACC


@pytest.mark.parametrize("error", [math.nan, math.inf])
def test_non_finite_error_fails_accuracy(error: float) -> None:
    assert staged_verdict(gen_ok=True, error=error, runtime=1.0, **TAU) == (
        Verdict.F_ACC,
        "error_not_finite",
    )


def test_time_failure() -> None:
    assert staged_verdict(gen_ok=True, error=1e-3, runtime=6.01, **TAU) == (
        Verdict.F_TIME,
        "runtime_above_tau",
    )


def test_infinite_tau_time_disables_time_gate() -> None:
    assert staged_verdict(gen_ok=True, error=0.0, runtime=1e9, tau_acc=1e-6, tau_time=math.inf)[
        0
    ] is (Verdict.PASS)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"gen_ok": True},  # error missing after successful execution
        {"gen_ok": True, "error": 1e-3},  # runtime missing after passed accuracy
        {"gen_ok": True, "error": -1e-3, "runtime": 1.0},
        {"gen_ok": True, "error": 1e-3, "runtime": math.nan},
        {"gen_ok": True, "error": 1e-3, "runtime": -1.0},
    ],
)
def test_missing_or_invalid_stage_inputs_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        staged_verdict(**kwargs, **TAU)  # type: ignore[arg-type]


def test_invalid_tau_raises() -> None:
    with pytest.raises(ValueError):
        staged_verdict(gen_ok=True, error=0.0, runtime=1.0, tau_acc=math.nan, tau_time=1.0)
    with pytest.raises(ValueError):
        staged_verdict(gen_ok=True, error=0.0, runtime=1.0, tau_acc=1e-3, tau_time=-1.0)
