"""pdeagent_dealii/programs/meshing.h: quadrilateral meshes of every domain template.

One C++ driver (programs/meshing_check.cc) is compiled once per module; it meshes one
``domain`` per template (taken from the dataset's deal.II cases) and reports cells,
area, boundary ids and boundary length per tag, which are checked against the core's
geometry (core/pdeagent/geometry/templates/).  Its ``poisson`` mode solves
-Laplace(u) = -6 with u = 1 + x^2 + 2 y^2 on the whole boundary with Q2: Q2 on
(bilinearly mapped) quadrilaterals contains u, so the nodal error is round-off.
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from dealii_harness import compile_driver

from pdeagent.cases.io import load_cases
from pdeagent.geometry import get_geometry
from pdeagent.geometry.templates import GEOMETRY_TEMPLATES

pytestmark = [pytest.mark.dealii, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CASES = ROOT / "cases" / "pdeagent-v1.jsonl"
TYPES = sorted(GEOMETRY_TEMPLATES)
H = 0.05
"""Target mesh size of the checks (1141 cells on the default annulus)."""
CURVED = (
    "circle",
    "annulus",
    "eccentric_annulus",
    "square_with_hole",
    "multi_hole",
    "sector",
    "dumbbell",
    "star",
)
"""Templates with curved boundaries: their boundary faces carry a manifold (circular
arcs a SphericalManifold, the star its exact polar outline)."""


@functools.cache
def dataset_domains() -> dict[str, dict]:
    """One ``domain`` per template type among the cases that deal.II supports."""
    out: dict[str, dict] = {}
    for case in load_cases(CASES):
        if "dealii" not in case.supported_libraries:
            continue
        d = case.case_spec.domain
        out.setdefault(
            d.type,
            {"type": d.type, "bounds": d.bounds, "geometry_params": dict(d.geometry_params)},
        )
    return out


def core_area(domain: dict) -> float:
    """The template's exact area (a midpoint sampling of ``inside()`` for others)."""
    name = domain["type"]
    geom = get_geometry(name, domain["geometry_params"])
    p = geom.params
    disk = math.pi
    if name in ("unit_square", "periodic_square", "unit_cube"):
        return 1.0
    if hasattr(geom, "polygon"):  # l_shape, t_junction, gear
        return geom.polygon().area()
    if name == "circle":
        return disk * p["radius"] ** 2
    if name in ("annulus", "eccentric_annulus"):
        return disk * (p["r_outer"] ** 2 - p["r_inner"] ** 2)
    if name == "square_with_hole":
        return 1.0 - disk * p["radius"] ** 2
    if name == "multi_hole":
        return 1.0 - sum(disk * r**2 for _, _, r in p["holes"])
    if name == "sector":
        return 0.5 * p["radius"] ** 2 * (p["angle_end"] - p["angle_start"])
    if name == "star":  # (1/2) int r(theta)^2 dtheta
        return disk * p["r0"] ** 2 * (1.0 + 0.5 * p["amplitude"] ** 2)
    if name == "dumbbell":  # two disks + the bar outside them
        r, h = p["radius"], 0.5 * p["bar_width"]
        gap = p["center_right"][0] - p["center_left"][0]
        inside_disk = h * math.sqrt(r * r - h * h) + r * r * math.asin(h / r)
        return 2 * disk * r * r + 2 * h * gap - 2 * inside_disk
    return sampled_area(domain, 2000)


def sampled_area(domain: dict, n: int = 1500) -> float:
    """Area of a 2-D template from an n x n midpoint sampling of ``inside()`` on its bbox."""
    geom = get_geometry(domain["type"], domain["geometry_params"])
    (x0, x1), (y0, y1) = geom.bbox()[:2]
    xs = x0 + (np.arange(n) + 0.5) * (x1 - x0) / n
    ys = y0 + (np.arange(n) + 0.5) * (y1 - y0) / n
    X, Y = np.meshgrid(xs, ys)
    return float(geom.inside(X, Y).mean()) * (x1 - x0) * (y1 - y0)


def core_lengths(domain: dict) -> dict[str, float] | None:
    """Exact boundary length per tag (face area for unit_cube); None for star."""
    geom = get_geometry(domain["type"], domain["geometry_params"])
    if domain["type"] == "unit_cube":
        return dict.fromkeys(geom.boundary_tags, 1.0)
    if not hasattr(geom, "pieces"):
        return None
    out = dict.fromkeys(geom.boundary_tags, 0.0)
    for tag, kind, data in geom.pieces():
        if kind == "seg":
            (ax, ay), (bx, by) = data
            out[tag] += math.hypot(bx - ax, by - ay)
        else:
            _, radius, _, span = data
            out[tag] += radius * min(span, 2 * math.pi)
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    return compile_driver("meshing_check", tmp_path_factory.mktemp("meshing"))


