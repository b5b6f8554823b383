"""The Firedrake main job, for real: ``pdeagent run --track firedrake --provider baseline
--sample 8`` (one case of each Firedrake family, graded against the dataset's Firedrake
thresholds) passes every case, and ``pdeagent report`` says so."""

from __future__ import annotations

import pytest
from firedrake_harness import firedrake_record
from pdeagent_firedrake.bundle import FAMILIES

from pdeagent.testing import run_baseline_sample

pytestmark = [pytest.mark.firedrake, pytest.mark.slow]


def test_baseline_run_on_one_case_per_family_passes_and_the_report_says_so(tmp_path):
    firedrake_record()  # waits for a background setup; skips (or fails in CI) without one
    summary, manifest = run_baseline_sample("firedrake", 8, tmp_path / "run")
    [stage] = summary["stages"]
    assert stage["graded"] == 8 and stage["infrastructure"] == 0
    assert stage["counts"]["PASS"] == 8, stage
    families = {row["family"] for row in summary["pass_rates"]} - {"all"}
    assert families == set(FAMILIES)  # one case per family the track has solvers for
    config = manifest["config"]
    assert config["track"] == "firedrake" and config["provider"] == "baseline"
    assert len(config["case_ids"]) == 8
    assert config["tau_acc"] is None  # graded against the dataset's Firedrake thresholds
