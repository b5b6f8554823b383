"""Convection-diffusion: [du/dt] - epsilon laplace(u) + beta . grad(u) = f.

Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is given.
epsilon (> 0) and the components of beta may be numbers or expressions of x, y[, z]
and t. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, and the natural condition epsilon du/dn = 0 on boundary
parts not named. On a periodic_square the mesh itself is periodic.

Discretisation: continuous Lagrange elements of degree ``degree``. Stabilisation
(``stabilization``): "supg", "none" or "auto" (SUPG when the largest cell Peclet
number Pe_K = |beta| h_K / (2 epsilon) exceeds 1, with h_K = cell diameter / degree).
SUPG: the shared UFL forms (``_ufl_forms``, convection-diffusion) define its residual
and tau.
Time stepping (``scheme``): "bdf2" (default; started with one Crank-Nicolson step),
"crank_nicolson" or "backward_euler", constant step dt = (t_end - t0) / n with
n = ``n_steps`` or ceil((t_end - t0) / ``dt``). Forms are compiled once; time enters
through fd.Constants. The matrix is assembled and factorised once (twice for bdf2),
or every step when epsilon, beta or a Robin alpha depends on t. Linear systems: direct
(MUMPS) by default, or the PETSc options in ``solver_parameters`` (e.g. GMRES + ILU).
Cell integrals use the quadrature degree ``quadrature_degree`` (default 2 * degree + 2):
UFL's estimate for expression data (sin, exp, ...) is far higher and makes assembly slow.
"""

import math
import time

import firedrake as fd
import ufl

from ._common import (
    GridSampler,
    LinearSystem,
    boundary_terms,
    build_domain,
    cell_diameters,
    dirichlet_conditions,
    merged_settings,
    mesh_info,
    output_fields,
    parameter,
    single_source,
    time_interval,
    to_ufl,
    write_solution,
)
from ._ufl_forms import (
    _cd_beta,
    _cd_check,
    _cd_steady_system,
    _cd_tau_steady,
    _cd_time_dependent_matrix,
    _cd_transient_system,
    _cd_use_supg,
    _scalar_resolution,
    _step_coefficients,
    _time_steps,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 8,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "stabilization": "auto",  # auto | supg | none
    "scheme": "bdf2",  # transient: bdf2 | crank_nicolson | backward_euler
    "dt": 0.01,  # transient: largest time step (the step is (t_end - t0) / n_steps)
    "n_steps": None,  # transient: number of steps (overrides dt when set)
    "quadrature_degree": None,  # cell integrals; None = 2 * degree + 2
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 128,
    "resolution_3d": 16,
    "degree": 3,
    "dt": 0.0005,
}


