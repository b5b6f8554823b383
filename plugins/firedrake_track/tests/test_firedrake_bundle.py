"""Bundling: every Firedrake family becomes one valid file (the shared runtime inlined);
its settings are readable without firedrake; the track hands out those bundles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from pdeagent_firedrake.bundle import FAMILIES, bundle, module_settings

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.plugins import load_plugins

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_bundles_into_one_file(family):
    source = bundle(family, {"resolution": 7})
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)].count("solve") == 1
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert "SETTINGS = {'resolution': 7}" in source
    assert "def _mesh_project(" in source  # the core's shared geometry is inlined


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_calibration_and_reference_settings(family):
    defaults = module_settings(family, "DEFAULTS")
    reference = module_settings(family, "REFERENCE")
    assert defaults and reference
    assert set(reference) <= set(defaults), "reference settings must be known settings"
    assert reference != defaults
    assert "geometry_degree" not in defaults and "petsc_options" not in defaults


def test_the_track_hands_out_calibration_and_reference_bundles():
    host = load_plugins(strict=True)
    track = host.get_track("firedrake")
    case = next(c for c in load_cases(DATASET) if c.id == "stokes_unit_square_lid_ref_000")
    view = agent_view(case, "firedrake")
    calibration = host.hook.pdeagent_calibration_source(
        track=track, case_view=view, calibration_config=None
    )
    assert "pdeagent Firedrake calibration solver: stokes" in calibration
    reference = host.hook.pdeagent_reference_source(
        track=track, case_view=view, reference_config={"mesh_resolution": 40}, fidelity="reference"
    )
    assert "'resolution': 40" in reference and "'degree': 2" in reference
