"""Convection-diffusion: [du/dt] - epsilon laplace(u) + beta . grad(u) = f.

Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is given.
epsilon (> 0) and the components of beta may be numbers or expressions of x, y[, z]
and t. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, and the natural condition epsilon du/dn = 0 on boundary
parts not named. On a periodic_square the mesh itself is periodic.

Discretisation: continuous Lagrange elements of degree ``degree``. Stabilisation
(``stabilization``): "supg", "none" or "auto" (SUPG when the largest cell Peclet
number Pe_K = |beta| h_K / (2 epsilon) exceeds 1, with h_K = cell diameter / degree).
SUPG adds sum_K tau_K (r(u), beta . grad v)_K with the full (consistent) residual r
of the discrete equation (time difference, both time levels of the theta scheme,
-div(epsilon grad u) elementwise) and

    tau_s = h_K / (2 |beta|) * (coth(Pe_K) - 1 / Pe_K)   (-> h_K^2 / (12 epsilon) as Pe -> 0)
    tau   = tau_s                                         (steady)
    tau   = 1 / sqrt(tau_s^-2 + (2 / dt)^2)               (transient)

(the transient value is a smooth min(tau_s, dt / 2), as in Tezduyar's definition).
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
    check_scalar_bc,
    depends_on_t,
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

_CD_SCHEMES = ("bdf2", "crank_nicolson", "backward_euler")
_CD_STABILIZATIONS = ("auto", "supg", "none")


def _cd_tau_steady(beta, eps, hK):
    """h/(2|beta|) (coth(Pe) - 1/Pe); series h^2/(12 eps) (1 - Pe^2/15) for small Pe."""
    bnorm = ufl.sqrt(ufl.dot(beta, beta))
    pe = bnorm * hK / (2.0 * eps)
    e2 = ufl.exp(-2.0 * pe)
    coth = (1.0 + e2) / (1.0 - e2)
    large = hK / (2.0 * bnorm) * (coth - 1.0 / pe)
    small = hK**2 / (12.0 * eps) * (1.0 - pe**2 / 15.0)
    return ufl.conditional(ufl.gt(pe, 1e-2), large, small), pe


def _cd_cell_extreme(expr, msh, Q, op):
    """min or max (``op``) over all cells of a scalar UFL expression at the cell midpoints
    (DG0 interpolation), reduced over the mesh's communicator."""
    from mpi4py import MPI

    values = fd.Function(Q).interpolate(expr).dat.data_ro
    if op == "min":
        return msh.comm.allreduce(float(values.min(initial=math.inf)), op=MPI.MIN)
    return msh.comm.allreduce(float(values.max(initial=-math.inf)), op=MPI.MAX)


