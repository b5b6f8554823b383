"""Heat: du/dt - div(kappa grad u) = f, u(t0) = ic.u, with Dirichlet, Neumann
(kappa du/dn = g) and Robin (kappa du/dn + alpha u = g) boundary parts whose data may
depend on t; unnamed boundary parts carry kappa du/dn = 0. On a periodic_square the
mesh itself is periodic.

kappa may be a constant or an expression in x, y(, z) and t. Continuous Lagrange
elements of degree ``degree``; implicit time stepping with a constant step by the shared
``_ufl_families._heat_march`` (backward_euler, crank_nicolson, bdf2).

All forms are compiled once: the data depend on time only through two ``fd.Constant``
time levels (t_old, t_new); Firedrake re-interpolates the Dirichlet data whenever the
conditions are applied. Each matrix is assembled and factorised once (direct LU with
MUMPS by default) unless kappa or a Robin coefficient depends on t, in which case it
is reassembled every step.
"""

import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    depends_on_t,
    dirichlet_conditions,
    mesh_info,
    output_fields,
    to_ufl,
    write_solution,
)
from ._ufl_families import _heat_begin, _heat_info, _heat_march
from ._ufl_forms import _heat_step_forms

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 10,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "dt": 0.02,  # time step (rounded down so that the steps end exactly at t_end)
    "n_steps": None,  # number of time steps; overrides dt when given
    "scheme": "bdf2",  # "backward_euler" | "crank_nicolson" | "bdf2"
    "bdf2_startup": "backward_euler",  # first BDF2 step: "backward_euler" | "crank_nicolson"
    "startup_substeps": 4,  # backward-Euler substeps of the first BDF2 step
    "quadrature_degree": None,  # None = 2 * degree + 2 (all cell and facet integrals)
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 48,
    "resolution_3d": 12,
    "degree": 3,
    "dt": 0.001,
    "scheme": "bdf2",
}


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg, steps, resolution = _heat_begin(
        case_spec, DEFAULTS, SETTINGS if settings is None else settings
    )
    t0, _, _, dt = steps
    params = case_spec["pde"].get("params") or {}
    bc_spec = case_spec["bc"]
    domain = build_domain(case_spec["domain"], resolution, periodic=bc_spec.get("periodic"))
    msh = domain.msh
    V = fd.FunctionSpace(msh, "CG", cfg["degree"])
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    t_new = fd.Constant(t0)
    t_old = fd.Constant(t0)
    k = fd.Constant(dt)
    u_n, u_nm1, uh = fd.Function(V), fd.Function(V), fd.Function(V)
    dx = ufl.dx(domain=msh)
    q = cfg["quadrature_degree"] or 2 * cfg["degree"] + 2

    # the matrix depends on t only through kappa and the Robin coefficients
    time_dependent = depends_on_t(params["kappa"]) or any(
        depends_on_t(entry["alpha"]) for entry in bc_spec.get("robin") or []
    )
    bcs = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    systems = []

    def make_system(method, h, name):
        levels = (u_n, u_nm1, t_old, t_new)
        a, L = _heat_step_forms(u, v, dx, domain, case_spec, levels, method, h, q)
        system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                              prefix=f"heat_{name}_",
                              constant_matrix=not time_dependent)  # fmt: skip
        systems.append(system)
        return system

    def advance(system, t_from, t_to):
        t_old.assign(t_from)
        t_new.assign(t_to)  # the Dirichlet data follow when the solver applies them
        system.solve()
        if not np.all(np.isfinite(uh.dat.data_ro)):
            raise RuntimeError(f"heat: non-finite solution at t = {t_to}")
        u_nm1.assign(u_n)
        u_n.assign(uh)

    t_old.assign(t0)
    u_n.interpolate(to_ufl(case_spec["ic"]["u"], msh, t_old, params))
    u_nm1.assign(u_n)
    uh.assign(u_n)
    startup = _heat_march(cfg, steps, k, fd.Constant, make_system, advance,
                          lambda: u_n.copy(deepcopy=True), u_nm1.assign)  # fmt: skip

    values = GridSampler(msh, case_spec["eval_grid"]).values(u_n)[0]
    fields = output_fields(case_spec, {"u": values})
    info = _heat_info(cfg, resolution, steps, startup, {"dofs": V.dim(), **mesh_info(msh)},
                      time_dependent, systems,
                      {"solver_parameters": cfg["solver_parameters"]})  # fmt: skip
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
