"""Scalar Burgers: du/dt + u (b . grad u) = nu laplace(u) + f, with Dirichlet, Neumann
(nu du/dn = g) and Robin (nu du/dn + alpha u = g) boundary parts.

nu and b (one entry per component) may be numbers or expressions in x, y[, z], t; every
boundary datum and f may depend on t. Continuous Lagrange elements of degree ``degree``.

Time stepping (setting ``scheme``), all implicit and solved by Newton's method:
  * ``"bdf2"`` (default): second-order backward differentiation; the first step is a
    backward-Euler step (its O(dt^2) local error keeps the scheme second order);
  * ``"crank_nicolson"``: trapezoidal rule (theta = 1/2), second order, not dissipative;
  * ``"bdf3"``: third order (started by one Crank-Nicolson and one BDF2 step); used by the
    high-fidelity REFERENCE settings;
  * ``"backward_euler"``: first order.
BDF coefficients, theta, the times t (new level) and t_old (previous level), dt and the
previous solutions are Constants/Functions, so the residual and Jacobian are compiled once;
one ``NonlinearProblem`` (PETSc SNES, Newton with backtracking line search, direct LU by
default) is created and re-solved every step. The Newton initial iterate u* is the
polynomial extrapolation of the previous solutions (with the new Dirichlet values).

Stabilisation (setting ``stabilization``): ``"supg"`` adds the residual-based streamline term
``sum_K tau * r(u) * (u* b) . grad(v)`` where r is the strong residual of the time-discrete
equation (time difference, u b.grad u, -nu laplace(u), -f, at the same time levels as the
Galerkin part), so the term is consistent, with
``tau = ((2/dt)^2 + (2|u* b|/h)^2 + (12 nu/h^2)^2)^(-1/2)`` and h = cell diameter / degree.
The streamline velocity and tau are taken from u* (fixed within a step: a cheaper Jacobian,
still exact Newton for this form). ``"auto"`` (default) applies the term only on cells whose
cell Peclet number |u* b| h / (2 nu), evaluated at the cell midpoint, exceeds 1 (a DG0
indicator computed once per step, fixed during the Newton solve so Newton keeps its quadratic
convergence); ``"none"`` is plain Galerkin.

A spatially varying nu is treated exactly as stated: nu laplace(u) (not div(nu grad u)), i.e.
the weak form carries the extra term (grad nu . grad u) v.
"""

import math
import time

import numpy as np
import ufl
from dolfinx import fem
from dolfinx.fem import petsc as fem_petsc
from mpi4py import MPI
from petsc4py import PETSc

from ._common import (
    DIRECT,
    GridSampler,
    boundary_terms,
    build_domain,
    cell_diameters,
    dirichlet_conditions,
    merged_settings,
    output_fields,
    parameter,
    time_interval,
    to_ufl,
    write_solution,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "dt": 0.01,  # time step (adjusted down so that the interval is an integer number of steps)
    "n_steps": None,  # number of time steps; overrides dt when given
    "scheme": "bdf2",  # "bdf2" | "bdf3" | "crank_nicolson" | "backward_euler"
    "stabilization": "auto",  # "auto" (SUPG where cell Peclet > 1) | "supg" | "none"
    "newton_rtol": 1e-9,
    "newton_atol": 1e-12,
    "newton_max_it": 25,
    "quadrature_degree": None,  # None: max(3p - 1, 2p + 1) + geometry_degree - 1
    "petsc_options": None,  # linear solver in Newton; None = direct LU (PETSc serial, MUMPS MPI)
}
REFERENCE = {  # a literal dict: bundle.module_settings reads it with ast.literal_eval
    "resolution": 48,
    "degree": 3,
    "geometry_degree": 2,
    "dt": 0.0025,
    "n_steps": None,
    "scheme": "bdf3",
    "stabilization": "auto",
    "newton_rtol": 1e-11,
    "newton_atol": 1e-13,
    "newton_max_it": 25,
    "quadrature_degree": None,
    "petsc_options": None,
}

