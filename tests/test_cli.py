"""CLI behaviour: help, listings, and one-line errors (never a traceback) on bad input."""

from __future__ import annotations

import json

import pytest

from pdeagent.cli.main import app

from .conftest import REPO_ROOT, SAMPLE_TRACK_DIR

EXAMPLES = REPO_ROOT / "cases" / "examples.jsonl"
SAMPLE_CASES = SAMPLE_TRACK_DIR / "cases.jsonl"


@pytest.fixture
def cli(cli, monkeypatch):
    monkeypatch.setenv("PDEAGENT_CASES", str(EXAMPLES))
    return cli


def one_line_error(result, phrase: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:"), err
    assert phrase in err, err


def test_no_args_shows_help(cli):
    result = cli.invoke(app, [])
    assert "Usage" in result.output
    assert "evaluate" in result.output and "cases" in result.output


def test_version(cli):
    result = cli.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("pdeagent ")


def test_tracks_list_json_includes_the_sample_track(cli):
    result = cli.invoke(app, ["tracks", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows["numpy_fd"]["plugin"] == "sample_fd"
    assert rows["numpy_fd"]["language"] == "python"


def test_providers_list_json_is_a_list(cli):
    result = cli.invoke(app, ["providers", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), list)


def test_cases_list_and_show(cli):
    listed = cli.invoke(app, ["cases", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert len(rows) >= 5
    first = rows[0]["id"]
    shown = cli.invoke(app, ["cases", "show", first])
    record = json.loads(shown.stdout)
    assert record["id"] == first and "evaluation_metadata" in record
    view = cli.invoke(app, ["cases", "show", first, "--agent-view", "--track", "dolfinx"])
    assert view.exit_code == 0, view.output
    assert set(json.loads(view.stdout)) == {"case_spec", "target_library"}


def test_cases_validate_ok_and_problems(cli, tmp_path):
    ok = cli.invoke(app, ["cases", "validate", str(EXAMPLES), "--no-references"])
    assert ok.exit_code == 0, ok.output
    # the hand-written examples ship without the arrays of their two no-exact cases
    missing = cli.invoke(app, ["cases", "validate", str(EXAMPLES), "--json"])
    assert missing.exit_code == 1
    assert {p["field"] for p in json.loads(missing.stdout)} == {
        "evaluation_metadata.reference_path"
    }
    assert len(json.loads(missing.stdout)) == 2
    bad = tmp_path / "bad.jsonl"
    record = json.loads(EXAMPLES.read_text().splitlines()[0])
    record["pde_classification"]["equation_family"] = "heat"
    bad.write_text(json.dumps(record) + "\n{not json\n")
    result = cli.invoke(app, ["cases", "validate", str(bad), "--json"])
    assert result.exit_code == 1
    problems = json.loads(result.stdout)
    assert any(p["line"] == 2 for p in problems)
    assert any(p["case_id"] == record["id"] for p in problems)


def test_unknown_track(cli):
    one_line_error(
        cli.invoke(app, ["prompt", "--track", "nope", "--case", "x"]), "unknown track 'nope'"
    )


def test_unknown_case(cli):
    result = cli.invoke(app, ["cases", "show", "no_such_case"])
    one_line_error(result, "no_such_case")


def test_missing_cases_file(cli, tmp_path):
    result = cli.invoke(app, ["cases", "list", "--cases-file", str(tmp_path / "none.jsonl")])
    one_line_error(result, "none.jsonl")


def test_validate_a_directory(cli, tmp_path):
    one_line_error(cli.invoke(app, ["cases", "validate", str(tmp_path)]), "not a file")


def test_malformed_cases_file(cli, tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text("{oops\n")
    one_line_error(cli.invoke(app, ["cases", "list", "--cases-file", str(bad)]), "line 1")


def test_evaluate_unreadable_solver_file(cli, tmp_path):
    result = cli.invoke(
        app,
        [
            "evaluate",
            "-t",
            "numpy_fd",
            "-c",
            "sample_poisson_unit_square_001",
            "--cases-file",
            str(SAMPLE_CASES),
            str(tmp_path / "missing.py"),
        ],
    )
    one_line_error(result, "missing.py")


def test_evaluate_binary_solver_file(cli, tmp_path):
    binary = tmp_path / "solver.py"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    result = cli.invoke(
        app,
        [
            "evaluate",
            "-t",
            "numpy_fd",
            "-c",
            "sample_poisson_unit_square_001",
            "--cases-file",
            str(SAMPLE_CASES),
            str(binary),
        ],
    )
    one_line_error(result, "")


def test_evaluate_case_without_thresholds(cli, tmp_path):
    solver = tmp_path / "s.py"
    solver.write_text("def solve(case_spec):\n    pass\n")
    first = json.loads(EXAMPLES.read_text().splitlines()[0])["id"]
    result = cli.invoke(app, ["evaluate", "-t", "numpy_fd", "-c", first, str(solver)])
    one_line_error(result, "not offered on track")
