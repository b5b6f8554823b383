"""The deal.II main job, for real: ``pdeagent run --track dealii --provider baseline
--sample 9`` (one case of each deal.II family, graded against the dataset's deal.II
thresholds) passes every case, and ``pdeagent report`` says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dealii_harness import toolchain

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


def test_baseline_run_on_one_case_per_family_passes_and_the_report_says_so(tmp_path):
    toolchain()  # skips (or fails under PDEAGENT_REQUIRE_RUNTIMES=1) without deal.II
    out = tmp_path / "run"
    cli = [sys.executable, "-m", "pdeagent.cli.main"]
    run = subprocess.run(
        [*cli, "run", "--track", "dealii", "--provider", "baseline", "--sample", "9",
         "--no-cache", "--out", str(out)],
        capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    report = subprocess.run(
        [*cli, "report", str(out), "--json", "--no-figures"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    summary = json.loads(report.stdout)
    [stage] = summary["stages"]
    assert stage["graded"] == 9 and stage["infrastructure"] == 0
    assert stage["counts"]["PASS"] == 9, stage
    families = {row["family"] for row in summary["pass_rates"]} - {"all"}
    assert len(families) == 9  # one case per deal.II family
    assert not families & {"burgers", "wave"}
    manifest = json.loads((Path(out) / "run.json").read_text())
    config = manifest["config"]
    assert config["track"] == "dealii" and config["provider"] == "baseline"
    assert len(config["case_ids"]) == 9
    assert config["tau_acc"] is None  # graded against the dataset's deal.II thresholds
