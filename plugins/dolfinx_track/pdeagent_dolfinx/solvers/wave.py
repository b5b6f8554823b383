"""Wave: d2u/dt2 - div(c^2 grad u) = f, u(t0) = ic.u, du/dt(t0) = ic.u_t, with Dirichlet,
Neumann (c^2 du/dn = g) and Robin (c^2 du/dn + alpha u = g) boundary parts whose data may
depend on t; unnamed boundary parts carry c^2 du/dn = 0.

Continuous Lagrange elements of degree ``degree`` in space; in time the Newmark
average-acceleration method (beta = 1/4, gamma = 1/2), implemented in its equivalent
Crank-Nicolson form on the first-order system u' = v, M v' + K u = F:

    (M + dt^2/4 K(t+)) u+ = M (u + dt v) - dt^2/4 K(t) u + dt^2/4 (F(t+) + F(t))
    v+ = 2/dt (u+ - u) - v

This is Newmark with the acceleration taken consistently from the PDE at every level,
a_n = M^-1 (F_n - K u_n) -- in particular at t0, so no separate start-up solve is
needed and the scheme is second order from the first step.  It is implicit,
unconditionally stable and non-dissipative: with f = 0 and homogeneous boundary data
the discrete energy 1/2 v.M v + 1/2 u.K u is conserved exactly.  At Dirichlet dofs u
takes the data at t+ and v follows the same trapezoidal relation.

All forms are compiled once (time enters through two ``fem.Constant`` levels); the
matrix is assembled and factorised once (direct LU: PETSc nested dissection in 2-D,
MUMPS in 3-D) unless c or a Robin coefficient depends on t.  ``richardson`` (used by
REFERENCE) combines runs with dt and dt/2 as (4 u(dt/2) - u(dt)) / 3: the scheme is
symmetric, so its error expands in even powers of dt and the result is fourth order.
"""

import time

import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    GridSampler,
    boundary_terms,
    build_domain,
    check_scalar_bc,
    dirichlet_conditions,
    interpolate_data,
    merged_settings,
    output_fields,
    parameter,
    single_source,
    time_interval,
    to_ufl,
    write_solution,
)
from ._transient import (
    transient_direct_options,
    transient_linear_system,
    transient_time_steps,
    with_quadrature,
)

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 10,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "dt": 0.005,  # time step (rounded down so that the steps end exactly at t_end)
    "n_steps": None,  # number of time steps; overrides dt when given
    "scheme": "newmark",  # Newmark average acceleration (= Crank-Nicolson on u' = v)
    "quadrature_degree": None,  # None = 2 * degree + 2 (all cell and facet integrals)
    "richardson": False,  # extrapolate runs with dt and dt/2: fourth order in time
    "report_energy": False,  # solver_info: discrete energy at t0 and t_end
    "petsc_options": None,  # None = direct LU (PETSc nested dissection in 2-D, MUMPS in 3-D)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 48,
    "resolution_3d": 12,
    "degree": 3,
    "dt": 0.005,
    "richardson": True,
}

