"""Biharmonic: laplace(laplace(u)) = f with two boundary conditions on every boundary part.

Every exterior facet must carry exactly one condition on ``u`` (``bc.dirichlet`` with
quantity ``u``/None) and exactly one of ``laplacian_u`` (``laplace(u) = g``, Navier /
simply supported) or ``normal_derivative`` (``du/dn = g``, clamped); the latter two may
stand in ``bc.dirichlet`` or ``bc.neumann`` and mean the same there.  Anything else
(a part with a missing or doubled condition, Robin data, a neumann condition on ``u``,
a transient case) raises.

Two discretisations, chosen by the ``method`` setting:

* ``"mixed"`` (splitting, Navier conditions on the whole boundary only): with
  ``w = -laplace(u)`` two Poisson solves with continuous Lagrange elements of degree
  ``degree`` on a mesh of ``resolution``: ``-laplace(w) = f, w = -g_lap`` then
  ``-laplace(u) = w, u = g_u``, both with strong Dirichlet data (two MUMPS
  factorisations of the same stiffness matrix).  L2 order ``degree + 1`` (3 for P2).
* ``"cip"`` (C0 interior penalty, any mix of Navier and clamped parts): continuous
  Lagrange of degree ``degree_cip >= 2`` on a mesh of ``resolution_cip``, ``u = g_u``
  strongly and the broken form ``sum_K (lap u, lap v)_K`` with symmetric consistency
  terms ``-({lap u}, [dv/dn]) - ({lap v}, [du/dn])`` and the penalty
  ``sigma = penalty * p**2 / h`` on the jumps of the normal derivative across interior
  facets; clamped data ``du/dn = g`` is imposed weakly by the same symmetric terms and
  penalty on its boundary parts (Nitsche), Navier data ``laplace(u) = g`` enters the
  right-hand side as ``(g, dv/dn)`` on its parts.  L2 order 2 for P2 (suboptimal, as
  known for CIP), ``p + 1`` for ``p >= 3``.  h is the largest vertex distance of a cell
  (a DG0 field, also on curved cells).  The CIP matrix has a condition number ~ h**-4,
  so round-off grows like resolution**4 (see REFERENCE).

``method = "auto"`` (default) takes ``mixed`` when no ``normal_derivative`` condition is
stated (the coverage check then guarantees laplacian_u on every facet) and ``cip``
otherwise.  The unit cube (3-D) uses ``resolution_3d`` for both methods.
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
    merged_settings,
    output_fields,
    write_solution,
)
from ._ufl_forms import (
    _BH_QUANTITIES,
    _bh_check_counts,
    _bh_cip_forms,
    _bh_forcing,
    _bh_method,
    _bh_negated,
)

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


def _bh_check_coverage(domain, conditions):
    """Every exterior facet: exactly one u condition and exactly one second condition."""
    msh = domain.msh
    fdim = msh.topology.dim - 1
    imap = msh.topology.index_map(fdim)
    n_facets = imap.size_local + imap.num_ghosts
    count = {q: np.zeros(n_facets, dtype=np.int64) for q in _BH_QUANTITIES}
    for q, entry in conditions:
        count[q][domain.facets(entry["boundary"])] += 1
    exterior = domain.facets("all")
    _bh_check_counts({q: c[exterior] for q, c in count.items()}, COMM.allreduce, domain.tag_ids)


def _bh_mixed(domain, conditions, f, degree, cfg, params):
    msh = domain.msh
    if degree < 1:
        raise ValueError(f"biharmonic: degree must be >= 1, got {degree}")
    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx
    w_bcs = [
        DirichletData(V, domain, e["boundary"], _bh_negated(e["value"]), params=params).bc
        for q, e in conditions
        if q == "laplacian_u"
    ]
    u_bcs = [
        DirichletData(V, domain, e["boundary"], e["value"], params=params).bc
        for q, e in conditions
        if q == "u"
    ]
    wh, uh = fem.Function(V), fem.Function(V)
    opts = cfg["petsc_options"]
    first = LinearSystem(a, f * v * ufl.dx, w_bcs, wh, petsc_options=opts, prefix="bh_w_")
    first.solve()
    second = LinearSystem(a, wh * v * ufl.dx, u_bcs, uh, petsc_options=opts, prefix="bh_u_")
    second.solve()
    i1, i2 = first.info(), second.info()
    info = {
        "ksp_type": i2["ksp_type"],
        "pc_type": i2["pc_type"],
        "linear_iterations": i1["linear_iterations"] + i2["linear_iterations"],
        "dofs": 2 * V.dofmap.index_map.size_global,  # u and w, one Poisson solve each
        "dofs_per_field": V.dofmap.index_map.size_global,
    }
    return uh, info


def _bh_cip(domain, conditions, f, degree, cfg, params):
    msh = domain.msh
    p = degree
    if p < 2:
        raise ValueError(f"biharmonic: the C0 interior penalty method needs degree >= 2, got {p}")
    penalty = float(cfg["penalty"])
    if not penalty > 0:
        raise ValueError(f"biharmonic: cip penalty must be positive, got {penalty}")
    V = fem.functionspace(msh, ("Lagrange", p))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    eta = fem.Constant(msh, PETSc.ScalarType(penalty * p**2))
    a, L = _bh_cip_forms(u, v, domain, conditions, f, eta, cell_diameters(msh), params)
    bcs = [
        DirichletData(V, domain, e["boundary"], e["value"], params=params).bc
        for q, e in conditions
        if q == "u"
    ]
    uh = fem.Function(V)
    system = LinearSystem(a, L, bcs, uh, petsc_options=cfg["petsc_options"], prefix="bh_cip_")
    system.solve()
    info = {**system.info(), "dofs": V.dofmap.index_map.size_global, "penalty": penalty}
    return uh, info


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    conditions, method, degree, resolution = _bh_method(case_spec, cfg)
    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    _bh_check_coverage(domain, conditions)
    f = _bh_forcing(pde, msh, params)
    if method == "mixed":
        uh, sinfo = _bh_mixed(domain, conditions, f, degree, cfg, params)
    else:
        uh, sinfo = _bh_cip(domain, conditions, f, degree, cfg, params)
    sampler = GridSampler(msh, case_spec["eval_grid"])
    fields = output_fields(case_spec, {"u": sampler.values(uh)[0]})
    tdim = msh.topology.dim
    info = {
        "family": "biharmonic",
        "method": method,
        "resolution": resolution,
        "element_degree": degree,
        "geometry_degree": cfg["geometry_degree"],
        "cells": msh.topology.index_map(tdim).size_global,
        **sinfo,
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
