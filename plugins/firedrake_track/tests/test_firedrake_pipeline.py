"""A Firedrake submission through the real pipeline (sandbox, contract runner, adapter,
grading, timing protocol): a hand-written P2 Poisson solver passes a manufactured
case, and a solver whose Firedrake call fails is F-Exec with Firedrake's message."""

from __future__ import annotations

from pathlib import Path

import pytest
from firedrake_harness import firedrake_record

from pdeagent.cases.io import load_cases
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox

pytestmark = [pytest.mark.firedrake, pytest.mark.slow]

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
PROGRAM = Path(__file__).parent / "programs" / "poisson_unit_square.py"


@pytest.fixture(scope="module")
def setup():
    firedrake_record()
    host = load_plugins(strict=True)
    cases = {c.id: c for c in load_cases(DATASET)}
    return host, host.get_track("firedrake"), cases


def _grade(setup, tmp_path, source: str, tau_acc: float):
    host, track, cases = setup
    case = cases["poisson_unit_square_smooth_mms_000"]
    policy = GradingPolicy(tau_acc=tau_acc, tau_time=120.0, timed_repeats=1)
    return evaluate_source(
        host, track, case, source, sandbox=default_sandbox(), workroot=tmp_path / "eval",
        thresholds=resolve_thresholds(case, "firedrake", policy), policy=policy,
        dataset_dir=DATASET.parent,
    )  # fmt: skip


def test_a_p2_poisson_solver_passes_a_manufactured_case_in_the_sandbox(setup, tmp_path):
    report = _grade(setup, tmp_path, PROGRAM.read_text(), tau_acc=1e-4)
    assert report.verdict == "PASS", (report.reason, report.message, report.stderr_excerpt)
    # P2 on h = 1/48 against a smooth solution: ~2e-6
    assert 1e-8 < report.error < 1e-5


def test_a_failing_firedrake_call_is_an_execution_failure_with_its_message(setup, tmp_path):
    broken = PROGRAM.read_text().replace('"CG", 2', '"NO_SUCH_ELEMENT", 2')
    report = _grade(setup, tmp_path, broken, tau_acc=1e-4)
    assert report.verdict == "F-Exec", (report.reason, report.message)
    assert "NO_SUCH_ELEMENT" in report.stderr_excerpt
