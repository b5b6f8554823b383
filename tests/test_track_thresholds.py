"""`pdeagent cases add-track`: a track's thresholds measured by its real baseline (the
sample finite-difference track) and added to a dataset as a minor version."""

from __future__ import annotations

import copy
import json

import pytest

from pdeagent.cases.model import case_from_dict
from pdeagent.cases.versioning import diff
from pdeagent.cli import common
from pdeagent.cli.main import app
from pdeagent.evaluation.pipeline import CURRENT_PROTOCOL

from .conftest import SAMPLE_TRACK_DIR

pytestmark = pytest.mark.sandbox

SAMPLE = json.loads((SAMPLE_TRACK_DIR / "cases.jsonl").read_text(encoding="utf-8"))


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _without_thresholds(**changes):
    record = copy.deepcopy(SAMPLE)
    record["dataset_version"] = "1.0.0"
    record["evaluation_metadata"]["thresholds"] = {}
    for key, value in changes.items():
        record["evaluation_metadata"][key] = value
    return record


def _add(cli, dataset, build, *extra):
    return cli.invoke(
        app,
        ["cases", "add-track", "--track", "numpy_fd", "--cases-file", str(dataset),
         "--build-dir", str(build), "--no-card", *extra],
    )  # fmt: skip


def test_add_track_measures_the_baseline_and_writes_a_minor_version(cli, tmp_path):
    dataset, out, build = tmp_path / "d.jsonl", tmp_path / "new.jsonl", tmp_path / "build"
    _write(dataset, [_without_thresholds()])
    result = _add(cli, dataset, build, "--version", "1.1.0", "--output", str(out))
    assert result.exit_code == 0, result.output
    assert "1 measured, 0 reused" in result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    th = record["evaluation_metadata"]["thresholds"]["numpy_fd"]
    # the 5-point scheme on h = 1/40: second-order error ~ 3e-4 (see test_sample_track)
    assert 1e-4 < th["e_base"] < 1e-3
    assert th["tau_acc"] == pytest.approx(10 * th["e_base"])
    assert th["protocol"] == CURRENT_PROTOCOL and 0 < th["t_null"] < th["t_base"]
    solve = max(th["t_base"] - th["t_null"], th["t_noise"])  # the noise floor (SPEC §7)
    assert th["tau_time"] == pytest.approx(th["t_null"] + 3 * solve)
    assert th["calibrated_on"]["track"] == "numpy_fd"
    assert record["dataset_version"] == "1.1.0"
    changes = diff([case_from_dict(_without_thresholds())], [case_from_dict(record)])
    assert changes.thresholds_added == [SAMPLE["id"]] and changes.required == "minor"
    assert changes.major == [] and changes.patch == []

    # resumable: the stored measurement is reused for the same case and baseline
    again = _add(cli, dataset, build, "--version", "1.1.0", "--output", str(tmp_path / "2.jsonl"))
    assert again.exit_code == 0 and "0 measured, 1 reused" in again.output
    assert json.loads((tmp_path / "2.jsonl").read_text()) == record

    # the written dataset has nothing left to add
    done = _add(cli, out, build, "--version", "1.2.0")
    assert done.exit_code != 0 and "lacks its thresholds" in done.output


def test_a_too_small_version_bump_writes_nothing(cli, tmp_path):
    dataset, build = tmp_path / "d.jsonl", tmp_path / "build"
    _write(dataset, [_without_thresholds()])
    before = dataset.read_bytes()
    result = _add(cli, dataset, build, "--version", "1.0.1")
    assert result.exit_code != 0 and "need a minor version bump" in result.output
    assert dataset.read_bytes() == before


def test_an_incompetent_baseline_is_refused_and_nothing_is_written(cli, tmp_path):
    """The manufactured solution no longer matches the data, so the (correct) baseline's
    error is O(1): above the 0.05 competence limit."""
    dataset, build = tmp_path / "d.jsonl", tmp_path / "build"
    _write(dataset, [_without_thresholds(manufactured_solution={"u": "x*y + 3"})])
    before = dataset.read_bytes()
    result = _add(cli, dataset, build, "--version", "1.1.0")
    assert result.exit_code != 0
    assert "1 of 1 cases have no usable numpy_fd baseline" in result.output
    assert "not a competent baseline" in result.output
    assert dataset.read_bytes() == before


