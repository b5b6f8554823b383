"""Shared runtime code of the Firedrake calibration/reference solvers.

Runs inside the Firedrake runtime (never in the harness) and is inlined into each
single-file solver program by ``pdeagent_firedrake.bundle``: standard library,
numpy, ufl and firedrake only; no relative imports except the marked
``from ._meshing import ...`` line.
"""

import json
import math
import re
import time

import firedrake as fd
import numpy as np
import ufl

from ._meshing import MeshDomain, build_domain  # noqa: F401  (bundle: inline)


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
    if msh.geometric_dimension == 3:
        names["z"] = x[2]
    names.update(_numeric_params(params))
    return names


def to_ufl(value, msh, t=None, params=None):
    """A case expression (number, string, or list of them) as a UFL expression.

    ``t`` should be a ``fd.Constant`` for time-dependent data, so forms are compiled
    once and only the constant changes between steps.
    """
    if isinstance(value, bool):
        raise TypeError(f"expected a number or an expression, got {value!r}")
    if isinstance(value, (list, tuple)):
        return ufl.as_vector([_eval_ufl(v, msh, t, params) for v in value])
    return _eval_ufl(value, msh, t, params)


def _eval_ufl(text, msh, t, params):
    if isinstance(text, (int, float)):
        return fd.Constant(float(text))
    result = eval(str(text), {"__builtins__": {}}, _ufl_namespace(msh, t, params))
    if isinstance(result, (int, float)):
        return fd.Constant(float(result))
    return result


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


def check_steady(family, pde):
    if pde.get("time"):
        raise ValueError(f"the {family} problem is steady: pde.time must not be given")


def time_interval(case_spec):
    time_spec = case_spec["pde"].get("time")
    if not time_spec:
        return None
    return float(time_spec["t0"]), float(time_spec["t_end"])


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


def mesh_info(msh):
    return {"cells": int(msh.num_cells()), "firedrake": firedrake_version()}


def firedrake_version():
    from importlib.metadata import version

    return version("firedrake")
