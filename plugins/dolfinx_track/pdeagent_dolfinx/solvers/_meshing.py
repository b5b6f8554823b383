"""Meshing of the 14 pdeagent domain templates for DOLFINx 0.11 (runtime code).

Runs inside the DOLFINx runtime environment and is inlined into single-file
solver programs: standard library, numpy, mpi4py, ufl, dolfinx and gmsh only;
public names ``MeshDomain`` and ``build_domain``, private helpers ``_mesh_*``.

The shapes, defaults and boundary tags replicate the core's geometry templates
(``core/pdeagent/geometry/templates/``).  unit_square / periodic_square /
unit_cube use DOLFINx's built-in structured meshes; every other template is
meshed with the gmsh OpenCASCADE kernel (degree 2 = second-order, curved
elements).  Every exterior facet is tagged with the id of its boundary tag: the
tag of the template's boundary piece (straight segment or circular arc) nearest
to the facet midpoint, exactly as the core classifies boundary points.
"""

import math

import numpy as np
from mpi4py import MPI  # mpi4py before dolfinx

# isort: split
import dolfinx
import dolfinx.mesh
import ufl

_mesh_defaults = {
    "unit_square": {},
    "periodic_square": {},
    "unit_cube": {},
    "l_shape": {"corner": [0.5, 0.5]},
    "square_with_hole": {"center": [0.5, 0.5], "radius": 0.2},
    "multi_hole": {"holes": [[0.3, 0.3, 0.12], [0.7, 0.3, 0.12], [0.5, 0.7, 0.15]]},
    "circle": {"center": [0.5, 0.5], "radius": 0.5},
    "annulus": {"center": [0.0, 0.0], "r_inner": 0.5, "r_outer": 1.0},
    "eccentric_annulus": {
        "center_outer": [0.0, 0.0],
        "r_outer": 1.0,
        "center_inner": [0.2, 0.0],
        "r_inner": 0.4,
    },
    "sector": {"center": [0.0, 0.0], "radius": 1.0, "angle_start": 0.0, "angle_end": 1.5 * math.pi},
    "star": {"center": [0.5, 0.5], "r0": 0.35, "amplitude": 0.25, "n_points": 5},
    "gear": {
        "center": [0.5, 0.5],
        "r_root": 0.3,
        "r_tip": 0.4,
        "n_teeth": 12,
        "root_fraction": 0.5,
        "tip_fraction": 0.3,
    },
    "t_junction": {"bar_length": 1.0, "bar_height": 0.2, "stem_width": 0.2, "stem_length": 0.6},
    "dumbbell": {
        "center_left": [0.25, 0.5],
        "center_right": [0.75, 0.5],
        "radius": 0.2,
        "bar_width": 0.1,
    },
}

_mesh_tag_names = {
    "unit_square": ("xmin", "xmax", "ymin", "ymax"),
    "periodic_square": ("xmin", "xmax", "ymin", "ymax"),
    "unit_cube": ("xmin", "xmax", "ymin", "ymax", "zmin", "zmax"),
    "l_shape": ("outer", "reentrant"),
    "square_with_hole": ("outer", "hole"),
    "multi_hole": ("outer", "holes"),
    "circle": ("boundary",),
    "annulus": ("inner", "outer"),
    "eccentric_annulus": ("inner", "outer"),
    "sector": ("arc", "sides"),
    "star": ("boundary",),
    "gear": ("boundary",),
    "t_junction": ("inlet", "outlet_left", "outlet_right", "walls"),
    "dumbbell": ("boundary",),
}


_mesh_polygonal = ("unit_square", "periodic_square", "unit_cube", "l_shape", "t_junction", "gear")


