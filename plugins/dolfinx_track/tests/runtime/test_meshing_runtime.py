"""Runtime tests of ``solvers/_meshing.py``; run with the DOLFINx venv's python:

    $PDEAGENT_DOLFINX_PYTHON -m pytest plugins/dolfinx_track/tests/test_meshing_runtime.py -q

Skipped automatically when dolfinx is not importable (e.g. under the harness python).
"""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

MPI = pytest.importorskip("mpi4py.MPI")  # must precede the dolfinx import
dolfinx = pytest.importorskip("dolfinx")
pytest.importorskip("dolfinx.fem.petsc")
pytest.importorskip("gmsh")

import ufl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pdeagent_dolfinx"))
from solvers import _meshing  # noqa: E402

RES = 16


# --------------------------------------------------------------------------- analytic values


def _polygon_area_perimeter(vertices):
    v = np.asarray(vertices, dtype=float)
    x, y = v[:, 0], v[:, 1]
    area = 0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    perim = float(np.hypot(np.roll(x, -1) - x, np.roll(y, -1) - y).sum())
    return area, perim


def _gear_vertices(cx=0.5, cy=0.5, r_root=0.3, r_tip=0.4, n=12, fr=0.5, ft=0.3):
    pitch = 2 * math.pi / n
    out = []
    for k in range(n):
        t = k * pitch
        for r, a in (
            (r_root, t - fr * pitch / 2),
            (r_tip, t - ft * pitch / 2),
            (r_tip, t + ft * pitch / 2),
            (r_root, t + fr * pitch / 2),
        ):
            out.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    return out


def _star_values(r0=0.35, a=0.25, n=5):
    theta = np.linspace(0, 2 * math.pi, 200001)
    r = r0 * (1 + a * np.cos(n * theta))
    dr = -r0 * a * n * np.sin(n * theta)
    length = np.trapezoid(np.sqrt(r * r + dr * dr), theta)
    return math.pi * r0 * r0 * (1 + a * a / 2), {"boundary": float(length)}


def _dumbbell_values(xl=0.25, xr=0.75, r=0.2, w=0.1):
    h = w / 2
    s = math.sqrt(r * r - h * h)
    alpha = math.asin(h / r)
    area = 2 * math.pi * r * r + 2 * h * (xr - xl) - 2 * (h * s + r * r * alpha)
    length = 2 * r * (2 * math.pi - 2 * alpha) + 2 * (xr - xl - 2 * s)
    return area, {"boundary": length}


def _expected(name):
    """(area or volume, {tag: boundary length/area}) for the default parameters."""
    two_pi = 2 * math.pi
    if name in ("unit_square", "periodic_square"):
        return 1.0, dict.fromkeys(("xmin", "xmax", "ymin", "ymax"), 1.0)
    if name == "unit_cube":
        return 1.0, dict.fromkeys(("xmin", "xmax", "ymin", "ymax", "zmin", "zmax"), 1.0)
    if name == "l_shape":
        return 0.75, {"outer": 3.0, "reentrant": 1.0}
    if name == "square_with_hole":
        return 1 - math.pi * 0.04, {"outer": 4.0, "hole": two_pi * 0.2}
    if name == "multi_hole":
        radii = (0.12, 0.12, 0.15)
        return (
            1 - sum(math.pi * r * r for r in radii),
            {"outer": 4.0, "holes": sum(two_pi * r for r in radii)},
        )
    if name == "circle":
        return math.pi * 0.25, {"boundary": two_pi * 0.5}
    if name == "annulus":
        return math.pi * (1 - 0.25), {"inner": two_pi * 0.5, "outer": two_pi}
    if name == "eccentric_annulus":
        return math.pi * (1 - 0.16), {"inner": two_pi * 0.4, "outer": two_pi}
    if name == "sector":
        return 0.75 * math.pi, {"arc": 1.5 * math.pi, "sides": 2.0}
    if name == "star":
        return _star_values()
    if name == "gear":
        area, perim = _polygon_area_perimeter(_gear_vertices())
        return area, {"boundary": perim}
    if name == "t_junction":
        return 0.2 * 0.6 + 1.0 * 0.2, {
            "inlet": 0.2,
            "outlet_left": 0.2,
            "outlet_right": 0.2,
            "walls": 3.0,
        }
    if name == "dumbbell":
        return _dumbbell_values()
    raise KeyError(name)


