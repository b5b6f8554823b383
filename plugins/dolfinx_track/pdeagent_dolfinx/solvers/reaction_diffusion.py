"""Reaction-diffusion: [du/dt] - epsilon laplace(u) + R(u) = f.

Reaction laws (``pde.params.reaction_law``), sigma = ``pde.params.sigma`` (default 1):
linear R = sigma u, cubic R = sigma u^3, allen_cahn R = sigma (u^3 - u), logistic
R = -sigma u (1 - u). epsilon and sigma may be numbers or expressions of x, y[, z]
and t. Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is
given. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, natural epsilon du/dn = 0 on boundary parts not named.

Discretisation: continuous Lagrange elements of degree ``degree``. Nonlinear laws:
Newton's method (PETSc SNES, backtracking line search, direct LU solves with MUMPS
by default) with the exact Jacobian; the steady iteration starts from ic.u when given
(it is an initial guess only), else from the harmonic extension of the Dirichlet data
(zero without Dirichlet conditions), with the Dirichlet values imposed. The
linear law is solved as a linear system (matrix factorised once when the data do not
depend on t). Time stepping (``scheme``): "bdf2" (default; started with one
Crank-Nicolson step), "crank_nicolson" (trapezoidal rule, R evaluated at both time
levels) or "backward_euler"; constant step dt = (t_end - t0) / n with
n = ``n_steps`` or ceil((t_end - t0) / ``dt``). Every time step is one nonlinear
solve started from the previous solution; the forms are compiled once and the
Newton problem object is created once and re-solved each step, time entering through
fem.Constants. Cell integrals use the quadrature degree ``quadrature_degree`` (default
2 * degree + 2): UFL's estimate for expression data (sin, exp, ...) is far higher and
makes assembly slow.
"""

import time

import numpy as np
import ufl
from dolfinx import fem
from dolfinx.fem import petsc as fem_petsc

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    cell_values,
    clear_options,
    dirichlet_conditions,
    interpolate_data,
    output_fields,
    write_solution,
)
from ._ufl_families import (
    _rd_lift_forms,
    _rd_newton_check,
    _rd_newton_info,
    _rd_newton_options,
    _RdSetup,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 8,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "scheme": "bdf2",  # transient: bdf2 | crank_nicolson | backward_euler
    "dt": 0.01,  # transient: largest time step (the step is (t_end - t0) / n_steps)
    "n_steps": None,  # transient: number of steps (overrides dt when set)
    "newton_rtol": 1e-10,  # SNES relative residual tolerance
    "newton_atol": 1e-12,  # SNES absolute residual tolerance
    "newton_max_it": 30,  # SNES iterations per solve
    "quadrature_degree": None,  # cell integrals; None = 2 * degree + 2
    "petsc_options": None,  # linear solves: None = direct solve (MUMPS)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 128,
    "resolution_3d": 16,
    "degree": 3,
    "dt": 0.0005,
    "newton_rtol": 1e-12,
    "newton_atol": 1e-14,
}


def _rd_dirichlet_lift(fn, bcs, dx):
    """fn = the harmonic extension of the Dirichlet data (natural condition elsewhere)."""
    V = fn.function_space
    zero = fem.Constant(V.mesh, 0.0)
    a, L = _rd_lift_forms(ufl.TrialFunction(V), ufl.TestFunction(V), dx, zero)
    LinearSystem(a, L, bcs, fn, prefix="reacdiff_lift_").solve()


class _RdNewton:
    """Newton (SNES) for F(u; v) = 0: the problem is built (forms compiled) once and
    re-solved from the current value of u; raises when an iteration does not converge."""

    def __init__(self, F, u, bcs, cfg):
        options = _rd_newton_options(cfg, "petsc_options")
        self.u = u
        self.bcs = bcs
        clear_options("reacdiff_newton_")
        self.problem = fem_petsc.NonlinearProblem(
            F, u, bcs=bcs, petsc_options_prefix="reacdiff_newton_", petsc_options=options
        )
        self.iterations = []
        self.linear_iterations = 0

    def solve(self, where=""):
        for bc in self.bcs:  # start from the Dirichlet values
            bc.set(self.u.x.array)
        self.u.x.scatter_forward()
        self.problem.solve()
        snes = self.problem.solver
        _rd_newton_check(snes.getConvergedReason(), snes.getIterationNumber(), where)
        self.iterations.append(int(snes.getIterationNumber()))
        self.linear_iterations += int(snes.getLinearSolveIterations())
        self.u.x.scatter_forward()

    def info(self):
        ksp = self.problem.solver.getKSP()
        return _rd_newton_info(self.iterations, self.linear_iterations, ksp)