class MeshDomain:
    """A meshed template: mesh, exterior facet tags and the boundary-tag names.

    ``facet_tags`` covers every exterior facet; its value is ``tag_ids[name]`` of
    the facet's boundary tag (``"all"`` is not a tag but is accepted by
    :meth:`facets` and :meth:`ds`).
    """

    def __init__(self, msh, facet_tags, tag_ids, name, params, dim, bbox):
        self.msh = msh
        self.facet_tags = facet_tags
        self.tag_ids = tag_ids
        self.name = name
        self.params = params
        self.dim = dim
        self.bbox = bbox
        self._ds = ufl.Measure("ds", domain=msh, subdomain_data=facet_tags)

    def _ids(self, tags):
        if isinstance(tags, str):
            tags = [tags]
        ids = []
        for tag in tags:
            if tag not in self.tag_ids:
                raise ValueError(
                    f"unknown boundary tag {tag!r} for {self.name}; known: "
                    f"{[*sorted(self.tag_ids), 'all']}"
                )
            ids.append(self.tag_ids[tag])
        return sorted(set(ids))

    def facets(self, tags):
        """Sorted unique (process-local) facet indices of the given boundary tags."""
        if isinstance(tags, str):
            tags = [tags]
        if "all" in tags:
            return np.unique(self.facet_tags.indices).astype(np.int32)
        ids = self._ids(tags)
        keep = np.isin(self.facet_tags.values, ids)
        return np.unique(self.facet_tags.indices[keep]).astype(np.int32)

    def ds(self, tags):
        """Exterior-facet measure restricted to the given tags (``"all"``: all of them)."""
        if isinstance(tags, str):
            tags = [tags]
        if "all" in tags:
            return self._ds
        ids = self._ids(tags)
        return self._ds(ids[0]) if len(ids) == 1 else self._ds(tuple(ids))

    def __repr__(self):
        return (
            f"MeshDomain({self.name!r}, cells={self.msh.topology.index_map(self.dim).size_global},"
            f" tags={self.tag_ids})"
        )


# --------------------------------------------------------------------------- geometry data


def _mesh_pt(value):
    return (float(value[0]), float(value[1]))


def _mesh_params(name, spec_params):
    params = {
        k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in _mesh_defaults[name].items()
    }
    for key, value in (spec_params or {}).items():
        params[key] = value
    return params


def _mesh_gear_vertices(p):
    cx, cy = _mesh_pt(p["center"])
    r_root, r_tip = float(p["r_root"]), float(p["r_tip"])
    n = int(p["n_teeth"])
    fr, ft = float(p["root_fraction"]), float(p["tip_fraction"])
    pitch = 2.0 * math.pi / n
    out = []
    for k in range(n):
        t = k * pitch
        for r, a in (
            (r_root, t - 0.5 * fr * pitch),
            (r_tip, t - 0.5 * ft * pitch),
            (r_tip, t + 0.5 * ft * pitch),
            (r_root, t + 0.5 * fr * pitch),
        ):
            out.append(((cx + r * math.cos(a), cy + r * math.sin(a)), "boundary"))
    return out


def _mesh_tagged_vertices(name, p):
    """Polygon templates: vertices with the tag of the edge leaving each vertex."""
    if name == "l_shape":
        cx, cy = _mesh_pt(p["corner"])
        return [
            ((0.0, 0.0), "outer"),
            ((1.0, 0.0), "outer"),
            ((1.0, cy), "reentrant"),
            ((cx, cy), "reentrant"),
            ((cx, 1.0), "outer"),
            ((0.0, 1.0), "outer"),
        ]
    if name == "t_junction":
        length, hb = float(p["bar_length"]), float(p["bar_height"])
        w, hs = float(p["stem_width"]), float(p["stem_length"])
        xs0, xs1 = 0.5 * length - 0.5 * w, 0.5 * length + 0.5 * w
        return [
            ((xs0, 0.0), "inlet"),
            ((xs1, 0.0), "walls"),
            ((xs1, hs), "walls"),
            ((length, hs), "outlet_right"),
            ((length, hs + hb), "walls"),
            ((0.0, hs + hb), "outlet_left"),
            ((0.0, hs), "walls"),
            ((xs0, hs), "walls"),
        ]
    if name == "gear":
        return _mesh_gear_vertices(p)
    raise ValueError(name)


def _mesh_sector_geom(p):
    cx, cy = _mesh_pt(p["center"])
    r = float(p["radius"])
    a0 = float(p["angle_start"])
    span = float(p["angle_end"]) - a0
    return cx, cy, r, a0, span


