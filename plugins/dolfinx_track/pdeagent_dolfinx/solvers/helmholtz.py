"""Helmholtz: -laplace(u) - k**2 u = f (real-valued) with Dirichlet, Neumann
(du/dn = g), Robin (du/dn + alpha u = g) and periodic boundary parts.

k may be a constant or an expression in the space coordinates.  Continuous
Lagrange elements of degree ``degree``; the mesh is refined beyond ``resolution``
when needed to resolve the wavelength (rule below).  The system is symmetric but
indefinite: direct solve (MUMPS; SuperLU for periodic cases) by default.

Resolution rule: with k_max the largest |k| over the bounding box, L its longest
side and p the degree, the domain spans n_waves = k_max L / (2 pi) wavelengths;
the solver uses at least ``points_per_wavelength * max(1, n_waves)**(1/(2p))``
dofs per wavelength along a line (the growing factor compensates the pollution
error ~ k (kh)^(2p)), i.e. ``resolution >= ceil(that * n_waves / p)`` cells across L.
"""

import time

import numpy as np
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
from ._ufl_forms import _helmholtz_forms, _helmholtz_resolution, _helmholtz_source

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 32,  # minimum cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "points_per_wavelength": 30.0,  # dofs per wavelength (before the pollution factor)
    "petsc_options": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 96,
    "degree": 3,
    "geometry_degree": 2,
    "points_per_wavelength": 60.0,
    "petsc_options": None,
}


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    pde = case_spec["pde"]
    if pde.get("time"):
        raise ValueError("the Helmholtz problem is steady: pde.time must not be given")
    f_value = _helmholtz_source(pde)
    params = pde.get("params") or {}
    bc_spec = case_spec["bc"]
    for entry in bc_spec.get("dirichlet") or []:
        if entry.get("quantity") not in (None, "u"):
            raise ValueError(f"helmholtz: Dirichlet quantity {entry.get('quantity')!r} unknown")
    for entry in bc_spec.get("neumann") or []:
        if entry.get("quantity") not in (None, "u"):
            raise ValueError(f"helmholtz: Neumann quantity {entry.get('quantity')!r} unknown")

    degree = int(cfg["degree"])
    resolution, k_max = _helmholtz_resolution(case_spec, cfg, degree)

    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    a, L = _helmholtz_forms(u, v, domain, case_spec, f_value)
    bcs = [d.bc for d in dirichlet_conditions(V, domain, bc_spec, params=params)]
    uh = fem.Function(V)
    system = make_linear_system(
        a, L, bcs, uh, domain, bc_spec, petsc_options=cfg["petsc_options"], prefix="helmholtz_"
    )
    system.solve()
    if not np.all(np.isfinite(uh.x.array)):
        raise RuntimeError("helmholtz: the discrete solution is not finite")
    sampler = GridSampler(msh, case_spec["eval_grid"])
    values = sampler.values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    tdim = msh.topology.dim
    info = {
        "family": "helmholtz",
        "resolution": resolution,
        "requested_resolution": int(cfg["resolution"]),
        "element_degree": degree,
        "k_max": k_max,
        "points_per_wavelength": float(cfg["points_per_wavelength"]),
        "dofs": V.dofmap.index_map.size_global,
        "cells": msh.topology.index_map(tdim).size_global,
        **system.info(),
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
