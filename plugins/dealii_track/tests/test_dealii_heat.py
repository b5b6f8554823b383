"""The deal.II heat calibration program on dataset cases, through the real pipeline
(compile in the sandbox, run, adapt, grade): it passes each case's DOLFINx accuracy
threshold on every kind of heat case (Dirichlet / Neumann / Robin data depending on t,
kappa(x, t), curved and polygonal gmsh domains, the star, 3-D, a reference-graded case),
its periodic solutions are truly periodic, Q2 converges at order three in space and
BDF2 at order two in time, and a case whose boundary conditions are not on u is
refused loudly."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from dealii_harness import Setup, failure

from pdeagent_dealii.bundle import bundle

pytestmark = [pytest.mark.dealii, pytest.mark.slow]


@pytest.fixture(scope="module")
def setup():
    return Setup()


def dolfinx(case):
    return case.evaluation_metadata.thresholds["dolfinx"]


@pytest.mark.parametrize(
    "case_id",
    [
        "heat_unit_square_mixedbc_mms_003",  # Dirichlet + Neumann + Robin, data depend on t
        "heat_circle_varkappa_mms_001",  # curved boundary, kappa = 1 + t*x**2
        "heat_l_shape_varkappa_mms_002",  # polygonal gmsh domain, kappa = 1 + x**2 + y**2
        "heat_star_smooth_mms_007",  # the star: outline curved by meshing.h manifold
        "heat_unit_cube_cube_mms_002",  # 3-D
        "heat_gear_noexact_ref_009",  # graded against the stored DOLFINx reference
    ],
)
def test_calibration_program_passes_the_dolfinx_accuracy_threshold(setup, case_id):
    case = setup.case(case_id)
    report = setup.grade(case, setup.calibration_source(case))
    assert report.verdict == "PASS", (case.id, *failure(report))
    assert report.error <= dolfinx(case).tau_acc, (case.id, report.error, dolfinx(case).e_base)
    info = report.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["time_steps"] == 25 and info["num_dofs"] > 1000
    kappa_depends_on_t = re.search(r"(?<![\w.])t(?!\w)", str(case.case_spec.pde.params["kappa"]))
    assert info["matrix_reassembled_each_step"] == bool(kappa_depends_on_t)


@pytest.mark.parametrize(
    ("case_id", "axes"),
    [
        ("heat_periodic_square_periodic_mms_000", ("x",)),  # Dirichlet on ymin / ymax
        ("heat_periodic_square_periodic_mms_002", ("x", "y")),  # no Dirichlet part at all
    ],
)
def test_periodic_case_passes_and_its_solution_repeats_across_the_periodic_pairs(
    setup, case_id, axes, tmp_path
):
    case = setup.case(case_id)
    report = setup.grade(case, setup.calibration_source(case), keep=tmp_path / "eval")
    assert report.verdict == "PASS", failure(report)
    assert report.error <= dolfinx(case).tau_acc, (report.error, dolfinx(case).e_base)
    # the accuracy run's adapted output (every timed repeat is adapted and checked too)
    npz = tmp_path / "eval" / "exec-0" / ".pdeagent_solution.npz"
    u = np.load(npz)["u"]
    assert np.isfinite(u).all()
    scale = np.max(np.abs(u))
    if "x" in axes:
        assert np.max(np.abs(u[:, 0] - u[:, -1])) < 1e-8 * scale
    if "y" in axes:
        assert np.max(np.abs(u[0, :] - u[-1, :])) < 1e-8 * scale


def test_q2_on_a_curved_domain_converges_at_order_three_in_space(setup):
    """Annulus (MappingQ2), dt = 0.0025 so that the BDF2 error stays far below the
    spatial one: halving h divides the error by about 2^3."""
    case = setup.case("heat_annulus_smooth_mms_004")
    errors = []
    for resolution in (8, 16):
        report = setup.grade(case, bundle("heat", {"resolution": resolution, "dt": 0.0025}))
        assert report.verdict == "PASS", failure(report)
        errors.append(report.error)
    order = math.log2(errors[0] / errors[1])
    assert 2.4 < order < 3.8, (errors, order)


def test_bdf2_converges_at_order_two_in_time(setup):
    """A manufactured solution that Q3 represents exactly in space (polynomial of degree
    three per direction times exp(-t), plus a part linear in t), so the error is the
    time-stepping error alone: halving dt divides it by about 2^2."""
    case = setup.case("heat_unit_square_mixedbc_mms_000")
    errors = []
    for dt in (0.025, 0.0125):
        settings = {"resolution": 4, "degree": 3, "dt": dt}
        report = setup.grade(case, bundle("heat", settings))
        assert report.verdict == "PASS", failure(report)
        errors.append(report.error)
    order = math.log2(errors[0] / errors[1])
    assert 1.6 < order < 2.4, (errors, order)


def test_boundary_conditions_on_another_quantity_than_u_are_refused_loudly(setup):
    """A transient Navier-Stokes case prescribes the velocity: the heat program exits
    with an error naming the quantity instead of treating it as a condition on u."""
    case = setup.case("navier_stokes_unit_square_transient_mms_000")
    report = setup.grade(case, bundle("heat"))
    assert report.verdict == "F-Exec", failure(report)
    assert "quantity" in report.stderr_excerpt and "velocity" in report.stderr_excerpt, failure(
        report
    )