def _mesh_dumbbell_geom(p):
    xl, yc = _mesh_pt(p["center_left"])
    xr, _ = _mesh_pt(p["center_right"])
    r = float(p["radius"])
    h = 0.5 * float(p["bar_width"])
    return xl, xr, yc, r, h


def _mesh_rect_pieces(tags):
    return [
        (tags[0], "seg", ((0.0, 0.0), (0.0, 1.0))),
        (tags[1], "seg", ((1.0, 0.0), (1.0, 1.0))),
        (tags[2], "seg", ((0.0, 0.0), (1.0, 0.0))),
        (tags[3], "seg", ((0.0, 1.0), (1.0, 1.0))),
    ]


def _mesh_pieces(name, p):
    """The exact boundary as tagged pieces: ("seg", (a, b)) or ("arc", (c, R, theta0, span))."""
    full = 2.0 * math.pi
    if name in ("unit_square", "periodic_square"):
        return _mesh_rect_pieces(_mesh_tag_names[name])
    if name in ("l_shape", "t_junction", "gear"):
        tv = _mesh_tagged_vertices(name, p)
        return [(tag, "seg", (tv[k][0], tv[(k + 1) % len(tv)][0])) for k, (_, tag) in enumerate(tv)]
    if name == "square_with_hole":
        return [
            *_mesh_rect_pieces(("outer",) * 4),
            ("hole", "arc", (_mesh_pt(p["center"]), float(p["radius"]), 0.0, full)),
        ]
    if name == "multi_hole":
        return [
            *_mesh_rect_pieces(("outer",) * 4),
            *(
                ("holes", "arc", ((float(h[0]), float(h[1])), float(h[2]), 0.0, full))
                for h in p["holes"]
            ),
        ]
    if name == "circle":
        return [("boundary", "arc", (_mesh_pt(p["center"]), float(p["radius"]), 0.0, full))]
    if name == "annulus":
        c = _mesh_pt(p["center"])
        return [
            ("inner", "arc", (c, float(p["r_inner"]), 0.0, full)),
            ("outer", "arc", (c, float(p["r_outer"]), 0.0, full)),
        ]
    if name == "eccentric_annulus":
        return [
            ("inner", "arc", (_mesh_pt(p["center_inner"]), float(p["r_inner"]), 0.0, full)),
            ("outer", "arc", (_mesh_pt(p["center_outer"]), float(p["r_outer"]), 0.0, full)),
        ]
    if name == "sector":
        cx, cy, r, a0, span = _mesh_sector_geom(p)
        e0 = (cx + r * math.cos(a0), cy + r * math.sin(a0))
        e1 = (cx + r * math.cos(a0 + span), cy + r * math.sin(a0 + span))
        return [
            ("arc", "arc", ((cx, cy), r, a0, span)),
            ("sides", "seg", ((cx, cy), e0)),
            ("sides", "seg", ((cx, cy), e1)),
        ]
    if name == "dumbbell":
        xl, xr, yc, r, h = _mesh_dumbbell_geom(p)
        alpha = math.asin(h / r)
        s = math.sqrt(r * r - h * h)
        span = full - 2 * alpha
        return [
            ("boundary", "arc", ((xl, yc), r, alpha, span)),
            ("boundary", "arc", ((xr, yc), r, math.pi + alpha, span)),
            ("boundary", "seg", ((xl + s, yc + h), (xr - s, yc + h))),
            ("boundary", "seg", ((xl + s, yc - h), (xr - s, yc - h))),
        ]
    return None  # star (single tag), unit_cube (handled separately)


