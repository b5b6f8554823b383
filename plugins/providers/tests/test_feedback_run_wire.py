"""``pdeagent run --mode feedback --attempts 2`` end to end over the wire: the anthropic
and openai providers (official SDKs) talk to a scripted server on 127.0.0.1 whose model
answers attempt 1 with a program that fails at execution (a wrong API name) and attempt 2
with the track's calibration solver, which passes. Attempt 2's request must carry the
original prompt, attempt 1's reply verbatim and a feedback turn naming the failed stage
and the error. Once on the sample track (NumPy, no FEM library), once on DOLFINx."""

# ruff: noqa: F811 (the server fixture of test_wire, used by name)
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_wire import server  # noqa: F401
from wire_server import Reply, WireServer, anthropic_message, openai_completion

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import find_case, load_cases
from pdeagent.plugins import load_plugins
from pdeagent.runs.layout import attempt_dir
from pdeagent.runs.records import read_attempt
from pdeagent.testing import require_runtime

SAMPLE_CASES = Path(__file__).resolve().parents[3] / "tests" / "sample_track" / "cases.jsonl"
KNOWN = {"numpy_fd", "dolfinx", "firedrake", "dealii"}
MODEL = "scripted-model"

API = {  # provider: (key variable, URL suffix, reply body)
    "anthropic": ("ANTHROPIC_API_KEY", "", anthropic_message),
    "openai": ("OPENAI_API_KEY", "/v1", openai_completion),
}

NUMPY_BROKEN = """import numpy as np


def solve(case_spec):
    xs = np.linspaces(0.0, 1.0, 41)  # a wrong API name: numpy has linspace
    return {"u": np.zeros((41, xs.size))}
"""
DOLFINX_BROKEN = """import numpy as np
from mpi4py import MPI

import dolfinx.mesh


def solve(case_spec):
    # a wrong API name: dolfinx.mesh has create_unit_square
    domain = dolfinx.mesh.create_unit_squares(MPI.COMM_WORLD, 16, 16)
    return {"u": np.zeros((4, 4))}
"""


def dolfinx_python() -> Path:
    from pdeagent_dolfinx import runtime_python

    return runtime_python()


def fenced(code: str, words: str) -> str:
    fence = "````" if "```" in code else "```"
    return f"{words}\n\n{fence}python\n{code.rstrip()}\n{fence}\n"


def calibration_source(track_name: str, cases_file: Path | None, case_id: str) -> str:
    """The track's calibration solver for the case, configured as the dataset says."""
    from pdeagent.cli.common import default_dataset

    host = load_plugins(strict=True)
    case = find_case(load_cases(cases_file or default_dataset(), known_libraries=KNOWN), case_id)
    source = host.hook.pdeagent_calibration_source(
        track=host.get_track(track_name),
        case_view=agent_view(case, track_name),
        calibration_config=case.evaluation_metadata.calibration_config,
    )
    assert source and "def solve" in source
    return source


def feedback_run(
    server: WireServer,
    tmp_path: Path,
    *,
    provider: str,
    track: str,
    case_id: str,
    broken: str,
    cases_file: Path | None = None,
) -> dict[str, Any]:
    """Script the two replies, run ``pdeagent run --mode feedback --attempts 2`` against
    the server, and return what the test checks."""
    key_env, suffix, reply = API[provider]
    first = fenced(broken, "Here is a solver for the case.")
    second = fenced(calibration_source(track, cases_file, case_id), "Fixed: the right name.")
    server.script(Reply(200, reply(first, model=MODEL)), Reply(200, reply(second, model=MODEL)))
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env.update({key_env: "sk-test-key", "NO_PROXY": "127.0.0.1,localhost"})
    argv = [
        sys.executable, "-m", "pdeagent.cli.main", "run", "--track", track,
        "--provider", provider, "--model", MODEL, "--cases", case_id,
        "--mode", "feedback", "--attempts", "2", "--base-url", server.url + suffix,
        "--no-cache", "--timeout", "60", "--max-retries", "0",
        # the time gate is not under test here (a busy CI core must not fail it)
        "--tau-time", "600", "--out", str(out),
    ]  # fmt: skip
    if cases_file is not None:
        argv += ["--cases-file", str(cases_file)]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [
        read_attempt(attempt_dir(out, track, MODEL, case_id, k) / "report.json") for k in (0, 1)
    ]
    return {"first_reply": first, "reports": reports, "seen": server.seen}


def conversation(body: dict[str, Any]) -> list[dict[str, str]]:
    """The user / assistant messages of a request body (either API; system left out)."""
    return [m for m in body["messages"] if m["role"] != "system"]


def check_feedback_conversation(result: dict[str, Any], wrong_name: str) -> None:
    first_report, second_report = result["reports"]
    assert first_report is not None and second_report is not None
    assert (first_report.verdict, second_report.verdict) == ("F-Exec", "PASS"), (
        first_report.message,
        second_report.message,
    )
    assert len(result["seen"]) == 2  # two attempts, two requests, no retry
    one, two = (conversation(seen.body) for seen in result["seen"])
    assert [m["role"] for m in one] == ["user"]
    prompt = one[0]["content"]
    assert [m["role"] for m in two] == ["user", "assistant", "user"], [
        m["content"][:200] for m in two
    ]
    assert two[0]["content"] == prompt  # the original prompt, unchanged
    assert two[1]["content"] == result["first_reply"]  # attempt 1's full reply, verbatim
    feedback = two[2]["content"]
    assert "F-Exec" in feedback, feedback[:2000]  # the failed stage, named
    assert wrong_name in feedback  # the error itself (stderr excerpt) reaches the model


@pytest.mark.sandbox
@pytest.mark.parametrize("provider", sorted(API))
def test_feedback_run_on_the_sample_track_continues_the_conversation(
    provider: str, server: WireServer, tmp_path: Path
):
    result = feedback_run(
        server, tmp_path, provider=provider, track="numpy_fd",
        case_id="sample_poisson_unit_square_001", broken=NUMPY_BROKEN, cases_file=SAMPLE_CASES,
    )  # fmt: skip
    check_feedback_conversation(result, "linspaces")


@pytest.mark.dolfinx
@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(API))
def test_feedback_run_fixes_a_dolfinx_fexec_in_attempt_two(
    provider: str, server: WireServer, tmp_path: Path
):
    require_runtime(dolfinx_python)  # no runtime: skip (fail under PDEAGENT_REQUIRE_RUNTIMES)
    result = feedback_run(
        server, tmp_path, provider=provider, track="dolfinx",
        case_id="poisson_star_smooth_mms_008", broken=DOLFINX_BROKEN,
    )  # fmt: skip
    check_feedback_conversation(result, "create_unit_squares")
