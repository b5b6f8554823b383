"""`pdeagent calibrate`: the track's baseline measured on this machine, stored, and used."""

from __future__ import annotations

import json

import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import find_case, load_cases
from pdeagent.cli.main import app
from pdeagent.evaluation.calibration import LocalCalibration, store_path
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL
from pdeagent.plugins import load_plugins

from .conftest import SAMPLE_TRACK_DIR

pytestmark = pytest.mark.sandbox

CASES = SAMPLE_TRACK_DIR / "cases.jsonl"
CASE_ID = "sample_poisson_unit_square_001"


@pytest.fixture
def cli(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PDEAGENT_CASES", str(CASES))
    return cli


def test_pdeagent_calibration_source_of_the_sample_track():
    host = load_plugins(strict=True)
    case = find_case(load_cases(CASES, known_libraries={"numpy_fd"}), CASE_ID)
    track = host.get_track("numpy_fd")
    source = host.hook.pdeagent_calibration_source(
        track=track, case_view=agent_view(case, "numpy_fd"), calibration_config=None
    )
    assert "def solve(case_spec, settings=None)" in source
    other = type(track)("other", "X", "python", "s.py")
    assert (
        host.hook.pdeagent_calibration_source(track=other, case_view={}, calibration_config=None)
        is None
    )


def test_calibrate_stores_measured_thresholds_and_evaluate_uses_them(cli, tmp_path):
    result = cli.invoke(app, ["calibrate", "--track", "numpy_fd", "--json"])
    assert result.exit_code == 0, result.output
    measured = json.loads(result.stdout)[CASE_ID]
    # the 5-point scheme on h = 1/40: second-order error ~ 3e-4 (see test_sample_track)
    assert 1e-4 < measured["e_base"] < 1e-3
    assert measured["t_base"] > 0
    assert measured["tau_acc"] == pytest.approx(10 * measured["e_base"])
    # pristine protocol, solve time rule: the null program's start-up is allowed once
    assert measured["protocol"] == CURRENT_PROTOCOL
    assert 0 < measured["t_null"] < measured["t_base"]
    t_null = measured["t_null"]
    solve = max(measured["t_base"] - t_null, measured["t_noise"])  # the noise floor
    assert measured["tau_time"] == pytest.approx(t_null + 3 * solve)
    store = LocalCalibration(store_path(CASES.resolve(), "numpy_fd"))
    assert store.get(CASE_ID).calibrated_on["cores"] >= 1

    again = cli.invoke(app, ["calibrate", "--track", "numpy_fd", "--json"])
    assert json.loads(again.stdout)[CASE_ID] == measured  # already calibrated: kept

    graded = cli.invoke(
        app,
        [
            "evaluate",
            "-t",
            "numpy_fd",
            "-c",
            CASE_ID,
            "--json",
            str(SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py"),
        ],
    )
    report = json.loads(graded.stdout)
    assert report["thresholds"]["source"] == "local calibration"
    assert report["thresholds"]["e_base"] == pytest.approx(measured["e_base"])
    assert report["thresholds"]["time_rule"] == "solve"
    assert report["thresholds"]["protocol"] == report["protocol"] == CURRENT_PROTOCOL
    assert report["thresholds"]["tau_time"] == pytest.approx(measured["tau_time"])

    paper = cli.invoke(
        app,
        [
            "evaluate", "-t", "numpy_fd", "-c", CASE_ID, "--json", "--time-rule", "paper",
            str(SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py"),
        ],
    )  # fmt: skip
    th = json.loads(paper.stdout)["thresholds"]
    assert th["time_rule"] == "paper" and th["tau_time"] == pytest.approx(3 * measured["t_base"])
    assert report["verdict"] in ("PASS", "F-Time")  # same solver, timing noise only


def test_calibrate_unknown_case_is_one_line(cli):
    result = cli.invoke(app, ["calibrate", "--track", "numpy_fd", "--case", "nope"])
    assert result.exit_code == 2
    assert "nope" in result.stderr and "Traceback" not in result.output


def test_corrupt_store_is_a_clear_error(cli):
    path = store_path(CASES.resolve(), "numpy_fd")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{broken")
    result = cli.invoke(
        app,
        [
            "evaluate",
            "-t",
            "numpy_fd",
            "-c",
            CASE_ID,
            str(SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py"),
        ],
    )
    assert result.exit_code == 2
    assert "unreadable" in result.stderr
