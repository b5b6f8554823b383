"""Meshing of the 14 pdeagent domain templates for Firedrake (runtime code).

Runs inside the Firedrake runtime and is inlined into single-file solver programs by
``pdeagent_firedrake.bundle``. unit_square / unit_cube use Firedrake's built-in
meshes, periodic_square a truly periodic mesh (``PeriodicRectangleMesh``: no
boundary on the periodic sides); every other template is meshed with gmsh's
OpenCASCADE kernel (``_geometry``, shared with the other Python tracks), written to
a ``.msh`` file and read by Firedrake. Boundary ids: the boundary tag of name k of
the template's tag list has id k + 1 (as Firedrake's built-in square and cube
number xmin, xmax, ymin, ymax[, zmin, zmax]); each gmsh boundary curve gets the
tag of the boundary piece nearest to its midpoint, as the core classifies boundary
points. On templates with curved outlines the mesh gets second-order coordinates
whose boundary edge midpoints are moved onto the exact outline (degree 2, the
default), so curved boundaries do not cost the elements their order.
"""

import os
import tempfile

import firedrake as fd
import numpy as np

from ._geometry import (
    _mesh_bbox,
    _mesh_classify,
    _mesh_defaults,
    _mesh_occ_build,
    _mesh_params,
    _mesh_polygonal,
    _mesh_project,
    _mesh_tag_names,
)


class MeshDomain:
    """A meshed template: the Firedrake mesh and the ids of its boundary tags.

    ``"all"`` is not a tag but is accepted by :meth:`ids` and :meth:`ds`.
    """

    def __init__(self, msh, tag_ids, name, params, dim, bbox, periodic_axes=()):
        self.msh = msh
        self.tag_ids = tag_ids
        self.name = name
        self.params = params
        self.dim = dim
        self.bbox = bbox
        self.periodic_axes = tuple(periodic_axes)

    def ids(self, tags):
        """Boundary ids of the given tags, or ``"on_boundary"`` for ``"all"``."""
        if isinstance(tags, str):
            tags = [tags]
        if "all" in tags:
            return "on_boundary"
        ids = []
        for tag in tags:
            if tag not in self.tag_ids:
                raise ValueError(
                    f"unknown boundary tag {tag!r} for {self.name}; known: "
                    f"{[*sorted(self.tag_ids), 'all']}"
                )
            ids.append(self.tag_ids[tag])
        return tuple(sorted(set(ids)))

    def ds(self, tags):
        """Exterior-facet measure restricted to the given tags (``"all"``: all of them)."""
        ids = self.ids(tags)
        if ids == "on_boundary":
            return fd.ds(domain=self.msh)
        return fd.ds(ids, domain=self.msh)

    def __repr__(self):
        return f"MeshDomain({self.name!r}, cells={self.msh.num_cells()}, tags={self.tag_ids})"


def _mesh_curve_midpoint(gmsh, tag):
    lo, hi = gmsh.model.getParametrizationBounds(1, tag)
    return gmsh.model.getValue(1, tag, [0.5 * (lo[0] + hi[0])])[:2]


def _mesh_gmsh_file(name, p, resolution, h, path):
    """Mesh template ``name`` with gmsh and write it to ``path`` with one physical
    curve group per boundary tag (id = position in the tag list + 1)."""
    import gmsh

    owner = not gmsh.isInitialized()
    if owner:
        gmsh.initialize(interruptible=False)
    previous = None if owner else gmsh.model.getCurrent()
    model_name = f"pdeagent_{name}"
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add(model_name)
        gmsh.model.setCurrent(model_name)
        _mesh_occ_build(name, p, resolution)
        surfaces = [tag for dim, tag in gmsh.model.getEntities(2)]
        gmsh.model.addPhysicalGroup(2, surfaces, 1)
        curves = [tag for dim, tag in gmsh.model.getEntities(1)]
        mids = np.array([_mesh_curve_midpoint(gmsh, c) for c in curves])
        labels = _mesh_classify(name, p, mids)
        for k, tag_name in enumerate(_mesh_tag_names[name]):
            members = [c for c, lbl in zip(curves, labels, strict=True) if lbl == tag_name]
            if members:
                gmsh.model.addPhysicalGroup(1, members, k + 1)
        gmsh.option.setNumber("Mesh.MeshSizeMax", h)
        gmsh.option.setNumber("Mesh.MeshSizeMin", 0.0)
        gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
        gmsh.option.setNumber("Mesh.ElementOrder", 1)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.model.mesh.generate(2)
        gmsh.write(path)
    finally:
        try:
            gmsh.model.remove()
            if previous is not None:
                gmsh.model.setCurrent(previous)
        except Exception:  # cleanup only
            pass
        if owner:
            gmsh.finalize()


