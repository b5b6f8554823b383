"""Shared runtime code of the Stokes and Navier-Stokes solvers (inlined by the bundler).

Taylor-Hood mixed space, vector data, velocity Dirichlet data in the mixed space's own
numbering, traction/pressure boundary terms, the pressure null space treatment and
output of velocity components, magnitude and zero-mean pressure.
"""

import basix.ufl
import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    GridSampler,
    build_domain,
    output_fields,
    to_ufl,
)
from ._ufl_families import (
    _flow_boundary_data,
    _flow_forcing_value,
    _flow_resolution,
)


def _flow_domain(case_spec, cfg):
    """The meshed domain; 3-D domains use the setting ``resolution_3d``."""
    resolution = _flow_resolution(case_spec, cfg)
    return build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"]), resolution


def _flow_space(msh, degree):
    """Taylor-Hood mixed space P(k+1)^d x P(k) and the (mixed-space) indices of its
    pressure dofs.

    The collapsed sub-spaces are never used: in DOLFINx 0.11 the dofmap of
    ``W.sub(0).collapse()`` is inconsistent for 3-D elements with face-interior dofs
    (P3 and higher on tetrahedra; functions on it evaluate wrongly), so the solvers work
    with mixed-space Functions and interpolate into plain spaces for output."""
    if int(degree) < 1:
        raise ValueError(f"Taylor-Hood needs pressure degree >= 1, got {degree!r}")
    gdim = msh.geometry.dim
    cell = msh.basix_cell()
    ve = basix.ufl.element("Lagrange", cell, int(degree) + 1, shape=(gdim,))
    qe = basix.ufl.element("Lagrange", cell, int(degree))
    W = fem.functionspace(msh, basix.ufl.mixed_element([ve, qe]))
    p_dofs = np.unique(W.sub(1).dofmap.list).astype(np.int32)
    return W, p_dofs


def _flow_forcing(pde, msh, t, params):
    gdim = msh.geometry.dim
    value = _flow_forcing_value(pde, gdim)
    if value is None:
        return fem.Constant(msh, np.zeros(gdim, dtype=PETSc.ScalarType))
    return to_ufl(value, msh, t, params)


class _VelocityDirichlet:
    """u = g on the given boundary parts for the velocity block of the mixed space W.

    Like ``DirichletData(..., sub=0)``, but g is a Function of W itself (its velocity
    block interpolated from an Expression compiled once; ``update()`` re-interpolates
    after the time constant changed) and the dofs are located in W alone: in DOLFINx
    0.11 ``locate_dofs_topological((W.sub(0), V_collapsed), ...)`` pairs wrong dofs for
    3-D elements with face-interior dofs (P3 and higher on tetrahedra)."""

    def __init__(self, W, domain, tags, value, t, params):
        msh = domain.msh
        self.g = fem.Function(W)
        self.target = self.g.sub(0)
        expr = to_ufl(value, msh, t, params)
        self.expression = fem.Expression(expr, W.sub(0).element.interpolation_points)
        self.update()
        dofs = fem.locate_dofs_topological(W.sub(0), msh.topology.dim - 1, domain.facets(tags))
        self.bc = fem.dirichletbc(self.g, np.asarray(dofs, dtype=np.int32))

    def update(self):
        self.target.interpolate(self.expression)


def _flow_boundary(W, domain, bc_spec, v, t, params, metadata):
    """Velocity Dirichlet data, the natural (traction/pressure) load term and whether the
    velocity is prescribed on the whole boundary (pressure fixed only up to a constant)."""
    gdim = domain.msh.geometry.dim
    velocity, natural = _flow_boundary_data(domain, bc_spec, v, gdim, t, params, metadata)
    dirichlet = [
        _VelocityDirichlet(W, domain, entry["boundary"], entry["value"], t, params)
        for entry in velocity
    ]
    velocity_facets = [domain.facets(entry["boundary"]) for entry in velocity]
    all_facets = domain.facets("all")
    covered = np.unique(np.concatenate(velocity_facets)) if velocity_facets else []
    enclosed = bool(np.all(np.isin(all_facets, covered)))
    return dirichlet, natural, enclosed


_NULL_SPACE = "range projection + pinned dof + zero-mean shift"


def _pressure_pin(W, p_dofs):
    """A Dirichlet condition p = 0 on one pressure degree of freedom."""
    return fem.dirichletbc(PETSc.ScalarType(0.0), p_dofs[:1].copy(), W.sub(1))


class _ZeroMean:
    """Shift the pressure block of a mixed Function to zero mean over the domain."""

    def __init__(self, msh, w, p_dofs):
        self.w, self.p_dofs = w, p_dofs
        self.mean = fem.form(ufl.split(w)[1] * ufl.dx)
        self.area = fem.assemble_scalar(fem.form(fem.Constant(msh, 1.0) * ufl.dx))

    def apply(self):
        shift = fem.assemble_scalar(self.mean) / self.area
        self.w.x.array[self.p_dofs] -= shift
        self.w.x.scatter_forward()
        return shift


class _FlowOutput:
    """Velocity and pressure of a mixed Function interpolated into plain Lagrange
    spaces (grid evaluation, velocity magnitudes)."""

    def __init__(self, W):
        msh = W.mesh
        self.velocity = fem.Function(fem.functionspace(msh, W.sub(0).ufl_element()))
        self.pressure = fem.Function(fem.functionspace(msh, W.sub(1).ufl_element()))

    def update(self, w):
        self.velocity.interpolate(w.sub(0))
        self.pressure.interpolate(w.sub(1))
        return self

    def max_speed(self):
        gdim = self.velocity.function_space.mesh.geometry.dim
        return float(np.linalg.norm(self.velocity.x.array.reshape(-1, gdim), axis=1).max())

    def fields(self, case_spec):
        msh = self.velocity.function_space.mesh
        sampler = GridSampler(msh, case_spec["eval_grid"])
        comps = sampler.values(self.velocity)
        names = ["u_x", "u_y", "u_z"][: msh.geometry.dim]
        values = {name: comps[i] for i, name in enumerate(names)}
        values["components"] = [comps[i] for i in range(len(names))]
        values["p"] = values["pressure"] = sampler.values(self.pressure)[0]
        return output_fields(case_spec, values)


def _cells(msh):
    return msh.topology.index_map(msh.topology.dim).size_global


# ------------------------------------------------------------------------------- solver