def _mesh_bbox(name, p):
    if name in ("unit_square", "periodic_square", "square_with_hole", "multi_hole", "l_shape"):
        return [[0.0, 1.0], [0.0, 1.0]]
    if name == "unit_cube":
        return [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]
    if name in ("t_junction", "gear"):
        v = np.array([xy for xy, _ in _mesh_tagged_vertices(name, p)])
        return [
            [float(v[:, 0].min()), float(v[:, 0].max())],
            [float(v[:, 1].min()), float(v[:, 1].max())],
        ]
    if name in ("circle", "annulus", "eccentric_annulus", "star"):
        key = {
            "circle": "center",
            "annulus": "center",
            "eccentric_annulus": "center_outer",
            "star": "center",
        }[name]
        cx, cy = _mesh_pt(p[key])
        if name == "star":
            r = float(p["r0"]) * (1 + float(p["amplitude"]))
        else:
            r = float(p["radius"] if name == "circle" else p["r_outer"])
        return [[cx - r, cx + r], [cy - r, cy + r]]
    if name == "sector":
        cx, cy, r, a0, span = _mesh_sector_geom(p)
        xs = [cx, cx + r * math.cos(a0), cx + r * math.cos(a0 + span)]
        ys = [cy, cy + r * math.sin(a0), cy + r * math.sin(a0 + span)]
        for k in range(4):
            phi = k * math.pi / 2
            if (phi - a0) % (2 * math.pi) <= span:
                xs.append(cx + r * math.cos(phi))
                ys.append(cy + r * math.sin(phi))
        return [[min(xs), max(xs)], [min(ys), max(ys)]]
    if name == "dumbbell":
        xl, xr, yc, r, _ = _mesh_dumbbell_geom(p)
        return [[xl - r, xr + r], [yc - r, yc + r]]
    raise ValueError(name)


# --------------------------------------------------------------------------- classification


def _mesh_seg_distance(x, y, a, b):
    ax, ay = a
    dx, dy = b[0] - ax, b[1] - ay
    length2 = dx * dx + dy * dy
    if length2 == 0.0:
        return np.hypot(x - ax, y - ay)
    t = np.clip(((x - ax) * dx + (y - ay) * dy) / length2, 0.0, 1.0)
    return np.hypot(x - (ax + t * dx), y - (ay + t * dy))


def _mesh_arc_distance(x, y, c, radius, theta0, span):
    rx, ry = x - c[0], y - c[1]
    radial = np.abs(np.hypot(rx, ry) - radius)
    if span >= 2.0 * math.pi:
        return radial
    phi = np.mod(np.arctan2(ry, rx) - theta0, 2.0 * math.pi)
    e0 = (c[0] + radius * math.cos(theta0), c[1] + radius * math.sin(theta0))
    e1 = (c[0] + radius * math.cos(theta0 + span), c[1] + radius * math.sin(theta0 + span))
    ends = np.minimum(np.hypot(x - e0[0], y - e0[1]), np.hypot(x - e1[0], y - e1[1]))
    return np.where(phi <= span, radial, ends)


def _mesh_classify(name, p, points):
    """Boundary-tag name of each point (rows x, y[, z]): the nearest boundary piece."""
    tags = _mesh_tag_names[name]
    n = points.shape[0]
    if len(tags) == 1:
        return np.full(n, tags[0], dtype=object)
    x, y = points[:, 0], points[:, 1]
    if name == "unit_cube":
        z = points[:, 2]
        d = np.stack([np.abs(x), np.abs(1 - x), np.abs(y), np.abs(1 - y), np.abs(z), np.abs(1 - z)])
        return np.array(tags, dtype=object)[d.argmin(axis=0)]
    if n == 0:
        return np.zeros(0, dtype=object)
    pieces = _mesh_pieces(name, p)
    dist = np.stack(
        [
            _mesh_seg_distance(x, y, *data) if kind == "seg" else _mesh_arc_distance(x, y, *data)
            for _, kind, data in pieces
        ]
    )
    names = np.array([tag for tag, _, _ in pieces], dtype=object)
    return names[dist.argmin(axis=0)]


# --------------------------------------------------------------------------- gmsh


def _mesh_occ_polygon(occ, vertices):
    pts = [occ.addPoint(x, y, 0.0) for x, y in vertices]
    lines = [occ.addLine(pts[k], pts[(k + 1) % len(pts)]) for k in range(len(pts))]
    return occ.addPlaneSurface([occ.addCurveLoop(lines)])


