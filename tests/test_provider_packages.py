"""Providers are plugins: a third-party package is found once pip installed it, and the
offline baseline and replay providers produce real submissions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pdeagent.calls import ProviderCaller
from pdeagent.cases.agent_view import agent_view
from pdeagent.cli.main import app
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.providers import ProviderSettings, ProviderUnavailable
from pdeagent.runs.layout import CALL_FILE, RESPONSE_FILE, attempt_dir
from pdeagent.runs.submission import request_submission
from pdeagent.sandbox import default_sandbox
from pdeagent.sandbox.base import Limits

from .conftest import SAMPLE_CASE_ID as CASE_ID
from .conftest import SAMPLE_CASES as CASES

REPO = Path(__file__).resolve().parents[1]
SAMPLE_PROVIDER = REPO / "tests" / "sample_provider"


def _pdeagent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pdeagent.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_a_third_party_provider_package_is_found_once_installed(tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(site), str(SAMPLE_PROVIDER)],
        check=True, timeout=300,
    )  # fmt: skip
    assert list(site.glob("pdeagent_sample_provider-*.dist-info/entry_points.txt"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    before = _pdeagent("providers", "list", "--json", env=env)
    assert before.returncode == 0, before.stderr
    assert "counting" not in {r["name"] for r in json.loads(before.stdout)}

    env["PYTHONPATH"] = str(site)
    after = _pdeagent("providers", "list", "--json", env=env)
    assert after.returncode == 0, after.stderr
    rows = {r["name"]: r for r in json.loads(after.stdout)}
    assert rows["counting"]["plugin"] == "sample_provider" and rows["counting"]["ready"]

    prompt = _pdeagent("prompt", "-t", "numpy_fd", "-c", CASE_ID, "--cases-file", str(CASES))
    assert prompt.returncode == 0, prompt.stderr
    gen = _pdeagent(
        "generate", "-t", "numpy_fd", "-c", CASE_ID, "-p", "counting", "-m", "m-7",
        "--cases-file", str(CASES), "--no-cache", env=env,
    )  # fmt: skip
    assert gen.returncode == 0, gen.stderr
    assert gen.stdout == f"PROMPT_CHARS = {len(prompt.stdout)}\nMODEL = 'm-7'\n"


def _baseline_submission(host, track, case, directory=None, model="baseline"):
    caller = ProviderCaller(host.get_provider("baseline"), ProviderSettings())
    return request_submission(
        caller,
        prompt="(prompt)",
        model=model,
        track_name=track.name,
        language=track.language,
        source_filename=track.source_filename,
        case_id=case.id,
        case_view=agent_view(case, track.name),
        directory=directory,
    )


@pytest.mark.sandbox
def test_baseline_answers_with_the_calibration_solver_and_it_passes(host, track, case, tmp_path):
    sub = _baseline_submission(host, track, case)
    expected = host.hook.pdeagent_calibration_source(
        track=track, case_view=agent_view(case, track.name), calibration_config=None
    )
    assert sub.failure is None and sub.source == expected.rstrip() + "\n"
    assert sub.call.cost_usd == 0.0 and sub.call.error is None
    policy = GradingPolicy()
    report = evaluate_source(
        host, track, case, sub.source,
        sandbox=default_sandbox(), workroot=tmp_path / "eval",
        thresholds=resolve_thresholds(case, track.name, policy), policy=policy,
        limits=Limits(wall_time_sec=60.0, address_space_bytes=4 * 1024**3),
    )  # fmt: skip
    assert report.verdict == "PASS", report


def test_baseline_without_a_case_view_is_a_provider_error(host):
    caller = ProviderCaller(host.get_provider("baseline"), ProviderSettings())
    from pdeagent.providers import GenerationRequest

    out = caller.call(GenerationRequest(prompt="p", model="baseline", track="numpy_fd"))
    assert out.generation is None and out.record.error_kind == "provider_error"
    assert "case_view" in out.record.error


def test_replay_gives_back_a_saved_run(host, track, case, tmp_path):
    run = tmp_path / "run"
    folder = attempt_dir(run, track.name, "org/model-1", case.id, 0)
    original = _baseline_submission(host, track, case, directory=folder, model="org/model-1")
    assert (folder / RESPONSE_FILE).is_file() and (folder / CALL_FILE).is_file()
    assert (folder / track.source_filename).read_text() == original.source

    replay = host.get_provider("replay")
    caller = ProviderCaller(replay, ProviderSettings(options={"dir": str(run)}))
    again = request_submission(
        caller, prompt="other prompt", model="org/model-1", track_name=track.name,
        language=track.language, source_filename=track.source_filename, case_id=case.id,
        case_view={},
    )  # fmt: skip
    assert again.source == original.source and again.failure is None

    missing = request_submission(
        caller, prompt="p", model="org/model-1", track_name=track.name,
        language=track.language, source_filename=track.source_filename, case_id=case.id,
        case_view={}, attempt=1,
    )  # fmt: skip
    assert missing.source is None and missing.infrastructure
    assert "no saved response" in missing.message


def test_replay_keeps_a_truncation_and_refuses_hostile_files(host, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    replay = host.get_provider("replay")
    caller = ProviderCaller(replay, ProviderSettings(options={"dir": str(run)}))

    def submit(case_id):
        return request_submission(
            caller, prompt="p", model="m", track_name="numpy_fd", language="python",
            source_filename="solver.py", case_id=case_id, case_view={},
        )  # fmt: skip

    cut = attempt_dir(run, "numpy_fd", "m", "cut", 0)
    cut.mkdir(parents=True)
    (cut / RESPONSE_FILE).write_text("```python\ndef solve(case_spec):\n    return (")
    (cut / CALL_FILE).write_text(json.dumps({"finish_reason": "length"}))
    sub = submit("cut")
    assert sub.failure == "truncated" and not sub.infrastructure

    secret = tmp_path / "secret.txt"
    secret.write_text("```python\nprint('reference values')\n```\n")
    escape = attempt_dir(run, "numpy_fd", "m", "escape", 0)
    escape.mkdir(parents=True)
    (escape / RESPONSE_FILE).symlink_to(secret)
    sub = submit("escape")
    assert sub.infrastructure and "outside the replay directory" in sub.message

    garbled = attempt_dir(run, "numpy_fd", "m", "garbled", 0)
    garbled.mkdir(parents=True)
    (garbled / RESPONSE_FILE).write_text("```python\nx = 1\n```\n")
    (garbled / CALL_FILE).write_text("[1, 2")
    sub = submit("garbled")
    assert sub.infrastructure and "not valid JSON" in sub.message


def test_replay_without_a_directory_is_refused_before_any_work(host, tmp_path):
    with pytest.raises(ProviderUnavailable, match="dir=PATH"):
        ProviderCaller(host.get_provider("replay"), ProviderSettings())
    with pytest.raises(ProviderUnavailable, match="does not exist"):
        ProviderCaller(
            host.get_provider("replay"),
            ProviderSettings(options={"dir": str(tmp_path / "nope")}),
        )


def test_cli_generate_writes_the_attempt(cli, tmp_path):
    out = tmp_path / "run"
    result = cli.invoke(
        app,
        ["generate", "-t", "numpy_fd", "-c", CASE_ID, "-p", "baseline", "-m", "baseline",
         "--cases-file", str(CASES), "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = attempt_dir(out, "numpy_fd", "baseline", CASE_ID, 0)
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["prompt.md", "response.md", "call.json", "solver.py"]
    )
    call = json.loads((folder / "call.json").read_text())
    assert call["provider"] == "baseline" and call["case_id"] == CASE_ID
    assert call["decoding"]["temperature"] == 0.0


def test_cli_generate_missing_key_is_one_line_before_work(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = cli.invoke(
        app,
        ["generate", "-t", "numpy_fd", "-c", CASE_ID, "-p", "anthropic", "-m", "claude-x",
         "--cases-file", str(CASES), "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.output
    assert not (tmp_path / "run").exists()


def test_cli_generate_bad_provider_option(cli):
    result = cli.invoke(
        app,
        ["generate", "-t", "numpy_fd", "-c", CASE_ID, "-p", "replay", "-m", "m",
         "--cases-file", str(CASES), "-O", "novalue"],
    )  # fmt: skip
    assert result.exit_code == 2 and "KEY=VALUE" in result.output
