"""The main job, for real: ``pdeagent run --track dolfinx --provider baseline`` on a
stratified sample of the dataset passes every case (the provider answers with the
track's own calibration solvers), and ``pdeagent report`` says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dolfinx_harness import dolfinx_python

pytestmark = [pytest.mark.dolfinx, pytest.mark.slow]


def test_baseline_run_on_a_stratified_sample_passes_and_the_report_says_so(tmp_path):
    dolfinx_python()  # skips (or fails under PDEAGENT_REQUIRE_RUNTIMES=1) without the runtime
    out = tmp_path / "run"
    cli = [sys.executable, "-m", "pdeagent.cli.main"]
    run = subprocess.run(
        [*cli, "run", "--track", "dolfinx", "--provider", "baseline", "--sample", "11",
         "--no-cache", "--out", str(out)],
        capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    report = subprocess.run(
        [*cli, "report", str(out), "--json", "--no-figures"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    summary = json.loads(report.stdout)
    [stage] = summary["stages"]
    assert stage["graded"] == 11 and stage["infrastructure"] == 0
    assert stage["counts"]["PASS"] == 11, stage
    families = {row["family"] for row in summary["pass_rates"]}
    assert len(families - {"all"}) == 11  # one case per family
    manifest = json.loads((Path(out) / "run.json").read_text())
    assert (
        manifest["config"]["provider"] == "baseline" and len(manifest["config"]["case_ids"]) == 11
    )