def _mesh_occ_sector(occ, p):
    cx, cy, r, a0, span = _mesh_sector_geom(p)
    c = occ.addPoint(cx, cy, 0.0)
    n_arcs = max(1, math.ceil(span / (0.5 * math.pi) - 1e-9))  # sub-arcs <= pi/2
    angles = [a0 + span * k / n_arcs for k in range(n_arcs + 1)]
    arc_pts = [occ.addPoint(cx + r * math.cos(a), cy + r * math.sin(a), 0.0) for a in angles]
    curves = [occ.addLine(c, arc_pts[0])]
    curves += [occ.addCircleArc(arc_pts[k], c, arc_pts[k + 1]) for k in range(n_arcs)]
    curves.append(occ.addLine(arc_pts[-1], c))
    return occ.addPlaneSurface([occ.addCurveLoop(curves)])


def _mesh_occ_star(occ, p, resolution):
    cx, cy = _mesh_pt(p["center"])
    r0, a, n = float(p["r0"]), float(p["amplitude"]), int(p["n_points"])
    m = max(200, 8 * int(resolution))
    m = n * math.ceil(m / n)  # lobe tips (theta = 2 pi k / n) are interpolation points
    theta = 2.0 * math.pi * np.arange(m) / m
    r = r0 * (1.0 + a * np.cos(n * theta))
    pts = [
        occ.addPoint(cx + ri * math.cos(t), cy + ri * math.sin(t), 0.0)
        for ri, t in zip(r, theta, strict=True)
    ]
    curve = occ.addSpline([*pts, pts[0]])  # first point repeated: closed periodic spline
    return occ.addPlaneSurface([occ.addCurveLoop([curve])])


def _mesh_occ_build(name, p, resolution):
    import gmsh

    occ = gmsh.model.occ
    if name in ("l_shape", "t_junction", "gear"):
        _mesh_occ_polygon(occ, [xy for xy, _ in _mesh_tagged_vertices(name, p)])
    elif name in ("square_with_hole", "multi_hole"):
        square = occ.addRectangle(0.0, 0.0, 0.0, 1.0, 1.0)
        if name == "square_with_hole":
            holes = [(float(p["center"][0]), float(p["center"][1]), float(p["radius"]))]
        else:
            holes = [(float(h[0]), float(h[1]), float(h[2])) for h in p["holes"]]
        disks = [(2, occ.addDisk(hx, hy, 0.0, hr, hr)) for hx, hy, hr in holes]
        occ.cut([(2, square)], disks)
    elif name == "circle":
        cx, cy = _mesh_pt(p["center"])
        r = float(p["radius"])
        occ.addDisk(cx, cy, 0.0, r, r)
    elif name in ("annulus", "eccentric_annulus"):
        if name == "annulus":
            co = ci = _mesh_pt(p["center"])
        else:
            co, ci = _mesh_pt(p["center_outer"]), _mesh_pt(p["center_inner"])
        ro, ri = float(p["r_outer"]), float(p["r_inner"])
        outer = occ.addDisk(co[0], co[1], 0.0, ro, ro)
        inner = occ.addDisk(ci[0], ci[1], 0.0, ri, ri)
        occ.cut([(2, outer)], [(2, inner)])
    elif name == "sector":
        _mesh_occ_sector(occ, p)
    elif name == "star":
        _mesh_occ_star(occ, p, resolution)
    elif name == "dumbbell":
        xl, xr, yc, r, h = _mesh_dumbbell_geom(p)
        left = occ.addDisk(xl, yc, 0.0, r, r)
        right = occ.addDisk(xr, yc, 0.0, r, r)
        bar = occ.addRectangle(xl, yc - h, 0.0, xr - xl, 2.0 * h)
        occ.fuse([(2, left)], [(2, right), (2, bar)])
        occ.removeAllDuplicates()
    else:
        raise ValueError(name)
    occ.synchronize()


