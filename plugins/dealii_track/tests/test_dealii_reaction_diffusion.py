"""The deal.II reaction-diffusion calibration program on dataset cases, through the real
pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold for every reaction law, steady and transient, with Dirichlet,
Dirichlet + Robin and pure Neumann conditions, in 2-D (curved, polygonal and star
domains) and 3-D; Q2 with BDF2 converges at the expected rates; and a time step so
large that Newton cannot converge makes the program fail loudly."""

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
        # steady cubic law on a curved domain (annulus: SphericalManifold arcs)
        "reaction_diffusion_annulus_steady_mms_004",
        # steady cubic law, Dirichlet + Robin
        "reaction_diffusion_unit_square_mixedbc_mms_002",
        # steady linear law in 3-D
        "reaction_diffusion_unit_cube_cube_mms_000",
        # transient logistic law, time-dependent Dirichlet data (tightest threshold)
        "reaction_diffusion_unit_square_transient_mms_011",
        # transient cubic law on the star (its exact outline as boundary manifold)
        "reaction_diffusion_star_transient_mms_007",
        # transient Allen-Cahn, pure Neumann, polygonal gmsh domain, DOLFINx reference
        "reaction_diffusion_l_shape_noexact_ref_003",
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id):
    case = setup.case(case_id)
    report = setup.grade(case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case_id, *failure(report))
    dolfinx = case.evaluation_metadata.thresholds["dolfinx"]
    assert report.error <= dolfinx.tau_acc, (case_id, report.error, dolfinx.e_base)
    info = report.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["num_dofs"] > 1000
    assert info["reaction_law"] == case.case_spec.pde.params["reaction_law"]
    if case.case_spec.pde.time is not None:
        assert info["time_steps"] == 50 and info["newton_iterations"] >= 50


def test_steady_q2_newton_converges_at_order_three_on_a_curved_domain(setup):
    """Cubic law on the annulus: halving h divides the L2 grid error by ~8."""
    case = setup.case("reaction_diffusion_annulus_steady_mms_004")
    coarse = setup.grade(case, bundle("reaction_diffusion", {"resolution": 8}))
    fine = setup.grade(case, bundle("reaction_diffusion", {"resolution": 16}))
    assert coarse.verdict != "F-Exec" and fine.verdict != "F-Exec", failure(coarse)
    order = math.log2(coarse.error / fine.error)
    assert 2.4 < order < 3.8, (coarse.error, fine.error, order)


def test_transient_q2_bdf2_converges_at_order_two_when_h_and_dt_are_halved(setup):
    """Allen-Cahn on the annulus with BDF2: h and dt halved together, the error of the
    space-time discretisation (O(h^3 + dt^2)) drops at least at the time order 2."""
    case = setup.case("reaction_diffusion_annulus_transient_mms_015")
    coarse = setup.grade(case, bundle("reaction_diffusion", {"resolution": 6, "dt": 0.1}))
    fine = setup.grade(case, bundle("reaction_diffusion", {"resolution": 12, "dt": 0.05}))
    assert coarse.verdict != "F-Exec" and fine.verdict != "F-Exec", failure(coarse)
    order = math.log2(coarse.error / fine.error)
    assert 1.7 < order < 3.5, (coarse.error, fine.error, order)


def test_newton_that_cannot_converge_fails_loudly(setup):
    """One Newton iteration allowed on a nonlinear (cubic) case that needs several: the
    program must exit nonzero naming the failure, never write an unconverged answer."""
    case = setup.case("reaction_diffusion_annulus_steady_mms_004")
    report = setup.grade(case, bundle("reaction_diffusion", {"resolution": 8, "newton_max_it": 1}))
    assert report.verdict == "F-Exec", failure(report)
    assert "Newton did not converge" in report.stderr_excerpt, failure(report)