# serial default: PETSc's own sparse LU (nested dissection) beats MUMPS on these small systems
_BURGERS_SERIAL_LU = {
    "ksp_type": "preonly",
    "pc_type": "lu",
    "pc_factor_mat_solver_type": "petsc",
    "pc_factor_mat_ordering_type": "nd",
}
_BURGERS_SCHEMES = ("bdf2", "bdf3", "crank_nicolson", "backward_euler")
_BURGERS_BDF = {
    1: (1.0, -1.0, 0.0, 0.0),
    2: (1.5, -2.0, 0.5, 0.0),
    3: (11.0 / 6.0, -3.0, 1.5, -1.0 / 3.0),
}


def _burgers_step_rule(scheme, step):
    """(BDF coefficients, theta, order used for the initial-iterate extrapolation) of a step.

    BDF2 starts with one backward-Euler step (local error O(dt^2): still second order
    overall); BDF3 starts with a Crank-Nicolson and a BDF2 step (local errors O(dt^3))."""
    if scheme == "backward_euler":
        return _BURGERS_BDF[1], 1.0, 1
    if scheme == "crank_nicolson":
        return _BURGERS_BDF[1], 0.5, 2
    if scheme == "bdf2":
        return (_BURGERS_BDF[1], 1.0, 1) if step == 1 else (_BURGERS_BDF[2], 1.0, 2)
    if step == 1:
        return _BURGERS_BDF[1], 0.5, 1
    if step == 2:
        return _BURGERS_BDF[2], 1.0, 2
    return _BURGERS_BDF[3], 1.0, 3


_BURGERS_STABILIZATION = ("auto", "supg", "none")


def _burgers_forcing(pde, msh, t, params):
    forcing = pde.get("forcing") or {}
    if not forcing:
        return fem.Constant(msh, PETSc.ScalarType(0.0))
    if len(forcing) == 1:
        (value,) = forcing.values()
        return to_ufl(value, msh, t, params)
    extra = sorted(k for k in forcing if k != "f")
    raise ValueError(
        f"burgers has one source term f; pde.forcing has {sorted(forcing)} "
        f"(additional terms {extra} have no place in the equation)"
    )


