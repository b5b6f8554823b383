"""The shipped dataset (cases/pdeagent-v1.jsonl): composition as SPEC §2, leak-free (the
data-sampling cheat fails every case), thresholds from real calibration, references
present. Needs no FEM library."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from pdeagent.cases.cheat import cheat_errors
from pdeagent.cases.io import load_cases
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import GEOMETRY_TEMPLATES

from .conftest import REPO_ROOT
from .test_build import SPEC_COUNTS

DATASET = REPO_ROOT / "cases" / "pdeagent-v1.jsonl"
CASES = load_cases(DATASET)


def test_composition_matches_spec():
    assert len(CASES) == 645
    assert len({c.id for c in CASES}) == 645
    by_family = collections.Counter(c.family for c in CASES)
    for family, (total, firedrake, dealii) in SPEC_COUNTS.items():
        assert by_family[family] == total, family
        supported = collections.Counter(
            t for c in CASES if c.family == family for t in c.supported_libraries
        )
        assert supported["dolfinx"] == total
        assert supported["firedrake"] == firedrake, family
        assert supported["dealii"] == dealii, family
    methods = collections.Counter(c.evaluation_metadata.construction_method for c in CASES)
    assert methods == {"manufactured_solution": 536, "reference_numerical": 109}
    assert {c.case_spec.domain.type for c in CASES} == set(GEOMETRY_TEMPLATES)
    # 1.1.0: the deal.II thresholds were added, 1.2.0: the Firedrake ones (pdeagent cases
    # add-track, each a minor change)
    assert {c.dataset_version for c in CASES} == {"1.2.0"}


def test_beyond_the_paper_boundaries_and_outputs():
    bc = [c.case_spec.bc for c in CASES]
    assert sum(1 for b in bc if b.neumann) >= 20
    assert sum(1 for b in bc if b.robin) >= 10
    assert sum(1 for b in bc if b.periodic) >= 10
    assert sum(1 for b in bc if any(len(p.boundary) and p.axis == "y" for p in b.periodic)) >= 3
    assert sum(1 for c in CASES if c.case_spec.output.components) >= 40
    assert sum(1 for c in CASES if c.case_spec.eval_grid.dim == 3) >= 30


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_cheat_fails_and_thresholds_are_calibrated(case):
    th = case.evaluation_metadata.thresholds["dolfinx"]
    assert th.calibrated_on["track"] == "dolfinx"
    assert th.calibrated_on["library"].startswith("DOLFINx")
    assert th.calibrated_on["cores"] >= 1 and th.t_base > 0
    assert 0 < th.e_base < 0.05
    calibrated = {"dolfinx"} | ({"dealii", "firedrake"} & set(case.supported_libraries))
    assert set(case.evaluation_metadata.thresholds) == calibrated
    for track, library in (("dealii", "deal.II"), ("firedrake", "Firedrake")):
        if track in calibrated:
            other = case.evaluation_metadata.thresholds[track]
            assert other.calibrated_on["track"] == track
            assert other.calibrated_on["library"].startswith(library)
            assert 0 < other.e_base < 0.05 and other.t_base > 0
            assert other.tau_acc >= other.e_base and other.tau_time > other.t_base
    reference = reference_fields(case, DATASET.parent)
    for name, values in reference.items():
        assert values.shape == case.case_spec.eval_grid.shape, name
    errors = cheat_errors(case, reference)
    if case.evaluation_metadata.construction_method == "manufactured_solution":
        assert errors or case.case_spec.bc.periodic, "an MMS case without data to cheat with"
    for field, error in errors.items():
        assert error > th.tau_acc, f"sampling {field} passes the accuracy gate"
    assert case.case_spec.numerical_decisions, "decisions are listed"
    assert all(np.isfinite(v).any() for v in reference.values())


def test_frontier_thresholds_follow_the_rule_from_their_trial_tables():
    """Every pristine-protocol threshold set of the dataset carries its frontier selection,
    whose choice recomputes from its trial table by the rule, with the chosen configuration
    as the case's calibration_config for that track (issue #19)."""
    from pdeagent.cases.frontier_thresholds import check_stored
    from pdeagent.cases.model import PRISTINE_PROTOCOL, converter

    checked = 0
    for case in CASES:
        for track, th in case.evaluation_metadata.thresholds.items():
            if th.protocol != PRISTINE_PROTOCOL:
                assert th.selection is None and th.t_null is None, (case.id, track)
                continue
            assert check_stored(converter.unstructure(th), case) == [], (case.id, track)
            config = (case.evaluation_metadata.calibration_config or {}).get(track)
            assert config == th.selection["config"], (case.id, track)
            checked += 1
    legacy = sum(len(c.evaluation_metadata.thresholds) for c in CASES) - checked
    assert checked + legacy == 645 + 510 + 313
