"""``pdeagent run --mode agent`` end to end over the wire (issue #22): the anthropic and
openai providers (official SDKs) talk to a scripted server on 127.0.0.1 whose model
works through the tools: it writes a solver with a wrong API name, runs it in the
sandbox session exactly as the grader would, reads the error, writes the track's
calibration solver, runs it again and submits; the submission PASSes. A second script
only runs commands until the turn budget ends: F-Gen ``agent_budget``. Once on the
sample track (NumPy), once on DOLFINx."""

# ruff: noqa: F811 (the server fixture of test_wire, used by name)
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_feedback_run_wire import (
    DOLFINX_BROKEN,
    NUMPY_BROKEN,
    SAMPLE_CASES,
    calibration_source,
    dolfinx_python,
)
from test_wire import server  # noqa: F401
from wire_server import Reply, WireServer, anthropic_tool_message, openai_tool_completion

from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.testing import require_runtime

MODEL = "scripted-agent"
RUN_IT = "python pdeagent_runner.py solver.py"
API = {  # provider: (key variable, URL suffix, tool reply body)
    "anthropic": ("ANTHROPIC_API_KEY", "", anthropic_tool_message),
    "openai": ("OPENAI_API_KEY", "/v1", openai_tool_completion),
}


def agent_run(
    server: WireServer, tmp_path: Path, *, provider: str, track: str, case_id: str,
    turns: list[list[tuple[str, str, dict[str, Any]]]], cases_file: Path | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[Any, list[dict[str, Any]], Path]:  # fmt: skip
    """Script one reply per turn, run ``pdeagent run --mode agent``, return (the report,
    the request bodies, the attempt folder)."""
    key_env, suffix, reply = API[provider]
    server.script(*(Reply(200, reply(calls, "Working on it.", model=MODEL)) for calls in turns))
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env.update({key_env: "sk-test-key", "NO_PROXY": "127.0.0.1,localhost"})
    argv = [
        sys.executable, "-m", "pdeagent.cli.main", "run", "--track", track,
        "--provider", provider, "--model", MODEL, "--cases", case_id, "--mode", "agent",
        "--base-url", server.url + suffix, "--no-cache", "--timeout", "60",
        "--max-retries", "0", "--agent-command-sec", "300",
        # the time gate is not under test here (a busy CI core must not fail it)
        "--tau-time", "600", "--out", str(out), *extra,
    ]  # fmt: skip
    if cases_file is not None:
        argv += ["--cases-file", str(cases_file)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    folder = attempt_dir(out, track, MODEL, case_id, 0)
    return read_attempt(folder / "report.json"), [s.body for s in server.seen], folder


def tool_results(provider: str, body: dict[str, Any]) -> list[str]:
    """The tool results the model got in the last message(s) of a request body."""
    if provider == "anthropic":
        last = body["messages"][-1]["content"]
        return [b["content"] for b in last if isinstance(b, dict) and b["type"] == "tool_result"]
    tail: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        tail.insert(0, message["content"])
    return tail


def fix_and_submit(broken: str, fixed: str) -> list[list[tuple[str, str, dict[str, Any]]]]:
    return [
        [("t1", "write_file", {"path": "solver.py", "content": broken}),
         ("t2", "run", {"command": RUN_IT})],
        [("t3", "write_file", {"path": "solver.py", "content": fixed}),
         ("t4", "run", {"command": RUN_IT + " && ls solution.npz"})],
        [("t5", "submit", {"path": "solver.py"})],
    ]  # fmt: skip


def check_fixed_and_passed(provider: str, result: Any, wrong_name: str, fixed: str) -> None:
    report, bodies, folder = result
    assert report is not None and (report.verdict, report.mode) == ("PASS", "agent"), (
        report and report.message
    )
    assert len(bodies) == 3  # three turns, no retry, nothing after the submission
    first = bodies[0]
    names = [t.get("name") or t["function"]["name"] for t in first["tools"]]
    assert names == ["write_file", "read_file", "run", "submit"]
    wrote, ran = tool_results(provider, bodies[1])
    assert wrote.startswith("wrote ") and wrong_name in ran and "exit code 1" in ran, ran[-2000:]
    wrote, ran = tool_results(provider, bodies[2])
    assert ran.startswith("exit code 0") and "solution.npz" in ran, ran[-2000:]
    assert (folder / "solver.py").read_text() == fixed
    transcript = json.loads((folder / "transcript.json").read_text())
    assert transcript["status"] == "submitted"
    assert [r["name"] for r in transcript["tool_runs"]] == [
        "write_file", "run", "write_file", "run", "submit"]  # fmt: skip
    assert report.agent["turns"] == 3 and report.tokens.input == 360


@pytest.mark.sandbox
@pytest.mark.parametrize("provider", sorted(API))
def test_agent_fixes_and_submits_on_the_sample_track(provider, server, tmp_path):
    case_id = "sample_poisson_unit_square_001"
    fixed = calibration_source("numpy_fd", SAMPLE_CASES, case_id)
    result = agent_run(
        server, tmp_path, provider=provider, track="numpy_fd", case_id=case_id,
        turns=fix_and_submit(NUMPY_BROKEN, fixed), cases_file=SAMPLE_CASES,
    )  # fmt: skip
    check_fixed_and_passed(provider, result, "linspaces", fixed)


@pytest.mark.sandbox
@pytest.mark.parametrize("provider", sorted(API))
def test_agent_that_never_submits_ends_at_the_turn_budget(provider, server, tmp_path):
    turns = [[(f"r{i}", "run", {"command": "echo still thinking"})] for i in range(3)]
    report, bodies, folder = agent_run(
        server, tmp_path, provider=provider, track="numpy_fd",
        case_id="sample_poisson_unit_square_001", turns=turns, cases_file=SAMPLE_CASES,
        extra=("--agent-turns", "3"),
    )  # fmt: skip
    assert (report.verdict, report.reason) == ("F-Gen", "agent_budget")
    assert len(bodies) == 3 and not report.infrastructure
    assert json.loads((folder / "transcript.json").read_text())["status"] == "budget"


@pytest.mark.dolfinx
@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(API))
def test_agent_fixes_a_dolfinx_solver_and_passes(provider, server, tmp_path):
    require_runtime(dolfinx_python)  # no runtime: skip (fail under PDEAGENT_REQUIRE_RUNTIMES)
    case_id = "poisson_star_smooth_mms_008"
    fixed = calibration_source("dolfinx", None, case_id)
    result = agent_run(
        server, tmp_path, provider=provider, track="dolfinx", case_id=case_id,
        turns=fix_and_submit(DOLFINX_BROKEN, fixed),
    )  # fmt: skip
    check_fixed_and_passed(provider, result, "create_unit_squares", fixed)
