"""Frontier calibration through the real pipeline on the sample track (``numpy_fd``):
the ladder walk, the stored trial tables, resuming, applying them to a dataset, and the
ladder hook's contract on every installed track."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.frontier_thresholds import (
    RULES,
    FrontierThresholdsError,
    apply_frontier,
    check_stored,
    measure_frontier,
    read_stored,
)
from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.frontier import BUDGET_2D, recompute
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL
from pdeagent.sandbox import get_sandbox
from tests.conftest import SAMPLE_CASE_ID, SAMPLE_CASES

pytestmark = pytest.mark.sandbox
DATASET = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v1.jsonl"
KNOWN = ("numpy_fd", "dolfinx", "firedrake", "dealii")


@pytest.fixture
def dataset(sample_dataset: Path) -> Path:
    return sample_dataset


def test_frontier_walks_the_ladder_stores_the_table_and_applies_it(host, cli, dataset, tmp_path):
    track = host.get_track("numpy_fd")
    store = tmp_path / "store"
    result = measure_frontier(
        host, track, dataset, sandbox=get_sandbox("local"), store=store, known_libraries=KNOWN
    )
    assert result.measured == [SAMPLE_CASE_ID] and not result.failed
    stored = read_stored(store, track, SAMPLE_CASE_ID, None)
    th = stored["thresholds"]
    trials = th["selection"]["trials"]
    # the 5-point scheme is second order: refining the grid r times divides the error
    # by about r^2, and no rung reaches 1e-7, so the most accurate within budget wins
    errors = [t["error"] for t in trials]
    assert [t["config"]["refine"] for t in trials] == [1, 2, 3, 4]
    for k in (1, 2, 3):  # h / (k+1): the error falls by (k+1)^2
        assert errors[0] / errors[k] == pytest.approx((k + 1) ** 2, rel=0.15), errors
    assert th["selection"]["why"] == "most accurate within budget 2 s"
    assert th["selection"]["config"] == {"refine": 4}
    assert th["e_base"] == pytest.approx(errors[3], rel=1e-9)  # same solver, deterministic
    assert th["protocol"] == CURRENT_PROTOCOL and 0 < th["t_null"] < th["t_base"]
    assert th["tau_acc"] == pytest.approx(10 * th["e_base"])
    solve = max(th["t_base"] - th["t_null"], th["t_noise"])  # the noise floor (SPEC §7)
    assert th["t_noise"] >= 0 and th["tau_time"] == pytest.approx(th["t_null"] + 3 * solve)
    case = find_case(load_cases(dataset, known_libraries=KNOWN), SAMPLE_CASE_ID)
    assert check_stored(th, case) == []
    assert recompute(trials, budget=BUDGET_2D, target_error=1e-7).index == 3

    again = measure_frontier(
        host, track, dataset, sandbox=get_sandbox("local"), store=store, known_libraries=KNOWN
    )
    assert again.reused == [SAMPLE_CASE_ID] and again.measured == [] and again.t_null is None

    out = tmp_path / "d" / "v2.jsonl"
    with pytest.raises(Exception, match="major"):  # replaced thresholds change scores
        apply_frontier(
            host, track, dataset, output=out, version="1.1.0", store=store, known_libraries=KNOWN
        )
    applied = apply_frontier(
        host, track, dataset, output=out, version="2.0.0", store=store, known_libraries=KNOWN
    )
    assert (applied.changed, applied.carried, applied.withheld) == (1, {}, {})
    [new] = load_cases(out, known_libraries=KNOWN)
    assert new.dataset_version == "2.0.0"
    # the chosen configuration is added beside what the case's config already held
    assert new.evaluation_metadata.calibration_config == {
        "solver": "pdeagent_sample_fd/fd_poisson.py",
        "numpy_fd": {"refine": 4},
    }
    assert new.evaluation_metadata.thresholds["numpy_fd"].selection == th["selection"]

    # shipping in steps: a track without frontier thresholds yet keeps its released ones
    # where the problem is unchanged (rule carry-1)
    released = tmp_path / "released" / "cases.jsonl"
    records = tmp_path / "records" / "cases.jsonl"
    record = json.loads(dataset.read_text())
    record["supported_libraries"] = ["numpy_fd", "dolfinx"]
    _write(records, record)
    legacy = {"e_base": 2e-4, "t_base": 1.0, "tau_acc": 2e-3, "tau_time": 3.0,
              "calibrated_on": {"cpu": "the 1.x machine"}}  # fmt: skip
    record["evaluation_metadata"]["thresholds"]["dolfinx"] = legacy
    _write(released, record)
    store2 = tmp_path / "store2"  # the record (its tracks too) is part of the store key
    measure_frontier(
        host, track, records, sandbox=get_sandbox("local"), store=store2, known_libraries=KNOWN
    )
    out2 = tmp_path / "d" / "v2-carried.jsonl"
    applied = apply_frontier(
        host, track, records, output=out2, version="2.0.0", store=store2, known_libraries=KNOWN,
        carry_from=released,
    )  # fmt: skip
    assert applied.carried == {"dolfinx": [SAMPLE_CASE_ID]} and applied.withheld == {}
    [carried] = load_cases(out2, known_libraries=KNOWN)
    kept = carried.evaluation_metadata.thresholds["dolfinx"]
    assert (kept.e_base, kept.tau_time, kept.protocol) == (2e-4, 3.0, 1)  # as released
    assert carried.evaluation_metadata.thresholds["numpy_fd"].selection["rule"] in RULES
    # `cases show --grading` says per track which protocol and rule grade the case
    from pdeagent.cli.main import app

    shown = cli.invoke(app, ["cases", "show", SAMPLE_CASE_ID, "--cases-file", str(out2),
                             "--grading"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    rule = carried.evaluation_metadata.thresholds["numpy_fd"].rule
    assert f"numpy_fd: protocol {CURRENT_PROTOCOL}, baseline by {rule} (configuration" in text
    assert "dolfinx: protocol 1, baseline by default-baseline (configuration default)" in text
    assert "tau_time 3.000 s" in text  # the released thresholds, as they were
    # not in the released dataset: the track is withheld from the case until measured
    other = dict(record, id="another_case")
    _write(released, other)
    applied = apply_frontier(
        host, track, records, output=out2, version="2.0.0", store=store2, known_libraries=KNOWN,
        carry_from=released,
    )  # fmt: skip
    assert applied.withheld == {"dolfinx": [(SAMPLE_CASE_ID, "not in the released dataset")]}
    [withheld] = load_cases(out2, known_libraries=KNOWN)
    assert withheld.supported_libraries == ["numpy_fd"]
    assert "dolfinx" not in withheld.evaluation_metadata.thresholds

    # a tampered table no longer recomputes to the stored choice: refused, nothing written
    th["selection"]["chosen"] = 0
    path = store / "numpy_fd" / f"{SAMPLE_CASE_ID}.json"
    path.write_text(json.dumps({**stored, "thresholds": th}))
    out.unlink()
    with pytest.raises(FrontierThresholdsError, match="not the rule's"):
        apply_frontier(
            host, track, dataset, output=out, version="2.0.0", store=store, known_libraries=KNOWN
        )
    assert not out.exists()


def test_frontier_remeasures_a_changed_case_and_apply_needs_every_case(host, dataset, tmp_path):
    track = host.get_track("numpy_fd")
    store = tmp_path / "store"
    with pytest.raises(FrontierThresholdsError, match="not measured"):
        apply_frontier(host, track, dataset, output=tmp_path / "o.jsonl", version="2.0.0",
                       store=store, known_libraries=KNOWN)  # fmt: skip
    measure_frontier(
        host, track, dataset, sandbox=get_sandbox("local"), store=store, known_libraries=KNOWN
    )
    record = json.loads(dataset.read_text())
    record["case_spec"]["pde"]["params"]["kappa"] = 2.0  # a different problem
    record["case_spec"]["pde"]["forcing"]["f"] = "4*pi**2*sin(pi*x)*sin(pi*y)"
    dataset.write_text(json.dumps(record) + "\n")
    result = measure_frontier(
        host, track, dataset, sandbox=get_sandbox("local"), store=store, known_libraries=KNOWN
    )
    assert result.measured == [SAMPLE_CASE_ID] and result.reused == []


def test_pdeagent_calibration_ladder_shape_contract(host):
    """Every installed track's ladder: chains of settings dicts its baseline accepts, for a
    case it supports; None for a track that is not the plugin's own."""
    cases = load_cases(DATASET)
    seen = 0
    for name in ("dolfinx", "firedrake", "dealii"):
        track = host.get_track(name)
        case = next(c for c in cases if name in c.supported_libraries and c.family == "heat")
        view = agent_view(case, name)
        chains = host.hook.pdeagent_calibration_ladder(track=track, case_view=view)
        assert chains and all(chain and all(isinstance(r, dict) for r in chain) for chain in chains)
        source = host.hook.pdeagent_calibration_source(
            track=track, case_view=view, calibration_config={name: chains[0][0]}
        )
        assert source and source != host.hook.pdeagent_calibration_source(
            track=track, case_view=view, calibration_config={name: chains[0][-1]}
        )
        seen += 1
    sample = host.get_track("numpy_fd")
    case = find_case(load_cases(SAMPLE_CASES, known_libraries=KNOWN), SAMPLE_CASE_ID)
    assert host.hook.pdeagent_calibration_ladder(
        track=sample, case_view=agent_view(case, "numpy_fd")
    ) == [[{"refine": r} for r in (1, 2, 3, 4)]]
    assert seen == 3 and math.isfinite(BUDGET_2D)
    assert shutil.which("true")  # the harness machine


