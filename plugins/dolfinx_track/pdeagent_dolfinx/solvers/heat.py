"""Heat: du/dt - div(kappa grad u) = f, u(t0) = ic.u, with Dirichlet, Neumann
(kappa du/dn = g) and Robin (kappa du/dn + alpha u = g) boundary parts whose data may
depend on t; unnamed boundary parts carry kappa du/dn = 0.

kappa may be a constant or an expression in x, y(, z) and t.  Continuous Lagrange
elements of degree ``degree``; implicit time stepping with a constant step by the shared
``_ufl_families._heat_march`` (backward_euler, crank_nicolson, bdf2).

All forms are compiled once: the data depend on time only through two
``fem.Constant`` time levels (t_old, t_new), Dirichlet data are re-interpolated from
compiled expressions.  Each matrix is assembled and factorised once (direct LU by
default: PETSc nested dissection in 2-D, MUMPS in 3-D) unless kappa or a Robin
coefficient depends on t, in which case it is reassembled every step.
"""

import time

import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    GridSampler,
    build_domain,
    dirichlet_conditions,
    interpolate_data,
    output_fields,
    write_solution,
)
from ._transient import (
    transient_direct_options,
    transient_linear_system,
)
from ._ufl_families import _heat_begin, _heat_info, _heat_march
from ._ufl_forms import _heat_step_forms

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 10,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "dt": 0.02,  # time step (rounded down so that the steps end exactly at t_end)
    "n_steps": None,  # number of time steps; overrides dt when given
    "scheme": "bdf2",  # "backward_euler" | "crank_nicolson" | "bdf2"
    "bdf2_startup": "backward_euler",  # first BDF2 step: "backward_euler" | "crank_nicolson"
    "startup_substeps": 4,  # backward-Euler substeps of the first BDF2 step
    "quadrature_degree": None,  # None = 2 * degree + 2 (all cell and facet integrals)
    "petsc_options": None,  # None = direct LU (PETSc nested dissection in 2-D, MUMPS in 3-D)
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
    settings = SETTINGS if settings is None else settings
    cfg, steps, resolution = _heat_begin(case_spec, DEFAULTS, settings)
    t0, _, _, dt = steps
    params = case_spec["pde"].get("params") or {}
    bc_spec = case_spec["bc"]
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    V = fem.functionspace(msh, ("Lagrange", cfg["degree"]))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    t_new = fem.Constant(msh, PETSc.ScalarType(t0))
    t_old = fem.Constant(msh, PETSc.ScalarType(t0))
    k = fem.Constant(msh, PETSc.ScalarType(dt))
    u_n, u_nm1, uh = fem.Function(V), fem.Function(V), fem.Function(V)
    dx = ufl.dx(domain=msh)

    petsc_options = cfg["petsc_options"] or transient_direct_options(msh.topology.dim)
    dirichlet = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=params)
    bcs = [d.bc for d in dirichlet]
    reassembled = False
    systems = []

    def make_system(method, h, name):
        nonlocal reassembled
        q = cfg["quadrature_degree"] or 2 * cfg["degree"] + 2
        levels = (u_n, u_nm1, t_old, t_new)
        a, L = _heat_step_forms(u, v, dx, domain, case_spec, levels, method, h, q)
        time_dependent = any(c is t_new or c is t_old for c in a.constants())
        reassembled = reassembled or time_dependent
        system = transient_linear_system(
            a, L, bcs, uh, domain, bc_spec, petsc_options=petsc_options,
            prefix=f"heat_{name}_", reassemble_matrix=time_dependent,
        )  # fmt: skip
        systems.append(system)
        return system

    def advance(system, t_from, t_to):
        t_old.value = t_from
        t_new.value = t_to
        for d in dirichlet:
            d.update()
        system.solve()
        if not np.all(np.isfinite(uh.x.array)):
            raise RuntimeError(f"heat: non-finite solution at t = {t_to}")
        u_nm1.x.array[:] = u_n.x.array
        u_n.x.array[:] = uh.x.array

    def restore(saved):
        u_nm1.x.array[:] = saved

    t_old.value = t0
    interpolate_data(u_n, case_spec["ic"]["u"], msh, t_old, params)
    u_nm1.x.array[:] = u_n.x.array
    startup = _heat_march(
        cfg, steps, k, lambda value: fem.Constant(msh, PETSc.ScalarType(value)),
        make_system, advance, lambda: u_n.x.array.copy(), restore,
    )  # fmt: skip

    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(u_n)[0]
    fields = output_fields(case_spec, {"u": values})
    track_info = {
        "geometry_degree": cfg["geometry_degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(msh.topology.dim).size_global,
    }
    info = _heat_info(
        cfg, resolution, steps, startup, track_info, reassembled, systems,
        {"petsc_options": petsc_options},
    )  # fmt: skip
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
