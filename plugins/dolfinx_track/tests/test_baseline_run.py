"""The main job, for real: ``pdeagent run --track dolfinx --provider baseline`` on a
stratified sample of the dataset passes every case (the provider answers with the
track's own calibration solvers), and ``pdeagent report`` says so."""

from __future__ import annotations

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.testing import run_baseline_sample

pytestmark = [pytest.mark.dolfinx, pytest.mark.slow]


def test_baseline_run_on_a_stratified_sample_passes_and_the_report_says_so(tmp_path):
    dolfinx_python()  # skips (or fails under PDEAGENT_REQUIRE_RUNTIMES=1) without the runtime
    summary, manifest = run_baseline_sample("dolfinx", 11, tmp_path / "run")
    [stage] = summary["stages"]
    assert stage["graded"] == 11 and stage["infrastructure"] == 0
    assert stage["counts"]["PASS"] == 11, stage
    families = {row["family"] for row in summary["pass_rates"]}
    assert len(families - {"all"}) == 11  # one case per family
    assert (
        manifest["config"]["provider"] == "baseline" and len(manifest["config"]["case_ids"]) == 11
    )
