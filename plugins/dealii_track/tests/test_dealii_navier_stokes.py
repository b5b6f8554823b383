"""The deal.II Navier-Stokes calibration program on dataset cases, through the real
pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold (steady and transient, curved and polygonal domains, manufactured
and reference cases, a continuation in nu), converges at the rate of Taylor-Hood
Q2-Q1 in the velocity, and fails loudly when Newton does not converge."""

from __future__ import annotations

import math

import pytest
from dealii_harness import Setup, failure

from pdeagent_dealii.bundle import bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


@pytest.fixture(scope="module")
def setup():
    return Setup()


@pytest.mark.parametrize(
    "case_id",
    [
        # unit square, steady, velocity_magnitude output
        "navier_stokes_unit_square_steady_mms_005",
        # curved domain (annulus, MappingQ2), steady, velocity components
        "navier_stokes_annulus_steady_mms_007",
        # nu = 0.02: plain Newton from Stokes fails, the continuation in nu converges
        "navier_stokes_circle_steady_mms_001",
        # polygonal gmsh domain, transient (BDF2), time-dependent forcing
        "navier_stokes_l_shape_transient_mms_002",
        # curved domain, transient, forcing oscillating in time
        "navier_stokes_circle_transient_mms_005",
        # reference_numerical: lid-driven cavity at nu = 0.0025, two Dirichlet parts
        "navier_stokes_unit_square_lid_ref_002",
        # reference_numerical on a polygonal gmsh domain, velocity_magnitude output
        "navier_stokes_t_junction_noexact_ref_004",
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id):
    case = setup.case(case_id)
    assert case.family == "navier_stokes" and "dealii" in case.supported_libraries
    report = setup.grade(case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case.id, *failure(report))
    dolfinx = case.evaluation_metadata.thresholds["dolfinx"]
    assert report.error <= dolfinx.tau_acc, (case.id, report.error, dolfinx.e_base)
    info = report.diagnostics["solver_info"]
    assert info["velocity_degree"] == 2 and info["pressure_degree"] == 1
    assert info["num_dofs"] > 1000 and info["newton_iterations"] >= 1
    if case.case_spec.pde.time:
        assert info["time_steps"] == 10 and info["scheme"] == "bdf2"


def test_taylor_hood_q2_q1_velocity_converges_at_order_three(setup):
    case = setup.case("navier_stokes_unit_square_steady_mms_005")
    coarse = setup.grade(case, bundle("navier_stokes", {"resolution": 6}))
    fine = setup.grade(case, bundle("navier_stokes", {"resolution": 12}))
    assert coarse.error is not None and fine.error is not None, failure(coarse)
    order = math.log2(coarse.error / fine.error)
    assert 2.4 < order < 3.8, (coarse.error, fine.error, order)


def test_newton_that_does_not_converge_fails_loudly_instead_of_writing_a_solution(setup):
    """One Newton iteration per time step cannot reach the relative tolerance 1e-10:
    the program must stop with a message and a nonzero exit (F-Exec), not write the
    unconverged state."""
    case = setup.case("navier_stokes_unit_square_transient_mms_000")
    report = setup.grade(case, bundle("navier_stokes", {"newton_max_it": 1}))
    assert report.verdict == "F-Exec" and report.reason == "runtime_error", failure(report)
    assert "Newton failed in time step 1" in report.stderr_excerpt, failure(report)
