"""Shared runtime code of the DOLFINx calibration/reference solvers.

Runs inside the DOLFINx runtime environment (never in the harness) and is
inlined into each single-file solver program by ``pdeagent_dolfinx.bundle``:
standard library, numpy, mpi4py, petsc4py, ufl and dolfinx only. The case data as
UFL, the settings merge and the output files are the core's shared runtime
(``_ufl_data``, ``_output``; DOLFINx's constants registered here); this module adds
DOLFINx's Dirichlet data, linear and nonlinear solves and grid sampling.
"""

from mpi4py import MPI

# isort: split
import dolfinx
import dolfinx.fem.petsc as fem_petsc
import numpy as np
import ufl
from dolfinx import fem, geometry
from petsc4py import PETSc

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
    to_numpy,
    to_ufl,
    use_constant,
)

COMM = MPI.COMM_WORLD
use_constant(lambda msh, value: fem.Constant(msh, PETSc.ScalarType(value)))


# ----------------------------------------------------------------------------- expressions


def interpolate_data(func, value, msh, t, params):
    """Interpolate case data (expression, number or list) into ``func``."""
    expr = to_ufl(value, msh, t, params)
    func.interpolate(fem.Expression(expr, func.function_space.element.interpolation_points))


def cell_diameters(msh):
    """DG0 Function of each cell's largest vertex distance (valid on curved cells, where
    UFL's CellDiameter is not available)."""
    tdim = msh.topology.dim
    Q = fem.functionspace(msh, ("DG", 0))
    imap = msh.topology.index_map(tdim)
    cells = np.arange(imap.size_local + imap.num_ghosts, dtype=np.int32)
    h = fem.Function(Q)
    h.x.array[Q.dofmap.list[cells, 0]] = msh.h(tdim, cells)
    return h


def cell_values(expr, msh):
    """Cell-midpoint values (owned cells) of a scalar UFL expression."""
    Q = fem.functionspace(msh, ("DG", 0))
    fn = fem.Function(Q)
    expr = expr + 0.0 * ufl.SpatialCoordinate(msh)[0]  # an Expression needs the mesh
    fn.interpolate(fem.Expression(expr, Q.element.interpolation_points))
    imap = msh.topology.index_map(msh.topology.dim)
    return fn.x.array[: imap.size_local].copy()


# ----------------------------------------------------------------------- boundary conditions


class DirichletData:
    """A Dirichlet condition whose data may depend on time.

    The data is interpolated from a compiled ``fem.Expression`` (compiled once);
    ``update()`` re-interpolates after the time constant changed.
    """

    def __init__(self, space, domain, tags, value, *, t=None, params=None, sub=None):
        msh = domain.msh
        fdim = msh.topology.dim - 1
        facets = domain.facets(tags)
        expr = to_ufl(value, msh, t, params)
        self.g = fem.Function(space)
        if sub is None:
            self._target = self.g
            points = space.element.interpolation_points
            dofs = fem.locate_dofs_topological(space, fdim, facets)
        else:
            # Data and dofs in the mixed space's own numbering: interpolating into a
            # collapsed sub-space misbehaves for degree >= 3 on meshes that need dof
            # permutations (DOLFINx 0.11), the parent space's numbering does not.
            self._target = self.g.sub(sub)
            points = space.sub(sub).element.interpolation_points
            dofs = fem.locate_dofs_topological(space.sub(sub), fdim, facets)
        self.expression = fem.Expression(expr, points)
        self.update()
        self.bc = fem.dirichletbc(self.g, dofs)

    def update(self):
        self._target.interpolate(self.expression)


def dirichlet_conditions(space, domain, bc_spec, *, t=None, params=None, sub=None, quantity=None):
    """DirichletData for every entry of ``bc_spec['dirichlet']`` with the given quantity."""
    out = []
    for entry in bc_spec.get("dirichlet", []) or []:
        q = entry.get("quantity")
        if quantity is not None and q not in (None, quantity):
            continue
        out.append(
            DirichletData(
                space, domain, entry["boundary"], entry["value"], t=t, params=params, sub=sub
            )
        )
    return out


# ---------------------------------------------------------------------------- linear solves


def clear_options(prefix):
    """Remove every global PETSc option under ``prefix`` (set by an earlier solve).

    Options are cleared before a solver is configured, never right after: MUMPS reads
    its options only when it factorises."""
    opts = PETSc.Options()
    for key in list(opts.getAll()):
        if key.startswith(prefix):
            opts.delValue(key)


class LinearSystem:
    """``a(u, v) = L(v)`` with forms compiled once.

    The matrix is assembled (and, with a direct solver, factorised) once unless
    ``reassemble_matrix`` is set; every ``solve()`` reassembles the right-hand side.
    """

    def __init__(
        self, a, L, bcs, u, *, petsc_options=None, prefix="pdeagent_", reassemble_matrix=False
    ):
        self.a = fem.form(a)
        self.L = fem.form(L)
        self.bcs = list(bcs)
        self.u = u
        self.reassemble_matrix = reassemble_matrix
        self.A = fem_petsc.create_matrix(self.a)
        self.b = fem_petsc.create_vector(self.L.function_spaces[0])
        self.ksp = PETSc.KSP().create(COMM)
        self.ksp.setOptionsPrefix(prefix)
        opts = PETSc.Options()
        clear_options(prefix)  # options of an earlier system with this prefix must not leak
        for key, value in (petsc_options or DIRECT).items():
            opts[f"{prefix}{key}"] = value
        self.ksp.setFromOptions()
        self.iterations = 0
        self._assemble_matrix()

    def _assemble_matrix(self):
        self.A.zeroEntries()
        fem_petsc.assemble_matrix(self.A, self.a, bcs=self.bcs)
        self.A.assemble()
        self.ksp.setOperators(self.A)

    def solve(self):
        if self.reassemble_matrix:
            self._assemble_matrix()
        with self.b.localForm() as local:
            local.set(0.0)
        fem_petsc.assemble_vector(self.b, self.L)
        fem_petsc.apply_lifting(self.b, [self.a], bcs=[self.bcs])
        self.b.ghostUpdate(addv=PETSc.InsertMode.ADD, mode=PETSc.ScatterMode.REVERSE)
        fem_petsc.set_bc(self.b, self.bcs)
        self.ksp.solve(self.b, self.u.x.petsc_vec)
        reason = self.ksp.getConvergedReason()
        if reason <= 0:
            raise RuntimeError(f"linear solver did not converge (KSP reason {reason})")
        self.iterations += self.ksp.getIterationNumber()
        self.u.x.scatter_forward()
        return self.u

    def info(self):
        pc = self.ksp.getPC()
        return {
            "ksp_type": self.ksp.getType(),
            "pc_type": pc.getType(),
            "linear_iterations": int(self.iterations),
        }


