"""Dataset versioning: the change rule (minor for added cases, major for scoring changes)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from pdeagent.cases.model import case_from_dict
from pdeagent.cases.versioning import VersionError, bump_of, check_bump, diff, parse_version
from pdeagent.cli.main import app

from .conftest import REPO_ROOT

EXAMPLES = [
    json.loads(line)
    for line in (REPO_ROOT / "cases" / "examples.jsonl").read_text(encoding="utf-8").splitlines()
]


def _dataset(version: str, records=None):
    out = []
    for rec in copy.deepcopy(records if records is not None else EXAMPLES):
        rec["dataset_version"] = version
        out.append(rec)
    return out


def _cases(records):
    return [case_from_dict(r) for r in records]


def test_parse_and_bump():
    assert parse_version("1.2.3") == (1, 2, 3)
    assert bump_of("1.2.3", "2.0.0") == "major"
    assert bump_of("1.2.3", "1.3.0") == "minor"
    assert bump_of("1.2.3", "1.2.4") == "patch"
    assert bump_of("1.2.3", "1.2.3") == "none"
    with pytest.raises(VersionError, match="older"):
        bump_of("1.2.3", "1.1.9")
    with pytest.raises(VersionError, match=r"major\.minor\.patch"):
        parse_version("v1")


def test_added_case_needs_a_minor_bump():
    old = _dataset("1.0.0")
    extra = copy.deepcopy(old[0])
    extra["id"] = "poisson_unit_square_mms_999"
    changes = diff(_cases(old), _cases([*old, extra]))
    assert changes.added == ["poisson_unit_square_mms_999"] and changes.required == "minor"
    check_bump(_cases(old), _cases(_dataset("1.1.0", [*old, extra])))
    with pytest.raises(VersionError, match="need a minor version bump"):
        check_bump(_cases(old), _cases(_dataset("1.0.1", [*old, extra])))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["case_spec"]["eval_grid"].update(nx=33),  # grid
        lambda r: r["evaluation_metadata"].update(manufactured_solution={"u": "x"}),  # reference
        lambda r: r["case_spec"]["output"].update(field="v"),  # output contract
    ],
)
def test_scoring_change_needs_a_major_bump(change):
    old = _dataset("1.0.0")
    new = _dataset("1.1.0")
    change(new[0])
    changes = diff(_cases(old), _cases(new))
    assert changes.major == [old[0]["id"]] and changes.required == "major"
    with pytest.raises(VersionError, match="need a major version bump"):
        check_bump(_cases(old), _cases(new))
    check_bump(_cases(old), _cases(_dataset("2.0.0", new)))


def test_threshold_change_is_major_and_a_new_fingerprint_date_a_patch():
    old = _dataset("1.0.0")
    new = _dataset("1.0.0")
    th = new[0]["evaluation_metadata"]["thresholds"]["dolfinx"]
    th["calibrated_on"]["date"] = "2030-01-01"
    assert diff(_cases(old), _cases(new)).required == "patch"
    th["e_base"] *= 2
    th["tau_acc"] *= 2
    assert diff(_cases(old), _cases(new)).major == [old[0]["id"]]


def test_tag_change_is_a_patch():
    old = _dataset("1.0.0")
    new = _dataset("1.0.0")
    new[0]["tags"]["difficulty"] = "hard"
    with pytest.raises(VersionError, match="need a patch version bump"):
        check_bump(_cases(old), _cases(new))
    check_bump(_cases(old), _cases(_dataset("1.0.1", new)))


def test_changed_reference_arrays_are_major(tmp_path):
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    records = _dataset("1.0.0")
    ref = next(r for r in records if r["evaluation_metadata"].get("reference_path"))
    for d, value in ((old_dir, 0.0), (new_dir, 1.0)):
        path = d / ref["evaluation_metadata"]["reference_path"]
        path.parent.mkdir(parents=True)
        np.savez(path, u=np.full((3, 3), value))
    changes = diff(_cases(records), _cases(records), old_dir=old_dir, new_dir=new_dir)
    assert changes.major == [ref["id"]]


def test_cases_diff_cli(tmp_path):
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in _dataset("1.0.0")), encoding="utf-8")
    changed = _dataset("1.0.1")
    changed[0]["case_spec"]["eval_grid"]["nx"] = 33
    new.write_text("".join(json.dumps(r) + "\n" for r in changed), encoding="utf-8")
    result = CliRunner().invoke(app, ["cases", "diff", str(old), str(new), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["required_bump"] == "major" and data["scoring_changed"] == [changed[0]["id"]]


def test_explain_counts_each_change_per_part_and_per_track():
    """`cases diff` explains a step: which parts of what decides a score changed, and per
    track whether its thresholds were kept, replaced (with which protocol and baseline
    rule), added or withheld."""
    from pdeagent.cases.versioning import explain

    old = _dataset("1.0.0")
    th = old[0]["evaluation_metadata"]["thresholds"]["dolfinx"]
    old[0]["evaluation_metadata"]["thresholds"]["firedrake"] = dict(th, t_base=2.0)
    old[1]["evaluation_metadata"]["thresholds"] = {"dolfinx": dict(th)}
    new = _dataset("2.0.0", old)
    frontier = dict(th, protocol=3, t_null=0.4, t_noise=0.05, selection={"rule": "frontier-2"})
    new[0]["evaluation_metadata"]["thresholds"]["dolfinx"] = frontier  # replaced
    new[0]["supported_libraries"] = ["dolfinx", "dealii"]  # firedrake withheld
    del new[0]["evaluation_metadata"]["thresholds"]["firedrake"]
    new[2]["evaluation_metadata"]["thresholds"] = {"dolfinx": frontier}  # added
    new[3]["case_spec"]["eval_grid"]["nx"] = 33
    explained = explain(_cases(old), _cases(new))
    assert explained["scoring"] == {"case_spec.eval_grid": 1}
    assert explained["track dolfinx"] == {
        "added (protocol 3, frontier-2)": 1,
        "kept (protocol 1, default-baseline)": 1,
        "replaced: protocol 1, default-baseline -> protocol 3, frontier-2": 1,
    }
    assert explained["track firedrake"] == {"withheld (no longer offered)": 1}

    assert explain(_cases(old), _cases(old)) == {  # nothing changed: everything kept
        "scoring": {},
        "track dolfinx": {"kept (protocol 1, default-baseline)": 2},
        "track firedrake": {"kept (protocol 1, default-baseline)": 1},
    }
