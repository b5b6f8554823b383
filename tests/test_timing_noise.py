"""A solve allowance the noise cannot eat (issue #33 item 2, SPEC §7):

    tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)

with t_noise the largest spread (max - min) of the null program's and the baseline's
timed repeats. Measured: deal.II helmholtz_annulus_smooth_mms_024 had t_base 0.31 s
against t_null 0.34 s, so without the floor tau_time collapsed onto t_null (0.34 s) and
only a program as fast as the null program could pass, whatever it solved."""

from __future__ import annotations

import attrs
import pytest

from pdeagent.cases.model import PRISTINE_PROTOCOL, Thresholds, case_to_dict
from pdeagent.cases.validate import validate_records
from pdeagent.evaluation.calibration import calibrate_case
from pdeagent.evaluation.null import measure_null
from pdeagent.evaluation.pipeline import resolve_thresholds
from pdeagent.sandbox import get_sandbox
from pdeagent.scoring.verdict import Verdict, spread, staged_verdict, thresholds, timing_noise

NULL = [0.30, 0.34, 0.40]  # the null program's timed repeats (spread 0.10 s)
BASE = [0.29, 0.31, 0.33]  # a baseline whose solve is at noise level (spread 0.04 s)


def test_spread_and_noise_are_the_range_of_the_repeats():
    assert spread(NULL) == pytest.approx(0.10)
    assert spread([0.5]) == 0.0 and spread([]) == 0.0
    assert timing_noise(NULL, BASE) == pytest.approx(0.10)
    assert timing_noise() == 0.0
    with pytest.raises(ValueError, match="finite"):
        spread([0.3, float("nan")])


def test_a_solve_shorter_than_the_noise_keeps_an_allowance_of_alpha_times_the_noise():
    t_null, t_base = 0.34, 0.31
    _, collapsed = thresholds(1e-7, t_base, t_null=t_null)  # no floor recorded
    assert collapsed == pytest.approx(t_null)
    _, floored = thresholds(1e-7, t_base, t_null=t_null, t_noise=timing_noise(NULL, BASE))
    assert floored == pytest.approx(0.34 + 3 * 0.10)
    # a submission as fast as the null program's slowest repeat plus a real solve of
    # noise size passes; one taking the whole allowance and more fails
    for runtime, verdict in ((0.40, Verdict.PASS), (0.60, Verdict.PASS), (0.70, Verdict.F_TIME)):
        got, _ = staged_verdict(
            gen_ok=True, error=1e-8, tau_acc=1e-6, runtime=runtime, tau_time=floored
        )
        assert got == verdict, runtime
        without, _ = staged_verdict(
            gen_ok=True, error=1e-8, tau_acc=1e-6, runtime=runtime, tau_time=collapsed
        )
        assert without == Verdict.F_TIME  # what the collapsed gate did to every program


def test_a_solve_above_the_noise_is_graded_as_before():
    assert thresholds(1e-7, 2.0, t_null=0.6, t_noise=0.1)[1] == pytest.approx(0.6 + 3 * 1.4)
    assert thresholds(1e-7, 2.0, t_null=0.6)[1] == pytest.approx(0.6 + 3 * 1.4)
    with pytest.raises(ValueError, match="t_noise"):
        thresholds(1e-7, 2.0, t_null=0.6, t_noise=-0.1)
    # the paper's rule has no start-up term and no floor
    assert thresholds(1e-7, 2.0, t_noise=5.0)[1] == pytest.approx(6.0)


def _with(case, **fields):
    th = case.evaluation_metadata.thresholds["numpy_fd"]
    meta = attrs.evolve(
        case.evaluation_metadata,
        thresholds={"numpy_fd": attrs.evolve(th, **fields)},
    )
    return attrs.evolve(case, evaluation_metadata=meta)


def test_grading_uses_the_recorded_floor_and_validation_checks_it(case):
    t_null, t_base, t_noise = 0.34, 0.31, 0.10
    tau_acc, tau_time = thresholds(1e-7, t_base, t_null=t_null, t_noise=t_noise)
    good = _with(case, e_base=1e-7, t_base=t_base, t_null=t_null, t_noise=t_noise,
                 tau_acc=tau_acc, tau_time=tau_time, protocol=PRISTINE_PROTOCOL)  # fmt: skip
    resolved = resolve_thresholds(good, "numpy_fd")
    assert resolved.tau_time == pytest.approx(0.64) and resolved.t_noise == t_noise
    assert resolved.as_dict()["t_noise"] == t_noise  # the report records it
    assert not [p for p in _problems(good) if "thresholds" in p.field]
    # tau_time written without the floor no longer matches the rule
    stale = _with(good, tau_time=t_null)
    found = [p for p in _problems(stale) if p.field.endswith("tau_time")]
    assert found and "max(t_base - t_null, t_noise)" in found[0].message
    # a floor without t_null, or a negative one, is refused
    legacy = _with(good, t_null=None, protocol=1, tau_time=3 * t_base)
    assert any(p.field.endswith("t_noise") for p in _problems(legacy))
    negative = _with(good, t_noise=-1.0)
    assert any(p.field.endswith("t_noise") for p in _problems(negative))


def _problems(case):
    known = {"numpy_fd", "dolfinx", "firedrake", "dealii"}
    return validate_records([case_to_dict(case)], known_libraries=known)


@pytest.mark.sandbox
def test_calibration_records_the_larger_spread_of_the_null_and_the_baseline(
    host, track, case, tmp_path
):
    """Through the real pipeline (the sample track's finite-difference baseline, whose
    solve is a few milliseconds: at noise level)."""
    sandbox = get_sandbox("local")
    null = measure_null(host, track, case, sandbox=sandbox, workroot=tmp_path / "null")
    assert len(null.samples) >= 2
    th = calibrate_case(host, track, case, sandbox=sandbox, workroot=tmp_path / "c", null=null)
    assert isinstance(th, Thresholds) and th.t_null == null.t_null
    assert th.t_noise is not None and th.t_noise >= spread(null.samples)
    cfg = case.evaluation_config
    want = thresholds(th.e_base, th.t_base, alpha_acc=cfg.alpha_acc, alpha_time=cfg.alpha_time,
                      tau_min=cfg.tau_min, t_null=th.t_null, tau_acc_max=1e-2,
                      t_noise=th.t_noise)  # fmt: skip
    assert (th.tau_acc, th.tau_time) == pytest.approx(want)
    assert th.tau_time >= th.t_null + cfg.alpha_time * th.t_noise
