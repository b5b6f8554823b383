"""A dataset's reference arrays travel with it (issue #21): `cases add-track -o DIR`
copies them beside the new file, `cases validate` reports a missing one, and `run`
refuses to start (before any model call) when a case's reference file is not there,
instead of stopping at that case after work was done."""

from __future__ import annotations

import json

import pytest

from pdeagent.cases.model import case_from_dict
from pdeagent.cases.track_thresholds import TrackThresholdsError, copy_references
from pdeagent.cli.main import app

from .conftest import SAMPLE_CASES

pytestmark = pytest.mark.sandbox


def _record(reference_path: str | None) -> dict:
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    record["evaluation_metadata"]["reference_path"] = reference_path
    return record


def _dataset(tmp_path, reference_path: str | None, *, with_file: bool):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(_record(reference_path)) + "\n")
    if with_file and reference_path:
        (tmp_path / reference_path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / reference_path).write_bytes(b"arrays")
    return path


def test_copy_references_copies_keeps_identical_and_refuses_to_overwrite(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    _dataset(src, "references/a.npz", with_file=True)
    cases = [case_from_dict(_record("references/a.npz")), case_from_dict(_record(None))]
    assert copy_references(cases, src, dst) == [dst / "references" / "a.npz"]
    assert (dst / "references" / "a.npz").read_bytes() == b"arrays"
    assert copy_references(cases, src, dst) == []  # identical: kept
    assert copy_references(cases, src, src) == []  # same directory: nothing to do
    (dst / "references" / "a.npz").write_bytes(b"other")
    with pytest.raises(TrackThresholdsError, match="exists and differs"):
        copy_references(cases, src, dst)
    assert (dst / "references" / "a.npz").read_bytes() == b"other"
    (src / "references" / "a.npz").unlink()
    with pytest.raises(TrackThresholdsError, match=r"reference file .* not found"):
        copy_references(cases, src, tmp_path / "third")


def test_validate_reports_a_missing_reference_file(cli, tmp_path):
    missing = _dataset(tmp_path / "a", "references/a.npz", with_file=False)
    result = cli.invoke(app, ["cases", "validate", str(missing)])
    assert result.exit_code == 1
    assert "reference_path" in result.output and "not found" in result.output
    present = _dataset(tmp_path / "b", "references/a.npz", with_file=True)
    result = cli.invoke(app, ["cases", "validate", str(present)])
    assert result.exit_code == 0, result.output


def test_run_refuses_to_start_without_a_reference_file(cli, tmp_path):
    cases = _dataset(tmp_path / "d", "references/a.npz", with_file=False)
    out = tmp_path / "run"
    result = cli.invoke(
        app,
        ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "1 of 1 cases lack their reference file" in result.output
    assert "references/a.npz" in result.output
    assert not (out / "run.json").exists()
