"""Reaction-diffusion: [du/dt] - epsilon laplace(u) + R(u) = f.

Reaction laws (``pde.params.reaction_law``), sigma = ``pde.params.sigma`` (stated by
every case): linear R = sigma u, cubic R = sigma u^3, allen_cahn R = sigma (u^3 - u),
logistic R = -sigma u (1 - u). epsilon and sigma may be numbers or expressions of
x, y[, z] and t. Steady, or transient on (t0, t_end] with u(t0) = ic.u when
``pde.time`` is given. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g,
Robin epsilon du/dn + alpha u = g, natural epsilon du/dn = 0 on boundary parts not
named; periodic conditions are rejected.

Discretisation: continuous Lagrange elements of degree ``degree``. Nonlinear laws:
Newton's method (Firedrake's NonlinearVariationalSolver, PETSc SNES newtonls with a
backtracking line search, direct LU solves with MUMPS by default) with the exact
Jacobian; a solve that does not converge raises. The steady iteration starts from
ic.u when given (an initial guess only), else from the harmonic extension of the
Dirichlet data (zero without Dirichlet conditions), with the Dirichlet values imposed.
The linear law is solved as a linear system (matrix factorised once when the data do
not depend on t). Time stepping (``scheme``): "bdf2" (default; started with one
Crank-Nicolson step), "crank_nicolson" (trapezoidal rule, R evaluated at both time
levels) or "backward_euler"; constant step dt = (t_end - t0) / n with n = ``n_steps``
or ceil((t_end - t0) / ``dt``). Every time step is one nonlinear solve started from
the previous solution; forms are compiled once and the solver object is re-solved
each step, time entering through ``fd.Constant``s. Cell integrals use the quadrature
degree ``quadrature_degree`` (default 2 * degree + 2).
"""

import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    dirichlet_conditions,
    mesh_info,
    output_fields,
    to_ufl,
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
    "scheme": "bdf2",  # transient: bdf2 | crank_nicolson | backward_euler
    "dt": 0.01,  # transient: largest time step (the step is (t_end - t0) / n_steps)
    "n_steps": None,  # transient: number of steps (overrides dt when set)
    "newton_rtol": 1e-10,  # SNES relative residual tolerance
    "newton_atol": 1e-12,  # SNES absolute residual tolerance
    "newton_max_it": 30,  # SNES iterations per solve
    "quadrature_degree": None,  # cell integrals; None = 2 * degree + 2
    "solver_parameters": None,  # linear solves: None = direct solve (MUMPS)
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


def _rd_min_value(expr, msh):
    """Smallest cell-midpoint value of a scalar UFL expression (over all processes)."""
    fn = fd.Function(fd.FunctionSpace(msh, "DG", 0))
    fn.interpolate(expr + 0.0 * ufl.SpatialCoordinate(msh)[0])
    with fn.dat.vec_ro as vec:
        return float(vec.min()[1])


def _rd_dirichlet_lift(fn, bcs, dx):
    """fn = the harmonic extension of the Dirichlet data (natural condition elsewhere)."""
    V = fn.function_space()
    a, L = _rd_lift_forms(fd.TrialFunction(V), fd.TestFunction(V), dx, fd.Constant(0.0))
    LinearSystem(a, L, fn, bcs, prefix="reacdiff_lift_").solve()


class _RdNewton:
    """Newton (SNES) for F(u; v) = 0: the problem is built (forms compiled) once and
    re-solved from the current value of u; raises when an iteration does not converge."""

    def __init__(self, F, u, bcs, cfg):
        parameters = _rd_newton_options(cfg, "solver_parameters")
        self.u = u
        problem = fd.NonlinearVariationalProblem(F, u, bcs=bcs, J=fd.derivative(F, u))
        self.solver = fd.NonlinearVariationalSolver(
            problem, solver_parameters=parameters, options_prefix="reacdiff_newton_"
        )
        self.iterations = []
        self.linear_iterations = 0

    def solve(self, where=""):
        # Firedrake imposes the Dirichlet values on u before the iteration starts
        snes = self.solver.snes
        try:
            self.solver.solve()
            reason = snes.getConvergedReason()
        except fd.ConvergenceError:
            reason = snes.getConvergedReason()
            if reason > 0:  # not SNES: a failure Firedrake found elsewhere
                raise
        _rd_newton_check(reason, snes.getIterationNumber(), where)
        if not np.all(np.isfinite(self.u.dat.data_ro)):
            raise RuntimeError(f"reaction_diffusion: non-finite Newton solution{where}")
        self.iterations.append(int(snes.getIterationNumber()))
        self.linear_iterations += int(snes.getLinearSolveIterations())

    def info(self):
        ksp = self.solver.snes.getKSP()
        return _rd_newton_info(self.iterations, self.linear_iterations, ksp)


