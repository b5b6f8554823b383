"""The deal.II biharmonic calibration program on dataset cases, through the real
pipeline (compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx
accuracy threshold with the Navier splitting (2-D, curved, polygonal, 3-D, a
reference_numerical case) and with C0 interior penalty on the clamped case, converges
at the expected orders, and refuses loudly to drop a clamped condition."""

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
    ("case_id", "method"),
    [
        ("biharmonic_unit_square_navier_mms_021", "mixed"),  # Navier on the unit square
        ("biharmonic_unit_square_clamped_mms_003", "cip"),  # u + normal_derivative
        ("biharmonic_annulus_navier_mms_004", "mixed"),  # curved boundaries
        ("biharmonic_l_shape_navier_mms_009", "mixed"),  # polygonal gmsh domain
        ("biharmonic_square_with_hole_navier_mms_038", "mixed"),  # hole: NaN inside it
        ("biharmonic_unit_cube_cube_mms_001", "mixed"),  # 3-D
        ("biharmonic_gear_noexact_ref_003", "mixed"),  # reference_numerical
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id, method):
    case = setup.case(case_id)
    report = setup.grade(case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case.id, *failure(report))
    dolfinx = case.evaluation_metadata.thresholds["dolfinx"]
    assert report.error <= dolfinx.tau_acc, (case.id, report.error, dolfinx.e_base)
    info = report.diagnostics["solver_info"]
    assert info["method"] == method
    assert info["element_degree"] == (3 if method == "cip" else 2)
    assert info["num_dofs"] > 1000


@pytest.mark.parametrize(
    ("case_id", "low", "high"),
    [
        # mixed splitting, Q2 on a curved domain: L2 order 3 (measured 3.03)
        ("biharmonic_annulus_navier_mms_004", 2.4, 3.8),
        # C0 interior penalty, Q3 with Nitsche clamped data: L2 order 4 (measured 3.96)
        ("biharmonic_unit_square_clamped_mms_003", 3.4, 4.8),
    ],
)
def test_halving_the_mesh_size_reduces_the_error_at_the_expected_order(setup, case_id, low, high):
    case = setup.case(case_id)
    errors = []
    for resolution in (8, 16):
        source = bundle("biharmonic", {"resolution": resolution, "resolution_cip": resolution})
        report = setup.grade(case, source)
        assert report.verdict == "PASS", (resolution, *failure(report))
        errors.append(report.error)
    order = math.log2(errors[0] / errors[1])
    assert low < order < high, (errors, order)


def test_forcing_the_splitting_on_a_clamped_case_fails_loudly(setup):
    """The splitting w = -laplace(u) cannot take normal_derivative data: the program
    exits nonzero with a message instead of ignoring the clamped condition."""
    case = setup.case("biharmonic_unit_square_clamped_mms_003")
    report = setup.grade(case, bundle("biharmonic", {"method": 1}))
    assert report.verdict == "F-Exec", failure(report)
    assert report.reason == "runtime_error", failure(report)
    assert "normal_derivative" in report.stderr_excerpt, failure(report)
