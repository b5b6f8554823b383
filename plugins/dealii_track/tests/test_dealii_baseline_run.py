"""The deal.II main job, for real: ``pdeagent run --track dealii --provider baseline
--sample 9`` (one case of each deal.II family, graded against the dataset's deal.II
thresholds) passes every case, and ``pdeagent report`` says so."""

from __future__ import annotations

import pytest
from dealii_harness import toolchain

from pdeagent.testing import run_baseline_sample

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


def test_baseline_run_on_one_case_per_family_passes_and_the_report_says_so(tmp_path):
    toolchain()  # skips (or fails under PDEAGENT_REQUIRE_RUNTIMES=1) without deal.II
    summary, manifest = run_baseline_sample("dealii", 9, tmp_path / "run")
    [stage] = summary["stages"]
    assert stage["graded"] == 9 and stage["infrastructure"] == 0
    assert stage["counts"]["PASS"] == 9, stage
    families = {row["family"] for row in summary["pass_rates"]} - {"all"}
    assert len(families) == 9  # one case per deal.II family
    assert not families & {"burgers", "wave"}
    config = manifest["config"]
    assert config["track"] == "dealii" and config["provider"] == "baseline"
    assert len(config["case_ids"]) == 9
    assert config["tau_acc"] is None  # graded against the dataset's deal.II thresholds
