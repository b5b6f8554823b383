"""The null program of each track (``pdeagent_null_source``) and t_null (SPEC §7)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.null import measure_null, null_source
from pdeagent.evaluation.pipeline import evaluate_source
from pdeagent.sandbox import get_sandbox

pytestmark = pytest.mark.sandbox
DATASET = Path(__file__).resolve().parents[1] / "cases" / "pdeagent-v1.jsonl"


def test_pdeagent_null_source_writes_a_valid_all_zero_artifact(host, case, tmp_path):
    """The sample track's null program passes every artifact check, scores error 1 (all
    zeros against a non-zero solution) and is faster than the track's baseline."""
    track = host.get_track("numpy_fd")
    source = null_source(host, track, case)
    assert "def solve(case_spec)" in source
    assert host.hook.pdeagent_null_source(track=host.get_track("dolfinx"), case_view={}) != source
    report = evaluate_source(
        host, track, case, source, sandbox=get_sandbox("local"), workroot=tmp_path / "null",
        thresholds=None,
    )  # fmt: skip
    assert report.verdict is None, report.message
    assert report.error == pytest.approx(1.0)
    assert report.repeat_errors == pytest.approx([1.0] * len(report.runtime_samples))
    arrays = np.load(tmp_path / "null" / "exec-0" / "solution.npz")
    assert arrays["u"].shape == case.case_spec.eval_grid.shape and not arrays["u"].any()
    null = measure_null(
        host, track, case, sandbox=get_sandbox("local"), workroot=tmp_path / "again"
    )
    assert 0 < null.t_null < 5.0
    assert null.t_null == statistics.median(null.samples) and len(null.samples) >= 1


def require_runtime(track: str) -> None:
    """Skip when the track's runtime is missing, unless $PDEAGENT_REQUIRE_RUNTIMES=1 (CI)."""
    from pdeagent.testing import require_runtime as require

    def check() -> None:
        if track == "dolfinx":
            from pdeagent_dolfinx import runtime_python

            runtime_python()
        else:
            from pdeagent_dealii.environment import load_toolchain

            load_toolchain()

    require(check)


def _t_null_on(host, track_name: str, case_id: str, tmp_path: Path) -> float:
    case = find_case(load_cases(DATASET), case_id)
    track = host.get_track(track_name)
    null = measure_null(host, track, case, sandbox=get_sandbox("local"), workroot=tmp_path / "n")
    return null.t_null


@pytest.mark.dolfinx
def test_pdeagent_null_source_dolfinx(host, tmp_path):
    require_runtime("dolfinx")
    t_null = _t_null_on(host, "dolfinx", "poisson_unit_square_smooth_mms_000", tmp_path)
    assert math.isfinite(t_null) and 0.05 < t_null < 5.0


@pytest.mark.dealii
def test_pdeagent_null_source_dealii(host, tmp_path):
    require_runtime("dealii")
    t_null = _t_null_on(host, "dealii", "poisson_unit_square_smooth_mms_000", tmp_path)
    assert math.isfinite(t_null) and 0.01 < t_null < 5.0
