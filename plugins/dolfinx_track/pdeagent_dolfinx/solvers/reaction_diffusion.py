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

import math
import time

import numpy as np
import ufl
from dolfinx import fem
from dolfinx.fem import petsc as fem_petsc

from ._common import (
    DIRECT,
    GridSampler,
    LinearSystem,
    build_domain,
    cell_values,
    clear_options,
    dirichlet_conditions,
    interpolate_data,
    merged_settings,
    output_fields,
    time_interval,
    write_solution,
)
from ._ufl_forms import (
    _rd_check,
    _rd_coefficients,
    _rd_residual,
    _rd_time_dependent_matrix,
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
    p, q = ufl.TrialFunction(V), ufl.TestFunction(V)
    a = ufl.inner(ufl.grad(p), ufl.grad(q)) * dx
    L = fem.Constant(V.mesh, 0.0) * q * dx
    LinearSystem(a, L, bcs, fn, prefix="reacdiff_lift_").solve()


class _RdNewton:
    """Newton (SNES) for F(u; v) = 0: the problem is built (forms compiled) once and
    re-solved from the current value of u; raises when an iteration does not converge."""

    def __init__(self, F, u, bcs, cfg):
        options = {
            "snes_type": "newtonls",
            "snes_linesearch_type": "bt",
            "snes_rtol": cfg["newton_rtol"],
            "snes_atol": cfg["newton_atol"],
            "snes_max_it": int(cfg["newton_max_it"]),
        }
        # the linear solver: petsc_options replace the direct solve (not merged with it)
        options.update(cfg["petsc_options"] or DIRECT)
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
        reason = snes.getConvergedReason()
        if reason <= 0:
            raise RuntimeError(
                f"reaction_diffusion: Newton did not converge{where} (SNES reason {reason}, "
                f"{snes.getIterationNumber()} iterations); try a smaller dt or a better "
                "initial guess"
            )
        self.iterations.append(int(snes.getIterationNumber()))
        self.linear_iterations += int(snes.getLinearSolveIterations())
        self.u.x.scatter_forward()

    def info(self):
        ksp = self.problem.solver.getKSP()
        return {
            "newton_iterations": int(sum(self.iterations)),
            "max_newton_iterations": int(max(self.iterations)),
            "ksp_type": ksp.getType(),
            "pc_type": ksp.getPC().getType(),
            "linear_iterations": self.linear_iterations,
        }


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    bc_spec = case_spec["bc"]
    law = _rd_check(case_spec, cfg)
    interval = time_interval(case_spec)
    transient = interval is not None
    scheme = cfg["scheme"]
    degree = int(cfg["degree"])
    resolution = _scalar_resolution(case_spec, cfg)
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    tdim = msh.topology.dim

    V = fem.functionspace(msh, ("Lagrange", degree))
    v = ufl.TestFunction(V)
    qdeg = cfg["quadrature_degree"]
    qdeg = 2 * degree + 2 if qdeg is None else int(qdeg)
    dx = ufl.Measure("dx", domain=msh, metadata={"quadrature_degree": qdeg})
    uh = fem.Function(V)
    uh.name = "u"
    linear = law == "linear"
    w = ufl.TrialFunction(V) if linear else uh  # the unknown in the residual form

    t_new = fem.Constant(msh, 0.0 if not transient else interval[0])
    t_old = fem.Constant(msh, 0.0 if not transient else interval[0])

    new = _rd_coefficients(case_spec, law, msh, t_new)
    eps = new[0]
    times = [interval[0], 0.5 * sum(interval), interval[1]] if transient else [0.0]
    eps_min = math.inf
    for tv in times:
        t_new.value = tv
        eps_min = min(eps_min, float(np.min(cell_values(eps, msh))))
    t_new.value = times[0]
    if not eps_min > 0.0:
        raise ValueError(f"reaction_diffusion: epsilon must be positive (min {eps_min:g})")
    dirichlet = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    bcs = [d.bc for d in dirichlet]
    ic = case_spec.get("ic") or {}
    info = {}

    def make_solver(F, reassemble):
        if linear:
            a, L = ufl.system(F)
            return LinearSystem(
                a,
                L,
                bcs,
                uh,
                petsc_options=cfg["petsc_options"],
                prefix="reacdiff_linear_",
                reassemble_matrix=reassemble,
            )
        return _RdNewton(F, uh, bcs, cfg)

    if not transient:
        if "u" in ic and not linear:
            interpolate_data(uh, ic["u"], msh, t_new, params)
        elif bcs and not linear:
            _rd_dirichlet_lift(uh, bcs, dx)
        F = _rd_residual(w, v, dx, domain, case_spec, t_new, new, w)
        solver = make_solver(F, False)
        solver.solve()
    else:
        t0, n_steps, dt = _time_steps("reaction_diffusion", case_spec, cfg, interval)
        k = fem.Constant(msh, dt)
        c0, c1, c2 = (fem.Constant(msh, 1.0), fem.Constant(msh, -1.0), fem.Constant(msh, 0.0))
        theta = fem.Constant(msh, 1.0)
        u_n, u_nm1 = fem.Function(V), fem.Function(V)
        interpolate_data(u_n, ic["u"], msh, t_new, params)
        u_nm1.x.array[:] = u_n.x.array
        uh.x.array[:] = u_n.x.array
        old = _rd_coefficients(case_spec, law, msh, t_old)
        F = (
            (c0 * w + c1 * u_n + c2 * u_nm1) / k * v * dx
            + theta * _rd_residual(w, v, dx, domain, case_spec, t_new, new, w)
            + (1.0 - theta) * _rd_residual(u_n, v, dx, domain, case_spec, t_old, old, u_n)
        )
        start, main = _step_coefficients(scheme)

        def set_coefficients(values):
            c0.value, c1.value, c2.value, theta.value = values

        time_dependent_matrix = _rd_time_dependent_matrix(params, bc_spec)
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
        info.update({"time_steps": n_steps, "dt": dt, "scheme": scheme})

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = {
        "family": "reaction_diffusion",
        "reaction_law": law,
        "resolution": resolution,
        "element_degree": degree,
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(tdim).size_global,
        **info,
        **solver.info(),
    }
    if linear:
        info["newton_iterations"] = 0
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
