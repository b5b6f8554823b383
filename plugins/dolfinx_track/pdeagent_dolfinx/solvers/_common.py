"""Shared runtime code of the DOLFINx calibration/reference solvers.

Runs inside the DOLFINx runtime environment (never in the harness) and is
inlined into each single-file solver program by ``pdeagent_dolfinx.bundle``:
standard library, numpy, mpi4py, petsc4py, ufl and dolfinx only; no relative
imports except the marked ``from ._meshing import ...`` line.
"""

import json
import math
import re
import time

from mpi4py import MPI

# isort: split
import dolfinx
import dolfinx.fem.petsc as fem_petsc
import numpy as np
import ufl
from dolfinx import fem, geometry
from petsc4py import PETSc

from ._meshing import MeshDomain, build_domain  # noqa: F401  (bundle: inline)

COMM = MPI.COMM_WORLD


def merged_settings(defaults, settings):
    """Defaults overridden by ``settings`` (unknown keys are an error: typos must not pass)."""
    merged = dict(defaults)
    for key, value in (settings or {}).items():
        if key not in defaults:
            raise KeyError(f"unknown solver setting {key!r}; known: {sorted(defaults)}")
        merged[key] = value
    return merged


# ----------------------------------------------------------------------------- expressions


def _numeric_params(params):
    out = {}
    for key, value in (params or {}).items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[key] = float(value)
    return out


def _ufl_namespace(msh, t, params):
    x = ufl.SpatialCoordinate(msh)
    names = {
        "sin": ufl.sin,
        "cos": ufl.cos,
        "tan": ufl.tan,
        "exp": ufl.exp,
        "log": ufl.ln,
        "sqrt": ufl.sqrt,
        "abs": abs,
        "sinh": ufl.sinh,
        "cosh": ufl.cosh,
        "tanh": ufl.tanh,
        "atan": ufl.atan,
        "atan2": ufl.atan2,
        "asin": ufl.asin,
        "acos": ufl.acos,
        "sign": ufl.sign,
        "Min": ufl.min_value,
        "Max": ufl.max_value,
        "Heaviside": lambda a: ufl.conditional(ufl.ge(a, 0), 1.0, 0.0),
        "pi": math.pi,
        "E": math.e,
        "x": x[0],
        "y": x[1],
        "t": 0.0 if t is None else t,
    }
    if msh.geometry.dim == 3:
        names["z"] = x[2]
    names.update(_numeric_params(params))
    return names


def _numpy_namespace(X, t, params):
    names = {
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "exp": np.exp,
        "log": np.log,
        "sqrt": np.sqrt,
        "abs": np.abs,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tanh": np.tanh,
        "atan": np.arctan,
        "atan2": np.arctan2,
        "asin": np.arcsin,
        "acos": np.arccos,
        "sign": np.sign,
        "Min": np.minimum,
        "Max": np.maximum,
        "Heaviside": lambda a: np.where(np.asarray(a) >= 0, 1.0, 0.0),
        "pi": math.pi,
        "E": math.e,
        "x": X[0],
        "y": X[1],
        "z": X[2],
        "t": t,
    }
    names.update(_numeric_params(params))
    return names


def to_ufl(value, msh, t=None, params=None):
    """A case expression (number, string, or list of strings) as a UFL expression.

    ``t`` should be a ``fem.Constant`` for time-dependent data, so forms are compiled
    once and only the constant changes between steps.
    """
    if isinstance(value, bool):
        raise TypeError(f"expected a number or an expression, got {value!r}")
    if isinstance(value, (int, float)):
        return fem.Constant(msh, PETSc.ScalarType(value))
    if isinstance(value, (list, tuple)):
        return ufl.as_vector([_eval_ufl(v, msh, t, params) for v in value])
    return _eval_ufl(value, msh, t, params)


def _eval_ufl(text, msh, t, params):
    if isinstance(text, (int, float)):
        return fem.Constant(msh, PETSc.ScalarType(text))
    result = eval(str(text), {"__builtins__": {}}, _ufl_namespace(msh, t, params))
    if isinstance(result, (int, float)):
        return fem.Constant(msh, PETSc.ScalarType(result))
    return result


def to_numpy(value, params=None):
    """A case expression as ``f(X, t=0.0)`` for points X of shape (3, N)."""

    def evaluate(X, t=0.0):
        n = X.shape[1]
        items = value if isinstance(value, (list, tuple)) else [value]
        rows = []
        for item in items:
            if isinstance(item, (int, float)):
                rows.append(np.full(n, float(item)))
                continue
            out = eval(str(item), {"__builtins__": {}}, _numpy_namespace(X, t, params))
            rows.append(np.broadcast_to(np.asarray(out, dtype=float), (n,)).copy())
        return rows[0] if not isinstance(value, (list, tuple)) else np.vstack(rows)

    return evaluate


def parameter(params, name, msh, t=None):
    """A case parameter as UFL (numbers become Constants; strings are expressions)."""
    if name not in params:
        raise KeyError(f"case_spec.pde.params has no {name!r}")
    return to_ufl(params[name], msh, t, params)


_T_TOKEN = re.compile(r"(?<![A-Za-z0-9_.])t(?![A-Za-z0-9_])")


