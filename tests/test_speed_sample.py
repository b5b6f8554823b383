"""Portable time thresholds (issue #33 item 8): ``pdeagent calibrate --speed-sample N``
re-times a few cases' shipped baselines and moves every case's time thresholds here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdeagent.cases.io import find_case, load_cases
from pdeagent.cases.model import LEGACY_PROTOCOL, Thresholds
from pdeagent.cli.main import app
from pdeagent.evaluation.calibration import LocalCalibration, store_path
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL, resolve_thresholds
from pdeagent.evaluation.speed_sample import (
    MIN_SOLVE_SEC,
    SampledCase,
    SpeedSample,
    SpeedSampleError,
    case_ratio,
    moved,
    sample_ratio,
)
from pdeagent.scoring.verdict import TAU_ACC_MAX
from pdeagent.scoring.verdict import thresholds as compute_thresholds

from .conftest import SAMPLE_TRACK_DIR

CASES = SAMPLE_TRACK_DIR / "cases.jsonl"
CASE_ID = "sample_poisson_unit_square_001"
KNOWN = {"numpy_fd"}


def _shipped(**kw) -> Thresholds:
    """Shipped thresholds (tau_acc and tau_time by the rule of the sample case's config)."""
    values = dict(e_base=1e-7, t_base=2.0, protocol=CURRENT_PROTOCOL, t_null=0.4, t_noise=0.05,
                  calibrated_on={"cpu": "reference machine"})  # fmt: skip
    values.update(kw)
    t_null = values["t_null"]
    tau_acc, tau_time = compute_thresholds(
        values["e_base"], values["t_base"], t_null=t_null, t_noise=values["t_noise"],
        tau_acc_max=TAU_ACC_MAX,
    )  # fmt: skip
    return Thresholds(tau_acc=tau_acc, tau_time=tau_time, **values)


def _sample(ratio: float = 1.5) -> SpeedSample:
    cases = [SampledCase(f"c{i}", 2.0, 0.4, 0.5 + ratio * 1.6, 1e-7, 1e-7, ratio) for i in range(3)]
    return SpeedSample(ratio=ratio, t_null=0.5, null_spread=0.02, cases=cases,
                       calibrated_on={"cpu": "this machine"})  # fmt: skip


def _case():
    return find_case(load_cases(CASES, known_libraries=KNOWN), CASE_ID)


# -- the rule -----------------------------------------------------------------------------------


def test_moved_thresholds_follow_the_rule():
    case = _case()  # alpha_time 3, alpha_acc 10, tau_min 1e-6
    out = moved(_shipped(), _sample(1.5), case.evaluation_config)
    assert out.t_null == 0.5  # the null program's time here
    assert out.t_base == pytest.approx(0.5 + 1.5 * 1.6)  # the solve scaled by the ratio
    assert out.t_noise == pytest.approx(0.075)  # 1.5 x 0.05 > the null spread 0.02
    assert out.tau_time == pytest.approx(0.5 + 3 * 1.5 * 1.6)
    assert out.e_base == 1e-7 and out.tau_acc == pytest.approx(1e-6)  # accuracy untouched
    assert out.calibrated_on["cpu"] == "this machine"
    assert out.calibrated_on["calibration"] == "speed sample (3 cases, ratio 1.5)"

    # a noise-level solve: the allowance is the noise floor measured here
    quiet = moved(_shipped(t_base=0.41, t_noise=0.0), _sample(1.0), case.evaluation_config)
    assert quiet.tau_time == pytest.approx(0.5 + 3 * 0.02)

    with pytest.raises(SpeedSampleError, match="legacy"):
        moved(_shipped(t_null=None), _sample(), case.evaluation_config)
    with pytest.raises(SpeedSampleError, match="legacy"):
        moved(_shipped(protocol=LEGACY_PROTOCOL), _sample(), case.evaluation_config)


def test_the_ratio_is_the_median_of_cases_with_a_real_solve():
    shipped = _shipped(t_base=1.4, t_null=0.4)  # a 1.0 s solve
    assert case_ratio(shipped, t_null_here=0.3, t_base_here=2.3) == pytest.approx(2.0)
    assert case_ratio(shipped, t_null_here=0.5, t_base_here=0.45) == 0.0  # never negative
    short = _shipped(t_base=0.4 + MIN_SOLVE_SEC / 2, t_null=0.4)
    assert case_ratio(short, t_null_here=0.3, t_base_here=5.0) is None

    def sampled(ratio):
        return SampledCase("c", 1.4, 0.4, 1.0, 1e-7, 1e-7, ratio)

    assert sample_ratio([sampled(r) for r in (1.0, 1.2, 5.0, None)]) == pytest.approx(1.2)
    with pytest.raises(SpeedSampleError, match="sample more cases"):
        sample_ratio([sampled(1.0), sampled(None), sampled(1.1)])


def test_local_calibration_prefers_a_case_of_its_own_and_names_the_speed_sample(tmp_path):
    case = _case()
    shipped = _shipped()
    ready = case.evaluation_metadata.thresholds | {"numpy_fd": shipped}
    case = _with_thresholds(case, ready)
    store = LocalCalibration(tmp_path / "numpy_fd.json")
    assert store.for_case(case, "numpy_fd") is None  # nothing local: the shipped ones
    store.put_speed_sample(_sample(2.0))

    reread = LocalCalibration(tmp_path / "numpy_fd.json")  # the sample survives a reload
    assert reread.speed_sample == _sample(2.0)
    here = reread.for_case(case, "numpy_fd")
    assert here is not None and here.t_base == pytest.approx(0.5 + 2.0 * 1.6)
    resolved = resolve_thresholds(case, "numpy_fd", calibration=here)
    assert resolved.source == "local calibration: speed sample (3 cases, ratio 2)"
    assert resolved.tau_time == pytest.approx(0.5 + 3 * 2.0 * 1.6)

    own = _shipped(t_base=9.0, calibrated_on={"cpu": "here"})
    reread.put(case.id, own)
    assert reread.for_case(case, "numpy_fd") == own  # a case's own calibration wins
    assert resolve_thresholds(case, "numpy_fd", calibration=own).source == "local calibration"

    only_sample = LocalCalibration(tmp_path / "other.json")
    only_sample.put_speed_sample(_sample(2.0))
    legacy = _with_thresholds(_case(), {"numpy_fd": _shipped(t_null=None, protocol=1)})
    assert only_sample.for_case(legacy, "numpy_fd") is None  # cannot be moved: as shipped
    assert only_sample.for_case(case, "numpy_fd") == here


def _with_thresholds(case, thresholds):
    import attrs

    meta = attrs.evolve(case.evaluation_metadata, thresholds=thresholds)
    return attrs.evolve(case, evaluation_metadata=meta)


# -- the command, end to end on the sample track --------------------------------------------------

REFINE = 7
"""The sample track's baseline on the evaluation grid refined 7x per axis: a sparse solve of
about 200k unknowns, long enough (about a second) to time."""


def _dataset(path: Path, thresholds: dict[str, dict] | None) -> Path:
    """Three copies of the sample track's case (ids ``..._a/_b/_c``) whose baseline runs
    the refined grid, with the given shipped thresholds per id (None: the file's own)."""
    record = json.loads(CASES.read_text(encoding="utf-8").splitlines()[0])
    lines = []
    for suffix in "abc":
        r = json.loads(json.dumps(record))
        r["id"] = f"{CASE_ID}_{suffix}"
        r["evaluation_metadata"]["calibration_config"] = {"numpy_fd": {"refine": REFINE}}
        if thresholds is not None:
            r["evaluation_metadata"]["thresholds"] = {"numpy_fd": thresholds[r["id"]]}
        lines.append(json.dumps(r))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.sandbox
def test_speed_sample_recovers_a_known_slowdown(cli, monkeypatch, tmp_path):
    """Thresholds shipped with every solve half as long as this machine's: the speed sample
    measures a ratio near 2 and the graded case's tau_time follows the rule with it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    first = _dataset(tmp_path / "first" / "cases.jsonl", None)
    result = cli.invoke(app, ["calibrate", "-t", "numpy_fd", "--cases-file", str(first), "--json"])
    assert result.exit_code == 0, result.output
    here = json.loads(result.stdout)
    shipped = {}
    for cid, th in here.items():
        solve = th["t_base"] - th["t_null"]
        assert solve / 2 >= MIN_SOLVE_SEC, f"the refined solve got too short to time: {solve}"
        t_base = th["t_null"] + solve / 2
        shipped[cid] = {
            **th,
            "t_base": t_base,
            "tau_time": th["t_null"] + 3 * max(t_base - th["t_null"], th["t_noise"]),
            "calibrated_on": {"cpu": "a machine twice as fast"},
        }
    second = _dataset(tmp_path / "second" / "cases.jsonl", shipped)

    args = ["calibrate", "-t", "numpy_fd", "--cases-file", str(second)]
    result = cli.invoke(app, [*args, "--speed-sample", "3", "--json"])
    assert result.exit_code == 0, result.output
    sample = json.loads(result.stdout)
    assert sorted(c["case"] for c in sample["cases"]) == sorted(shipped)
    assert all(c["ratio"] is not None for c in sample["cases"])
    assert 1.3 <= sample["ratio"] <= 3.5, sample  # 2 up to timing noise
    assert sample["ratio"] == pytest.approx(sorted(c["ratio"] for c in sample["cases"])[1])

    cid = f"{CASE_ID}_a"
    solver = tmp_path / "solver.py"  # the baseline itself, as a submission
    text = (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text()
    solver.write_text(text.replace("REFINE = 1  #", f"REFINE = {REFINE}  #", 1))
    graded = cli.invoke(
        app,
        ["evaluate", "-t", "numpy_fd", "--cases-file", str(second), "-c", cid, "--json",
         str(solver)],
    )  # fmt: skip
    report = json.loads(graded.stdout)
    th = report["thresholds"]
    assert th["source"].startswith("local calibration: speed sample (3 cases, ratio")
    assert th["t_null"] == pytest.approx(sample["t_null"])
    ship = shipped[cid]
    solve_here = sample["ratio"] * (ship["t_base"] - ship["t_null"])
    noise = max(sample["ratio"] * ship["t_noise"], sample["null_spread"])
    assert th["tau_time"] == pytest.approx(sample["t_null"] + 3 * max(solve_here, noise))
    assert report["verdict"] == "PASS", report  # the baseline passes its moved thresholds

    store = LocalCalibration(store_path(second.resolve(), "numpy_fd"))
    assert store.cases == {} and store.speed_sample is not None


@pytest.mark.sandbox
def test_speed_sample_refuses_what_it_cannot_do(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    args = ["calibrate", "-t", "numpy_fd", "--cases-file", str(CASES)]
    result = cli.invoke(app, [*args, "--speed-sample", "3"])  # legacy thresholds only
    assert result.exit_code == 2 and "can move" in result.output
    result = cli.invoke(app, [*args, "--speed-sample", "1", "--case", CASE_ID])
    assert result.exit_code == 2 and "leave out --case" in result.output

    good = _shipped(e_base=1e-12, t_base=1.4, t_null=0.4)  # an error no run here reproduces
    bad = _dataset(
        tmp_path / "bad" / "cases.jsonl",
        {f"{CASE_ID}_{s}": _as_dict(good) for s in "abc"},
    )
    result = cli.invoke(
        app, ["calibrate", "-t", "numpy_fd", "--cases-file", str(bad), "--speed-sample", "4"]
    )
    assert result.exit_code == 2 and "only 3 cases" in result.output
    result = cli.invoke(
        app, ["calibrate", "-t", "numpy_fd", "--cases-file", str(bad), "--speed-sample", "1"]
    )
    assert result.exit_code == 2 and "does not reproduce" in result.output
    assert LocalCalibration(store_path(bad.resolve(), "numpy_fd")).speed_sample is None


def _as_dict(th: Thresholds) -> dict:
    from pdeagent.cases.model import converter

    return converter.unstructure(th)
