"""The CLI as a newcomer meets it (issue #20): one default dataset for every command,
several ids per --cases, --json summaries, stage progress on evaluate, and one-line errors
for the project's own errors only (a bug keeps its traceback)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pdeagent.cli import common
from pdeagent.cli.main import app

from .conftest import REPO_ROOT, SAMPLE_CASE_ID, SAMPLE_CASES, SAMPLE_TRACK_DIR

EXAMPLES = REPO_ROOT / "cases" / "examples.jsonl"
BASELINE = (SAMPLE_TRACK_DIR / "pdeagent_sample_fd" / "fd_poisson.py").read_text()


@pytest.fixture
def cli(cli, monkeypatch, tmp_path):
    monkeypatch.delenv("PDEAGENT_CASES", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return cli


def one_line_error(result, phrase: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and "\n" not in err, err
    assert phrase in err, err


def sample_copies(tmp_path, n: int):
    """The sample case ``n`` times under distinct ids (a dataset for the numpy_fd track)."""
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    ids, lines = [], []
    for i in range(n):
        record["id"] = f"sample_copy_{i}"
        ids.append(record["id"])
        lines.append(json.dumps(record))
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, ids


# ------------------------------------------------------------------ the default dataset


def test_cases_list_defaults_to_the_benchmark(cli):
    result = cli.invoke(app, ["cases", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 645
    table = cli.invoke(app, ["cases", "list"])
    assert "645 cases" in table.stdout


def test_examples_only_when_asked_for(cli):
    result = cli.invoke(app, ["cases", "list", "--json", "--cases-file", str(EXAMPLES)])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == len(EXAMPLES.read_text().splitlines())


def test_pdeagent_cases_env_still_overrides(cli, monkeypatch):
    monkeypatch.setenv("PDEAGENT_CASES", str(SAMPLE_CASES))
    result = cli.invoke(app, ["cases", "list", "--json"])
    assert [r["id"] for r in json.loads(result.stdout)] == [SAMPLE_CASE_ID]


def test_prompt_and_show_find_a_benchmark_case_without_cases_file(cli):
    result = cli.invoke(
        app, ["prompt", "--case", "poisson_star_smooth_mms_008", "--track", "dolfinx"]
    )
    assert result.exit_code == 0, result.output
    assert "star" in result.stdout.lower()
    shown = cli.invoke(app, ["cases", "show", "poisson_star_smooth_mms_008"])
    assert json.loads(shown.stdout)["id"] == "poisson_star_smooth_mms_008"


@pytest.mark.parametrize(
    "path",
    [("prompt",), ("evaluate",), ("generate",), ("calibrate",), ("run",), ("cases", "list"),
     ("cases", "show"), ("cases", "add-track"), ("sandbox", "check")],
)  # fmt: skip
def test_every_cases_file_option_names_the_benchmark_as_default(path):
    import typer.main

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    (option,) = [p for p in command.params if "--cases-file" in p.opts]
    assert "cases/pdeagent-v1.jsonl" in option.help
    assert "--cases-file cases/examples.jsonl" in option.help


# ------------------------------------------------------------------ --cases a,b


def test_split_ids():
    assert common.split_ids(["a,b", " c ", "b", ",,"]) == ["a", "b", "c"]
    assert common.split_ids(None) == []


def test_unknown_ids_are_one_line_listing_them(cli, tmp_path):
    cases, ids = sample_copies(tmp_path, 2)
    result = cli.invoke(
        app,
        ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
         "--cases", f"{ids[0]},nope_1", "--cases", "nope_2", "--out", str(tmp_path / "run")],
    )  # fmt: skip
    one_line_error(result, "nope_1, nope_2")
    assert not (tmp_path / "run").exists()
    result = cli.invoke(
        app, ["calibrate", "-t", "numpy_fd", "--cases-file", str(cases), "--case", "x,y"]
    )
    one_line_error(result, "x, y")


@pytest.mark.sandbox
def test_run_with_comma_separated_cases_and_json(cli, tmp_path):
    cases, ids = sample_copies(tmp_path, 3)
    run = tmp_path / "run"
    result = cli.invoke(
        app,
        ["run", "-t", "numpy_fd", "-p", "baseline", "--cases-file", str(cases),
         "--cases", f"{ids[0]},{ids[2]}", "--out", str(run), "--no-cache", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)  # nothing else on stdout
    assert summary["run_dir"] == str(run)
    assert summary["cases"] == 2 and summary["models"] == ["baseline"]
    assert summary["counts"]["PASS"] == 2 and summary["pass_rate"] == 1.0
    assert summary["by_model"]["baseline"]["counts"]["PASS"] == 2
    manifest = json.loads((run / "run.json").read_text())
    assert sorted(manifest["config"]["case_ids"]) == [ids[0], ids[2]]


# ------------------------------------------------------------------ --json elsewhere


def test_generate_json(cli, tmp_path):
    args = ["generate", "-t", "numpy_fd", "-c", SAMPLE_CASE_ID, "-p", "baseline",
            "-m", "baseline", "--cases-file", str(SAMPLE_CASES), "--json"]  # fmt: skip
    result = cli.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["provider"] == "baseline" and data["ok"] is True
    assert "def solve" in data["source"] and data["files"] == []
    assert {"input_tokens", "output_tokens", "cost_usd"} <= set(data)
    out = tmp_path / "run"
    written = json.loads(cli.invoke(app, [*args, "--out", str(out)]).stdout)
    assert written["source"] is None and written["files"]
    assert all(f.startswith(str(out)) for f in written["files"])
    assert any(f.endswith("response.md") for f in written["files"])


@pytest.mark.sandbox
def test_add_track_json(cli, tmp_path):
    record = json.loads(SAMPLE_CASES.read_text().splitlines()[0])
    record["dataset_version"] = "1.0.0"
    record["evaluation_metadata"]["thresholds"] = {}
    dataset, out = tmp_path / "d.jsonl", tmp_path / "new.jsonl"
    dataset.write_text(json.dumps(record) + "\n")
    result = cli.invoke(
        app,
        ["cases", "add-track", "-t", "numpy_fd", "--cases-file", str(dataset), "--version",
         "1.1.0", "--output", str(out), "--build-dir", str(tmp_path / "b"), "--no-card",
         "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["measured"] == [SAMPLE_CASE_ID] and data["reused"] == []
    assert data["output"] == str(out) and data["version"] == "1.1.0" and data["cases"] == 1


# ------------------------------------------------------------------ evaluate progress


@pytest.mark.sandbox
def test_evaluate_shows_its_stages_and_is_quiet_under_json(cli, tmp_path):
    solver = tmp_path / "solver.py"
    solver.write_text(BASELINE)
    args = ["evaluate", "-t", "numpy_fd", "-c", SAMPLE_CASE_ID, "--cases-file",
            str(SAMPLE_CASES), "--repeats", "2", str(solver)]  # fmt: skip
    shown = cli.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    stages = re.findall(r"^ +(.+?) \d+\.\d s$", shown.stderr, flags=re.MULTILINE)
    assert stages == ["compile", "accuracy run", "timed repeat 1/2", "timed repeat 2/2"], (
        shown.stderr
    )
    quiet = cli.invoke(app, [*args, "--json"])
    assert quiet.exit_code == 0
    assert json.loads(quiet.stdout)["verdict"] == "PASS"
    assert "accuracy run" not in quiet.stderr


# ------------------------------------------------------------------ errors


def test_failed_calibration_is_one_line(cli, monkeypatch):
    from pdeagent.evaluation import calibration

    def failing(*args, **kwargs):
        raise calibration.CalibrationError(
            f"case {SAMPLE_CASE_ID}: the numpy_fd baseline failed (runtime_error): boom\n"
            "Traceback (most recent call last):\n  File 'solver.py'\nRuntimeError: boom"
        )

    monkeypatch.setattr(calibration, "calibrate_case", failing)
    result = cli.invoke(
        app, ["calibrate", "-t", "numpy_fd", "--cases-file", str(SAMPLE_CASES), "--force"]
    )
    one_line_error(result, "the numpy_fd baseline failed (runtime_error): boom")


def test_an_internal_key_error_is_a_bug_not_bad_input(cli, monkeypatch):
    import pdeagent.cases.agent_view as agent_view

    def broken(case, track):
        raise KeyError("case_spec")

    monkeypatch.setattr(agent_view, "agent_view", broken)
    result = cli.invoke(
        app, ["cases", "show", SAMPLE_CASE_ID, "--cases-file", str(SAMPLE_CASES),
              "--agent-view", "--track", "numpy_fd"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert isinstance(result.exception, KeyError)
    assert not result.stderr.startswith("error:")


def test_an_internal_key_error_shows_its_traceback(tmp_path):
    script = (
        "import sys\n"
        "import pdeagent.cases.agent_view as m\n"
        "def broken(case, track):\n"
        "    raise KeyError('case_spec')\n"
        "m.agent_view = broken\n"
        "from pdeagent.cli.main import app\n"
        "sys.argv = ['pdeagent', *sys.argv[1:]]\n"
        "app()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "cases", "show", SAMPLE_CASE_ID,
         "--cases-file", str(SAMPLE_CASES), "--agent-view", "--track", "numpy_fd"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" in proc.stderr and "KeyError: 'case_spec'" in proc.stderr


def test_bad_user_input_stays_one_line(cli, tmp_path):
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\xff\xfe not text\n")
    sample = ["--cases-file", str(SAMPLE_CASES)]
    one_line_error(cli.invoke(app, ["cases", "list", "--cases-file", str(broken)]), "not UTF-8")
    generate = ["generate", "-t", "numpy_fd", "-c", SAMPLE_CASE_ID, "-p", "baseline", "-m", "m"]
    one_line_error(cli.invoke(app, [*generate, *sample, "-O", "novalue"]), "KEY=VALUE")
    show = cli.invoke(app, ["cases", "show", "nope", *sample])
    one_line_error(show, "no case with id 'nope'")
    evaluate = ["evaluate", "-t", "numpy_fd", "-c", SAMPLE_CASE_ID, *sample]
    result = cli.invoke(app, [*evaluate, "--alpha-acc", "-1", str(broken)])
    one_line_error(result, "--alpha-acc must be finite and > 0")
