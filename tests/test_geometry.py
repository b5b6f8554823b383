"""Tests of the 14 domain templates and of the evaluation mask."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pdeagent.cases.model import EvalGrid
from pdeagent.geometry import (
    GEOMETRY_TEMPLATES,
    EvaluationMask,
    Geometry,
    GeometryError,
    evaluation_mask,
    get_geometry,
    grid_axes,
    grid_points,
)
from pdeagent.geometry.templates import Polygon, arc_distance, segment_distance

NAMES_2D = sorted(n for n, c in GEOMETRY_TEMPLATES.items() if c.dim == 2)

EXPECTED_NAMES = {
    "unit_square",
    "unit_cube",
    "l_shape",
    "square_with_hole",
    "multi_hole",
    "circle",
    "annulus",
    "eccentric_annulus",
    "sector",
    "star",
    "gear",
    "t_junction",
    "dumbbell",
    "periodic_square",
}


def _gear_area(rr: float, rt: float, n: int, fr: float, ft: float) -> float:
    """Triangle fan from the centre, independent of the polygon code."""
    p = 2 * math.pi / n
    tooth = 2 * 0.5 * rr * rt * math.sin(p * (fr - ft) / 2) + 0.5 * rt * rt * math.sin(p * ft)
    gap = 0.5 * rr * rr * math.sin(p * (1 - fr))
    return n * (tooth + gap)


def _dumbbell_area(r: float, h: float, dist: float) -> float:
    # Two disks + bar minus the two bar parts covered by the disks.
    cap = h * math.sqrt(r * r - h * h) + r * r * math.asin(h / r)
    return 2 * math.pi * r * r + 2 * h * dist - 2 * cap


ANALYTIC_AREA = {
    "unit_square": 1.0,
    "periodic_square": 1.0,
    "l_shape": 0.75,
    "square_with_hole": 1 - math.pi * 0.2**2,
    "multi_hole": 1 - math.pi * (0.12**2 + 0.12**2 + 0.15**2),
    "circle": math.pi * 0.25,
    "annulus": math.pi * (1 - 0.25),
    "eccentric_annulus": math.pi * (1 - 0.16),
    "sector": 0.75 * math.pi,
    "star": math.pi * 0.35**2 * (1 + 0.25**2 / 2),
    "gear": _gear_area(0.3, 0.4, 12, 0.5, 0.3),
    "t_junction": 0.2 * 0.6 + 1.0 * 0.2,
    "dumbbell": _dumbbell_area(0.2, 0.05, 0.5),
}

# (point, inside?) chosen by hand.
KNOWN_POINTS = {
    "unit_square": [((0.5, 0.5), True), ((1.2, 0.5), False), ((-0.01, 0.5), False)],
    "periodic_square": [((0.1, 0.9), True), ((0.5, 1.01), False)],
    "l_shape": [((0.25, 0.75), True), ((0.75, 0.25), True), ((0.75, 0.75), False)],
    "square_with_hole": [((0.5, 0.5), False), ((0.1, 0.1), True), ((0.5, 0.71), True)],
    "multi_hole": [
        ((0.3, 0.3), False),
        ((0.5, 0.7), False),
        ((0.5, 0.3), True),
        ((0.05, 0.95), True),
    ],
    "circle": [((0.5, 0.5), True), ((0.0, 0.0), False), ((0.9, 0.5), True)],
    "annulus": [((0.0, 0.0), False), ((0.75, 0.0), True), ((0.0, -0.9), True), ((0.8, 0.8), False)],
    "eccentric_annulus": [((0.2, 0.0), False), ((-0.5, 0.0), True), ((0.65, 0.0), True)],
    "sector": [((0.5, 0.5), True), ((-0.5, -0.5), True), ((0.5, -0.5), False), ((1.1, 0), False)],
    "star": [((0.5, 0.5), True), ((0.9, 0.5), True), ((0.5, 0.9), False), ((0.05, 0.05), False)],
    "gear": [
        ((0.5, 0.5), True),
        ((0.89, 0.5), True),
        ((0.5 + 0.38 * math.cos(math.pi / 12), 0.5 + 0.38 * math.sin(math.pi / 12)), False),
    ],
    "t_junction": [
        ((0.5, 0.1), True),
        ((0.1, 0.7), True),
        ((0.1, 0.3), False),
        ((0.5, 0.85), False),
    ],
    "dumbbell": [
        ((0.25, 0.5), True),
        ((0.5, 0.5), True),
        ((0.5, 0.6), False),
        ((0.25, 0.69), True),
    ],
}

# (point, exact distance to the boundary) computed by hand.
KNOWN_DISTANCES = {
    "unit_square": [((0.3, 0.5), 0.3), ((0.5, 0.5), 0.5), ((1.3, 1.4), 0.5)],
    "periodic_square": [((0.9, 0.5), 0.1)],
    "l_shape": [
        ((0.45, 0.45), 0.05 * math.sqrt(2)),
        ((0.4, 0.7), 0.1),
        ((0.7, 0.45), 0.05),
        ((0.6, 0.6), 0.1),
    ],
    "square_with_hole": [((0.5, 0.8), 0.1), ((0.05, 0.5), 0.05), ((0.5, 0.5), 0.2)],
    "multi_hole": [((0.5, 0.3), 0.08), ((0.3, 0.3), 0.12)],
    "circle": [((0.5, 0.5), 0.5), ((0.8, 0.5), 0.2), ((1.5, 0.5), 0.5)],
    "annulus": [((0.6, 0.0), 0.1), ((0.0, 0.85), 0.15), ((0.0, 0.0), 0.5)],
    "eccentric_annulus": [
        ((-0.5, 0.0), 0.3),
        ((-0.9, 0.0), 0.1),
        ((0.7, 0.0), 0.1),
        ((0.0, 0.9), 0.1),
    ],
    "sector": [((0.5, 0.0), 0.0), ((0.5, 0.1), 0.1), ((0.3, -0.3), 0.3), ((0.0, 0.5), 0.5)],
    "star": [((0.5 + 0.4375, 0.5), 0.0), ((1.0, 0.5), 0.0625), ((0.5, 0.5), 0.35 * 0.75)],
    "gear": [
        ((0.5, 0.5), 0.3 * math.cos(math.pi / 24)),
        ((0.95, 0.5), 0.45 - 0.4 * math.cos(math.pi / 40)),
    ],
    "t_junction": [
        ((0.5, 0.1), 0.1),
        ((0.45, 0.3), 0.05),
        ((0.3, 0.7), 0.1),
        ((0.3, 0.5), 0.1),
        ((1.3, 1.2), 0.5),
        ((0.35, 0.55), 0.05),
    ],
    "dumbbell": [((0.25, 0.5), 0.2), ((0.5, 0.5), 0.05), ((0.5, 0.6), 0.05), ((0.25, 0.75), 0.05)],
}


def _fine_grid(geom: Geometry, n: int = 401) -> tuple[np.ndarray, np.ndarray, float]:
    (x0, x1), (y0, y1) = geom.bbox()
    pad_x, pad_y = 0.05 * (x1 - x0), 0.05 * (y1 - y0)
    x = np.linspace(x0 - pad_x, x1 + pad_x, n)
    y = np.linspace(y0 - pad_y, y1 + pad_y, n)
    X, Y = np.meshgrid(x, y)
    return X, Y, (x1 - x0 + 2 * pad_x) * (y1 - y0 + 2 * pad_y)


def _boundary_samples(geom: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """Points on the boundary pieces (or on the star curve)."""
    if geom.name == "star":
        t = np.linspace(0, 2 * math.pi, 997)
        r = geom.radius_at(t)
        return 0.5 + r * np.cos(t), 0.5 + r * np.sin(t)
    xs, ys = [], []
    s = np.linspace(0, 1, 37)
    for _, kind, data in geom.pieces():
        if kind == "seg":
            (ax, ay), (bx, by) = data
            xs.append(ax + s * (bx - ax))
            ys.append(ay + s * (by - ay))
        else:
            (cx, cy), r, a0, span = data
            t = a0 + s * span
            xs.append(cx + r * np.cos(t))
            ys.append(cy + r * np.sin(t))
    return np.concatenate(xs), np.concatenate(ys)


def test_template_names() -> None:
    assert set(GEOMETRY_TEMPLATES) == EXPECTED_NAMES
    for name, cls in GEOMETRY_TEMPLATES.items():
        assert cls.name == name
        assert "all" not in cls.boundary_tags
        assert cls.dim == (3 if name == "unit_cube" else 2)


def test_unknown_template() -> None:
    with pytest.raises(GeometryError, match=r"unknown geometry template 'donut'.*annulus"):
        get_geometry("donut", None)


@pytest.mark.parametrize("name", sorted(EXPECTED_NAMES))
def test_defaults_construct_and_describe(name: str) -> None:
    geom = get_geometry(name, None)
    assert isinstance(geom, Geometry)
    assert len(geom.bbox()) == geom.dim
    text = geom.describe()
    assert isinstance(text, str) and len(text) > 15 and "{" not in text
    with pytest.raises(GeometryError, match=f"{name}: unknown geometry_params"):
        get_geometry(name, {"bogus": 1})


@pytest.mark.parametrize("name", NAMES_2D)
def test_area_and_bbox(name: str) -> None:
    geom = get_geometry(name, None)
    X, Y, box_area = _fine_grid(geom)
    inside = geom.inside(X, Y)
    assert inside.shape == X.shape and inside.dtype == bool
    (x0, x1), (y0, y1) = geom.bbox()
    assert X[inside].min() >= x0 and X[inside].max() <= x1
    assert Y[inside].min() >= y0 and Y[inside].max() <= y1
    area = inside.mean() * box_area
    assert area == pytest.approx(ANALYTIC_AREA[name], rel=0.01)


@pytest.mark.parametrize("name", NAMES_2D)
def test_known_points(name: str) -> None:
    geom = get_geometry(name, None)
    pts = KNOWN_POINTS[name]
    x = np.array([p[0][0] for p in pts])
    y = np.array([p[0][1] for p in pts])
    assert geom.inside(x, y).tolist() == [p[1] for p in pts]
    # scalar and 2-D shaped input
    assert bool(geom.inside(x[0], y[0])) == pts[0][1]
    assert geom.inside(x.reshape(-1, 1), y.reshape(-1, 1)).shape == (len(pts), 1)


@pytest.mark.parametrize("name", NAMES_2D)
def test_known_distances(name: str) -> None:
    geom = get_geometry(name, None)
    pts = KNOWN_DISTANCES[name]
    x = np.array([p[0][0] for p in pts])
    y = np.array([p[0][1] for p in pts])
    tol = 1e-6 if name == "star" else 1e-12
    np.testing.assert_allclose(geom.distance_to_boundary(x, y), [p[1] for p in pts], atol=tol)


@pytest.mark.parametrize("name", NAMES_2D)
def test_boundary_points_inside_with_zero_distance(name: str) -> None:
    geom = get_geometry(name, None)
    bx, by = _boundary_samples(geom)
    assert geom.inside(bx, by).all()
    tol = 1e-6 if name == "star" else 1e-12
    assert geom.distance_to_boundary(bx, by).max() < tol


@pytest.mark.parametrize("name", NAMES_2D)
def test_distance_is_consistent_with_inside(name: str) -> None:
    """|d(p) - d(q)| <= |p - q| (1-Lipschitz) and a disk of radius d around p does not cross."""
    geom = get_geometry(name, None)
    rng = np.random.default_rng(0)
    (x0, x1), (y0, y1) = geom.bbox()
    px = rng.uniform(x0, x1, 300)
    py = rng.uniform(y0, y1, 300)
    d = geom.distance_to_boundary(px, py)
    ins = geom.inside(px, py)
    # Points on a circle of radius 0.98 d around p keep p's inside status.
    ang = np.linspace(0, 2 * math.pi, 64, endpoint=False)
    cx = px[:, None] + 0.98 * d[:, None] * np.cos(ang)
    cy = py[:, None] + 0.98 * d[:, None] * np.sin(ang)
    assert (geom.inside(cx, cy) == ins[:, None]).all()
    # Some point at distance 1.02 d (720 directions) is on the other side: d is not
    # overestimated.
    ang = np.linspace(0, 2 * math.pi, 720, endpoint=False)
    r = 1.02 * d[:, None] + 1e-9
    fx = px[:, None] + r * np.cos(ang)
    fy = py[:, None] + r * np.sin(ang)
    changed = (geom.inside(fx, fy) != ins[:, None]).any(axis=1)
    assert changed.all()


def test_star_distance_accuracy() -> None:
    """The sampled star distance agrees with a much denser brute-force sampling."""
    from scipy.spatial import cKDTree

    star = get_geometry("star", None)
    t = np.linspace(0, 2 * math.pi, 400_000, endpoint=False)
    r = star.radius_at(t)
    tree = cKDTree(np.column_stack([0.5 + r * np.cos(t), 0.5 + r * np.sin(t)]))
    rng = np.random.default_rng(1)
    px, py = rng.uniform(0, 1, 500), rng.uniform(0, 1, 500)
    ref, _ = tree.query(np.column_stack([px, py]))
    size = 2 * 0.35 * 1.25
    assert np.abs(star.distance_to_boundary(px, py) - ref).max() < 1e-5 * size


@pytest.mark.parametrize("name", NAMES_2D)
def test_boundary_tag_of(name: str) -> None:
    geom = get_geometry(name, None)
    bx, by = _boundary_samples(geom)
    tags = geom.boundary_tag_of(bx, by)
    assert tags.shape == bx.shape
    assert set(tags.tolist()) == set(geom.boundary_tags)


def test_specific_boundary_tags() -> None:
    t = get_geometry("t_junction", None)
    assert t.boundary_tag_of(
        np.array([0.5, 0.0, 1.0, 0.5, 0.3]), np.array([0.0, 0.7, 0.7, 0.8, 0.6])
    ).tolist() == [
        "inlet",
        "outlet_left",
        "outlet_right",
        "walls",
        "walls",
    ]
    ell = get_geometry("l_shape", None)
    assert ell.boundary_tag_of(np.array([0.5, 0.75, 0.0]), np.array([0.75, 0.5, 0.3])).tolist() == [
        "reentrant",
        "reentrant",
        "outer",
    ]
    sec = get_geometry("sector", None)
    assert sec.boundary_tag_of(np.array([0.5, 0.0, 0.0]), np.array([0.0, -0.5, 1.0])).tolist() == [
        "sides",
        "sides",
        "arc",
    ]


def test_unit_cube() -> None:
    cube = get_geometry("unit_cube", None)
    x = np.array([0.5, 0.3, 1.0, 1.5, 0.2])
    y = np.array([0.5, 0.2, 0.5, 0.5, 0.2])
    z = np.array([0.5, 0.9, 0.5, 0.5, -0.3])
    assert cube.inside(x, y, z).tolist() == [True, True, True, False, False]
    np.testing.assert_allclose(cube.distance_to_boundary(x, y, z), [0.5, 0.1, 0.0, 0.5, 0.3])
    assert cube.boundary_tag_of(x[:3], y[:3], z[:3]).tolist()[1:] == ["zmax", "xmax"]


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("annulus", {"r_inner": 1.0, "r_outer": 0.5}, "annulus: r_inner must be < r_outer"),
        ("annulus", {"r_inner": -1.0}, "annulus: r_inner"),
        ("circle", {"radius": 0}, "circle: radius"),
        ("circle", {"center": [0.0]}, "circle: center"),
        ("square_with_hole", {"radius": 0.6}, "square_with_hole: the hole"),
        ("square_with_hole", {"center": [0.1, 0.5]}, "square_with_hole: the hole"),
        ("multi_hole", {"holes": [[0.5, 0.5, 0.6]]}, r"multi_hole: holes\[0\]"),
        ("multi_hole", {"holes": [[0.3, 0.5, 0.2], [0.5, 0.5, 0.2]]}, "overlap"),
        ("multi_hole", {"holes": []}, "multi_hole: holes"),
        ("eccentric_annulus", {"center_inner": [0.7, 0.0]}, "eccentric_annulus: the inner disk"),
        ("sector", {"angle_end": 7.0}, "sector: angle_end"),
        ("sector", {"angle_end": -1.0}, "sector: angle_end"),
        ("star", {"amplitude": 1.2}, "star: amplitude"),
        ("star", {"n_points": 2.5}, "star: n_points"),
        ("gear", {"r_tip": 0.2}, "gear: r_root must be < r_tip"),
        ("gear", {"n_teeth": 2}, "gear: n_teeth"),
        ("gear", {"tip_fraction": 0.8}, "gear: tip_fraction"),
        ("t_junction", {"stem_width": 2.0}, "t_junction: stem_width"),
        ("t_junction", {"bar_height": -0.1}, "t_junction: bar_height"),
        ("dumbbell", {"bar_width": 0.5}, "dumbbell: bar_width"),
        ("dumbbell", {"center_right": [0.5, 0.5]}, "dumbbell: center_right"),
        ("dumbbell", {"center_right": [0.75, 0.6]}, "dumbbell: center_left and center_right"),
        ("l_shape", {"corner": [1.5, 0.5]}, "l_shape: corner"),
    ],
)
def test_parameter_errors(name: str, params: dict, match: str) -> None:
    with pytest.raises(GeometryError, match=match):
        get_geometry(name, params)


def test_custom_parameters() -> None:
    g = get_geometry("l_shape", {"corner": [0.25, 0.75]})
    X, Y, box = _fine_grid(g)
    assert g.inside(X, Y).mean() * box == pytest.approx(1 - 0.75 * 0.25, rel=0.01)
    s = get_geometry("sector", {"angle_start": math.pi / 2, "angle_end": math.pi, "radius": 2.0})
    np.testing.assert_allclose(s.bbox(), [[-2.0, 0.0], [0.0, 2.0]], atol=1e-12)
    assert s.inside(np.array([-1.0, 1.0]), np.array([1.0, 1.0])).tolist() == [True, False]
    assert "0.25" in g.describe() and "0.75" in g.describe()


def test_polygon_helper() -> None:
    tri = Polygon([[0, 0], [1, 0], [0, 1]])
    x = np.array([0.2, 0.5, 0.0, 0.6, 1.0, -0.1])
    y = np.array([0.2, 0.5, 0.3, 0.6, 0.0, 0.0])
    assert tri.contains(x, y).tolist() == [True, True, True, False, True, False]
    np.testing.assert_allclose(
        tri.distance(x, y), [0.2, 0.0, 0.0, 0.2 / math.sqrt(2), 0.0, 0.1], atol=1e-15
    )
    assert tri.area() == pytest.approx(0.5)
    np.testing.assert_allclose(
        segment_distance(np.array([2.0]), np.array([1.0]), (0, 0), (1, 0)), [math.sqrt(2)]
    )
    # Quarter arc of angles [0, pi/2]: (-2, 0) lies off the arc's wedge, nearest endpoint (0, 1);
    # (2, 2) projects radially onto the arc.
    d = arc_distance(np.array([-2.0, 2.0]), np.array([0.0, 2.0]), (0.0, 0.0), 1.0, 0.0, math.pi / 2)
    np.testing.assert_allclose(d, [math.sqrt(5), 2 * math.sqrt(2) - 1])


# --------------------------------------------------------------------------- mask


def test_grid_axes_and_points_indexing() -> None:
    grid = EvalGrid(nx=5, ny=4, bbox=[0.0, 1.0, -1.0, 2.0])
    x, y = grid_axes(grid)
    np.testing.assert_allclose(x, np.linspace(0, 1, 5))
    np.testing.assert_allclose(y, np.linspace(-1, 2, 4))
    X, Y = grid_points(grid)
    U = X + 10 * Y
    assert U.shape == grid.shape == (4, 5)
    for j in range(4):
        for i in range(5):
            assert U[j, i] == x[i] + 10 * y[j]


def test_grid_points_3d_indexing() -> None:
    grid = EvalGrid(nx=3, ny=4, nz=5, bbox=[0.0, 1.0, 0.0, 2.0, 0.0, 3.0])
    x, y, z = grid_axes(grid)
    X, Y, Z = grid_points(grid)
    U = X + 10 * Y + 100 * Z
    assert U.shape == grid.shape == (5, 4, 3)
    for k in range(5):
        for j in range(4):
            for i in range(3):
                assert U[k, j, i] == x[i] + 10 * y[j] + 100 * z[k]


def test_mask_unit_square() -> None:
    grid = EvalGrid(nx=11, ny=11, bbox=[0.0, 1.0, 0.0, 1.0])
    mask = evaluation_mask(grid, get_geometry("unit_square", None))
    assert isinstance(mask, EvaluationMask)
    assert mask.band == pytest.approx(0.05)
    assert mask.inside.shape == (11, 11) and mask.inside.all()
    expected = np.zeros((11, 11), dtype=bool)
    expected[1:-1, 1:-1] = True
    assert (mask.scored == expected).all()


def test_mask_circle() -> None:
    grid = EvalGrid(nx=21, ny=21, bbox=[0.0, 1.0, 0.0, 1.0])
    mask = evaluation_mask(grid, get_geometry("circle", None))
    X, Y = grid_points(grid)
    r = np.hypot(X - 0.5, Y - 0.5)
    assert mask.band == pytest.approx(0.025)
    assert (mask.inside == (r <= 0.5 + 1e-12)).all()
    assert (mask.scored == (r <= 0.5 - 0.025)).all()
    assert not mask.inside[0, 0] and mask.scored[10, 10]
    assert mask.inside.sum() > mask.scored.sum()  # e.g. (0.5, 0.0) is inside but not scored
    assert mask.inside[0, 10] and not mask.scored[0, 10]


def test_mask_outside_false_keeps_all_points() -> None:
    grid = EvalGrid(nx=21, ny=21, bbox=[0.0, 1.0, 0.0, 1.0], mask_outside=False)
    mask = evaluation_mask(grid, get_geometry("circle", None))
    assert mask.inside.all()
    assert mask.scored[0, 0]  # outside the disk but more than a band from its boundary


def test_mask_unit_cube() -> None:
    grid = EvalGrid(nx=5, ny=6, nz=7, bbox=[0.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    mask = evaluation_mask(grid, get_geometry("unit_cube", None))
    assert mask.inside.shape == (7, 6, 5) and mask.inside.all()
    assert mask.band == pytest.approx(0.5 * 0.25)
    assert mask.scored.sum() == 3 * 4 * 5
    assert not mask.scored[0].any() and not mask.scored[:, :, -1].any()


def test_mask_errors() -> None:
    square = get_geometry("unit_square", None)
    with pytest.raises(ValueError, match="3-D"):
        evaluation_mask(EvalGrid(nx=3, ny=3, nz=3, bbox=[0, 1, 0, 1, 0, 1]), square)
    with pytest.raises(ValueError, match="nx must be >= 2"):
        evaluation_mask(EvalGrid(nx=1, ny=3, bbox=[0, 1, 0, 1]), square)
    with pytest.raises(ValueError, match="no grid point"):
        evaluation_mask(EvalGrid(nx=2, ny=2, bbox=[0, 1, 0, 1]), square)
    with pytest.raises(ValueError, match="no grid point"):
        evaluation_mask(EvalGrid(nx=5, ny=5, bbox=[2, 3, 2, 3]), square)
