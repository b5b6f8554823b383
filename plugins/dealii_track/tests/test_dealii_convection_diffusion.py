"""The deal.II convection-diffusion calibration program on dataset cases, through the
real pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold on every kind of case of the family (curved, star and polygonal gmsh
domains, SUPG at high Peclet numbers, Neumann + Robin, periodic, 3-D, transient, a
reference_numerical case), converges at the rate of Q2 in space and of BDF2 in time, and
refuses a case that is not a convection-diffusion problem with a clear message."""

from __future__ import annotations

import math

import pytest
from dealii_harness import Setup, failure

from pdeagent_dealii.bundle import bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


@pytest.fixture(scope="module")
def setup():
    return Setup()


def dolfinx(case):
    return case.evaluation_metadata.thresholds["dolfinx"]


def grade(setup, case, source: str):
    return setup.grade(case, source, tau_acc=dolfinx(case).tau_acc)


@pytest.mark.parametrize(
    "case_id",
    [
        "convection_diffusion_annulus_highpe_mms_004",  # curved, epsilon 1e-3: SUPG
        "convection_diffusion_l_shape_noexact_ref_002",  # polygonal gmsh, reference_numerical
        "convection_diffusion_unit_square_mixedbc_mms_000",  # Dirichlet + Neumann + Robin
        "convection_diffusion_periodic_square_periodic_mms_003",  # x-periodic
        "convection_diffusion_unit_cube_cube_mms_004",  # 3-D with SUPG
        "convection_diffusion_star_transient_mms_007",  # transient on the star
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id):
    case = setup.case(case_id)
    report = grade(setup, case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case.id, *failure(report))
    assert report.error <= dolfinx(case).tau_acc, (case.id, report.error, dolfinx(case))
    info = report.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["num_dofs"] > 1000
    if case.case_spec.pde.time:
        assert info["time_steps"] == 50 and info["matrix_assemblies"] == 2


def test_the_highest_peclet_cases_are_solved_with_supg_and_moderate_ones_without(setup):
    """The "auto" switch as in the DOLFINx solver: SUPG where a cell Peclet number
    exceeds 1 (epsilon 1e-3 on the annulus), plain Galerkin where none does
    (epsilon 0.1 on the unit square)."""
    source = bundle("convection_diffusion")
    high = grade(setup, setup.case("convection_diffusion_annulus_highpe_mms_004"), source)
    low = grade(setup, setup.case("convection_diffusion_unit_square_moderate_mms_000"), source)
    for report in (high, low):
        assert report.verdict == "PASS", failure(report)
    assert high.diagnostics["solver_info"]["stabilization"] == "supg"
    assert high.diagnostics["solver_info"]["max_cell_peclet"] > 10
    assert low.diagnostics["solver_info"]["stabilization"] == "none"
    assert low.diagnostics["solver_info"]["max_cell_peclet"] < 1


def test_q2_on_a_curved_domain_converges_at_order_three_in_space(setup):
    """Resolution 12 -> 24 on the annulus, plain Galerkin."""
    case = setup.case("convection_diffusion_annulus_moderate_mms_015")
    coarse = grade(setup, case, bundle("convection_diffusion", {"resolution": 12})).error
    fine = grade(setup, case, bundle("convection_diffusion", {"resolution": 24})).error
    order = math.log2(coarse / fine)
    assert 2.4 < order < 3.8, (coarse, fine, order)


def test_bdf2_converges_at_order_two_in_time(setup):
    """On the circle case the time error dominates at the calibration mesh: halving dt
    from 0.05 to 0.025 divides the error by about 4."""
    case = setup.case("convection_diffusion_circle_transient_mms_001")
    coarse = grade(setup, case, bundle("convection_diffusion", {"dt": 0.05})).error
    fine = grade(setup, case, bundle("convection_diffusion", {"dt": 0.025})).error
    order = math.log2(coarse / fine)
    assert 1.6 < order < 2.4, (coarse, fine, order)


def test_a_case_without_epsilon_and_beta_fails_loudly(setup):
    """A Poisson case run through the convection-diffusion program (no epsilon, no beta
    in pde.params) is refused with a message naming the missing parameter and a
    nonzero exit, never solved with some default."""
    case = setup.case("poisson_unit_square_smooth_mms_000")
    report = setup.grade(case, bundle("convection_diffusion"))
    assert report.verdict == "F-Exec", failure(report)
    assert "case_spec.pde.params has no 'epsilon'" in report.stderr_excerpt, failure(report)