def test_apply_needs_an_adequate_current_reference_study_for_a_no_exact_case(host, tmp_path):
    """check_reference (called by apply_frontier): a no-exact case's reference must be the
    arrays of a stored, current refinement study whose error estimate is <= e_base/10."""
    import numpy as np

    from pdeagent.cases.frontier_thresholds import check_reference
    from pdeagent.cases.model import case_from_dict
    from pdeagent.cases.reference_study import (
        STUDY_SCHEMA,
        StudyOptions,
        study_key,
        write_study,
    )

    track = host.get_track("numpy_fd")
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    meta = record["evaluation_metadata"]
    meta.update(
        construction_method="reference_numerical",
        manufactured_solution=None,
        reference_config={"mesh_resolution": 16, "element_degree": 1},
        reference_path=f"studies/{record['id']}.npz",
    )
    case = case_from_dict(record)
    store = tmp_path / "studies"
    assert check_reference(host, case, {"e_base": 1e-6}, tmp_path) == [
        f"studies/{record['id']}.npz is not the arrays of a stored reference study"
    ]
    settings = StudyOptions().settings(2)
    grid = case.case_spec.eval_grid
    study = {
        "schema": STUDY_SCHEMA, "case": case.id, "track": track.name, "settings": settings,
        "key": study_key(host, track, case, settings), "e_est": 2e-8,
    }  # fmt: skip
    write_study(store, study, {"u": np.zeros(grid.shape)})
    assert check_reference(host, case, {"e_base": 1e-6}, tmp_path) == []  # 2e-8 <= 1e-7
    [problem] = check_reference(host, case, {"e_base": 1e-7}, tmp_path)  # 2e-8 > 1e-8
    assert "not adequate" in problem and "finer reference" in problem
    # the same study for another problem is stale
    record["case_spec"]["pde"]["params"]["kappa"] = 3.0
    changed = case_from_dict(record)
    assert check_reference(host, changed, {"e_base": 1e-6}, tmp_path) == [
        "the reference study is stale (the case or the reference solver changed)"
    ]
    # arrays that are not the recorded ones do not count
    (store / f"{case.id}.npz").write_bytes(b"tampered")
    assert "not the arrays" in check_reference(host, case, {"e_base": 1e-6}, tmp_path)[0]
    # a manufactured case needs no study
    mms = find_case(load_cases(SAMPLE_CASES, known_libraries=KNOWN), SAMPLE_CASE_ID)
    assert check_reference(host, mms, {"e_base": 1e-6}, tmp_path) == []


