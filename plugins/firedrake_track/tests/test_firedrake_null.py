"""The Firedrake null program (``pdeagent_null_source``): it samples a zero field with
Firedrake's PointEvaluator and writes a valid artifact; t_null is its median time."""

from __future__ import annotations

from pathlib import Path

import pytest
from firedrake_harness import firedrake_record

from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.null import measure_null
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import get_sandbox

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


@pytest.mark.firedrake
@pytest.mark.parametrize(
    "case_id", ["poisson_unit_square_smooth_mms_000", "heat_unit_cube_cube_mms_000"]
)
def test_pdeagent_null_source_firedrake(case_id, tmp_path):
    firedrake_record()  # waits for a background setup; skips (or fails in CI) without one
    host = load_plugins(strict=True)
    cases = load_cases(DATASET)
    case = find_case(cases, case_id)
    t_null = measure_null(
        host, host.get_track("firedrake"), case, sandbox=get_sandbox("local"),
        workroot=tmp_path / "null", dataset_dir=DATASET.parent,
    ).t_null  # fmt: skip
    assert 0.5 < t_null < 30.0
