"""Biharmonic: laplace(laplace(u)) = f with two boundary conditions on every boundary part.

Every exterior facet must carry exactly one condition on ``u`` (``bc.dirichlet`` with
quantity ``u``/None) and exactly one of ``laplacian_u`` (``laplace(u) = g``, Navier /
simply supported) or ``normal_derivative`` (``du/dn = g``, clamped); the latter two may
stand in ``bc.dirichlet`` or ``bc.neumann`` and mean the same there.  Anything else
(a part with a missing or doubled condition, Robin data, a neumann condition on ``u``,
a transient case) raises.

Two discretisations, chosen by the ``method`` setting ("mixed": two Poisson solves,
Navier conditions only; "cip": C0 interior penalty, any conditions; "auto"): see the
shared ``_ufl_families._BhSetup``. Here the mixed method's two solves are two
MUMPS factorisations of the same stiffness matrix, and the CIP h is a DG0 field
(also on curved cells).
"""

import time

import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    COMM,
    DirichletData,
    GridSampler,
    LinearSystem,
    build_domain,
    cell_diameters,
    output_fields,
    write_solution,
)
from ._ufl_families import _BhSetup

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "method": "auto",  # "auto" | "mixed" (splitting, Navier only) | "cip" (any conditions)
    "resolution": 24,  # mixed, 2-D: cells across the longest side of the bounding box
    "degree": 2,  # mixed: Lagrange degree of u and w
    "resolution_cip": 24,  # cip, 2-D: cells across the longest side of the bounding box
    "degree_cip": 3,  # cip: Lagrange degree (>= 2)
    "resolution_3d": 6,  # 3-D (unit_cube), both methods: cells per side
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "penalty": 4.0,  # cip: sigma = penalty * degree**2 / h on normal-derivative jumps
    "petsc_options": None,  # None = direct solve (MUMPS)
}
# CIP matrices have condition numbers ~ h**-4: round-off grows like resolution**4
# (measured relative floor ~1.4e-8 at P4/32, ~2e-7 at P4/64, ~7e-8 at P3/64), so the
# CIP reference stays at a moderate resolution with degree 4.
REFERENCE = {
    "method": "auto",
    "resolution": 64,
    "degree": 4,
    "resolution_cip": 40,
    "degree_cip": 4,
    "resolution_3d": 10,
    "geometry_degree": 2,
    "penalty": 4.0,
    "petsc_options": None,
}


def _bh_check_coverage(domain, setup):
    """Every exterior facet: exactly one u condition and exactly one second condition."""
    msh = domain.msh
    fdim = msh.topology.dim - 1
    imap = msh.topology.index_map(fdim)
    n_facets = imap.size_local + imap.num_ghosts
    count = {q: np.zeros(n_facets, dtype=np.int64) for q in setup.quantities}
    for q, entry in setup.conditions:
        count[q][domain.facets(entry["boundary"])] += 1
    exterior = domain.facets("all")
    setup.check_counts({q: c[exterior] for q, c in count.items()}, COMM.allreduce, domain.tag_ids)


def _bh_mixed(setup, domain, f):
    msh, degree, params = domain.msh, setup.degree, setup.params
    setup.check_degree()
    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx
    w_data, u_data = setup.dirichlet_data()
    w_bcs = [DirichletData(V, domain, e["boundary"], g, params=params).bc for e, g in w_data]
    u_bcs = [DirichletData(V, domain, e["boundary"], g, params=params).bc for e, g in u_data]
    wh, uh = fem.Function(V), fem.Function(V)
    opts = setup.cfg["petsc_options"]
    first = LinearSystem(a, f * v * ufl.dx, w_bcs, wh, petsc_options=opts, prefix="bh_w_")
    first.solve()
    second = LinearSystem(a, wh * v * ufl.dx, u_bcs, uh, petsc_options=opts, prefix="bh_u_")
    second.solve()
    return uh, setup.mixed_info(first, second, V.dofmap.index_map.size_global)


def _bh_cip(setup, domain, f):
    msh, p, params = domain.msh, setup.degree, setup.params
    penalty = setup.check_degree()
    V = fem.functionspace(msh, ("Lagrange", p))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    eta = fem.Constant(msh, PETSc.ScalarType(penalty * p**2))
    a, L = setup.cip_forms(u, v, domain, f, eta, cell_diameters(msh))
    _, u_data = setup.dirichlet_data()
    bcs = [DirichletData(V, domain, e["boundary"], g, params=params).bc for e, g in u_data]
    uh = fem.Function(V)
    system = LinearSystem(a, L, bcs, uh, petsc_options=setup.cfg["petsc_options"], prefix="bh_cip_")
    system.solve()
    info = {**system.info(), "dofs": V.dofmap.index_map.size_global, "penalty": penalty}
    return uh, info


def solve(case_spec, settings=None):
    started = time.perf_counter()
    setup = _BhSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    cfg, resolution = setup.cfg, setup.resolution
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    _bh_check_coverage(domain, setup)
    f = setup.forcing(msh)
    if setup.method == "mixed":
        uh, sinfo = _bh_mixed(setup, domain, f)
    else:
        uh, sinfo = _bh_cip(setup, domain, f)
    sampler = GridSampler(msh, case_spec["eval_grid"])
    fields = output_fields(case_spec, {"u": sampler.values(uh)[0]})
    tdim = msh.topology.dim
    track_info = {
        "geometry_degree": cfg["geometry_degree"],
        "cells": msh.topology.index_map(tdim).size_global,
    }
    info = setup.info(track_info, sinfo)
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
