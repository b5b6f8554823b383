"""Convection-diffusion: [du/dt] - epsilon laplace(u) + beta . grad(u) = f.

Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is given.
epsilon (> 0) and the components of beta may be numbers or expressions of x, y[, z]
and t. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, and the natural condition epsilon du/dn = 0 on boundary
parts not named.

Discretisation: continuous Lagrange elements of degree ``degree``. Stabilisation
(``stabilization``): "supg", "none" or "auto" (SUPG when the largest cell Peclet
number Pe_K = |beta| h_K / (2 epsilon) exceeds 1, with h_K = cell diameter / degree).
SUPG: the shared UFL forms (``_ufl_forms``, convection-diffusion) define its residual
and tau.
Time stepping (``scheme``): "bdf2" (default; started with one Crank-Nicolson step),
"crank_nicolson" or "backward_euler", constant step dt = (t_end - t0) / n with
n = ``n_steps`` or ceil((t_end - t0) / ``dt``). Forms are compiled once; time enters
through fem.Constants. The matrix is assembled and factorised once (twice for bdf2),
or every step when epsilon, beta or a Robin alpha depends on t. Linear systems: direct
(MUMPS) by default, or the PETSc options in ``petsc_options`` (e.g. GMRES + ILU).
Cell integrals use the quadrature degree ``quadrature_degree`` (default 2 * degree + 2):
UFL's estimate for expression data (sin, exp, ...) is far higher and makes assembly slow.
"""

import math
import time

import numpy as np
import ufl
from dolfinx import fem

from ._common import (
    GridSampler,
    boundary_terms,
    build_domain,
    cell_diameters,
    cell_values,
    dirichlet_conditions,
    merged_settings,
    output_fields,
    parameter,
    single_source,
    time_interval,
    to_ufl,
    write_solution,
)
from ._periodic import make_linear_system
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
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "stabilization": "auto",  # auto | supg | none
    "scheme": "bdf2",  # transient: bdf2 | crank_nicolson | backward_euler
    "dt": 0.01,  # transient: largest time step (the step is (t_end - t0) / n_steps)
    "n_steps": None,  # transient: number of steps (overrides dt when set)
    "quadrature_degree": None,  # cell integrals; None = 2 * degree + 2
    "petsc_options": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 128,
    "resolution_3d": 16,
    "degree": 3,
    "dt": 0.0005,
}


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
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    dim = msh.geometry.dim
    tdim = msh.topology.dim

    beta_value, no_convection = _cd_beta(params, dim)

    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    qdeg = cfg["quadrature_degree"]
    qdeg = 2 * degree + 2 if qdeg is None else int(qdeg)
    dx = ufl.Measure("dx", domain=msh, metadata={"quadrature_degree": qdeg})
    transient = interval is not None
    t_new = fem.Constant(msh, 0.0 if not transient else interval[0])
    t_old = fem.Constant(msh, 0.0 if not transient else interval[0])

    eps = parameter(params, "epsilon", msh, t_new)
    beta = parameter(params, "beta", msh, t_new)
    f_value = single_source("convection_diffusion", pde)
    f = to_ufl(f_value, msh, t_new, params)
    hK = cell_diameters(msh) / degree
    tau_s, pe = (None, None) if no_convection else _cd_tau_steady(beta, eps, hK)

    # cell Peclet numbers (and epsilon > 0) at a few times
    times = [0.0] if not transient else [interval[0], 0.5 * sum(interval), interval[1]]
    pe_max, eps_min = 0.0, math.inf
    for tv in times:
        t_new.value = tv
        eps_min = min(eps_min, float(np.min(cell_values(eps, msh))))
        if pe is not None:
            pe_max = max(pe_max, float(np.max(cell_values(pe, msh))))
    t_new.value = times[0]
    supg = tau_s if _cd_use_supg(stabilization, no_convection, eps_min, pe_max) else None

    robin_new, natural_new = boundary_terms(v, domain, bc_spec, t=t_new, params=params, u=u)
    dirichlet = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    bcs = [d.bc for d in dirichlet]
    uh = fem.Function(V)
    uh.name = "u"
    info = {}

    if not transient:
        a, L = _cd_steady_system(u, v, dx, (eps, beta, f, robin_new, natural_new), supg)
        system = make_linear_system(
            a,
            L,
            bcs,
            uh,
            domain,
            case_spec["bc"],
            petsc_options=cfg["petsc_options"],
            prefix="convdiff_",
        )
        system.solve()
    else:
        t0, n_steps, dt = _time_steps("convection_diffusion", case_spec, cfg, interval)
        k = fem.Constant(msh, dt)
        c0, c1, c2 = (fem.Constant(msh, 1.0), fem.Constant(msh, -1.0), fem.Constant(msh, 0.0))
        theta = fem.Constant(msh, 1.0)
        u_n, u_nm1 = fem.Function(V), fem.Function(V)
        t_new.value = t0
        u_n.interpolate(
            fem.Expression(
                to_ufl(case_spec["ic"]["u"], msh, t_new, params) + 0.0 * hK,
                V.element.interpolation_points,
            )
        )
        u_nm1.x.array[:] = u_n.x.array
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
            c0.value, c1.value, c2.value, theta.value = values

        set_coefficients(start)
        t_old.value, t_new.value = t0, t0 + dt
        system = make_linear_system(
            a,
            L,
            bcs,
            uh,
            domain,
            case_spec["bc"],
            petsc_options=cfg["petsc_options"],
            prefix="convdiff_",
            reassemble_matrix=time_dependent_matrix,
        )
        matrix_assemblies = 1
        for step in range(1, n_steps + 1):
            t_old.value, t_new.value = t0 + (step - 1) * dt, t0 + step * dt
            if step == 2 and start != main:
                set_coefficients(main)
                system.reassemble_matrix = True
            for d in dirichlet:
                d.update()
            system.solve()
            if system.reassemble_matrix:
                matrix_assemblies += 1
            system.reassemble_matrix = time_dependent_matrix
            u_nm1.x.array[:] = u_n.x.array
            u_n.x.array[:] = uh.x.array
        info.update(
            {
                "time_steps": n_steps,
                "dt": dt,
                "scheme": scheme,
                "matrix_assemblies": matrix_assemblies,
            }
        )

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = {
        "family": "convection_diffusion",
        "resolution": resolution,
        "element_degree": degree,
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(tdim).size_global,
        "stabilization": "none" if supg is None else "supg",
        "max_cell_peclet": pe_max,
        **info,
        **system.info(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
