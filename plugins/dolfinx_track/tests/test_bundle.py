"""Bundling: every family becomes one valid file; settings are readable without dolfinx."""

from __future__ import annotations

import ast

import pytest

from pdeagent.contracts.python_bundle import BundleError
from pdeagent_dolfinx.bundle import FAMILIES, bundle, module_settings


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_bundles_into_one_file(family):
    source = bundle(family, {"resolution": 7})
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)].count("solve") == 1
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert "SETTINGS = {'resolution': 7}" in source


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_calibration_and_reference_settings(family):
    defaults = module_settings(family, "DEFAULTS")
    reference = module_settings(family, "REFERENCE")
    assert defaults and reference
    assert set(reference) <= set(defaults), "reference settings must be known settings"
    assert reference != defaults


def test_unknown_family():
    with pytest.raises(BundleError, match="unknown family"):
        bundle("maxwell")