def run_driver(driver: Path, mode: str, domains: list[dict], h: float) -> dict[str, dict]:
    path = driver.parent / f"{mode}_domains.json"
    path.write_text(json.dumps(domains))
    result = subprocess.run(
        [str(driver), mode, str(path), repr(h)],
        cwd=driver.parent, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
    out = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(out) == len(domains), result.stdout[-2000:]
    return {r["type"]: r for r in out}


@pytest.fixture(scope="module")
def checked(driver) -> dict[str, dict]:
    return run_driver(driver, "check", list(dataset_domains().values()), H)


def test_the_dataset_covers_every_template():
    assert sorted(dataset_domains()) == TYPES


@pytest.mark.parametrize("name", TYPES)
def test_mesh_of_template(name, checked):
    domain = dataset_domains()[name]
    r = checked[name]
    assert "error" not in r, r["error"]
    geom = get_geometry(name, domain["geometry_params"])
    tags = list(geom.boundary_tags)
    assert r["tags"] == tags
    assert r["dim"] == len(domain["bounds"])
    assert r["cells"] > 0
    assert r["non_quad"] == 0
    assert r["min_cell_measure"] > 0.0
    if r["dim"] == 2:
        assert r["min_corner_jacobian"] > 0.05, "a degenerate or non-convex quadrilateral"
    # every tag on the boundary, no boundary face with an id outside the tags
    assert r["boundary_ids"] == list(range(len(tags)))
    assert r["bad_faces"] == 0
    assert sorted(r["length"]) == sorted(tags)
    assert all(v > 0.0 for v in r["length"].values())
    # area within 2 % of the core's (the formulas agree with a sampling of inside())
    area = core_area(domain)
    assert r["volume"] == pytest.approx(area, rel=0.02)
    if r["dim"] == 2:
        assert sampled_area(domain) == pytest.approx(area, rel=2e-3)
    # boundary length per tag within 2 % of the exact one (faces are chords of arcs)
    exact = core_lengths(domain)
    if exact is not None:
        for tag in tags:
            assert r["length"][tag] == pytest.approx(exact[tag], rel=0.02), tag
    if name in CURVED:
        # one refinement puts the new boundary vertices on the curves: the polygonal
        # area error drops by about 4
        assert abs(r["volume_refined"] - area) < 0.5 * abs(r["volume"] - area)
    elif r["dim"] == 2:
        assert r["volume_refined"] == pytest.approx(r["volume"], rel=1e-12)


def test_mesh_size_controls_the_cell_count(driver):
    """Halving h about quadruples the cells.  (At h = 0.02 gmsh's blossom prints a warning
    with printf on the annulus: run_driver's strict JSON parse proves meshing.h keeps
    stdout clean.)"""
    domains = [dataset_domains()[n] for n in ("annulus", "star", "unit_square")]
    coarse = run_driver(driver, "check", domains, 0.04)
    fine = run_driver(driver, "check", domains, 0.02)
    for name in ("annulus", "star", "unit_square"):
        assert "error" not in fine[name], fine[name]["error"]
        assert 2.5 < fine[name]["cells"] / coarse[name]["cells"] < 6.0, name
        assert fine[name]["non_quad"] == 0
    assert fine["unit_square"]["cells"] == 2500


@pytest.mark.parametrize("name", ["star", "annulus", "t_junction", "multi_hole"])
def test_q2_poisson_reproduces_a_quadratic(name, driver):
    r = run_driver(driver, "poisson", [dataset_domains()[name]], H)[name]
    assert "error" not in r, r["error"]
    assert r["dofs"] > 100
    assert r["max_error"] < 1e-6


def test_unknown_domain_type_is_reported(driver):
    r = run_driver(driver, "check", [{"type": "hexagon", "bounds": [[0, 1], [0, 1]]}], H)
    assert "unknown domain type 'hexagon'" in r["hexagon"]["error"]


NON_DEFAULT = [
    {"type": "sector", "geometry_params": {"center": [0.2, -0.1], "radius": 0.7,
                                           "angle_start": 0.5, "angle_end": 2.5}},
    {"type": "l_shape", "geometry_params": {"corner": [0.3, 0.6]}},
    {"type": "t_junction", "geometry_params": {"bar_length": 2.0, "stem_width": 0.4}},
    {"type": "star", "geometry_params": {"n_points": 7, "amplitude": 0.2}},
]  # fmt: skip


def test_non_default_parameters_are_used(driver):
    """Parameters given in geometry_params override the defaults (partly given ones too)."""
    domains = [{"bounds": [[0, 1], [0, 1]], **d} for d in NON_DEFAULT]
    out = run_driver(driver, "check", domains, 0.03)
    for domain in domains:
        r = out[domain["type"]]
        assert "error" not in r, r["error"]
        assert r["non_quad"] == 0
        assert r["bad_faces"] == 0
        assert r["boundary_ids"] == list(range(len(r["tags"])))
        assert r["volume"] == pytest.approx(sampled_area(domain), rel=0.02), domain["type"]
