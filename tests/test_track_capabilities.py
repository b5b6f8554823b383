"""Track capabilities (issue #21): a track declares what it can solve and
`pdeagent cases add-track` offers it every case that matches; when nothing matches, the
error says which capability excluded how many cases."""

from __future__ import annotations

import copy
import importlib
import json
from collections import Counter

import attrs
import pytest

from pdeagent.cases.design import load_designs
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import case_from_dict
from pdeagent.cases.track_thresholds import (
    TrackThresholdsError,
    add_track_thresholds,
    exclusion,
    matching_cases,
)
from pdeagent.cli.main import app
from pdeagent.sandbox import LocalSandbox
from pdeagent.stages import Capabilities

from .conftest import REPO_ROOT, SAMPLE_CASE_ID, SAMPLE_CASES

DATASET = REPO_ROOT / "cases" / "pdeagent-v1.jsonl"
KNOWN = ("dolfinx", "firedrake", "dealii", "numpy_fd")
SAMPLE = json.loads(SAMPLE_CASES.read_text(encoding="utf-8").splitlines()[0])
OTHER_ID = "heat_annulus_smooth_mms_004"  # a transient annulus case: not numpy_fd's
IN_TREE = {
    "dolfinx": "pdeagent_dolfinx.bundle",
    "firedrake": "pdeagent_firedrake.bundle",
    "dealii": "pdeagent_dealii.bundle",
}


def _dataset_record(case_id: str) -> dict:
    for line in DATASET.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] == case_id:
            return record
    raise AssertionError(f"{case_id} is not in the dataset")


def _unlisted_sample() -> dict:
    """The sample case as another track's case: numpy_fd is not in supported_libraries."""
    record = copy.deepcopy(SAMPLE)
    record["dataset_version"] = "1.0.0"
    record["supported_libraries"] = ["dolfinx"]
    record["evaluation_metadata"]["thresholds"] = {}
    return record


def _other() -> dict:
    return {**_dataset_record(OTHER_ID), "dataset_version": "1.0.0"}


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


# ------------------------------------------------------------------ the declaration


def test_capabilities_accept_lists_sets_or_one_value():
    caps = Capabilities(families="poisson", dimensions=2, domains=["unit_square", "circle"])
    assert caps.families == frozenset({"poisson"}) and caps.dimensions == frozenset({2})
    assert caps.domains == frozenset({"unit_square", "circle"})
    assert Capabilities(families=["heat"]).domains is None  # any domain template
    assert caps.time_dependence == frozenset({"steady", "transient"})
    with pytest.raises(TypeError, match="cannot be None"):
        Capabilities(families=None)


def test_exclusion_names_the_first_capability_a_case_misses(track):
    caps = track.capabilities
    assert caps is not None and exclusion(caps, case_from_dict(SAMPLE)) is None
    other = case_from_dict(_dataset_record(OTHER_ID))
    assert exclusion(caps, other) == ("families", "heat")
    assert exclusion(attrs.evolve(caps, families={"heat"}), other) == ("domains", "annulus")
    wider = attrs.evolve(caps, families={"heat"}, domains=None)
    assert exclusion(wider, other) == ("time_dependence", "transient")
    record = copy.deepcopy(SAMPLE)
    record["case_spec"]["bc"]["neumann"] = [{"boundary": ["left"], "value": "0"}]
    assert exclusion(caps, case_from_dict(record)) == ("boundary_conditions", "neumann")
    assert exclusion(attrs.evolve(caps, dimensions={3}), case_from_dict(SAMPLE)) == (
        "dimensions",
        "2",
    )
    vector = copy.deepcopy(SAMPLE)
    vector["case_spec"]["output"]["components"] = ["u_x", "u_y"]
    assert exclusion(caps, case_from_dict(vector)) == ("outputs", "vector")


# ------------------------------------------------------------------ the in-tree tracks


@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_in_tree_track_declares_the_families_it_has_solvers_for(host, name):
    caps = host.get_track(name).capabilities
    assert caps is not None
    assert caps.families == frozenset(importlib.import_module(IN_TREE[name]).FAMILIES)