def solve_nonlinear(F, u, bcs, *, petsc_options=None, prefix="pdeagent_newton_", J=None):
    """Newton (PETSc SNES) for ``F(u; v) = 0``; raises when it does not converge.

    Returns the number of Newton iterations.
    """
    options = {
        "snes_type": "newtonls",
        "snes_linesearch_type": "bt",
        "snes_rtol": 1e-10,
        "snes_atol": 1e-12,
        "snes_max_it": 50,
    }
    user = petsc_options or {}
    if not {"ksp_type", "pc_type"} & set(user):
        options.update(DIRECT)  # a direct solve unless the caller chose the linear solver
    options.update(user)
    clear_options(prefix)
    problem = fem_petsc.NonlinearProblem(
        F, u, bcs=bcs, J=J, petsc_options_prefix=prefix, petsc_options=options
    )
    problem.solve()
    reason = problem.solver.getConvergedReason()
    if reason <= 0:
        raise RuntimeError(f"Newton did not converge (SNES reason {reason})")
    return int(problem.solver.getIterationNumber())


# ------------------------------------------------------------------------- grid and output


def grid_points(eval_grid):
    """Points (N, 3) in the order of a C-ordered (ny, nx) / (nz, ny, nx) array."""
    axes = grid_axes(eval_grid)
    if len(axes) == 2:
        X, Y = np.meshgrid(axes[0], axes[1], indexing="xy")
        Z = np.zeros_like(X)
    else:
        Z, Y, X = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    return np.column_stack([X.ravel(), Y.ravel(), Z.ravel()]), X.shape


def _affine_point_cells(msh, candidates, points, tol=1e-10):
    """First candidate cell containing each point, by barycentric coordinates (vectorised).

    Only for affine simplices (straight triangles/tetrahedra); returns None otherwise."""
    cmap = msh.geometry.cmap
    tdim = msh.topology.dim
    simplex = msh.topology.cell_type in (
        dolfinx.mesh.CellType.triangle,
        dolfinx.mesh.CellType.tetrahedron,
    )
    if cmap.degree != 1 or not simplex:
        return None
    offsets, array = candidates.offsets, candidates.array
    cells = np.full(len(points), -1, dtype=np.int32)
    if len(array) == 0:
        return cells
    dofmap = (
        msh.geometry.dofmaps(0)
        if callable(getattr(msh.geometry, "dofmaps", None))
        else msh.geometry.dofmap
    )
    owner = np.repeat(np.arange(len(points)), np.diff(offsets))
    verts = msh.geometry.x[dofmap[array]][:, :, :tdim]  # (m, tdim + 1, tdim)
    edges = np.transpose(verts[:, 1:, :] - verts[:, :1, :], (0, 2, 1))
    rhs = points[owner, :tdim] - verts[:, 0, :]
    lam = np.linalg.solve(edges, rhs[..., None])[..., 0]
    inside = (lam.min(axis=1) >= -tol) & (1.0 - lam.sum(axis=1) >= -tol)
    hits = np.flatnonzero(inside)
    _, first = np.unique(owner[hits], return_index=True)
    chosen = hits[first]
    cells[owner[chosen]] = array[chosen]
    return cells


class GridSampler:
    """Point evaluation of Functions on the evaluation grid; points outside the mesh get NaN."""

    def __init__(self, msh, eval_grid):
        self.points, self.shape = grid_points(eval_grid)
        tree = geometry.bb_tree(msh, msh.topology.dim, padding=1e-10)
        candidates = geometry.compute_collisions_points(tree, self.points)
        cells = _affine_point_cells(msh, candidates, self.points)
        if cells is None:  # curved cells: DOLFINx's exact (slower) test
            colliding = geometry.compute_colliding_cells(msh, candidates, self.points)
            offsets, array = colliding.offsets, colliding.array
            counts = np.diff(offsets)
            cells = np.full(len(self.points), -1, dtype=np.int32)
            has = counts > 0
            cells[has] = array[offsets[:-1][has]]
        self.found = np.flatnonzero(cells >= 0)
        self.cells = cells[self.found].astype(np.int32)

    def values(self, function):
        """Array of shape (ncomp, *grid_shape) (ncomp = 1 for scalars)."""
        size = int(np.prod(function.function_space.value_shape or (1,)))
        out = np.full((len(self.points), size), np.nan)
        if len(self.found):
            out[self.found] = function.eval(self.points[self.found], self.cells).reshape(-1, size)
        return out.T.reshape((size, *self.shape))


def dolfinx_version():
    return dolfinx.__version__