def solve(case_spec, settings=None):
    started = time.perf_counter()
    setup = _RdSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    cfg, params, linear, ic = setup.cfg, setup.params, setup.linear, setup.ic
    domain = build_domain(case_spec["domain"], setup.resolution, degree=cfg["geometry_degree"])
    msh = domain.msh

    V = fem.functionspace(msh, ("Lagrange", setup.degree))
    v = ufl.TestFunction(V)
    dx = setup.measure(msh)
    uh = fem.Function(V)
    uh.name = "u"
    w = ufl.TrialFunction(V) if linear else uh  # the unknown in the residual form

    t_new = fem.Constant(msh, setup.t_start)
    t_old = fem.Constant(msh, setup.t_start)

    def set_time(value):
        t_new.value = value

    new = setup.coefficients(
        msh, t_new, set_time, lambda expr: float(np.min(cell_values(expr, msh)))
    )
    dirichlet = dirichlet_conditions(V, domain, setup.bc_spec, t=t_new, params=params)
    bcs = [d.bc for d in dirichlet]
    step_info = {}

    def make_solver(F, reassemble):
        if linear:
            a, L = ufl.system(F)
            options = {"petsc_options": cfg["petsc_options"], "prefix": "reacdiff_linear_"}
            return LinearSystem(a, L, bcs, uh, reassemble_matrix=reassemble, **options)
        return _RdNewton(F, uh, bcs, cfg)

    if not setup.transient:
        if "u" in ic and not linear:
            interpolate_data(uh, ic["u"], msh, t_new, params)
        elif bcs and not linear:
            _rd_dirichlet_lift(uh, bcs, dx)
        solver = make_solver(setup.steady_residual(w, v, dx, domain, t_new, new), False)
        solver.solve()
    else:
        t0, n_steps, dt, time_dependent_matrix, start, main = setup.time_steps()
        k = fem.Constant(msh, dt)
        c0, c1, c2 = (fem.Constant(msh, 1.0), fem.Constant(msh, -1.0), fem.Constant(msh, 0.0))
        theta = fem.Constant(msh, 1.0)
        u_n, u_nm1 = fem.Function(V), fem.Function(V)
        interpolate_data(u_n, ic["u"], msh, t_new, params)
        u_nm1.x.array[:] = u_n.x.array
        uh.x.array[:] = u_n.x.array
        F = setup.transient_residual(
            w, v, dx, domain, (u_n, u_nm1), k, (c0, c1, c2, theta), new, (t_new, t_old)
        )

        def set_coefficients(values):
            c0.value, c1.value, c2.value, theta.value = values

        set_coefficients(start)
        t_old.value, t_new.value = t0, t0 + dt
        solver = make_solver(F, time_dependent_matrix)
        for step in range(1, n_steps + 1):
            t_old.value, t_new.value = t0 + (step - 1) * dt, t0 + step * dt
            if step == 2 and start != main:
                set_coefficients(main)
                if linear:
                    solver.reassemble_matrix = True
            for d in dirichlet:
                d.update()
            if linear:
                solver.solve()
                solver.reassemble_matrix = time_dependent_matrix
            else:
                solver.solve(where=f" in time step {step} (t = {float(t_new.value):g})")
            u_nm1.x.array[:] = u_n.x.array
            u_n.x.array[:] = uh.x.array
        step_info = {"time_steps": n_steps, "dt": dt, "scheme": setup.scheme}

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    track_info = {
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(msh.topology.dim).size_global,
    }
    info = setup.info(track_info, step_info, solver.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
