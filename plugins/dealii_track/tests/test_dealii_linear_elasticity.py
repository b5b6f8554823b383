"""The deal.II linear-elasticity calibration program on dataset cases, through the real
pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold (plane strain / plane stress / 3-D, Dirichlet displacements and
tractions, the Taylor-Hood form near the incompressible limit, curved and polygonal
gmsh domains, a reference-graded case), and Q2 converges at order three on the star,
whose curved spline outline the program puts on a manifold of its own.

No test of a loud failure: every deal.II case of the family is supported (Robin,
periodic, transient and scalar-valued data occur in none of them), and grade() cannot
run a modified case_spec."""

from __future__ import annotations

import math

import pytest
from dealii_harness import Setup, failure

from pdeagent_dealii.bundle import DEFAULTS, bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


@pytest.fixture(scope="module")
def setup():
    return Setup()


@pytest.mark.parametrize(
    ("case_id", "formulation"),
    [
        # unit square, plane strain, traction on xmax / ymax, displacement magnitude
        ("linear_elasticity_unit_square_traction_mms_002", "displacement"),
        # star (gmsh spline outline), plane strain
        ("linear_elasticity_star_smooth_mms_018", "displacement"),
        # sector (gmsh, circular arc), plane stress
        ("linear_elasticity_sector_smooth_mms_027", "displacement"),
        # L-shape (gmsh polygon), nu = 0.499 plane strain: Taylor-Hood Q2/Q1
        ("linear_elasticity_l_shape_incompressible_mms_007", "mixed"),
        # unit cube, 3d model, displacement magnitude
        ("linear_elasticity_unit_cube_cube_mms_002", "displacement"),
        # gear (gmsh polygon), plane stress, graded against the stored DOLFINx reference
        ("linear_elasticity_gear_noexact_ref_003", "displacement"),
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id, formulation):
    case = setup.case(case_id)
    assert case.family == "linear_elasticity" and "dealii" in case.supported_libraries
    report = setup.grade(case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case.id, *failure(report))
    dolfinx = case.evaluation_metadata.thresholds["dolfinx"]
    assert report.error <= dolfinx.tau_acc, (case.id, report.error, dolfinx.e_base)
    info = report.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["num_dofs"] > 1000
    assert info["formulation"] == formulation  # the DOLFINx solver's switch at nu >= 0.49


def test_q2_on_the_star_converges_at_order_three(setup):
    """The star's outline is a spline; with straight boundary faces the order would drop
    to two. Resolution 24 is the calibration setting (the same source, compiled once)."""
    case = setup.case("linear_elasticity_star_smooth_mms_018")
    fine_resolution = DEFAULTS["linear_elasticity"]["resolution"]
    assert fine_resolution == 24
    coarse = setup.grade(case, bundle("linear_elasticity", {"resolution": 16}))
    fine = setup.grade(case, bundle("linear_elasticity", {"resolution": fine_resolution}))
    assert coarse.verdict == "PASS" and fine.verdict == "PASS", (failure(coarse), failure(fine))
    order = math.log(coarse.error / fine.error) / math.log(fine_resolution / 16)
    assert 2.4 < order < 3.8, (coarse.error, fine.error, order)