def _cd_check(case_spec, cfg):
    params = case_spec["pde"].get("params") or {}
    check_scalar_bc("convection_diffusion", case_spec["bc"])
    for name in ("epsilon", "beta"):
        if name not in params:
            raise KeyError(f"convection_diffusion: case_spec.pde.params has no {name!r}")
    if cfg["stabilization"] not in _CD_STABILIZATIONS:
        raise ValueError(
            f"unknown stabilization {cfg['stabilization']!r}; one of {_CD_STABILIZATIONS}"
        )
    if cfg["scheme"] not in _CD_SCHEMES:
        raise ValueError(f"unknown time scheme {cfg['scheme']!r}; one of {_CD_SCHEMES}")


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    _cd_check(case_spec, cfg)
    pde, bc_spec = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}
    stabilization, scheme = cfg["stabilization"], cfg["scheme"]
    interval = time_interval(case_spec)
    degree = int(cfg["degree"])

    is_3d = len(case_spec["domain"].get("bounds") or []) == 3 or (
        case_spec["domain"]["type"] == "unit_cube"
    )
    resolution = cfg["resolution_3d"] if is_3d else cfg["resolution"]
    domain = build_domain(case_spec["domain"], resolution, periodic=bc_spec.get("periodic"))
    msh = domain.msh
    dim = msh.geometric_dimension

    beta_value = params["beta"]
    if not isinstance(beta_value, (list, tuple)) or len(beta_value) != dim:
        raise ValueError(
            f"convection_diffusion: pde.params.beta must be a list of {dim} numbers or "
            f"expressions, got {beta_value!r}"
        )

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
    # beta given as the number 0 in every component: pure diffusion, nothing to stabilise
    no_convection = all(
        isinstance(b, (int, float)) and not isinstance(b, bool) and b == 0 for b in beta_value
    )
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
    if not eps_min > 0.0:
        raise ValueError(f"convection_diffusion: epsilon must be positive (min {eps_min:g})")
    use_supg = not no_convection and (
        stabilization == "supg" or (stabilization == "auto" and pe_max > 1.0)
    )

    def operator(w, e, b, ff):
        """Cell part of the weak operator eps grad w . grad v + (b . grad w) v - f v."""
        return (e * ufl.inner(ufl.grad(w), ufl.grad(v)) + ufl.dot(b, ufl.grad(w)) * v - ff * v) * dx

    def strong(w, e, b, ff):
        return -ufl.div(e * ufl.grad(w)) + ufl.dot(b, ufl.grad(w)) - ff

    robin_new, natural_new = boundary_terms(v, domain, bc_spec, t=t_new, params=params, u=u)
    bcs = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    uh = fd.Function(V, name="u")
    info = {}

    if not transient:
        F = operator(u, eps, beta, f) + robin_new - natural_new
        if use_supg:
            F += tau_s * strong(u, eps, beta, f) * ufl.dot(beta, ufl.grad(v)) * dx
        a, L = ufl.system(F)
        system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                              prefix="convdiff_")  # fmt: skip
        system.solve()
    else:
        t0, t_end = interval
        if not t_end > t0:
            raise ValueError(f"convection_diffusion: empty time interval {interval}")
        if cfg["n_steps"] is not None:
            n_steps = int(cfg["n_steps"])
        else:
            n_steps = math.ceil((t_end - t0) / float(cfg["dt"]) - 1e-9)
        n_steps = max(n_steps, 1)
        dt = (t_end - t0) / n_steps
        if case_spec.get("ic") is None or "u" not in case_spec["ic"]:
            raise KeyError("convection_diffusion: a transient case must give ic.u")
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
        dudt = (c0 * u + c1 * u_n + c2 * u_nm1) / k
        F = (
            dudt * v * dx
            + theta * (operator(u, eps, beta, f) + robin_new - natural_new)
            + (1.0 - theta) * (operator(u_n, eps_old, beta_old, f_old) + robin_old - natural_old)
        )
        if use_supg:
            tau = 1.0 / ufl.sqrt(tau_s ** (-2) + (2.0 / k) ** 2)
            residual = (
                dudt
                + theta * strong(u, eps, beta, f)
                + (1.0 - theta) * strong(u_n, eps_old, beta_old, f_old)
            )
            F += tau * residual * ufl.dot(beta, ufl.grad(v)) * dx
        a, L = ufl.system(F)
        time_dependent_matrix = any(
            depends_on_t(item)
            for item in [params["epsilon"], beta_value]
            + [e["alpha"] for e in bc_spec.get("robin") or []]
        )
        main = {
            "bdf2": (1.5, -2.0, 0.5, 1.0),
            "crank_nicolson": (1.0, -1.0, 0.0, 0.5),
            "backward_euler": (1.0, -1.0, 0.0, 1.0),
        }[scheme]
        start = (1.0, -1.0, 0.0, 0.5) if scheme == "bdf2" else main  # bdf2: one CN step

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
        "stabilization": "supg" if use_supg else "none",
        "max_cell_peclet": pe_max,
        **info,
        **system.info(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