def _cd_cell_extreme(expr, msh, Q, op):
    """min or max (``op``) over all cells of a scalar UFL expression at the cell midpoints
    (DG0 interpolation), reduced over the mesh's communicator."""
    from mpi4py import MPI

    values = fd.Function(Q).interpolate(expr).dat.data_ro
    if op == "min":
        return msh.comm.allreduce(float(values.min(initial=math.inf)), op=MPI.MIN)
    return msh.comm.allreduce(float(values.max(initial=-math.inf)), op=MPI.MAX)


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    _cd_check(case_spec, cfg)
    pde, bc_spec = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}
    stabilization, scheme = cfg["stabilization"], cfg["scheme"]
    interval = time_interval(case_spec)
    degree = int(cfg["degree"])

    resolution = _scalar_resolution(case_spec, cfg)
    domain = build_domain(case_spec["domain"], resolution, periodic=bc_spec.get("periodic"))
    msh = domain.msh
    dim = msh.geometric_dimension

    beta_value, no_convection = _cd_beta(params, dim)

    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    qdeg = cfg["quadrature_degree"]
    qdeg = 2 * degree + 2 if qdeg is None else int(qdeg)
    dx = ufl.Measure("dx", domain=msh, metadata={"quadrature_degree": qdeg})
    transient = interval is not None
    t_new = fd.Constant(0.0 if not transient else interval[0])
    t_old = fd.Constant(0.0 if not transient else interval[0])

    eps = parameter(params, "epsilon", msh, t_new)
    beta = parameter(params, "beta", msh, t_new)
    f_value = single_source("convection_diffusion", pde)
    f = to_ufl(f_value, msh, t_new, params)
    hK = cell_diameters(msh) / degree
    tau_s, pe = (None, None) if no_convection else _cd_tau_steady(beta, eps, hK)

    # cell Peclet numbers (and epsilon > 0) at a few times
    Q = fd.FunctionSpace(msh, "DG", 0)
    times = [0.0] if not transient else [interval[0], 0.5 * sum(interval), interval[1]]
    pe_max, eps_min = 0.0, math.inf
    for tv in times:
        t_new.assign(tv)
        eps_min = min(eps_min, _cd_cell_extreme(eps, msh, Q, "min"))
        if pe is not None:
            pe_max = max(pe_max, _cd_cell_extreme(pe, msh, Q, "max"))
    t_new.assign(times[0])
    supg = tau_s if _cd_use_supg(stabilization, no_convection, eps_min, pe_max) else None

    robin_new, natural_new = boundary_terms(v, domain, bc_spec, t=t_new, params=params, u=u)
    bcs = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    uh = fd.Function(V, name="u")
    info = {}

    if not transient:
        a, L = _cd_steady_system(u, v, dx, (eps, beta, f, robin_new, natural_new), supg)
        system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                              prefix="convdiff_")  # fmt: skip
        system.solve()
    else:
        t0, n_steps, dt = _time_steps("convection_diffusion", case_spec, cfg, interval)
        k = fd.Constant(dt)
        c0, c1, c2 = fd.Constant(1.0), fd.Constant(-1.0), fd.Constant(0.0)
        theta = fd.Constant(1.0)
        u_n, u_nm1 = fd.Function(V), fd.Function(V)
        t_new.assign(t0)
        u_n.interpolate(to_ufl(case_spec["ic"]["u"], msh, t_new, params))
        u_nm1.assign(u_n)
        eps_old = parameter(params, "epsilon", msh, t_old)
        beta_old = parameter(params, "beta", msh, t_old)
        f_old = to_ufl(f_value, msh, t_old, params)
        robin_old, natural_old = boundary_terms(v, domain, bc_spec, t=t_old, params=params, u=u_n)
        a, L = _cd_transient_system(
            u, v, dx, u_n, u_nm1, k, (c0, c1, c2, theta),
            (eps, beta, f, robin_new, natural_new),
            (eps_old, beta_old, f_old, robin_old, natural_old), supg,
        )  # fmt: skip
        time_dependent_matrix = _cd_time_dependent_matrix(params, beta_value, bc_spec)
        start, main = _step_coefficients(scheme)

        def set_coefficients(values):
            for const, value in zip((c0, c1, c2, theta), values, strict=True):
                const.assign(value)

        set_coefficients(start)
        system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                              prefix="convdiff_",
                              constant_matrix=not time_dependent_matrix)  # fmt: skip
        matrix_assemblies = 0
        for step in range(1, n_steps + 1):
            t_old.assign(t0 + (step - 1) * dt)
            t_new.assign(t0 + step * dt)  # the Dirichlet data follows on apply
            reassemble = step == 1 or time_dependent_matrix
            if step == 2 and start != main:
                set_coefficients(main)
                system.solver.invalidate_jacobian()
                reassemble = True
            system.solve()
            matrix_assemblies += int(reassemble)
            u_nm1.assign(u_n)
            u_n.assign(uh)
        info.update(
            {
                "time_steps": n_steps,
                "dt": dt,
                "scheme": scheme,
                "matrix_assemblies": matrix_assemblies,
            }
        )

    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = {
        "family": "convection_diffusion",
        "resolution": resolution,
        "element_degree": degree,
        "dofs": V.dim(),
        **mesh_info(msh),
        "stabilization": "none" if supg is None else "supg",
        "max_cell_peclet": pe_max,
        **info,
        **system.info(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