def _mesh_periodic_axes(periodic_spec):
    axes = set()
    for entry in periodic_spec or []:
        pair = {entry.get("boundary"), entry.get("partner")}
        axis = entry.get("axis")
        expected = {"x": {"xmin", "xmax"}, "y": {"ymin", "ymax"}}.get(axis)
        if expected is None or pair != expected:
            raise ValueError(
                f"unsupported periodic condition {entry!r}: periodic_square pairs xmin/xmax "
                "(axis x) and ymin/ymax (axis y)"
            )
        axes.add(axis)
    return axes


def _mesh_curved(msh, name, params):
    """The mesh with second-order coordinates whose boundary nodes lie on the exact
    outline (edge midpoints moved onto the nearest boundary piece)."""
    V2 = fd.VectorFunctionSpace(msh, "CG", 2)
    coords = fd.Function(V2).interpolate(msh.coordinates)
    nodes = fd.DirichletBC(V2, 0.0, "on_boundary").nodes
    data = coords.dat.data
    data[nodes] = _mesh_project(name, params, data[nodes])
    return fd.Mesh(coords)


def build_domain(domain_spec, resolution, *, periodic=None, degree=2):
    """Mesh the case's ``domain`` (``{"type", "bounds", "geometry_params"}``).

    ``resolution`` is the number of cells across the longest side of the bounding
    box (mesh size h = longest side / resolution); ``degree`` is the geometry degree
    (2: curved second-order cells on templates with curved outlines; straight-sided
    templates always use 1). ``periodic`` is the case's
    ``bc["periodic"]`` list: on periodic_square it selects the periodic directions
    (none: an ordinary unit square); elsewhere it must be empty.
    """
    name = domain_spec.get("type")
    if name not in _mesh_defaults:
        raise ValueError(f"unknown domain template {name!r}; known: {sorted(_mesh_defaults)}")
    resolution = int(resolution)
    if resolution < 1:
        raise ValueError(f"resolution must be a positive integer, got {resolution}")
    params = _mesh_params(name, domain_spec.get("geometry_params"))
    bbox = _mesh_bbox(name, params)
    dim = len(bbox)
    tag_ids = {tag: k + 1 for k, tag in enumerate(_mesh_tag_names[name])}
    axes = set()
    if periodic:
        if name != "periodic_square":
            raise ValueError(f"periodic conditions are only defined on periodic_square, not {name}")
        axes = _mesh_periodic_axes(periodic)
    if name in ("unit_square", "periodic_square"):
        if axes:
            direction = "both" if axes == {"x", "y"} else next(iter(axes))
            msh = fd.PeriodicRectangleMesh(resolution, resolution, 1.0, 1.0, direction=direction)
            for axis in axes:  # the periodic sides are no boundary any more
                for side in ("min", "max"):
                    tag_ids.pop(f"{axis}{side}")
        else:
            msh = fd.UnitSquareMesh(resolution, resolution)
    elif name == "unit_cube":
        msh = fd.UnitCubeMesh(resolution, resolution, resolution)
    else:
        h = max(hi - lo for lo, hi in bbox) / resolution
        with tempfile.TemporaryDirectory(prefix="pdeagent-mesh-") as tmp:
            path = os.path.join(tmp, f"{name}.msh")
            _mesh_gmsh_file(name, params, resolution, h, path)
            msh = fd.Mesh(path)
            msh.coordinates  # noqa: B018  (builds the mesh before the file is removed)
        if int(degree) == 2 and name not in _mesh_polygonal:
            msh = _mesh_curved(msh, name, params)
        elif int(degree) not in (1, 2):
            raise ValueError(f"geometry degree must be 1 or 2, got {degree}")
    return MeshDomain(msh, tag_ids, name, params, dim, bbox, periodic_axes=sorted(axes))
