"""The DOLFINx calibration baseline passes its own dataset cases: one case per
(family, geometry) of cases/pdeagent-v1.jsonl, graded through the real sandbox and the
shipped thresholds, and its error reproduces the stored e_base."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import find_case, load_cases
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox

pytestmark = [pytest.mark.dolfinx, pytest.mark.slow, pytest.mark.timing]

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
CASES = load_cases(DATASET)  # a missing or invalid dataset fails collection loudly


def stratified_sample(cases) -> list[str]:
    """The first case id (sorted) of every (family, geometry) pair."""
    first: dict[tuple[str, str], str] = {}
    for case in sorted(cases, key=lambda c: c.id):
        first.setdefault((case.family, case.case_spec.domain.type), case.id)
    return [first[k] for k in sorted(first)]


SAMPLE = stratified_sample(CASES)


def test_sample_covers_every_family_and_geometry():
    pairs = {(c.family, c.case_spec.domain.type) for c in CASES}
    assert len(SAMPLE) == len(pairs)
    assert len({c.family for c in CASES}) == 11
    assert len({c.case_spec.domain.type for c in CASES}) == 14


@pytest.mark.parametrize("case_id", SAMPLE)
def test_baseline_passes_its_own_case(case_id):
    dolfinx_python()
    host = load_plugins(strict=True)
    track = host.get_track("dolfinx")
    case = find_case(CASES, case_id)
    source = host.hook.pdeagent_calibration_source(
        track=track,
        case_view=agent_view(case, "dolfinx"),
        calibration_config=case.evaluation_metadata.calibration_config,
    )
    policy = GradingPolicy(timed_repeats=1)
    thresholds = resolve_thresholds(case, "dolfinx", policy)
    with tempfile.TemporaryDirectory(prefix="pdeagent-sample-", dir="/var/tmp") as tmp:
        report = evaluate_source(
            host,
            track,
            case,
            source,
            sandbox=default_sandbox(),
            workroot=Path(tmp) / "w",
            thresholds=thresholds,
            policy=policy,
            dataset_dir=DATASET.parent,
        )
    assert report.verdict == "PASS", (report.reason, report.message, report.stderr_excerpt)
    e_base = case.evaluation_metadata.thresholds["dolfinx"].e_base
    assert report.error == pytest.approx(e_base, rel=1e-3, abs=1e-12)
