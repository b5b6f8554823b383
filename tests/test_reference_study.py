"""Refinement studies of the no-exact references (issue #19,
:mod:`pdeagent.cases.reference_study`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.io import find_case, load_cases
from pdeagent.cases.reference_study import (
    STOP_COST,
    STOP_FAILED,
    STOP_MAX_LEVELS,
    STOP_TARGET,
    LevelFailed,
    LevelOutput,
    ReferenceStudyError,
    StudyOptions,
    estimate,
    is_current,
    level_config,
    read_study,
    reference_is_adequate,
    run_levels,
    run_studies,
    study_case,
    study_key,
    write_study,
)
from pdeagent.sandbox import get_sandbox
from pdeagent.scoring.metrics import relative_l2
from tests.test_null_program import require_runtime

DATASET = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v1.jsonl"
SHAPE = (33, 33)
ALL = np.ones(SHAPE, dtype=bool)


def _gap(coarse, fine) -> float:
    return relative_l2(coarse, fine, ALL)


def _smooth_fields(seed: int = 0):
    rng = np.random.default_rng(seed)
    y, x = np.meshgrid(np.linspace(0, 1, SHAPE[0]), np.linspace(0, 1, SHAPE[1]), indexing="ij")
    exact = np.sin(np.pi * x) * np.cosh(y) + 0.3 * x * y
    return exact, rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)


def _synthetic_solve(p: float, *, c: float = 0.5, d: float = 2.0, h0: float = 0.1):
    """Level k: u* + C h^p w + D h^(p+1) w2 with h = h0 / 2^k (a higher-order term too, so
    the convergence is only asymptotically geometric)."""
    exact, w, w2 = _smooth_fields()

    def solve(k: int, config: dict) -> LevelOutput:
        h = h0 / 2**k
        u = exact + c * h**p * w + d * h ** (p + 1) * w2
        return LevelOutput({"u": u}, seconds=1.0, cells=100 * 4**k, dofs=400 * 4**k)

    return solve, exact


BASE = {"mesh_resolution": 10, "element_degree": 2}
FROM_0 = {"start_level": 0}
"""The sequence from the reference config on (the default starts two levels coarser)."""


@pytest.mark.parametrize("p", [1.4, 2.0, 4.0])
def test_estimate_is_within_20_percent_of_the_true_error(p):
    solve, exact = _synthetic_solve(p)
    options = StudyOptions(target=1e-30, max_levels=5, **FROM_0)
    out = run_levels(solve, BASE, _gap, options=options, dim=2)
    assert out.stopped == STOP_MAX_LEVELS and len(out.levels) == 5
    true = relative_l2(out.finest, {"u": exact}, ALL)
    assert out.e_est is not None
    assert abs(out.e_est - true) <= 0.2 * true, (out.e_est, true)
    assert out.rho == pytest.approx(2.0**-p, rel=0.1)
    # every level from the third on carries its own estimate, the first two say why not
    assert [lv.e_est is None for lv in out.levels] == [True, True, False, False, False]
    assert "needs 3" in out.levels[1].why
    assert [lv.config["mesh_resolution"] for lv in out.levels] == [10, 20, 40, 80, 160]


def test_target_stops_the_sequence():
    solve, _ = _synthetic_solve(2.0)
    out = run_levels(solve, BASE, _gap, options=StudyOptions(target=1e-3, **FROM_0), dim=2)
    assert out.reached and out.stopped == STOP_TARGET
    assert out.e_est is not None and out.e_est <= 1e-3
    assert out.levels[-2].e_est is None or out.levels[-2].e_est > 1e-3


def test_non_converging_sequences_are_refused():
    assert estimate([1e-3, 2e-3]).e_est is None
    refused = estimate([1e-3, 5e-4, 6e-4])  # the last ratio is above 1
    assert refused.e_est is None and "not converging" in refused.why
    assert estimate([1e-3, 1e-4, 9.5e-5]).e_est is None  # 0.95 >= rho_max
    assert estimate([1e-3]).e_est is None  # two levels: no ratio
    assert "zero" in estimate([0.0, 1e-9]).why
    assert estimate([1e-3, math.nan]).e_est is None
    ok = estimate([1e-3, 1e-4, 2e-5])  # ratios 0.1 and 0.2: the larger is used
    assert ok.rho == pytest.approx(0.2) and ok.e_est == pytest.approx(2e-5 * 0.2 / 0.8)

    rng = np.random.default_rng(1)

    def noise(k: int, config: dict) -> LevelOutput:  # levels that do not converge
        return LevelOutput({"u": 1.0 + rng.standard_normal(SHAPE)}, seconds=1.0)

    out = run_levels(noise, BASE, _gap, options=StudyOptions(max_levels=4, **FROM_0), dim=2)
    assert out.e_est is None and not out.reached and out.stopped == STOP_MAX_LEVELS
    assert "not converging" in out.why


def test_cost_cap_and_failed_level():
    solve, _ = _synthetic_solve(2.0)

    def slow(k: int, config: dict) -> LevelOutput:
        out = solve(k, config)
        out.seconds = 10.0 * 4**k
        return out

    options = StudyOptions(target=1e-30, max_seconds=700, **FROM_0)
    out = run_levels(slow, BASE, _gap, options=options, dim=2)
    # 10, 40, 160 s ran; the next is predicted at 640 s <= 700; then 2560 s > 700
    assert out.stopped == STOP_COST and [lv.seconds for lv in out.levels] == [10, 40, 160, 640]
    assert "predicted" in out.stop_detail

    def dofs_capped(k, config):
        return solve(k, config)

    out = run_levels(
        dofs_capped,
        BASE,
        _gap,
        options=StudyOptions(target=1e-30, max_dofs=10_000, **FROM_0),
        dim=2,
    )
    assert out.stopped == STOP_COST and out.levels[-1].dofs == 6400

    def failing(k: int, config: dict) -> LevelOutput:
        if k == 3:
            raise LevelFailed("out of memory")
        return solve(k, config)

    out = run_levels(failing, BASE, _gap, options=StudyOptions(target=1e-30, **FROM_0), dim=2)
    assert out.stopped == STOP_FAILED and "out of memory" in out.stop_detail
    assert len(out.levels) == 3 and out.e_est is not None  # the finest level that ran


def test_coarse_start_estimates_the_reference_config_itself():
    """The default sequence starts two levels below the reference config: when the
    reference config already meets the target, three cheap solves show it and nothing
    finer is solved; otherwise the sequence goes on past it."""
    base = {"mesh_resolution": 40, "element_degree": 2}
    solve, exact = _synthetic_solve(4.0, h0=0.025)  # h0 is level 0's mesh size
    seconds = {-2: 1.0, -1: 4.0, 0: 16.0, 1: 64.0}

    def timed(k: int, config: dict) -> LevelOutput:
        out = solve(k, config)
        out.seconds = seconds[k]
        return out

    true0 = relative_l2(solve(0, base).fields, {"u": exact}, ALL)
    out = run_levels(timed, base, _gap, options=StudyOptions(target=2 * true0), dim=2)
    assert out.reached and out.stopped == STOP_TARGET
    assert [lv.level for lv in out.levels] == [-2, -1, 0]
    assert [lv.config["mesh_resolution"] for lv in out.levels] == [10, 20, 40]
    assert out.levels[-1].config == base  # the finest level is the reference config
    assert sum(lv.seconds for lv in out.levels) == 21.0  # against 1 + 4 + 16 units x 16
    assert out.e_est == pytest.approx(true0, rel=0.2)

    out = run_levels(timed, base, _gap, options=StudyOptions(target=true0 / 4), dim=2)
    assert [lv.level for lv in out.levels] == [-2, -1, 0, 1] and out.reached

    capped = StudyOptions(target=1e-30, max_levels=3)  # max_levels counts from the start
    assert len(run_levels(timed, base, _gap, options=capped, dim=2).levels) == 3

    with pytest.raises(ValueError, match="start_level"):
        StudyOptions(start_level=1)
    with pytest.raises(ReferenceStudyError, match="mesh_resolution 2"):  # 10 / 4: too coarse
        run_levels(timed, BASE, _gap, options=StudyOptions(), dim=2)


def test_level_config_refines_mesh_and_time_step():
    options = StudyOptions()
    base = {"mesh_resolution": 64, "element_degree": 3, "time_step": 0.0025}
    assert level_config(base, 0, options) == base
    assert level_config(base, -2, options) == {
        "mesh_resolution": 16,
        "element_degree": 3,
        "time_step": 0.01,
    }
    assert level_config(base, 2, options) == {
        "mesh_resolution": 256,
        "element_degree": 3,
        "time_step": 0.0025 / 4,
    }
    fixed_dt = StudyOptions(refine_time=False, degree=4, factor=2**0.5)
    assert level_config(base, 1, fixed_dt) == {
        "mesh_resolution": 91,
        "element_degree": 4,
        "time_step": 0.0025,
    }
    with pytest.raises(ValueError):
        StudyOptions(factor=1.0)


def test_reference_is_adequate():
    ok, why = reference_is_adequate({"e_est": 1e-9}, 1e-7)
    assert ok and "<=" in why
    ok, why = reference_is_adequate({"e_est": 2e-8}, 1e-7)
    assert not ok and "finer reference" in why
    assert reference_is_adequate({"e_est": 1e-8}, 1e-7)[0]  # exactly e_base / 10
    assert not reference_is_adequate(None, 1e-3)[0]
    assert not reference_is_adequate({"failure": "level 0: timeout"}, 1e-3)[0]
    ok, why = reference_is_adequate({"e_est": None, "why": "not converging"}, 1e-3)
    assert not ok and "not converging" in why
    assert not reference_is_adequate({"e_est": 1e-9}, 0.0)[0]
    assert not reference_is_adequate({"e_est": 1e-9}, math.nan)[0]


# -- the store: resumable, keyed, failures kept ------------------------------------------------


@pytest.fixture
def small_dataset(tmp_path: Path) -> Path:
    """Two no-exact cases of the shipped dataset in a file of their own."""
    keep = ("poisson_unit_square_noexact_ref_002", "helmholtz_circle_noexact_ref_002")
    lines = [
        line
        for line in DATASET.read_text(encoding="utf-8").splitlines()
        if json.loads(line)["id"] in keep
    ]
    path = tmp_path / "data" / "cases.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class FakeStudy:
    """Stands in for :func:`study_case`: records its calls, fails on request."""

    def __init__(self, fail: set[str] | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail or set()

    def __call__(self, host, track, case, *, sandbox, options, workroot, dataset_dir, on_level):
        self.calls.append(case.id)
        settings = options.settings(case.case_spec.eval_grid.dim)
        record = {
            "schema": 1,
            "case": case.id,
            "track": track.name,
            "settings": settings,
            "key": study_key(host, track, case, settings),
        }
        if case.id in self.fail:
            record["failure"] = "level 0: solver crashed"
            return record, None
        record.update(e_est=1e-10, reached=True, levels=[], gaps=[])
        return record, {"u": np.full(case.case_spec.eval_grid.shape, 1.5)}


def test_studies_are_stored_and_resumed(host, small_dataset, tmp_path):
    track = host.get_track("dolfinx")
    store = tmp_path / "store"
    fake = FakeStudy(fail={"helmholtz_circle_noexact_ref_002"})
    kw = dict(sandbox=None, store=store, study=fake, workroot=tmp_path)

    first = run_studies(host, track, small_dataset, **kw)
    assert sorted(fake.calls) == [
        "helmholtz_circle_noexact_ref_002",
        "poisson_unit_square_noexact_ref_002",
    ]
    assert first.measured == ["poisson_unit_square_noexact_ref_002"]
    assert first.failed == [("helmholtz_circle_noexact_ref_002", "level 0: solver crashed")]
    stored = read_study(store, "poisson_unit_square_noexact_ref_002")
    assert stored is not None and stored["arrays"] == "poisson_unit_square_noexact_ref_002.npz"
    with np.load(store / stored["arrays"]) as data:
        assert data.files == ["u"] and data["u"].shape == (65, 65)
    failure = json.loads((store / "helmholtz_circle_noexact_ref_002.json").read_text())
    assert failure["failure"] == "level 0: solver crashed"
    assert not (store / "helmholtz_circle_noexact_ref_002.npz").exists()
    case = find_case(load_cases(small_dataset), "poisson_unit_square_noexact_ref_002")
    assert is_current(host, track, case, stored)
    other = find_case(load_cases(small_dataset), "helmholtz_circle_noexact_ref_002")
    assert not is_current(host, track, other, stored)

    fake.calls.clear()
    second = run_studies(host, track, small_dataset, **kw)  # all valid: nothing runs
    assert fake.calls == [] and second.reused == ["poisson_unit_square_noexact_ref_002"]
    assert [cid for cid, _ in second.failed] == ["helmholtz_circle_noexact_ref_002"]

    run_studies(host, track, small_dataset, retry_failed=True, **kw)
    assert fake.calls == ["helmholtz_circle_noexact_ref_002"]

    fake.calls.clear()  # another target: another key, every case again (limit: one)
    changed = run_studies(host, track, small_dataset, options=StudyOptions(target=1e-10),
                          limit=1, **kw)  # fmt: skip
    assert len(fake.calls) == 1 and len(changed.measured) + len(changed.failed) == 1

    fake.calls.clear()  # arrays that are not the recorded ones: the entry is not valid
    (store / "poisson_unit_square_noexact_ref_002.npz").write_bytes(b"garbage")
    assert read_study(store, "poisson_unit_square_noexact_ref_002") is None
    run_studies(host, track, small_dataset, **kw)
    assert fake.calls == ["poisson_unit_square_noexact_ref_002"]

    fake.calls.clear()  # a changed case record changes the key of that case only
    lines = small_dataset.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        if r["id"] == "poisson_unit_square_noexact_ref_002":
            r["evaluation_metadata"]["reference_config"]["mesh_resolution"] = 112
    small_dataset.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    run_studies(host, track, small_dataset, **kw)
    assert fake.calls == ["poisson_unit_square_noexact_ref_002"]
    changed_case = find_case(load_cases(small_dataset), "poisson_unit_square_noexact_ref_002")
    assert not is_current(host, track, changed_case, stored)


def test_write_study_then_read_checks_the_key(tmp_path):
    record = {"schema": 1, "case": "c", "key": "k1", "e_est": 1e-9}
    write_study(tmp_path, record, {"u": np.zeros((3, 3))})
    assert read_study(tmp_path, "c", "k1") is not None
    assert read_study(tmp_path, "c", "k2") is None
    assert read_study(tmp_path, "missing") is None


# -- one real study with the DOLFINx reference solver ------------------------------------------


@pytest.mark.dolfinx
def test_reference_study_dolfinx(host, tmp_path):
    require_runtime("dolfinx")
    track = host.get_track("dolfinx")
    case = find_case(load_cases(DATASET), "poisson_unit_square_noexact_ref_002")
    # the default coarse start: 24, 48, 96 (the reference config), a few seconds of solves
    options = StudyOptions(target=1e-30, max_levels=3, max_seconds=120)
    record, arrays = study_case(
        host, track, case, sandbox=get_sandbox("local"), options=options,
        workroot=tmp_path / "work", dataset_dir=DATASET.parent,
    )  # fmt: skip
    assert "failure" not in record, record.get("failure")
    resolutions = [lv["config"]["mesh_resolution"] for lv in record["levels"]]
    assert resolutions == [24, 48, 96] and record["stopped"] == STOP_MAX_LEVELS
    g1, g2 = record["gaps"]
    assert 0 < g2 < g1
    assert math.isfinite(record["e_est"]) and 0 <= record["e_est"] < g1
    assert all(lv["dofs"] and lv["cells"] and lv["seconds"] > 0 for lv in record["levels"])
    # the finest level is the case's reference_config: it reproduces the stored reference
    assert record["finest"]["level"] == 0
    assert record["stored_reference_error"] <= 0.01 * g2
    assert arrays is not None and arrays["u"].shape == case.case_spec.eval_grid.shape
    assert is_current(host, track, case, record)


def test_cli_reports_stored_studies(host, tmp_path):
    """``pdeagent cases reference-study`` reuses a valid stored study (no solve)."""
    from typer.testing import CliRunner

    from pdeagent.cli.main import app

    track = host.get_track("dolfinx")
    case = find_case(load_cases(DATASET), "poisson_unit_square_noexact_ref_002")
    settings = StudyOptions().settings(2)
    record = {
        "schema": 1, "case": case.id, "track": "dolfinx", "settings": settings,
        "key": study_key(host, track, case, settings), "e_est": 7e-11, "rho": 0.06,
        "reached": True, "stopped": STOP_TARGET, "gaps": [2e-8, 1.2e-9],
        "levels": [{"config": {"mesh_resolution": r}} for r in (96, 192, 384)],
    }  # fmt: skip
    write_study(tmp_path, record, {"u": np.zeros((65, 65))})
    args = ["cases", "reference-study", "--case", case.id, "--store", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["reused"] == [case.id] and data["measured"] == []
    assert data["cases"][0]["finest_resolution"] == 384 and data["cases"][0]["reached"]
    result = CliRunner().invoke(app, [*args, "--case", "poisson_circle_mms_999"])
    assert result.exit_code == 2 and "poisson_circle_mms_999" in result.output
