"""Stokes: -nu laplace(u) + grad(p) = f, div(u) = 0 (Laplacian form).

Boundary conditions (``quantity``): ``velocity`` Dirichlet u = g; ``traction`` Neumann
nu du/dn - p n = g; ``pressure`` (as Dirichlet or Neumann entry) nu du/dn - p n = -g n;
boundary parts not named carry the natural condition nu du/dn - p n = 0.

Taylor-Hood elements: setting ``degree`` k gives continuous P(k+1) velocity and P(k)
pressure (k >= 1). The weak form
``(grad u, grad(nu v)) - (p, div v) - (q, div u) = (f, v) + natural terms`` is exact for a
variable viscosity too. Direct solve (MUMPS).

Pressure null space: when velocity Dirichlet conditions cover the whole boundary, the
constant pressure mode is handed to the solver as the (transpose) null space, so the
right-hand side is projected onto the range of the operator (the pressure rows of the
load vector are made to sum to zero, as the DOLFINx twin does) and MUMPS detects the
null pivot; the pressure is then shifted to zero mean over the domain.
"""

import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    DIRECT,
    GridSampler,
    build_domain,
    dirichlet_conditions,
    mesh_info,
    output_fields,
    parameter,
    to_ufl,
    write_solution,
)
from ._ufl_families import (
    _flow_boundary_data,
    _flow_forcing_value,
    _flow_quadrature,
    _flow_resolution,
    _stokes_begin,
    _stokes_forms,
    _stokes_info,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # cells across the longest side of the bounding box (2-D)
    "resolution_3d": 8,  # the same for 3-D domains (MUMPS memory)
    "degree": 1,  # pressure degree k: Taylor-Hood P(k+1)-P(k)
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 64,
    "resolution_3d": 12,
    "degree": 2,
    "solver_parameters": None,
}

_NULL_SPACE = "constant pressure null space (range projection) + zero-mean shift"
# MUMPS null-pivot detection: the enclosed-flow matrix is singular (constant pressure)
_STOKES_DIRECT = {**DIRECT, "mat_mumps_icntl_24": 1}


def _stokes_forcing(pde, msh, params):
    gdim = msh.geometric_dimension
    value = _flow_forcing_value(pde, gdim)
    if value is None:
        return fd.Constant(np.zeros(gdim))
    return to_ufl(value, msh, params=params)


def _stokes_boundary(W, domain, bc_spec, v, params, metadata):
    """Velocity DirichletBCs, the natural (traction/pressure) load term and whether the
    velocity is prescribed on the whole boundary (pressure fixed only up to a constant)."""
    msh = domain.msh
    velocity, natural = _flow_boundary_data(
        domain, bc_spec, v, msh.geometric_dimension, None, params, metadata
    )
    covered = set()
    enclosed = False
    for entry in velocity:
        ids = domain.ids(entry["boundary"])
        if ids == "on_boundary":
            enclosed = True
        else:
            covered.update(ids)
    bcs = dirichlet_conditions(
        W.sub(0), domain, {"dirichlet": velocity}, params=params, quantity="velocity"
    )
    if not enclosed and covered:
        markers = {int(m) for m in msh.exterior_facets.unique_markers}
        enclosed = markers <= covered
    return bcs, natural, enclosed


def _stokes_zero_mean(msh, p):
    """Shift the pressure Function p to zero mean over the domain; return the shift."""
    area = fd.assemble(fd.Constant(1.0) * ufl.dx(domain=msh))
    shift = fd.assemble(p * ufl.dx) / area
    p.dat.data[:] -= shift
    return float(shift)


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg, pde, params = _stokes_begin(
        case_spec, DEFAULTS, SETTINGS if settings is None else settings
    )
    bc = case_spec["bc"]
    degree = int(cfg["degree"])
    if degree < 1:
        raise ValueError(f"Taylor-Hood needs pressure degree >= 1, got {cfg['degree']!r}")
    if bc.get("periodic"):
        raise NotImplementedError("periodic boundary conditions are not supported by this solver")
    resolution = _flow_resolution(case_spec, cfg)
    domain = build_domain(case_spec["domain"], resolution)
    msh = domain.msh
    V = fd.VectorFunctionSpace(msh, "CG", degree + 1)
    Q = fd.FunctionSpace(msh, "CG", degree)
    W = V * Q
    u, p = fd.TrialFunctions(W)
    v, q = fd.TestFunctions(W)
    nu = parameter(params, "nu", msh)
    f = _stokes_forcing(pde, msh, params)
    metadata = _flow_quadrature(degree)  # data terms, as the twin
    dxq = ufl.dx(domain=msh, metadata=metadata)
    bcs, natural, enclosed = _stokes_boundary(W, domain, bc, v, params, metadata)
    a, L = _stokes_forms((u, p), (v, q), nu, f, natural, dxq)
    w = fd.Function(W)
    nullspace = None
    if enclosed:
        nullspace = fd.MixedVectorSpaceBasis(
            W, [W.sub(0), fd.VectorSpaceBasis(constant=True, comm=W.comm)]
        )
    problem = fd.LinearVariationalProblem(a, L, w, bcs=bcs)
    options = cfg["solver_parameters"] or (_STOKES_DIRECT if enclosed else DIRECT)
    solver = fd.LinearVariationalSolver(
        problem,
        solver_parameters=dict(options),
        options_prefix="stokes_",
        nullspace=nullspace,
        transpose_nullspace=nullspace,
    )
    solver.solve()  # raises ConvergenceError when the KSP fails
    if not np.all(np.isfinite(w.dat.data_ro[0])) or not np.all(np.isfinite(w.dat.data_ro[1])):
        raise RuntimeError("Stokes solve produced non-finite values")
    velocity, pressure = w.subfunctions
    shift = _stokes_zero_mean(msh, pressure) if enclosed else 0.0
    sampler = GridSampler(msh, case_spec["eval_grid"])
    comps = sampler.values(velocity)
    names = ["u_x", "u_y", "u_z"][: msh.geometric_dimension]
    values = {name: comps[i] for i, name in enumerate(names)}
    values["components"] = [comps[i] for i in range(len(names))]
    values["p"] = values["pressure"] = sampler.values(pressure)[0]
    fields = output_fields(case_spec, values)
    ksp = solver.snes.getKSP()
    track_info = {"dofs": W.dim(), **mesh_info(msh)}
    null_space = _NULL_SPACE if enclosed else "none"
    info = _stokes_info(resolution, degree, track_info, ksp, null_space, shift)
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
