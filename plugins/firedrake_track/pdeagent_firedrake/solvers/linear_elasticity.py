"""Linear elasticity: -div(sigma(u)) = f, sigma = 2 mu eps(u) + lam tr(eps(u)) I.

Parameters as {E, nu}, {young_modulus, poisson_ratio} or {lambda, mu} (numbers or
expressions); ``pde.params.model`` is plane_strain (lam = lambda), plane_stress
(lam = 2 lambda mu / (lambda + 2 mu)) or 3d. Dirichlet displacement data (quantity
None / "u" / "displacement"), traction data sigma(u) n = g (quantity None / "u" /
"traction") and the natural traction-free condition on unnamed boundary parts.

Discretisation (displacement form, or the Taylor-Hood displacement-pressure form near
the incompressible limit): see the shared ``_ufl_families._el_begin``.
Linear systems: direct solve (MUMPS) by default; with given ``solver_parameters*``
the rigid-body modes are attached as near-null space (for GAMG); in the mixed form the
fields are named ``u`` and ``p`` (``fieldsplit_u_...``, ``fieldsplit_p_...``) and a
field split is preconditioned with 2 mu (eps(u), eps(v)) + (1/mu + 1/lam) (p, q).
"""

import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    DIRECT,
    GridSampler,
    build_domain,
    mesh_info,
    to_ufl,
    write_solution,
)
from ._ufl_families import (
    _el_begin,
    _el_field_split_form,
    _el_info,
    _el_options_key,
    _el_output,
)
from ._ufl_forms import _el_bilinear, _el_formulation, _el_lame

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 8,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree of the displacement (pressure: degree - 1)
    "formulation": "auto",  # auto | displacement | mixed
    "mixed_nu_threshold": 0.49,  # auto: mixed form when nu >= this (plane strain / 3d)
    "solver_parameters": None,  # 2-D; None = direct solve (MUMPS)
    "solver_parameters_3d": None,  # 3-D; None = direct solve (MUMPS)
    "solver_parameters_mixed": None,  # mixed form, 2-D; None = direct solve (MUMPS)
    "solver_parameters_mixed_3d": None,  # mixed form, 3-D; None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 96,
    "resolution_3d": 12,
    "degree": 3,
    "formulation": "auto",
    "mixed_nu_threshold": 0.49,
    "solver_parameters": None,
    # 3-D displacement form: CG + GAMG with the rigid-body modes as near-null space
    "solver_parameters_3d": {
        "ksp_type": "cg",
        "ksp_rtol": 1e-12,
        "ksp_atol": 1e-14,
        "ksp_max_it": 5000,
        "pc_type": "gamg",
        "pc_gamg_threshold": 0.02,
        "mg_levels_ksp_type": "chebyshev",
        "mg_levels_pc_type": "jacobi",
    },
    "solver_parameters_mixed": None,
    "solver_parameters_mixed_3d": None,
}


def _el_numeric(params, name, expr, msh):
    """Values of a (number or expression) parameter at the mesh vertices."""
    value = params[name]
    if isinstance(value, bool):
        raise TypeError(f"pde.params.{name} must be a number or an expression")
    if isinstance(value, (int, float)):
        return np.array([float(value)])
    P1 = fd.FunctionSpace(msh, "CG", 1)
    return np.array(fd.Function(P1).interpolate(expr).dat.data_ro, dtype=float)


def _el_vector(value, msh, dim, what, params):
    """Vector data (a list of ``dim`` numbers or expressions) as a mesh-bound UFL vector."""
    if not isinstance(value, (list, tuple)) or len(value) != dim:
        raise ValueError(f"linear_elasticity: {what} must be a list of {dim} expressions")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise TypeError(f"linear_elasticity: {what} has an invalid component {item!r}")
    zero = 0.0 * ufl.SpatialCoordinate(msh)[0]  # binds constant data to the mesh
    return ufl.as_vector([to_ufl(item, msh, params=params) + zero for item in value])


def _el_body_force(pde, msh, dim, params):
    forcing = pde.get("forcing") or {}
    if not forcing:
        return None
    if len(forcing) != 1:
        raise ValueError(
            f"linear_elasticity: unsupported forcing entries {sorted(forcing)}; expected one "
            "body force f"
        )
    (value,) = forcing.values()
    return _el_vector(value, msh, dim, "the body force f", params)


