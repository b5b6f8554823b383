"""The optional debug rebuild: a deal.II program that crashes with a segmentation fault
in the release build is rebuilt against deal.II's debug library and run again in the
sandbox; the failed assertion (condition, file:line, the library's message, the
program's own calling function) goes into the report's message and diagnostics. The
verdict does not change, and nothing is rebuilt unless the policy asks for it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from dealii_harness import DATASET, Setup

from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.sandbox import default_sandbox
from pdeagent_dealii import summarize_debug_run

CRASHING = r"""
#include <deal.II/lac/vector.h>
#include <iostream>
using namespace dealii;

void fill_values(Vector<double> &v)
{
  for (unsigned int i = 0; i < 400000000; i += 1024)
    v[i] = 1.0; // out of range: a segmentation fault in the release build
}

int main(int argc, char **argv)
{
  Vector<double> v(3);
  fill_values(v);
  std::cout << v.l2_norm() << "\n";
  return 0;
}
"""


def _grade(setup: Setup, explain: bool):
    case = setup.case("poisson_circle_smooth_mms_004")
    policy = GradingPolicy(tau_acc=0.05, tau_time=60.0, timed_repeats=1, explain_crashes=explain)
    with tempfile.TemporaryDirectory(prefix="pdeagent-dbg-", dir="/var/tmp") as tmp:
        report = evaluate_source(
            setup.host, setup.track, case, CRASHING, sandbox=default_sandbox(),
            workroot=Path(tmp) / "w", thresholds=resolve_thresholds(case, "dealii", policy),
            policy=policy, dataset_dir=DATASET.parent,
        )  # fmt: skip
        explained = (Path(tmp) / "w" / "explain").exists()
    return report, explained


@pytest.mark.dealii
@pytest.mark.slow
def test_a_release_segfault_is_explained_by_the_debug_build_assertion():
    setup = Setup()
    report, explained = _grade(setup, explain=True)
    assert report.verdict == "F-Exec" and report.reason == "runtime_error"
    assert explained
    assert "killed by signal 11" in report.message
    explanation = report.diagnostics["crash_explanation"]
    assert explanation in report.message
    assert "assertion failed in vector.h:" in explanation
    assert "Index 1024 is not in the half-open range [0,3)" in explanation
    assert "called from fill_values(dealii::Vector<double>&)" in explanation

    plain, rebuilt = _grade(setup, explain=False)
    assert (plain.verdict, plain.reason) == (report.verdict, report.reason)
    assert not rebuilt and "crash_explanation" not in plain.diagnostics


def test_summary_without_an_assertion_says_how_the_debug_run_ended():
    text = summarize_debug_run("line 1\nsomething went wrong\n", 1, None)
    assert text.startswith("debug build of deal.II: no library assertion failed")
    assert "exit code 1" in text and "something went wrong" in text
    assert "signal 6" in summarize_debug_run("", None, 6)