def test_removing_or_changing_a_tracks_thresholds_stays_major():
    old = case_from_dict({**copy.deepcopy(SAMPLE), "dataset_version": "1.0.0"})
    removed = _without_thresholds()
    assert diff([old], [case_from_dict(removed)]).major == [SAMPLE["id"]]
    added_other = copy.deepcopy(SAMPLE)
    added_other["dataset_version"] = "1.0.0"
    th = added_other["evaluation_metadata"]["thresholds"]
    th["other"] = copy.deepcopy(th["numpy_fd"])
    th["numpy_fd"]["e_base"] = 0.002
    assert diff([old], [case_from_dict(added_other)]).major == [SAMPLE["id"]]


def test_without_cases_file_add_track_works_on_the_benchmark_dataset(cli, monkeypatch, tmp_path):
    # the shipped examples have no references: adding thresholds to them cannot work
    monkeypatch.delenv(common.ENV_CASES, raising=False)
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    _write(shipped / "pdeagent-v1.jsonl", [_without_thresholds()])
    (shipped / "examples.jsonl").write_text("not a dataset\n", encoding="utf-8")
    monkeypatch.setattr(common, "datasets_dir", lambda: shipped)
    out, build = tmp_path / "new.jsonl", tmp_path / "build"
    result = cli.invoke(
        app,
        ["cases", "add-track", "--track", "numpy_fd", "--build-dir", str(build), "--no-card",
         "--version", "1.1.0", "--output", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == SAMPLE["id"]
    assert "numpy_fd" in record["evaluation_metadata"]["thresholds"]


def test_cases_limits_what_add_track_measures(cli, tmp_path):
    dataset, out, build = tmp_path / "d.jsonl", tmp_path / "new.jsonl", tmp_path / "build"
    first, second = _without_thresholds(), _without_thresholds()
    second["id"] = SAMPLE["id"] + "_copy"
    _write(dataset, [first, second])
    unknown = _add(cli, dataset, build, "--version", "1.1.0", "--cases", "no_such_case")
    assert unknown.exit_code != 0 and "1 of the --cases ids are not in d.jsonl" in unknown.output
    result = _add(cli, dataset, build, "--version", "1.1.0", "--cases", second["id"],
                  "--output", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 measured, 0 reused" in result.output
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {first["id"], second["id"]}  # the whole dataset is written
    assert "numpy_fd" in records[second["id"]]["evaluation_metadata"]["thresholds"]
    assert records[first["id"]]["evaluation_metadata"]["thresholds"] == {}
    again = _add(cli, out, build, "--version", "1.2.0", "--cases", second["id"])
    assert again.exit_code != 0 and "none of the 1 --cases is left to add" in again.output


def test_add_track_checks_its_inputs_before_measuring_anything(cli, tmp_path):
    """A dataset file copied without the references/ folder it names: refused at once,
    nothing measured (before, every case was measured and then copying failed)."""
    dataset, build = tmp_path / "d.jsonl", tmp_path / "build"
    noexact = _without_thresholds(
        construction_method="reference_numerical",
        manufactured_solution=None,
        reference_config={"mesh_resolution": 16, "element_degree": 1},
        reference_path="references/the_case.npz",
    )
    noexact["id"] = "sample_poisson_unit_square_noexact_002"
    _write(dataset, [_without_thresholds(), noexact])
    result = _add(cli, dataset, build, "--version", "1.1.0")
    assert result.exit_code != 0
    text = " ".join(result.output.split())
    assert "1 no-exact cases lack their reference arrays beside d.jsonl" in text
    assert "sample_poisson_unit_square_noexact_002" in text and "nothing was measured" in text
    store = build / "track-thresholds" / "numpy_fd"
    assert not store.exists() or not any(store.iterdir())