def test_a_case_without_its_reference_arrays_is_skipped_not_stored(host, dataset, tmp_path):
    record = json.loads(dataset.read_text())
    record["evaluation_metadata"].update(
        construction_method="reference_numerical",
        manufactured_solution=None,
        reference_config={"mesh_resolution": 16, "element_degree": 1},
        reference_path=f"studies/{record['id']}.npz",
    )
    dataset.write_text(json.dumps(record) + "\n")
    track = host.get_track("numpy_fd")
    store = tmp_path / "store"
    result = measure_frontier(
        host, track, dataset, sandbox=get_sandbox("local"), store=store, known_libraries=KNOWN
    )
    assert result.measured == [] and result.failed == [] and result.t_null is None
    [(cid, why)] = result.skipped
    assert cid == record["id"] and "not found" in why
    assert not (store / "numpy_fd").exists()


def _write(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")


def test_carry_decision_keeps_released_thresholds_only_for_the_same_problem(tmp_path):
    """Rule carry-1: the released thresholds of a track still grade a record whose case spec,
    construction method and manufactured solution are unchanged, and (no-exact) whose
    reference moved by at most e_base / 10."""
    import numpy as np

    from pdeagent.cases.frontier_thresholds import carry_decision
    from pdeagent.cases.model import case_from_dict

    base = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    legacy = {"e_base": 1e-3, "t_base": 1.0, "tau_acc": 1e-2, "tau_time": 3.0}
    base["evaluation_metadata"]["thresholds"] = {"dolfinx": legacy}
    base["supported_libraries"] = ["numpy_fd", "dolfinx"]

    def case(**changes):
        record = json.loads(json.dumps(base))
        for path, value in changes.items():
            target = record
            *parents, last = path.split(".")
            for name in parents:
                target = target[name]
            target[last] = value
        return case_from_dict(record)

    old, same = case(), case(**{"evaluation_metadata.thresholds": {}})
    th, why = carry_decision(old, same, "dolfinx", tmp_path, tmp_path)
    assert th is not None and th.e_base == 1e-3 and why == "unchanged"
    assert carry_decision(old, same, "firedrake", tmp_path, tmp_path) == (
        None, "no thresholds in the released dataset"
    )  # fmt: skip
    grid = dict(base["case_spec"]["eval_grid"], nx=33, ny=33)
    th, why = carry_decision(old, case(**{"case_spec.eval_grid": grid}), "dolfinx", tmp_path,
                             tmp_path)  # fmt: skip
    assert th is None and why == "the record changed (case_spec)"

    # no-exact: the reference arrays decide
    shape = (base["case_spec"]["eval_grid"]["ny"], base["case_spec"]["eval_grid"]["nx"])
    y, x = np.meshgrid(np.linspace(0, 1, shape[0]), np.linspace(0, 1, shape[1]), indexing="ij")
    u = 1.0 + np.sin(np.pi * x) * np.sin(np.pi * y)
    noexact = {
        "evaluation_metadata.construction_method": "reference_numerical",
        "evaluation_metadata.manufactured_solution": None,
        "evaluation_metadata.reference_config": {"mesh_resolution": 16, "element_degree": 1},
    }
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    for d in (old_dir, new_dir):
        (d / "refs").mkdir(parents=True)
    np.savez(old_dir / "refs" / "r.npz", u=u)
    old = case(**noexact, **{"evaluation_metadata.reference_path": "refs/r.npz"})
    new = case(**noexact, **{"evaluation_metadata.reference_path": "refs/r.npz",
                             "evaluation_metadata.thresholds": {}})  # fmt: skip
    for moved_by, carried in ((0.0, True), (0.5e-4, True), (5e-4, False)):
        np.savez(new_dir / "refs" / "r.npz", u=u * (1.0 + moved_by))  # relative L2 = moved_by
        th, why = carry_decision(old, new, "dolfinx", old_dir, new_dir)
        assert (th is not None) == carried, why
        if moved_by == 0.0:
            assert why == "unchanged (same reference arrays)"
        elif carried:
            assert why == "the reference moved by 5e-05 <= e_base/10 = 0.0001"
        else:
            assert why == "the reference moved by 0.0005 > e_base/10 = 0.0001"
    (new_dir / "refs" / "r.npz").unlink()
    th, why = carry_decision(old, new, "dolfinx", old_dir, new_dir)
    assert th is None and why.startswith("reference arrays:")