class _RdLinear:
    """The linear law: one linear system per coefficient set (a BDF2 run factorises its
    Crank-Nicolson start-up matrix and its BDF2 matrix once each)."""

    def __init__(self, F, u, bcs, cfg, reassemble):
        self.args = (fd.lhs(F), fd.rhs(F), u, bcs)
        self.cfg = cfg
        self.reassemble = reassemble
        self.systems = {}
        self.current = None

    def select(self, key):
        if key not in self.systems:
            self.systems[key] = LinearSystem(
                *self.args,
                solver_parameters=self.cfg["solver_parameters"],
                prefix=f"reacdiff_linear{len(self.systems)}_",
                constant_matrix=not self.reassemble,
            )
        self.current = self.systems[key]

    def solve(self, where=""):
        self.current.solve()
        if not np.all(np.isfinite(self.current.u.dat.data_ro)):
            raise RuntimeError(f"reaction_diffusion: non-finite solution{where}")

    def info(self):
        return {
            **self.current.info(),
            "linear_iterations": sum(s.iterations for s in self.systems.values()),
        }


def solve(case_spec, settings=None):
    started = time.perf_counter()
    setup = _RdSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    cfg, params, linear, ic = setup.cfg, setup.params, setup.linear, setup.ic
    domain = build_domain(case_spec["domain"], setup.resolution)
    msh = domain.msh

    V = fd.FunctionSpace(msh, "CG", setup.degree)
    v = fd.TestFunction(V)
    dx = setup.measure(msh)
    uh = fd.Function(V, name="u")
    w = fd.TrialFunction(V) if linear else uh  # the unknown in the residual form

    t_new = fd.Constant(setup.t_start)
    t_old = fd.Constant(setup.t_start)

    new = setup.coefficients(msh, t_new, t_new.assign, lambda expr: _rd_min_value(expr, msh))
    bcs = dirichlet_conditions(V, domain, setup.bc_spec, t=t_new, params=params)
    step_info = {}

    def make_solver(F, reassemble):
        if linear:
            return _RdLinear(F, uh, bcs, cfg, reassemble)
        return _RdNewton(F, uh, bcs, cfg)

    if not setup.transient:
        if "u" in ic and not linear:
            uh.interpolate(to_ufl(ic["u"], msh, t_new, params))
        elif bcs and not linear:
            _rd_dirichlet_lift(uh, bcs, dx)
        solver = make_solver(setup.steady_residual(w, v, dx, domain, t_new, new), False)
        if linear:
            solver.select("steady")
        solver.solve()
    else:
        t0, n_steps, dt, time_dependent_matrix, start, main = setup.time_steps()
        k = fd.Constant(dt)
        c0, c1, c2, theta = (fd.Constant(1.0), fd.Constant(-1.0), fd.Constant(0.0),
                             fd.Constant(1.0))  # fmt: skip
        u_n, u_nm1 = fd.Function(V), fd.Function(V)
        u_n.interpolate(to_ufl(ic["u"], msh, t_new, params))
        u_nm1.assign(u_n)
        uh.assign(u_n)
        F = setup.transient_residual(
            w, v, dx, domain, (u_n, u_nm1), k, (c0, c1, c2, theta), new, (t_new, t_old)
        )

        def set_coefficients(values):
            for constant, value in zip((c0, c1, c2, theta), values, strict=True):
                constant.assign(value)

        set_coefficients(start)
        solver = make_solver(F, time_dependent_matrix)
        if linear:
            solver.select(start)
        for step in range(1, n_steps + 1):
            t_old.assign(t0 + (step - 1) * dt)
            t_new.assign(t0 + step * dt)  # the Dirichlet data follow when applied
            if step == 2 and start != main:
                set_coefficients(main)
                if linear:
                    solver.select(main)
            solver.solve(where=f" in time step {step} (t = {t0 + step * dt:g})")
            u_nm1.assign(u_n)
            u_n.assign(uh)
        step_info = {"time_steps": n_steps, "dt": dt, "scheme": setup.scheme}

    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = setup.info({"dofs": V.dim(), **mesh_info(msh)}, step_info, solver.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