TEMPLATES = sorted(_meshing._mesh_defaults)
CURVED = (
    "square_with_hole",
    "multi_hole",
    "circle",
    "annulus",
    "eccentric_annulus",
    "sector",
    "star",
    "dumbbell",
)


def _integrate(msh, form):
    return msh.comm.allreduce(dolfinx.fem.assemble_scalar(dolfinx.fem.form(form)), op=MPI.SUM)


def _num_cells(msh):
    return msh.topology.index_map(msh.topology.dim).size_global


_CACHE = {}


def _domain(name, degree=1, res=RES, params=None):
    key = (name, degree, res, repr(params))
    if key not in _CACHE:
        spec = {"type": name, "geometry_params": params or {}}
        _CACHE[key] = _meshing.build_domain(spec, res, degree=degree)
    return _CACHE[key]


# --------------------------------------------------------------------------- tests


def test_template_table_matches_core_names():
    assert len(TEMPLATES) == 14
    for name in TEMPLATES:
        assert set(_meshing._mesh_tag_names[name]) == set(_expected(name)[1])


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize("name", TEMPLATES)
def test_area_and_boundary_lengths(name, degree):
    d = _domain(name, degree)
    area, lengths = _expected(name)
    msh = d.msh
    assert d.name == name and d.dim == msh.topology.dim == msh.geometry.dim
    assert set(d.tag_ids) == set(lengths) and "all" not in d.tag_ids
    assert sorted(d.tag_ids.values()) == list(range(1, len(lengths) + 1))
    measured = _integrate(msh, 1.0 * ufl.dx(domain=msh))
    curved = degree == 2 and name in CURVED
    tol = 1e-4 if curved else 0.02  # area
    assert abs(measured - area) <= tol * area, (measured, area)
    tol = 1e-3 if curved else 0.02  # lengths (star valleys: 3e-4 at resolution 16)
    for tag, expected in lengths.items():
        got = _integrate(msh, 1.0 * d.ds([tag]))
        assert abs(got - expected) <= tol * expected, (tag, got, expected)
    total = _integrate(msh, 1.0 * d.ds(["all"]))
    assert abs(total - sum(lengths.values())) <= tol * sum(lengths.values())
    # a measure over several tags is the sum of its parts
    if len(lengths) > 1:
        tags = list(lengths)[:2]
        got = _integrate(msh, 1.0 * d.ds(tags))
        assert abs(got - sum(lengths[t] for t in tags)) <= tol * sum(lengths[t] for t in tags)


@pytest.mark.parametrize("name", TEMPLATES)
def test_all_exterior_facets_tagged_once(name):
    d = _domain(name)
    msh = d.msh
    fdim = msh.topology.dim - 1
    msh.topology.create_connectivity(fdim, msh.topology.dim)
    exterior = np.sort(dolfinx.mesh.exterior_facet_indices(msh.topology))
    assert d.facet_tags.dim == fdim
    assert np.array_equal(np.sort(d.facet_tags.indices), exterior)
    assert len(np.unique(d.facet_tags.indices)) == len(d.facet_tags.indices)
    assert set(np.unique(d.facet_tags.values)) <= set(d.tag_ids.values())
    assert np.array_equal(d.facets(["all"]), exterior)
    parts = [d.facets([tag]) for tag in d.tag_ids]
    assert sum(len(p) for p in parts) == len(exterior)
    assert np.array_equal(np.sort(np.concatenate(parts)), exterior)
    for p in parts:
        assert np.array_equal(p, np.unique(p))


@pytest.mark.parametrize("degree", [1, 2])
@pytest.mark.parametrize("name", TEMPLATES)
def test_vertices_inside_bbox(name, degree):
    d = _domain(name, degree)
    x = d.msh.geometry.x[:, : d.dim]
    bbox = np.asarray(d.bbox, dtype=float)
    assert bbox.shape == (d.dim, 2)
    assert np.all(x >= bbox[:, 0] - 1e-12) and np.all(x <= bbox[:, 1] + 1e-12)
    if name == "star":  # the core's star bbox is r0 (1 + amplitude) in every direction
        return
    # the bounding box is attained (up to the mesh size)
    h = (bbox[:, 1] - bbox[:, 0]).max() / RES
    comm = d.msh.comm
    lo = np.min(comm.allgather(x.min(axis=0) if len(x) else np.full(d.dim, np.inf)), axis=0)
    hi = np.max(comm.allgather(x.max(axis=0) if len(x) else np.full(d.dim, -np.inf)), axis=0)
    assert np.all(lo <= bbox[:, 0] + h) and np.all(hi >= bbox[:, 1] - h)


