"""Screening through the real pipeline on the sample track (``numpy_fd``, local sandbox):
the frontier-2 search measures the same errors as frontier-1's pristine runs in one run
per chain, and a screening run that fails, hangs, lies or writes garbage is reported,
never guessed around."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdeagent.cases.frontier_thresholds import measure_frontier, read_stored
from pdeagent.contracts.python_bundle import with_screening_driver
from pdeagent.evaluation import frontier_calibration, screening
from pdeagent.evaluation.calibration import CalibrationError
from pdeagent.evaluation.frontier import RULE_NAME, SCREENED_RULE_NAME
from pdeagent.evaluation.frontier_calibration import calibrate_frontier
from pdeagent.evaluation.null import measure_null
from pdeagent.evaluation.screening import Screener, ScreeningError
from pdeagent.sandbox import get_sandbox
from tests.conftest import SAMPLE_CASE_ID
from tests.sample_track.pdeagent_sample_fd import SCREENING_ENV
from tests.test_frontier_thresholds import KNOWN

pytestmark = pytest.mark.sandbox
SANDBOX = "local"

# A solver that writes a valid artifact (zeros: relative error 1) after sleeping
# settings["sleep"] seconds, or raises when settings["raise"] is set.
SLEEPER = """
import time
import numpy as np


def solve(case_spec, settings=None):
    settings = settings or {}
    if settings.get("raise"):
        raise ZeroDivisionError("asked to fail")
    time.sleep(settings.get("sleep", 0.0))
    g = case_spec["eval_grid"]
    x0, x1, y0, y1 = g["bbox"]
    x, y = np.linspace(x0, x1, g["nx"]), np.linspace(y0, y1, g["ny"])
    np.savez("solution.npz", x=x, y=y, u=np.zeros((g["ny"], g["nx"])))