def _el_rigid_modes(V, dim):
    """The rigid-body motions of the vector space V as an orthonormal VectorSpaceBasis."""
    X = ufl.SpatialCoordinate(V.mesh())
    if dim == 2:
        exprs = [(1.0, 0.0), (0.0, 1.0), (-X[1], X[0])]
    else:
        exprs = [
            (1.0, 0.0, 0.0),
            (0.0, 1.0, 0.0),
            (0.0, 0.0, 1.0),
            (-X[1], X[0], 0.0),
            (X[2], 0.0, -X[0]),
            (0.0, -X[2], X[1]),
        ]
    zero = 0.0 * X[0]
    modes = [fd.Function(V).interpolate(ufl.as_vector([c + zero for c in e])) for e in exprs]
    basis = fd.VectorSpaceBasis(modes)
    basis.orthonormalize()
    return basis


class _ElSystem:
    """``a = L`` solved into ``wh`` by a Firedrake LinearVariationalSolver with optional
    near-null space and preconditioning form (the shared LinearSystem has neither)."""

    def __init__(self, a, L, wh, bcs, solver_parameters, *, aP=None, near_nullspace=None):
        problem = fd.LinearVariationalProblem(a, L, wh, bcs=bcs, aP=aP)
        self.solver = fd.LinearVariationalSolver(
            problem,
            solver_parameters=dict(solver_parameters or DIRECT),
            options_prefix="elasticity_",
            near_nullspace=near_nullspace,
        )
        self.iterations = 0

    def solve(self):
        self.solver.solve()  # raises ConvergenceError when the KSP fails
        self.iterations += self.solver.snes.getKSP().getIterationNumber()

    def info(self):
        ksp = self.solver.snes.getKSP()
        return {
            "ksp_type": ksp.getType(),
            "pc_type": ksp.getPC().getType(),
            "linear_iterations": int(self.iterations),
        }


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg, params, model, is_3d, resolution, degree = _el_begin(
        case_spec, DEFAULTS, SETTINGS if settings is None else settings, check_bc=True
    )
    pde, bc_spec = case_spec["pde"], case_spec["bc"]
    if degree < 1:
        raise ValueError(f"linear_elasticity: degree must be >= 1, got {degree}")

    domain = build_domain(case_spec["domain"], resolution)
    msh = domain.msh
    dim = msh.geometric_dimension
    mu, lam, nu_min, nu_max = _el_lame(
        params, msh, model, lambda name, expr: _el_numeric(params, name, expr, msh)
    )
    formulation = _el_formulation(cfg, model, degree, nu_min, nu_max)

    V = fd.VectorFunctionSpace(msh, "CG", degree, name="u")
    if formulation == "mixed":
        Q = fd.FunctionSpace(msh, "CG", degree - 1, name="p")
        W = V * Q
        u, p = fd.TrialFunctions(W)
        v, q = fd.TestFunctions(W)
        V_bc = W.sub(0)
    else:
        W = V
        u, v = fd.TrialFunction(W), fd.TestFunction(W)
        V_bc = W
        p = q = None
    a = _el_bilinear(formulation, u, v, mu, lam, dim, p, q)

    f = _el_body_force(pde, msh, dim, params)
    zero = ufl.as_vector([0.0 * ufl.SpatialCoordinate(msh)[0]] * dim)
    L = ufl.inner(f if f is not None else zero, v) * ufl.dx
    for k, entry in enumerate(bc_spec.get("neumann") or []):
        g = _el_vector(entry["value"], msh, dim, f"bc.neumann[{k}].value", params)
        L = L + ufl.inner(g, v) * domain.ds(entry["boundary"])

    bcs = []
    for k, entry in enumerate(bc_spec.get("dirichlet") or []):
        g = _el_vector(entry["value"], msh, dim, f"bc.dirichlet[{k}].value", params)
        bcs.append(fd.DirichletBC(V_bc, g, domain.ids(entry["boundary"])))

    wh = fd.Function(W)
    solver_parameters = cfg[_el_options_key("solver_parameters", formulation, is_3d)]
    aP, near_nullspace = None, None
    if solver_parameters is not None:
        if formulation == "mixed":
            near_nullspace = fd.MixedVectorSpaceBasis(W, [_el_rigid_modes(W.sub(0), dim), W.sub(1)])
            if solver_parameters.get("pc_type") == "fieldsplit":
                aP = _el_field_split_form(u, v, p, q, mu, lam)
        else:
            near_nullspace = _el_rigid_modes(W, dim)
    system = _ElSystem(a, L, wh, bcs, solver_parameters, aP=aP, near_nullspace=near_nullspace)
    system.solve()
    uh = wh.subfunctions[0] if formulation == "mixed" else wh

    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)
    fields = _el_output(case_spec, values, dim)
    track_info = {"dofs": W.dim(), "nu_range": [nu_min, nu_max], **mesh_info(msh)}
    info = _el_info(model, formulation, resolution, degree, track_info, system.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