_WAVE_SCHEMES = ("newmark",)


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    if cfg["scheme"] not in _WAVE_SCHEMES:
        raise ValueError(f"wave: unknown scheme {cfg['scheme']!r}; known: {list(_WAVE_SCHEMES)}")
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    bc_spec = case_spec["bc"]
    check_scalar_bc("wave", bc_spec)
    interval = time_interval(case_spec)
    if interval is None:
        raise ValueError("wave: the case has no pde.time (the wave equation is transient)")
    t0, t_end = interval
    ic = case_spec.get("ic") or {}
    for name in ("u", "u_t"):
        if name not in ic:
            raise KeyError(f"wave: the case_spec has no initial condition ic.{name}")
    if "c" not in params:
        raise KeyError("wave: case_spec.pde.params has no 'c' (wave speed)")
    n_steps, dt = transient_time_steps("wave", cfg, t0, t_end)
    f_value = single_source("wave", pde)

    is_3d = case_spec["domain"].get("type") == "unit_cube"
    resolution = cfg["resolution_3d"] if is_3d else cfg["resolution"]
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    V = fem.functionspace(msh, ("Lagrange", cfg["degree"]))
    u, w = ufl.TrialFunction(V), ufl.TestFunction(V)
    t_new = fem.Constant(msh, PETSc.ScalarType(t0))
    t_old = fem.Constant(msh, PETSc.ScalarType(t0))
    k2 = fem.Constant(msh, PETSc.ScalarType(dt * dt / 4.0))  # dt^2 / 4
    kdt = fem.Constant(msh, PETSc.ScalarType(dt))
    u_n, v_n, uh = fem.Function(V), fem.Function(V), fem.Function(V)
    dx = ufl.dx(domain=msh)

    def operator(t, z):  # c(t)^2 (grad z, grad w) + Robin alpha(t) (z, w)
        c = parameter(params, "c", msh, t)
        robin, _ = boundary_terms(w, domain, bc_spec, t=t, params=params, u=z)
        return c * c * ufl.inner(ufl.grad(z), ufl.grad(w)) * dx + robin

    def load(t):  # (f(t), w) + Neumann / Robin data at t
        f = to_ufl(f_value, msh, t, params)
        _, natural = boundary_terms(w, domain, bc_spec, t=t, params=params, u=u)
        return f * w * dx + natural

    q = cfg["quadrature_degree"] or 2 * cfg["degree"] + 2
    a = with_quadrature(u * w * dx + k2 * operator(t_new, u), q)
    L = with_quadrature(
        (u_n + kdt * v_n) * w * dx - k2 * operator(t_old, u_n) + k2 * (load(t_new) + load(t_old)), q
    )
    reassemble = any(c is t_new or c is t_old for c in a.constants())
    petsc_options = cfg["petsc_options"] or transient_direct_options(msh.topology.dim)
    dirichlet = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    bcs = [d.bc for d in dirichlet]

    energy_form = None
    if cfg["report_energy"]:
        c0 = parameter(params, "c", msh, t_old)
        robin_e, _ = boundary_terms(u_n, domain, bc_spec, t=t_old, params=params, u=u_n)
        grad2 = ufl.inner(ufl.grad(u_n), ufl.grad(u_n))
        energy_form = fem.form(0.5 * (v_n * v_n + c0 * c0 * grad2) * dx + 0.5 * robin_e)
    energies = {}
    iterations = 0

    def integrate(steps, h, label):
        """Newmark from t0 to t_end in ``steps`` steps of size ``h``; u(t_end) as an array."""
        nonlocal iterations
        k2.value = h * h / 4.0
        kdt.value = h
        t_old.value = t0
        interpolate_data(u_n, ic["u"], msh, t_old, params)
        interpolate_data(v_n, ic["u_t"], msh, t_old, params)
        system = transient_linear_system(
            a,
            L,
            bcs,
            uh,
            domain,
            bc_spec,
            petsc_options=petsc_options,
            prefix=f"wave{label or '_main'}_",
            reassemble_matrix=reassemble,
        )
        if energy_form is not None:
            energies[f"energy_initial{label}"] = fem.assemble_scalar(energy_form)
        for step in range(steps):
            t_old.value = t0 + step * h
            t_new.value = t_end if step == steps - 1 else t0 + (step + 1) * h
            for d in dirichlet:
                d.update()
            system.solve()
            if not np.all(np.isfinite(uh.x.array)):
                raise RuntimeError(f"wave: non-finite solution at step {step + 1}")
            v_n.x.array[:] = (2.0 / h) * (uh.x.array - u_n.x.array) - v_n.x.array
            u_n.x.array[:] = uh.x.array
        if energy_form is not None:
            t_old.value = t_end
            energies[f"energy_final{label}"] = fem.assemble_scalar(energy_form)
        iterations += system.info()["linear_iterations"]
        info = system.info()
        info["linear_iterations"] = iterations
        return u_n.x.array.copy(), info

    result, system_info = integrate(n_steps, dt, "")
    if cfg["richardson"]:
        # the scheme is symmetric: its global error expands in even powers of dt, so
        # (4 u(dt/2) - u(dt)) / 3 is fourth-order accurate in time
        fine, system_info = integrate(2 * n_steps, dt / 2, "_half")
        result = (4.0 * fine - result) / 3.0
    u_n.x.array[:] = result
    u_n.x.scatter_forward()

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(u_n)[0]
    fields = output_fields(case_spec, {"u": values})
    tdim = msh.topology.dim
    info = {
        "family": "wave",
        "resolution": resolution,
        "element_degree": cfg["degree"],
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(tdim).size_global,
        "scheme": "newmark_average_acceleration",
        "dt": dt,
        "time_steps": n_steps,
        "richardson_extrapolation": bool(cfg["richardson"]),
        "matrix_reassembled_each_step": reassemble,
        **energies,
        **system_info,
        "petsc_options": petsc_options,
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