def depends_on_t(value):
    """Whether case data (an expression or a list of them) mentions the time t."""
    if isinstance(value, (list, tuple)):
        return any(depends_on_t(v) for v in value)
    return isinstance(value, str) and _T_TOKEN.search(value) is not None


def single_source(family, pde):
    """The source term f of a scalar equation: 0 without forcing; a single entry is f
    whatever its name; several entries are an error (the equation has one source)."""
    forcing = pde.get("forcing") or {}
    if not forcing:
        return 0.0
    if len(forcing) == 1:
        (value,) = forcing.values()
        return value
    raise ValueError(
        f"{family}: unsupported forcing entries {sorted(forcing)}; the equation has one "
        "source term f"
    )


def check_scalar_bc(family, bc_spec):
    """Dirichlet/Neumann entries of a scalar equation may only prescribe u."""
    for kind in ("dirichlet", "neumann"):
        for entry in bc_spec.get(kind) or []:
            if entry.get("quantity") not in (None, "u"):
                raise ValueError(
                    f"{family}: a {kind} condition on quantity "
                    f"{entry.get('quantity')!r} is not defined (only u)"
                )


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


def boundary_terms(v, domain, bc_spec, *, t=None, params=None, quantity=None, u=None):
    """Linear-form terms of Neumann data ``D du/dn = g`` and, with ``u`` given, the
    bilinear Robin terms ``D du/dn + alpha u = g``: returns (lhs, rhs) UFL forms or 0."""
    msh = domain.msh
    lhs, rhs = 0, 0
    for entry in bc_spec.get("neumann", []) or []:
        q = entry.get("quantity")
        if quantity is not None and q not in (None, quantity):
            continue
        g = to_ufl(entry["value"], msh, t, params)
        rhs = rhs + ufl.inner(g, v) * domain.ds(entry["boundary"])
    for entry in bc_spec.get("robin", []) or []:
        if u is None:
            raise ValueError("Robin conditions need the trial function")
        alpha = to_ufl(entry["alpha"], msh, t, params)
        g = to_ufl(entry["value"], msh, t, params)
        ds = domain.ds(entry["boundary"])
        lhs = lhs + alpha * ufl.inner(u, v) * ds
        rhs = rhs + ufl.inner(g, v) * ds
    return lhs, rhs


# ---------------------------------------------------------------------------- linear solves


DIRECT = {"ksp_type": "preonly", "pc_type": "lu", "pc_factor_mat_solver_type": "mumps"}


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


def grid_axes(eval_grid):
    bbox = eval_grid["bbox"]
    axes = [
        np.linspace(bbox[0], bbox[1], eval_grid["nx"]),
        np.linspace(bbox[2], bbox[3], eval_grid["ny"]),
    ]
    if eval_grid.get("nz"):
        axes.append(np.linspace(bbox[4], bbox[5], eval_grid["nz"]))
    return axes


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


def write_solution(eval_grid, fields, *, solver_info=None, started=None, status="ok"):
    """Write ``solution.npz`` (x, y[, z] and the fields) and ``meta.json``."""
    axes = grid_axes(eval_grid)
    arrays = {"x": axes[0], "y": axes[1]}
    if len(axes) == 3:
        arrays["z"] = axes[2]
    for name, values in fields.items():
        arrays[name] = np.asarray(values, dtype=np.float64)
    np.savez("solution.npz", **arrays)
    meta = {"status": status, "solver_info": solver_info or {}}
    if started is not None:
        meta["wall_time_sec"] = time.perf_counter() - started
    with open("meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, default=float)


def pressure_array(out_spec):
    """The name of the pressure array ``output["pressure"]["array"]`` of a flow case, or
    None when the output asks for no pressure."""
    pressure = out_spec.get("pressure")
    if not pressure:
        return None
    name = pressure.get("array") if isinstance(pressure, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"output.pressure must name its array, got {pressure!r}")
    return name


def output_fields(case_spec, named_values):
    """Pick the arrays the case asks for from ``named_values`` (name -> array), deriving
    ``*_magnitude`` from the components when asked; with ``output.pressure`` also the
    pressure ``named_values["p"]`` under the name ``output.pressure.array``."""
    out_spec = case_spec["output"]
    wanted = out_spec.get("components") or [out_spec["field"]]
    fields = {}
    for name in wanted:
        if name in named_values:
            fields[name] = named_values[name]
        elif name.endswith("_magnitude") and "components" in named_values:
            comps = named_values["components"]
            fields[name] = np.sqrt(sum(c**2 for c in comps))
        else:
            raise KeyError(f"solver cannot produce output array {name!r}")
    pressure = pressure_array(out_spec)
    if pressure is not None:
        if named_values.get("p") is None:
            raise KeyError(
                f"the case asks for the pressure array {pressure!r} (output.pressure), but "
                "this solver computes no pressure"
            )
        fields[pressure] = named_values["p"]
    return fields


def time_interval(case_spec):
    time_spec = case_spec["pde"].get("time")
    if not time_spec:
        return None
    return float(time_spec["t0"]), float(time_spec["t_end"])


def dolfinx_version():
    return dolfinx.__version__
