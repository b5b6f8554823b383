"""Shared runtime code of the Firedrake calibration/reference solvers.

Runs inside the Firedrake runtime (never in the harness) and is inlined into each
single-file solver program by ``pdeagent_firedrake.bundle``: standard library,
numpy, ufl and firedrake only. The case data as UFL, the settings merge and the
output files are the core's shared runtime (``_ufl_data``, ``_output``; Firedrake's
constants registered here); this module adds Firedrake's Dirichlet conditions,
linear solves and grid sampling.
"""

import firedrake as fd
import numpy as np

from ._meshing import MeshDomain, build_domain  # noqa: F401  (bundle: inline)
from ._output import grid_axes, output_fields, pressure_array, write_solution  # noqa: F401
from ._ufl_data import (  # noqa: F401  (the shared UFL runtime, re-exported to the families)
    DIRECT,
    boundary_terms,
    check_scalar_bc,
    check_steady,
    depends_on_t,
    merged_settings,
    parameter,
    single_source,
    time_interval,
    to_ufl,
    use_constant,
)

use_constant(lambda msh, value: fd.Constant(float(value)))


# ----------------------------------------------------------------------------------- cells


def cell_diameters(msh):
    """DG0 Function of each cell's largest vertex distance (valid on curved cells, where
    UFL's CellDiameter is not available; equal to it on straight-sided ones)."""
    coords = msh.coordinates
    vertex_dofs = coords.function_space().finat_element.entity_dofs()[0]
    local = [dofs[0] for _, dofs in sorted(vertex_dofs.items()) if dofs]  # vertex nodes
    if len(local) != msh.topological_dimension + 1:
        # discontinuous coordinates (a periodic mesh: DG1): every node is a vertex
        local = list(range(coords.cell_node_map().values.shape[1]))
    nodes = coords.cell_node_map().values[:, local]
    verts = coords.dat.data_ro[nodes]  # (cells, tdim + 1, gdim)
    diffs = verts[:, :, None, :] - verts[:, None, :, :]
    diameters = np.sqrt((diffs**2).sum(axis=-1)).max(axis=(1, 2))
    Q = fd.FunctionSpace(msh, "DG", 0)
    h = fd.Function(Q, name="cell_diameter")
    h.dat.data[Q.cell_node_map().values[:, 0]] = diameters
    return h


# ----------------------------------------------------------------------- boundary conditions


def dirichlet_conditions(space, domain, bc_spec, *, t=None, params=None, quantity=None):
    """A ``DirichletBC`` for every entry of ``bc_spec['dirichlet']`` with the given quantity.

    The data is a UFL expression; Firedrake re-interpolates it each time the condition
    is applied, so a time Constant ``t`` updates it. Later entries win on shared dofs
    (Firedrake applies the conditions in list order)."""
    out = []
    for entry in bc_spec.get("dirichlet", []) or []:
        q = entry.get("quantity")
        if quantity is not None and q not in (None, quantity):
            continue
        g = to_ufl(entry["value"], domain.msh, t, params)
        out.append(fd.DirichletBC(space, g, domain.ids(entry["boundary"])))
    return out


# ---------------------------------------------------------------------------- linear solves


class LinearSystem:
    """``a(u, v) = L(v)`` solved into ``u`` with a reusable Firedrake solver.

    With ``constant_matrix`` the matrix is assembled (and, with a direct solver,
    factorised) once; every ``solve()`` reassembles the right-hand side."""

    def __init__(
        self,
        a,
        L,
        u,
        bcs,
        *,
        solver_parameters=None,
        prefix="pdeagent_",
        constant_matrix=True,
        nullspace=None,
    ):
        self.u = u
        problem = fd.LinearVariationalProblem(a, L, u, bcs=bcs, constant_jacobian=constant_matrix)
        self.solver = fd.LinearVariationalSolver(
            problem,
            solver_parameters=dict(solver_parameters or DIRECT),
            options_prefix=prefix,
            nullspace=nullspace,
        )
        self.iterations = 0

    def solve(self):
        self.solver.solve()  # raises ConvergenceError when the KSP fails
        self.iterations += self.solver.snes.getKSP().getIterationNumber()
        return self.u

    def info(self):
        ksp = self.solver.snes.getKSP()
        return {
            "ksp_type": ksp.getType(),
            "pc_type": ksp.getPC().getType(),
            "linear_iterations": int(self.iterations),
        }


# ------------------------------------------------------------------------- grid and output


def grid_points(eval_grid):
    """Points (N, dim) in the order of a C-ordered (ny, nx) / (nz, ny, nx) array."""
    axes = grid_axes(eval_grid)
    if len(axes) == 2:
        X, Y = np.meshgrid(axes[0], axes[1], indexing="xy")
        return np.column_stack([X.ravel(), Y.ravel()]), X.shape
    Z, Y, X = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    return np.column_stack([X.ravel(), Y.ravel(), Z.ravel()]), X.shape


class GridSampler:
    """Point evaluation of Functions on the evaluation grid; points outside the mesh get
    NaN (Firedrake's PointEvaluator with missing points ignored, never an error)."""

    def __init__(self, msh, eval_grid):
        self.points, self.shape = grid_points(eval_grid)
        self.evaluator = fd.PointEvaluator(
            msh, self.points, tolerance=1e-10, missing_points_behaviour="ignore"
        )

    def values(self, function):
        """Array of shape (ncomp, *grid_shape) (ncomp = 1 for scalars)."""
        raw = np.asarray(self.evaluator.evaluate(function), dtype=float)
        raw = raw.reshape(len(self.points), -1)
        return raw.T.reshape((raw.shape[1], *self.shape))


def mesh_info(msh):
    return {"cells": int(msh.num_cells()), "firedrake": firedrake_version()}


def firedrake_version():
    from importlib.metadata import version

    return version("firedrake")
