"""``pdeagent_explain_crash``: after a crash, and only when the grading policy asks,
the pipeline hands the track the source and a sandbox; the explanation goes into the
report's message and diagnostics without changing the verdict. Exercised with the
sample track and a plugin that implements the hook."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pdeagent import hookimpl
from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.pipeline import (
    EXPLANATION_CHARS,
    GradingPolicy,
    evaluate_source,
    resolve_thresholds,
)
from pdeagent.sandbox import default_sandbox

from .conftest import SAMPLE_TRACK_DIR

pytestmark = pytest.mark.sandbox

CASE = find_case(
    load_cases(SAMPLE_TRACK_DIR / "cases.jsonl", known_libraries={"numpy_fd"}),
    "sample_poisson_unit_square_001",
)
CRASH = "def solve(case_spec):\n    raise RuntimeError('boom: index out of range')\n"
NO_OUTPUT = "def solve(case_spec):\n    return None\n"


class Explainer:
    """Answers for the sample track; records what it was given."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[dict] = []

    @hookimpl
    def pdeagent_explain_crash(self, track, source, workroot, case_view, sandbox, hide,
                               execution):  # fmt: skip
        if track.name != "numpy_fd":
            return None
        family = case_view["case_spec"]["pde"]["type"]
        self.calls.append(dict(source=source, workroot=workroot, family=family,
                               exit_code=execution.exit_code, hide=hide))  # fmt: skip
        return self.answer


def _grade(host_factory, source: str, explain: bool, answer: str = "explained: boom"):
    explainer = Explainer(answer)
    host = host_factory(extra_plugins=[explainer])
    track = host.get_track("numpy_fd")
    policy = GradingPolicy(timed_repeats=1, explain_crashes=explain)
    with tempfile.TemporaryDirectory(prefix="pdeagent-test-", dir="/var/tmp") as d:
        report = evaluate_source(
            host, track, CASE, source, sandbox=default_sandbox(), workroot=Path(d) / "w",
            thresholds=resolve_thresholds(CASE, track.name, policy), policy=policy,
            dataset_dir=SAMPLE_TRACK_DIR,
        )  # fmt: skip
    return report, explainer.calls


def test_pdeagent_explain_crash_explains_a_crash_when_the_policy_asks(pdeagent_host_factory):
    report, calls = _grade(pdeagent_host_factory, CRASH, explain=True)
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert report.diagnostics["crash_explanation"] == "explained: boom"
    assert report.message.endswith("\nexplained: boom")
    [call] = calls
    assert call["source"] == CRASH and call["family"] == "poisson"
    assert call["exit_code"] not in (0, None)
    assert call["workroot"].name == "explain"
    assert SAMPLE_TRACK_DIR in call["hide"]  # the program still never sees the dataset


def test_no_explanation_without_the_policy_or_without_a_crash(pdeagent_host_factory):
    report, calls = _grade(pdeagent_host_factory, CRASH, explain=False)
    assert (report.verdict, report.reason) == ("F-Exec", "runtime_error")
    assert calls == [] and "crash_explanation" not in report.diagnostics
    report, calls = _grade(pdeagent_host_factory, NO_OUTPUT, explain=True)
    assert report.verdict == "F-Exec" and report.reason != "runtime_error"
    assert calls == []


def test_a_long_explanation_is_bounded(pdeagent_host_factory):
    report, _ = _grade(pdeagent_host_factory, CRASH, explain=True, answer="x" * 10_000)
    assert len(report.diagnostics["crash_explanation"]) == EXPLANATION_CHARS


def test_runs_explain_crashes_in_feedback_mode_unless_told_otherwise():
    from pdeagent.runs.runner import RunConfig

    def policy(**kw):
        base = dict(track="numpy_fd", provider="baseline", models=["m"], cases_file="c",
                    case_ids=["a"])  # fmt: skip
        return RunConfig(**base, **kw).policy().explain_crashes

    assert policy(mode="feedback", attempts=3) is True
    assert policy(mode="single") is False
    assert policy(mode="feedback", attempts=3, explain_crashes=False) is False
    assert policy(mode="single", explain_crashes=True) is True
