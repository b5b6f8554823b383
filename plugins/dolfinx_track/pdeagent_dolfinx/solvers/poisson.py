"""Poisson: -div(kappa grad u) = f with Dirichlet, Neumann and Robin boundary parts.

kappa may be a constant or an expression (variable, high-contrast coefficients).
Continuous Lagrange elements of degree ``degree``; direct solve (MUMPS) by default.
"""

import time

import ufl
from dolfinx import fem

from ._common import (
    GridSampler,
    build_domain,
    dirichlet_conditions,
    merged_settings,
    output_fields,
    write_solution,
)
from ._periodic import make_linear_system
from ._ufl_forms import _poisson_forms

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 16,  # cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "petsc_options": None,  # None = direct solve (MUMPS)
}
REFERENCE = {"resolution": 96, "degree": 3, "geometry_degree": 2, "petsc_options": None}


def _check(case_spec):
    pde = case_spec["pde"]
    if pde.get("time"):
        raise ValueError("the Poisson problem is steady: pde.time must not be given")
    forcing = pde.get("forcing") or {}
    extra = sorted(key for key in forcing if key != "f")
    if extra:
        raise NotImplementedError(f"poisson: forcing terms {extra} are not defined (only 'f')")
    for kind in ("dirichlet", "neumann"):
        for entry in case_spec["bc"].get(kind) or []:
            if entry.get("quantity") not in (None, "u"):
                raise ValueError(f"poisson: {kind} quantity {entry.get('quantity')!r} unknown")


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    _check(case_spec)
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    domain = build_domain(case_spec["domain"], cfg["resolution"], degree=cfg["geometry_degree"])
    msh = domain.msh
    V = fem.functionspace(msh, ("Lagrange", cfg["degree"]))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    a, L = _poisson_forms(u, v, domain, case_spec)
    bcs = [d.bc for d in dirichlet_conditions(V, domain, case_spec["bc"], params=params)]
    uh = fem.Function(V)
    system = make_linear_system(
        a,
        L,
        bcs,
        uh,
        domain,
        case_spec["bc"],
        petsc_options=cfg["petsc_options"],
        prefix="poisson_",
    )
    system.solve()
    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = {
        "family": "poisson",
        "resolution": cfg["resolution"],
        "element_degree": cfg["degree"],
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(2).size_global
        if msh.topology.dim == 2
        else msh.topology.index_map(3).size_global,
        **system.info(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