def _burgers_check_case(case_spec, params, gdim):
    bc = case_spec.get("bc") or {}
    if bc.get("periodic"):
        raise NotImplementedError("periodic boundary conditions are not supported by this solver")
    for kind in ("dirichlet", "neumann"):
        for entry in bc.get(kind) or []:
            if entry.get("quantity") not in (None, "u"):
                raise ValueError(f"burgers: {kind} condition on quantity {entry['quantity']!r}")
    for key in ("nu", "b"):
        if key not in params:
            raise KeyError(f"case_spec.pde.params has no {key!r} (required by burgers)")
    nu = params["nu"]
    if isinstance(nu, bool) or not isinstance(nu, (int, float, str)):
        raise TypeError(f"burgers: nu must be a number or an expression, got {nu!r}")
    if isinstance(nu, (int, float)) and not nu > 0:
        raise ValueError(f"burgers: this solver needs a positive viscosity nu, got {nu!r}")
    b = params["b"]
    if not isinstance(b, (list, tuple)) or len(b) != gdim:
        raise ValueError(f"burgers: b must list one entry per component ({gdim}), got {b!r}")
    ic = case_spec.get("ic") or {}
    if "u" not in ic or ic["u"] is None:
        raise KeyError("burgers is transient: case_spec.ic.u (initial condition) is required")
    out = case_spec.get("output") or {}
    wanted = out.get("components") or [out.get("field")]
    if any(name != "u" for name in wanted):
        raise KeyError(f"burgers produces only the scalar field 'u'; requested {wanted}")


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    scheme, stab = cfg["scheme"], cfg["stabilization"]
    if scheme not in _BURGERS_SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; known: {_BURGERS_SCHEMES}")
    if stab not in _BURGERS_STABILIZATION:
        raise ValueError(f"unknown stabilization {stab!r}; known: {_BURGERS_STABILIZATION}")
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    interval = time_interval(case_spec)
    if interval is None:
        raise ValueError("burgers is transient: case_spec.pde.time (t0, t_end) is required")
    t0, t_end = interval
    if not t_end > t0:
        raise ValueError(f"burgers: empty time interval [{t0}, {t_end}]")
    gdim = 3 if case_spec["domain"]["type"] == "unit_cube" else 2
    _burgers_check_case(case_spec, params, gdim)
    if cfg["n_steps"] is not None:
        n_steps = int(cfg["n_steps"])
    elif cfg["dt"] is not None and cfg["dt"] > 0:
        n_steps = max(1, math.ceil((t_end - t0) / float(cfg["dt"]) - 1e-9))
    else:
        raise ValueError(f"burgers: set a positive dt or n_steps (dt = {cfg['dt']!r})")
    if n_steps < 1:
        raise ValueError(f"burgers: n_steps must be positive, got {n_steps}")
    dt_value = (t_end - t0) / n_steps

    domain = build_domain(case_spec["domain"], cfg["resolution"], degree=cfg["geometry_degree"])
    msh = domain.msh
    tdim = msh.topology.dim
    if msh.geometry.dim != gdim:
        raise ValueError(f"burgers: unexpected mesh dimension {msh.geometry.dim} (b has {gdim})")

    p = int(cfg["degree"])
    V = fem.functionspace(msh, ("Lagrange", p))
    v = ufl.TestFunction(V)
    uh = fem.Function(V)
    u_star = fem.Function(V)  # Newton initial iterate of the step (extrapolated history)
    u_n, u_nm1, u_nm2 = fem.Function(V), fem.Function(V), fem.Function(V)  # u^n, u^n-1, u^n-2
    t = fem.Constant(msh, PETSc.ScalarType(t0))  # new time level
    t_old = fem.Constant(msh, PETSc.ScalarType(t0))  # previous level (theta-scheme part)
    dt = fem.Constant(msh, PETSc.ScalarType(dt_value))
    # (a0 u + a1 u^n + a2 u^n-1 + a3 u^n-2) / dt + theta S(u, t) + (1 - theta) S(u^n, t_old)
    a_coef = [fem.Constant(msh, PETSc.ScalarType(c)) for c in (1.0, -1.0, 0.0, 0.0)]
    theta = fem.Constant(msh, PETSc.ScalarType(1.0))
    with_old = scheme in ("crank_nicolson", "bdf3")
    bc_spec = case_spec["bc"]
    qdeg = cfg["quadrature_degree"]
    if qdeg is None:
        qdeg = max(3 * p - 1, 2 * p + 1) + int(cfg["geometry_degree"]) - 1
    dx = ufl.dx(metadata={"quadrature_degree": int(qdeg)})
    h = cell_diameters(msh) / p

    def operator(w, s):
        """Weak spatial operator (residual form) and strong residual part at time s."""
        nu = parameter(params, "nu", msh, s)
        b = parameter(params, "b", msh, s)
        f = _burgers_forcing(pde, msh, s, params)
        weak = (
            w * ufl.dot(b, ufl.grad(w)) * v
            + nu * ufl.inner(ufl.grad(w), ufl.grad(v))
            + ufl.dot(ufl.grad(nu), ufl.grad(w)) * v
            - f * v
        ) * dx
        robin_lhs, natural_rhs = boundary_terms(v, domain, bc_spec, t=s, params=params, u=w)
        weak = weak + robin_lhs - natural_rhs
        strong = w * ufl.dot(b, ufl.grad(w)) - nu * ufl.div(ufl.grad(w)) - f
        return weak, strong, nu, b

    time_diff = sum(c * w for c, w in zip(a_coef, (uh, u_n, u_nm1, u_nm2), strict=True)) / dt
    weak, strong, nu, b = operator(uh, t)
    if with_old:
        weak_old, strong_old, _, _ = operator(u_n, t_old)
        F = time_diff * v * dx + theta * weak + (1.0 - theta) * weak_old
        residual = time_diff + theta * strong + (1.0 - theta) * strong_old
    else:
        F = time_diff * v * dx + weak
        residual = time_diff + strong

    indicator = None
    if stab != "none":
        vel = u_star * b
        tau = ((2.0 / dt) ** 2 + 4.0 * ufl.dot(vel, vel) / h**2 + (12.0 * nu / h**2) ** 2) ** -0.5
        if stab == "auto":
            Q = fem.functionspace(msh, ("DG", 0))
            indicator = fem.Function(Q)
            peclet = ufl.sqrt(ufl.dot(vel, vel)) * h / (2.0 * nu)
            peclet_expr = fem.Expression(peclet, Q.element.interpolation_points)
            peclet_h = fem.Function(Q)
            tau = indicator * tau
        F = F + tau * residual * ufl.dot(vel, ufl.grad(v)) * dx

    dirichlet = dirichlet_conditions(V, domain, bc_spec, t=t, params=params, quantity="u")
    bcs = [d.bc for d in dirichlet]

    options = {
        "snes_type": "newtonls",
        "snes_linesearch_type": "bt",
        "snes_rtol": cfg["newton_rtol"],
        "snes_atol": cfg["newton_atol"],
        "snes_stol": 1e-12,
        "snes_max_it": cfg["newton_max_it"],
        **(cfg["petsc_options"] or (_BURGERS_SERIAL_LU if msh.comm.size == 1 else DIRECT)),
    }
    problem = fem_petsc.NonlinearProblem(
        F, uh, bcs=bcs, petsc_options_prefix="burgers_", petsc_options=options
    )
    snes = problem.solver
    # NonlinearProblem leaves its options in the global PETSc database (its clean-up misses
    # the prefix): remove them, or a later solve in this process inherits stale options
    opts = PETSc.Options()
    for key in options:
        opts.delValue(f"burgers_{key}")

    # initial condition (may use t = t0)
    ic_expr = fem.Expression(
        to_ufl(case_spec["ic"]["u"], msh, t, params), V.element.interpolation_points
    )
    u_n.interpolate(ic_expr)
    if not np.all(np.isfinite(u_n.x.array)):
        raise ValueError("burgers: the initial condition is not finite on the mesh")

    newton_total, newton_max, linear_total = 0, 0, 0
    peclet_max, stabilised_cells = 0.0, 0
    n_cells_local = msh.topology.index_map(tdim).size_local
    for step in range(1, n_steps + 1):
        t_old.value = t0 + (step - 1) * dt_value
        t.value = t0 + step * dt_value
        coefs, theta.value, order = _burgers_step_rule(scheme, step)
        for c, value in zip(a_coef, coefs, strict=True):
            c.value = value
        for d in dirichlet:
            d.update()
        # initial iterate: polynomial extrapolation of the history, then the new bc values
        if order == 3:
            uh.x.array[:] = 3.0 * (u_n.x.array - u_nm1.x.array) + u_nm2.x.array
        elif order == 2 and step >= 2:
            uh.x.array[:] = 2.0 * u_n.x.array - u_nm1.x.array
        else:
            uh.x.array[:] = u_n.x.array
        for bc in bcs:
            bc.set(uh.x.array)
        u_star.x.array[:] = uh.x.array
        if indicator is not None:
            peclet_h.interpolate(peclet_expr)
            pe = peclet_h.x.array[:n_cells_local]
            indicator.x.array[:] = np.where(peclet_h.x.array > 1.0, 1.0, 0.0)
            peclet_max = max(peclet_max, float(pe.max(initial=0.0)))
            stabilised_cells = max(stabilised_cells, int(np.count_nonzero(pe > 1.0)))
        problem.solve()
        reason = snes.getConvergedReason()
        if reason <= 0:
            raise RuntimeError(
                f"burgers: Newton did not converge at step {step} (t = {float(t.value):.6g}, "
                f"SNES reason {reason}); reduce dt or refine the mesh"
            )
        its = int(snes.getIterationNumber())
        newton_total += its
        newton_max = max(newton_max, its)
        linear_total += int(snes.getLinearSolveIterations())
        uh.x.scatter_forward()
        if not np.all(np.isfinite(uh.x.array)):
            raise RuntimeError(f"burgers: non-finite solution at step {step}")
        u_nm2.x.array[:] = u_nm1.x.array
        u_nm1.x.array[:] = u_n.x.array
        u_n.x.array[:] = uh.x.array
    peclet_max = msh.comm.allreduce(peclet_max, op=MPI.MAX)
    stabilised_cells = msh.comm.allreduce(stabilised_cells, op=MPI.SUM)

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    pc = snes.getKSP().getPC()
    info = {
        "family": "burgers",
        "resolution": cfg["resolution"],
        "element_degree": p,
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(tdim).size_global,
        "scheme": scheme,
        "dt": dt_value,
        "time_steps": n_steps,
        "stabilization": stab,
        "max_cell_peclet": peclet_max if indicator is not None else None,
        "max_stabilised_cells": stabilised_cells if indicator is not None else None,
        "newton_iterations": newton_total,
        "max_newton_iterations_per_step": newton_max,
        "linear_iterations": linear_total,
        "ksp_type": snes.getKSP().getType(),
        "pc_type": pc.getType(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
