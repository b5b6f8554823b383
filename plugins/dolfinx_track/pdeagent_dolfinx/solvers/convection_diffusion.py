"""Convection-diffusion: [du/dt] - epsilon laplace(u) + beta . grad(u) = f.

Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is given.
epsilon (> 0) and the components of beta may be numbers or expressions of x, y[, z]
and t. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, and the natural condition epsilon du/dn = 0 on boundary
parts not named.

Discretisation, stabilisation and time stepping: the shared ``_ufl_families._CdSetup``
(same in the Firedrake track). Here time enters through fem.Constants, and the linear
systems are solved directly (MUMPS) by default, or with the PETSc options in
``petsc_options`` (e.g. GMRES + ILU).
"""

import time

import numpy as np
import ufl
from dolfinx import fem

from ._common import (
    GridSampler,
    build_domain,
    cell_diameters,
    cell_values,
    dirichlet_conditions,
    output_fields,
    to_ufl,
    write_solution,
)
from ._periodic import make_linear_system
from ._ufl_families import _CdSetup

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
    setup = _CdSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    cfg, degree = setup.cfg, setup.degree
    domain = build_domain(case_spec["domain"], setup.resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    setup.beta(msh.geometry.dim)

    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    dx = setup.measure(msh)
    t_new = fem.Constant(msh, setup.t_start)
    t_old = fem.Constant(msh, setup.t_start)

    eps, beta, f = setup.coefficients(msh, t_new)
    hK = cell_diameters(msh) / degree

    def set_time(value):
        t_new.value = value

    supg, pe_max = setup.stabilization(
        eps, beta, hK, set_time,
        lambda expr: float(np.min(cell_values(expr, msh))),
        lambda expr: float(np.max(cell_values(expr, msh))),
    )  # fmt: skip
    new = (eps, beta, f, *setup.boundary(v, domain, t_new, u))
    dirichlet = dirichlet_conditions(V, domain, setup.bc_spec, t=t_new, params=setup.params)
    bcs = [d.bc for d in dirichlet]
    uh = fem.Function(V)
    uh.name = "u"
    options = {"petsc_options": cfg["petsc_options"], "prefix": "convdiff_"}
    step_info = {}

    if not setup.transient:
        a, L = setup.steady_system(u, v, dx, new, supg)
        system = make_linear_system(a, L, bcs, uh, domain, setup.bc_spec, **options)
        system.solve()
    else:
        t0, n_steps, dt, time_dependent_matrix, start, main = setup.time_steps()
        k = fem.Constant(msh, dt)
        c0, c1, c2 = (fem.Constant(msh, 1.0), fem.Constant(msh, -1.0), fem.Constant(msh, 0.0))
        theta = fem.Constant(msh, 1.0)
        u_n, u_nm1 = fem.Function(V), fem.Function(V)
        t_new.value = t0
        u_n.interpolate(
            fem.Expression(
                to_ufl(case_spec["ic"]["u"], msh, t_new, setup.params) + 0.0 * hK,
                V.element.interpolation_points,
            )
        )
        u_nm1.x.array[:] = u_n.x.array
        a, L = setup.transient_system(
            u, v, dx, (u_n, u_nm1), k, (c0, c1, c2, theta), new, domain, t_old, supg
        )

        def set_coefficients(values):
            c0.value, c1.value, c2.value, theta.value = values

        set_coefficients(start)
        t_old.value, t_new.value = t0, t0 + dt
        system = make_linear_system(
            a, L, bcs, uh, domain, setup.bc_spec,
            reassemble_matrix=time_dependent_matrix, **options,
        )  # fmt: skip
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
        step_info = setup.step_info(n_steps, dt, matrix_assemblies)

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    track_info = {
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(msh.topology.dim).size_global,
    }
    info = setup.info(supg, pe_max, track_info, step_info, system.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
