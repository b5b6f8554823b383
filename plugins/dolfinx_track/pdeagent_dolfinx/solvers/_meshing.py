"""Meshing of the 14 pdeagent domain templates for DOLFINx 0.11 (runtime code).

Runs inside the DOLFINx runtime environment and is inlined into single-file
solver programs: standard library, numpy, mpi4py, ufl, dolfinx and gmsh only;
public names ``MeshDomain`` and ``build_domain``, private helpers ``_mesh_*``.

The shapes, defaults and boundary tags are the core's library-neutral runtime
geometry (``_geometry``, shared with the other Python tracks; it mirrors
``core/pdeagent/geometry/templates/``).  unit_square /
periodic_square / unit_cube use DOLFINx's built-in structured meshes; every other
template is meshed with the gmsh OpenCASCADE kernel (degree 2 = second-order,
curved elements).  Every exterior facet is tagged with the id of its boundary tag: the
tag of the template's boundary piece (straight segment or circular arc) nearest
to the facet midpoint, exactly as the core classifies boundary points.
"""

import numpy as np
from mpi4py import MPI  # mpi4py before dolfinx

# isort: split
import dolfinx
import dolfinx.mesh
import ufl

from ._geometry import (
    _mesh_bbox,
    _mesh_classify,
    _mesh_defaults,
    _mesh_occ_build,
    _mesh_params,
    _mesh_polygonal,
    _mesh_tag_names,
)


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