"""


def _screener(host, case, source: str, tmp_path: Path) -> Screener:
    return Screener(
        host, host.get_track("numpy_fd"), case, source, sandbox=get_sandbox(SANDBOX),
        workroot=tmp_path / "screening", t_null=0.1,
    )  # fmt: skip


def test_frontier_2_measures_frontier_1_errors_in_one_run_per_chain(
    host, sample_dataset, tmp_path, monkeypatch
):
    dataset = sample_dataset
    track = host.get_track("numpy_fd")
    stores = {}
    for mode in ("pristine", "screened"):
        if mode == "screened":
            monkeypatch.setenv(SCREENING_ENV, "1")
        stores[mode] = tmp_path / mode
        result = measure_frontier(
            host, track, dataset, sandbox=get_sandbox(SANDBOX), store=stores[mode],
            known_libraries=KNOWN,
        )  # fmt: skip
        assert result.measured == [SAMPLE_CASE_ID] and not result.failed
    pristine, screened = (
        read_stored(stores[m], track, SAMPLE_CASE_ID, None)["thresholds"]["selection"]
        for m in ("pristine", "screened")
    )
    assert pristine["rule"] == RULE_NAME and screened["rule"] == SCREENED_RULE_NAME
    # the same deterministic solver on the same configurations: the same errors
    errors = {json.dumps(t["config"]): t["error"] for t in pristine["trials"]}
    assert [t["config"] for t in screened["trials"]] == [{"refine": r} for r in (1, 2, 3, 4)]
    for trial in screened["trials"]:
        assert trial["error"] == pytest.approx(errors[json.dumps(trial["config"])], rel=1e-9)
    assert screened["config"] == pristine["config"] == {"refine": 4}

    # one screening run for the one chain: exec-0 with all four rungs and the warm-up
    case = next(iter(_cases(dataset)))
    null = measure_null(host, track, case, sandbox=get_sandbox(SANDBOX), workroot=tmp_path / "n")
    workroot = tmp_path / "frontier"
    calibrate_frontier(
        host, track, case, sandbox=get_sandbox(SANDBOX), workroot=workroot, null=null
    )
    runs = sorted(p.name for p in (workroot / "screening").glob("exec-*"))
    assert runs == ["exec-0"]
    rungs = sorted(p.name for p in (workroot / "screening" / "exec-0").glob("rung-*"))
    assert rungs == [f"rung-{i}{ext}" for i in range(4) for ext in ("", ".json")]
    assert (workroot / "screening" / "exec-0" / "warm-up").is_dir()


def _cases(path: Path):
    from pdeagent.cases.io import load_cases

    return load_cases(path, known_libraries=KNOWN)


def test_a_failing_rung_and_a_failing_warm_up_are_failed_trials(host, case, tmp_path):
    source = with_screening_driver(SLEEPER)
    with _screener(host, case, source, tmp_path) as screener:
        screener.start_chain([{"sleep": 0.0}, {"raise": True}, {"sleep": 0.01}], 2.0)
        ok = screener.measure({"sleep": 0.0})
        assert ok.failure is None and ok.error == pytest.approx(1.0)
        assert ok.time is not None and ok.time >= ok.t_null == 0.1
        failed = screener.measure({"raise": True})
        assert failed.failed and "ZeroDivisionError: asked to fail" in failed.failure
        assert screener.measure({"sleep": 0.01}).failure is None  # the run goes on
        screener.start_chain([{"raise": True}, {"sleep": 0.0}], 2.0)
        warm = screener.measure({"raise": True})
        assert warm.failed and "warm-up" in warm.failure and "ZeroDivisionError" in warm.failure
        assert screener.runs == 2


def test_a_rung_that_hangs_is_killed_and_failed(host, case, tmp_path, monkeypatch):
    monkeypatch.setattr(screening, "WALL_SLACK", 3.0)
    source = with_screening_driver(SLEEPER)
    with _screener(host, case, source, tmp_path) as screener:
        screener.start_chain([{"sleep": 0.0}, {"sleep": 600.0}], 0.1)
        assert screener.measure({"sleep": 0.0}).failure is None
        hung = screener.measure({"sleep": 600.0})
        assert hung.failed and "timeout" in hung.failure
        assert screener.measure({"sleep": 0.0}).failed  # the chain's run is over


def test_a_garbage_record_is_a_screening_error(host, case, tmp_path):
    # the solver writes its own rung record before the driver does (cwd is rung-0/)
    liar = SLEEPER + (
        "\n_solve = solve\n\n\ndef solve(case_spec, settings=None):\n"
        "    open('../rung-0.json', 'w').write('{not json')\n"
        "    time.sleep(0.5)\n    _solve(case_spec, settings)\n"
    )
    with _screener(host, case, with_screening_driver(liar), tmp_path) as screener:
        screener.start_chain([{"sleep": 0.0}], 2.0)
        with pytest.raises(ScreeningError, match="not JSON"):
            screener.measure({"sleep": 0.0})


def test_screened_and_pristine_errors_must_agree(host, sample_dataset, tmp_path, monkeypatch):
    # a screening program that is not the baseline (it perturbs u by 1e-3 relative)
    def perturbed(host_, track_, case_):
        source = frontier_calibration.baseline_source(host_, track_, case_, {})
        savez = 'np.savez("solution.npz"'
        source = source.replace(savez, "u = u * 1.001\n    " + savez)
        return with_screening_driver(source)

    monkeypatch.setattr(frontier_calibration, "screening_source", perturbed)
    track = host.get_track("numpy_fd")
    case = next(iter(_cases(sample_dataset)))
    null = measure_null(host, track, case, sandbox=get_sandbox(SANDBOX), workroot=tmp_path / "n")
    with pytest.raises(CalibrationError, match="does not run the baseline as a submission"):
        calibrate_frontier(
            host, track, case, sandbox=get_sandbox(SANDBOX), workroot=tmp_path / "f", null=null
        )


def test_pdeagent_screening_source_contract(host, case, monkeypatch):
    """The Python tracks answer with their bundle plus the driver (valid Python whose
    ``solve`` is the driver's); deal.II has none (frontier-1); the sample track only
    when enabled; no track answers for another."""
    import ast

    from pdeagent.cases.io import load_cases
    from pdeagent.evaluation.frontier_calibration import frontier_rule

    records = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v2-records.jsonl"
    poisson = next(c for c in load_cases(records) if c.family == "poisson")
    for name, expected in (("dolfinx", True), ("firedrake", True), ("dealii", False)):
        track = host.get_track(name)
        source = frontier_calibration.screening_source(host, track, poisson)
        assert (source is not None) == expected, name
        assert frontier_rule(host, track, poisson) == (
            SCREENED_RULE_NAME if expected else RULE_NAME
        )
        if source is not None:
            tree = ast.parse(source)
            last = tree.body[-1]
            assert isinstance(last, ast.Assign) and last.targets[0].id == "solve"
            assert "pdeagent.contracts.python_screening" in source
    sample = host.get_track("numpy_fd")
    monkeypatch.delenv(SCREENING_ENV, raising=False)
    assert frontier_calibration.screening_source(host, sample, case) is None
    monkeypatch.setenv(SCREENING_ENV, "1")
    assert "screening_entry" in frontier_calibration.screening_source(host, sample, case)
    from pdeagent.cases.agent_view import agent_view

    view = agent_view(poisson, "dolfinx")
    assert host.hook.pdeagent_screening_source(track=sample, case_view=view) is not None
    other = host.get_track("dealii")
    assert host.hook.pdeagent_screening_source(track=other, case_view=view) is None


def test_cases_frontier_rule_option(cli, sample_dataset, tmp_path, monkeypatch):
    """``--rule frontier-1`` forces pristine rungs on a track that could screen, and the
    result is stored under its own key; ``--rule frontier-2`` is refused in one line for a
    track without a screening program."""
    from pdeagent.cli.main import app

    base = ["cases", "frontier", "-t", "numpy_fd", "--cases-file", str(sample_dataset),
            "--sandbox", SANDBOX, "--json"]  # fmt: skip
    monkeypatch.delenv(SCREENING_ENV, raising=False)
    refused = cli.invoke(app, [*base, "--store", str(tmp_path / "a"), "--rule", "frontier-2"])
    assert refused.exit_code == 2 and "no screening program" in refused.output
    assert not (tmp_path / "a" / "numpy_fd").exists()

    monkeypatch.setenv(SCREENING_ENV, "1")
    store = tmp_path / "b"
    forced = cli.invoke(app, [*base, "--store", str(store), "--rule", "frontier-1"])
    assert forced.exit_code == 0, forced.output
    from pdeagent.plugins import load_plugins

    track = load_plugins(strict=True).get_track("numpy_fd")
    stored = read_stored(store, track, SAMPLE_CASE_ID, None)
    assert stored["thresholds"]["selection"]["rule"] == RULE_NAME
    # the default for this track is now frontier-2: another key, measured again
    again = cli.invoke(app, [*base, "--store", str(store)])
    assert again.exit_code == 0 and json.loads(again.output)["measured"] == [SAMPLE_CASE_ID]
    stored = read_stored(store, track, SAMPLE_CASE_ID, None)
    assert stored["thresholds"]["selection"]["rule"] == SCREENED_RULE_NAME
    bad = cli.invoke(app, [*base, "--store", str(store), "--rule", "frontier-9"])
    assert bad.exit_code == 2 and "unknown frontier rule" in bad.output