@pytest.mark.parametrize("name", sorted(IN_TREE))
def test_in_tree_capabilities_against_the_dataset(host, name):
    """Capabilities never exclude a case that lists the track. Where they match more,
    the extra cases are exactly the design's coverage quota (cases/design/*.toml
    `[coverage]`: the build spreads a track over a deterministic subset of a family's
    cases), not something the track cannot solve: the build track (DOLFINx) matches
    the dataset exactly."""
    cases = load_cases(DATASET, known_libraries=KNOWN)
    matched = {c.id for c in matching_cases(host.get_track(name).capabilities, cases)}
    listed = {c.id for c in cases if name in c.supported_libraries}
    assert listed <= matched, sorted(listed - matched)[:10]
    extra = Counter(c.family for c in cases if c.id in matched - listed)
    per_family = Counter(c.family for c in cases)
    quota_gap = {
        d.family: per_family[d.family] - d.coverage.get(name, per_family[d.family])
        for d in load_designs(REPO_ROOT / "cases" / "design")
        if d.family in host.get_track(name).capabilities.families
    }
    assert dict(extra) == {f: n for f, n in quota_gap.items() if n}
    if name == "dolfinx":
        assert matched == listed == {c.id for c in cases}


# ------------------------------------------------------------------ cases add-track


def _add(cli, dataset, build, *extra):
    return cli.invoke(
        app,
        ["cases", "add-track", "-t", "numpy_fd", "--cases-file", str(dataset),
         "--build-dir", str(build), "--no-card", "--version", "1.1.0", *extra],
    )  # fmt: skip


@pytest.mark.sandbox
def test_add_track_offers_every_matching_case_and_measures_it(cli, tmp_path):
    dataset, out, build = tmp_path / "d.jsonl", tmp_path / "new.jsonl", tmp_path / "build"
    _write(dataset, [_unlisted_sample(), _other()])
    result = _add(cli, dataset, build, "--output", str(out), "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["offered"] == [SAMPLE_CASE_ID] and summary["measured"] == [SAMPLE_CASE_ID]
    sample, other = (json.loads(line) for line in out.read_text().splitlines())
    assert sample["supported_libraries"] == ["dolfinx", "numpy_fd"]
    th = sample["evaluation_metadata"]["thresholds"]["numpy_fd"]
    assert 1e-4 < th["e_base"] < 1e-3 and 0 < th["t_null"] < th["t_base"]
    assert sample["dataset_version"] == other["dataset_version"] == "1.1.0"
    unchanged = case_from_dict({**_other(), "dataset_version": "1.1.0"})
    assert case_from_dict(other) == unchanged  # not offered: as it was

    # resumable: the stored measurement is reused
    again = _add(cli, dataset, build, "--output", str(tmp_path / "2.jsonl"))
    assert again.exit_code == 0, again.output
    assert "0 measured, 1 reused; 1 newly supported" in again.output
    assert (tmp_path / "2.jsonl").read_text() == out.read_text()

    # the new dataset has nothing left to add, and says so
    done = _add(cli, out, build, "--version", "1.2.0")
    assert done.exit_code == 2 and "lacks its thresholds" in done.stderr
    assert "1 of 2 cases match its capabilities" in done.stderr


def test_nothing_matching_says_which_capability_excluded_how_many(cli, tmp_path):
    dataset = tmp_path / "d.jsonl"
    _write(dataset, [_other(), _other() | {"id": "heat_copy"}])
    result = _add(cli, dataset, tmp_path / "b")
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert "\n" not in err and "Traceback" not in result.output
    assert err == (
        "error: 0 of 2 cases of d.jsonl match track 'numpy_fd': families not declared (heat: 2)"
    )


def test_a_track_without_capabilities_is_told_to_declare_them(host, tmp_path):
    dataset = tmp_path / "d.jsonl"
    _write(dataset, [_unlisted_sample()])
    bare = attrs.evolve(host.get_track("numpy_fd"), capabilities=None)
    with pytest.raises(TrackThresholdsError) as err:
        add_track_thresholds(
            host, bare, dataset, output=tmp_path / "o.jsonl", version="1.1.0",
            sandbox=LocalSandbox(), build_dir=tmp_path / "b", known_libraries=KNOWN,
        )  # fmt: skip
    message = str(err.value)
    assert "0 of 1 cases of d.jsonl list track 'numpy_fd'" in message
    assert "declares no capabilities" in message and "capabilities=Capabilities(" in message
    assert not (tmp_path / "o.jsonl").exists()