def _mesh_gmsh(name, p, resolution, h, degree):
    """Mesh template ``name`` with gmsh (on rank 0) and convert it to a dolfinx mesh."""
    import gmsh
    from dolfinx.io import gmsh as _mesh_gmshio

    comm = MPI.COMM_WORLD
    owner = not gmsh.isInitialized()
    if owner:
        gmsh.initialize(interruptible=False)
    previous = None if owner else gmsh.model.getCurrent()
    model_name = f"pdeagent_{name}"
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add(model_name)
        gmsh.model.setCurrent(model_name)
        if comm.rank == 0:
            _mesh_occ_build(name, p, resolution)
            surfaces = [tag for dim, tag in gmsh.model.getEntities(2)]
            gmsh.model.addPhysicalGroup(2, surfaces, 1)
            gmsh.option.setNumber("Mesh.MeshSizeMax", h)
            gmsh.option.setNumber("Mesh.MeshSizeMin", 0.0)
            gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
            gmsh.option.setNumber("Mesh.ElementOrder", 1)
            gmsh.model.mesh.generate(2)
            if degree >= 2:
                gmsh.option.setNumber("Mesh.SecondOrderLinear", 0)
                gmsh.model.mesh.setOrder(2)
        data = _mesh_gmshio.model_to_mesh(gmsh.model, comm, 0, gdim=2)
    finally:
        try:
            gmsh.model.remove()
            if previous is not None:
                gmsh.model.setCurrent(previous)
        except Exception:  # cleanup only
            pass
        if owner:
            gmsh.finalize()
    return data.mesh


# --------------------------------------------------------------------------- public


def build_domain(domain_spec, resolution, *, degree=1):
    """Mesh the case's ``domain`` (``{"type", "bounds", "geometry_params"}``).

    ``resolution`` is the number of cells across the longest side of the bounding
    box (mesh size h = longest side / resolution); ``degree`` is the geometry
    degree (2: curved second-order cells; templates with a straight-sided outline
    -- unit_square, periodic_square, unit_cube, l_shape, t_junction, gear -- always
    use degree 1).
    """
    name = domain_spec.get("type")
    if name not in _mesh_defaults:
        raise ValueError(f"unknown domain template {name!r}; known: {sorted(_mesh_defaults)}")
    resolution = int(resolution)
    if resolution < 1:
        raise ValueError(f"resolution must be a positive integer, got {resolution}")
    degree = int(degree)
    if degree not in (1, 2):
        raise ValueError(f"geometry degree must be 1 or 2, got {degree}")
    params = _mesh_params(name, domain_spec.get("geometry_params"))
    bbox = _mesh_bbox(name, params)
    dim = len(bbox)
    comm = MPI.COMM_WORLD
    if name in ("unit_square", "periodic_square"):
        msh = dolfinx.mesh.create_unit_square(
            comm, resolution, resolution, dolfinx.mesh.CellType.triangle
        )
    elif name == "unit_cube":
        msh = dolfinx.mesh.create_unit_cube(
            comm, resolution, resolution, resolution, dolfinx.mesh.CellType.tetrahedron
        )
    else:
        h = max(hi - lo for lo, hi in bbox) / resolution
        if name in _mesh_polygonal:
            degree = 1  # straight-sided outline: a curved geometry buys nothing
        msh = _mesh_gmsh(name, params, resolution, h, degree)

    tdim = msh.topology.dim
    fdim = tdim - 1
    msh.topology.create_connectivity(fdim, tdim)
    facets = np.sort(dolfinx.mesh.exterior_facet_indices(msh.topology)).astype(np.int32)
    midpoints = dolfinx.mesh.compute_midpoints(msh, fdim, facets)
    tag_names = _mesh_tag_names[name]
    tag_ids = {tag: k + 1 for k, tag in enumerate(tag_names)}
    labels = _mesh_classify(name, params, midpoints[:, :dim])
    values = np.array([tag_ids.get(lbl, 0) for lbl in labels], dtype=np.int32)
    if np.any(values == 0):
        raise RuntimeError(f"{name}: some exterior facets received no boundary tag")
    facet_tags = dolfinx.mesh.meshtags(msh, fdim, facets, values)
    return MeshDomain(msh, facet_tags, tag_ids, name, params, dim, bbox)
