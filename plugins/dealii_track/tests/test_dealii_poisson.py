"""The deal.II Poisson calibration program on dataset cases, through the real
pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold (cross-track agreement on exact solutions), converges at the rate
of Q2 on a curved domain, and refuses periodic cases loudly."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import pytest
from dealii_harness import toolchain

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox
from pdeagent_dealii.bundle import bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


@pytest.fixture(scope="module")
def setup():
    toolchain()
    host = load_plugins(strict=True)
    return host, host.get_track("dealii"), load_cases(DATASET)


def grade(setup, case, source: str):
    host, track, _ = setup
    policy = GradingPolicy(tau_acc=0.05, tau_time=120.0, timed_repeats=1)
    with tempfile.TemporaryDirectory(prefix="pdeagent-dealii-", dir="/var/tmp") as tmp:
        return evaluate_source(
            host, track, case, source,
            sandbox=default_sandbox(), workroot=Path(tmp) / "eval",
            thresholds=resolve_thresholds(case, track.name, policy), policy=policy,
            dataset_dir=DATASET.parent,
        )  # fmt: skip


def pick(cases, geometry: str, *, mixed: bool = False):
    for c in sorted(cases, key=lambda c: c.id):
        bc = c.case_spec.bc
        if (
            c.family == "poisson" and "dealii" in c.supported_libraries
            and c.case_spec.domain.type == geometry and not bc.periodic
            and c.evaluation_metadata.construction_method == "manufactured_solution"
            and bool(bc.neumann or bc.robin) == mixed
        ):  # fmt: skip
            return c
    raise LookupError(geometry)


@pytest.mark.parametrize(
    ("geometry", "mixed"),
    [("unit_square", False), ("unit_square", True), ("annulus", False), ("star", False),
     ("l_shape", False), ("square_with_hole", False), ("unit_cube", False)],
)  # fmt: skip
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, geometry, mixed):
    host, track, cases = setup
    case = pick(cases, geometry, mixed=mixed)
    source = host.hook.pdeagent_calibration_source(
        track=track, case_view=agent_view(case, "dealii"), calibration_config=None
    )
    report = grade(setup, case, source)
    assert report.verdict == "PASS", (case.id, report.reason, report.message,
                                      report.stderr_excerpt[-1500:])  # fmt: skip
    dolfinx = case.evaluation_metadata.thresholds["dolfinx"]
    assert report.error <= dolfinx.tau_acc, (case.id, report.error, dolfinx.e_base)
    info = report.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["num_dofs"] > 100


def test_q2_on_a_curved_domain_converges_at_order_three(setup):
    _, _, cases = setup
    case = pick(cases, "annulus")
    coarse = grade(setup, case, bundle("poisson", {"resolution": 8})).error
    fine = grade(setup, case, bundle("poisson", {"resolution": 16})).error
    order = math.log2(coarse / fine)
    assert 2.4 < order < 3.8, (coarse, fine, order)


def test_periodic_cases_fail_loudly(setup):
    _, _, cases = setup
    case = next(
        c for c in cases
        if c.family == "poisson" and "dealii" in c.supported_libraries and c.case_spec.bc.periodic
    )  # fmt: skip
    report = grade(setup, case, bundle("poisson"))
    assert report.verdict == "F-Exec" and report.reason == "runtime_error"
    assert "periodic conditions are not supported" in report.stderr_excerpt


def test_bundle_refuses_unknown_families_and_settings():
    with pytest.raises(KeyError, match=r"no deal\.II program"):
        bundle("wave")
    with pytest.raises(ValueError, match="bad setting"):
        bundle("poisson", {"resolution": "32; system(...)"})
