"""Cross-track agreement: for one dataset case of every deal.II family, the deal.II and
the DOLFINx calibration baselines — two independent implementations, C++ on
quadrilaterals and Python on simplices — produce solutions that each pass the case
(against its stored reference) and agree with each other on the
grid within the case's DOLFINx accuracy threshold."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from dealii_harness import DATASET, Setup, require_dolfinx

from pdeagent.cases.agent_view import agent_view
from pdeagent.evaluation.pipeline import produce_fields
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.sandbox import default_sandbox
from pdeagent.scoring.metrics import relative_l2
from pdeagent_dealii.bundle import FAMILIES

pytestmark = [pytest.mark.dealii, pytest.mark.dolfinx, pytest.mark.slow]

# One no-exact case per deal.II family (graded against the stored high-fidelity DOLFINx
# reference, so agreement is not given by an exact formula both sides were built from):
# curved and polygonal gmsh domains, transient and vector-valued outputs, lid-driven
# cavities with discontinuous boundary data.
CASES = {
    "poisson": "poisson_dumbbell_noexact_ref_006",
    "helmholtz": "helmholtz_square_with_hole_noexact_ref_004",
    "biharmonic": "biharmonic_gear_noexact_ref_003",
    "linear_elasticity": "linear_elasticity_square_with_hole_noexact_ref_005",
    "heat": "heat_circle_noexact_ref_003",
    "convection_diffusion": "convection_diffusion_eccentric_annulus_noexact_ref_011",
    "reaction_diffusion": "reaction_diffusion_l_shape_noexact_ref_003",
    "stokes": "stokes_unit_square_lid_ref_000",
    "navier_stokes": "navier_stokes_unit_square_lid_ref_001",
}


@pytest.fixture(scope="module")
def setup():
    require_dolfinx()
    return Setup()


def _fields(setup, track_name: str, case) -> dict:
    track = setup.host.get_track(track_name)
    source = setup.host.hook.pdeagent_calibration_source(
        track=track, case_view=agent_view(case, track_name),
        calibration_config=case.evaluation_metadata.calibration_config,
    )  # fmt: skip
    assert source is not None, f"no {track_name} baseline for {case.family}"
    with tempfile.TemporaryDirectory(prefix="pdeagent-agree-", dir="/var/tmp") as tmp:
        return produce_fields(
            setup.host, track, case, source, sandbox=default_sandbox(), workroot=Path(tmp) / "w"
        )


def test_every_dealii_family_is_sampled():
    assert set(CASES) == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(CASES))
def test_dealii_and_dolfinx_baselines_agree_and_both_pass(setup, family):
    case = setup.case(CASES[family])
    assert case.family == family and "dealii" in case.supported_libraries
    spec = case.case_spec
    scored = evaluation_mask(
        spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
    ).scored
    reference = reference_fields(case, DATASET.parent)
    dealii = _fields(setup, "dealii", case)
    dolfinx = _fields(setup, "dolfinx", case)
    tau = case.evaluation_metadata.thresholds["dolfinx"].tau_acc
    errors = {
        "dealii": relative_l2(dealii, reference, scored),
        "dolfinx": relative_l2(dolfinx, reference, scored),
        "between": relative_l2(dealii, dolfinx, scored),
    }
    assert errors["dealii"] <= tau and errors["dolfinx"] <= tau, (errors, tau)
    assert errors["between"] <= tau, (errors, tau)