@pytest.mark.parametrize("name", ["circle", "l_shape", "star", "unit_square"])
def test_finer_resolution_gives_more_cells(name):
    assert _num_cells(_domain(name, res=8).msh) < _num_cells(_domain(name).msh)


def test_mesh_size_follows_resolution():
    d = _domain("annulus")  # longest side 2 -> h = 1/8 at resolution 16
    owned = d.msh.topology.index_map(d.msh.topology.dim - 1).size_local
    facets = d.facets(["outer"])
    n_outer = d.msh.comm.allreduce(int(np.count_nonzero(facets < owned)), op=MPI.SUM)
    assert abs(n_outer - 2 * math.pi / (2.0 / RES)) <= 0.25 * n_outer


def test_degree2_geometry_is_curved_and_polygons_stay_straight():
    assert _domain("circle", 2).msh.geometry.cmaps[0].degree == 2
    assert _domain("circle", 1).msh.geometry.cmaps[0].degree == 1
    assert _domain("gear", 2).msh.geometry.cmaps[0].degree == 1
    assert _domain("unit_square", 2).msh.geometry.cmaps[0].degree == 1
    # circle area with curved cells: error far below the straight-sided one
    exact = math.pi * 0.25
    m2, m1 = _domain("circle", 2).msh, _domain("circle", 1).msh
    err2 = abs(_integrate(m2, 1.0 * ufl.dx(domain=m2)) - exact) / exact
    err1 = abs(_integrate(m1, 1.0 * ufl.dx(domain=m1)) - exact) / exact
    assert err2 < 1e-4 and err2 < 1e-2 * err1


def test_params_merge_over_defaults():
    d = _domain("annulus", params={"r_inner": 0.25})
    assert d.params == {"center": [0.0, 0.0], "r_inner": 0.25, "r_outer": 1.0}
    inner = _integrate(d.msh, 1.0 * d.ds(["inner"]))
    assert abs(inner - 2 * math.pi * 0.25) < 0.02 * 2 * math.pi * 0.25
    d = _domain("l_shape", params={"corner": [0.3, 0.6]})
    reentrant = _integrate(d.msh, 1.0 * d.ds(["reentrant"]))
    assert abs(reentrant - (0.7 + 0.4)) < 1e-10
    d = _domain("sector", params={"angle_start": 0.5, "angle_end": 2.0, "center": [1.0, 2.0]})
    assert abs(_integrate(d.msh, 1.0 * d.ds(["arc"])) - 1.5) < 0.02 * 1.5
    assert abs(_integrate(d.msh, 1.0 * d.ds(["sides"])) - 2.0) < 1e-10


def test_errors():
    with pytest.raises(ValueError, match="known"):
        _meshing.build_domain({"type": "hexagon"}, 8)
    d = _domain("circle")
    with pytest.raises(ValueError, match="boundary"):
        d.facets(["inlet"])


def test_poisson_smoke_on_circle():
    d = _meshing.build_domain({"type": "circle"}, 32, degree=2)
    msh = d.msh
    V = dolfinx.fem.functionspace(msh, ("Lagrange", 1))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    dofs = dolfinx.fem.locate_dofs_topological(V, msh.topology.dim - 1, d.facets(["all"]))
    bc = dolfinx.fem.dirichletbc(0.0, dofs, V)
    from dolfinx.fem.petsc import LinearProblem

    problem = LinearProblem(
        ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx,
        1.0 * v * ufl.dx,
        bcs=[bc],
        petsc_options={"ksp_type": "preonly", "pc_type": "lu"},
        petsc_options_prefix="meshing_smoke_",
    )
    uh = problem.solve()
    umax = msh.comm.allreduce(float(uh.x.array.max()), op=MPI.MAX)
    assert abs(umax - 0.0625) < 0.01 * 0.0625, umax
