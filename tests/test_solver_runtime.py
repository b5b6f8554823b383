"""The library-neutral runtime geometry the Python tracks' solver programs share
(``pdeagent.solver_runtime._geometry``: numpy only, no FEM library), and the bundler
that inlines it."""

from __future__ import annotations

import ast
import math

import numpy as np
import pytest

from pdeagent.contracts.python_bundle import BundleError, PythonBundler, reference_overrides
from pdeagent.solver_runtime import _geometry as G


def _params(name):
    return G._mesh_params(name, None)


def test_projection_moves_points_onto_the_exact_arcs_of_an_annulus():
    p = _params("annulus")
    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 2 * math.pi, 50)
    radii = np.where(np.arange(50) % 2, 0.5, 1.0) * (1 + rng.uniform(-0.02, 0.02, 50))
    points = np.column_stack([radii * np.cos(theta), radii * np.sin(theta)])
    moved = G._mesh_project("annulus", p, points)
    r = np.hypot(moved[:, 0], moved[:, 1])
    np.testing.assert_allclose(r, np.where(np.arange(50) % 2, 0.5, 1.0), atol=1e-14)
    np.testing.assert_allclose(np.arctan2(moved[:, 1], moved[:, 0]), np.arctan2(*points.T[::-1]))


def test_projection_keeps_points_of_straight_sides_and_follows_the_star_outline():
    p = _params("square_with_hole")
    side = np.array([[0.3, 0.0], [1.0, 0.7], [0.0, 0.25]])
    np.testing.assert_allclose(G._mesh_project("square_with_hole", p, side), side)
    star = _params("star")
    theta = np.linspace(0, 2 * math.pi, 7, endpoint=False)
    near = np.column_stack([0.5 + 0.3 * np.cos(theta), 0.5 + 0.3 * np.sin(theta)])
    moved = G._mesh_project("star", star, near)
    r = np.hypot(moved[:, 0] - 0.5, moved[:, 1] - 0.5)
    expected = star["r0"] * (1 + star["amplitude"] * np.cos(star["n_points"] * theta))
    np.testing.assert_allclose(r, expected, atol=1e-14)


def test_classification_agrees_with_the_core_geometry_tags():
    p = _params("t_junction")
    points = np.array([[0.5, 0.0], [1.0, 0.7], [0.0, 0.7], [0.45, 0.3]])
    assert list(G._mesh_classify("t_junction", p, points)) == [
        "inlet", "outlet_right", "outlet_left", "walls"
    ]  # fmt: skip


def test_a_bundle_inlines_the_shared_runtime_and_fixes_settings(tmp_path, monkeypatch):
    package = tmp_path / "fake_solvers"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "demo.py").write_text(
        '"""doc"""\nfrom ._geometry import _mesh_bbox\n\nSETTINGS = None  # bundle: settings\n'
        "DEFAULTS = {'resolution': 4}\nREFERENCE = {**DEFAULTS, 'resolution': 16}\n\n"
        "def solve(case_spec, settings=None):\n    return _mesh_bbox('circle', {})\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    bundler = PythonBundler("fake_solvers", ["demo"], library="Demo", generator="test")
    source = bundler.bundle("demo", {"resolution": 8})
    tree = ast.parse(source)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
    assert "def _mesh_project(" in source and "SETTINGS = {'resolution': 8}" in source
    assert bundler.fidelity_settings("demo", "intermediate") == {"resolution": 8}
    with pytest.raises(BundleError, match="unknown family"):
        bundler.bundle("other")


def test_reference_overrides_map_the_generic_config_per_track():
    config = {"mesh_resolution": 64, "element_degree": 3, "firedrake": {"dt": 0.001}}
    assert reference_overrides("stokes", config, is_3d=False, track="firedrake") == {
        "resolution": 64, "degree": 2, "dt": 0.001
    }  # fmt: skip
    assert reference_overrides("poisson", config, is_3d=True, track="dolfinx") == {
        "resolution_3d": 64, "degree": 3
    }  # fmt: skip
