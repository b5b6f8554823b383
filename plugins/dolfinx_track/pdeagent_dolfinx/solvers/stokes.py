"""Stokes: -nu laplace(u) + grad(p) = f, div(u) = 0 (Laplacian form).

Boundary conditions (``quantity``): ``velocity`` Dirichlet u = g; ``traction`` Neumann
nu du/dn - p n = g; ``pressure`` (as Dirichlet or Neumann entry) nu du/dn - p n = -g n;
boundary parts not named carry the natural condition nu du/dn - p n = 0.

Taylor-Hood elements: setting ``degree`` k gives continuous P(k+1) velocity and P(k)
pressure (k >= 1), on meshes of geometry degree ``geometry_degree``.  The weak form
``(grad u, grad(nu v)) - (p, div v) - (q, div u) = (f, v) + natural terms`` is exact for a
variable viscosity too.  Direct solve (MUMPS).

Pressure null space: when velocity Dirichlet facets cover the whole boundary, the
constant pressure mode is removed by (1) projecting the right-hand side onto the range
of the operator (the pressure rows of the load vector are made to sum to zero, which
removes the small incompatibility of the interpolated boundary flux), (2) pinning one
pressure degree of freedom to zero, and (3) shifting the pressure to zero mean after
the solve.  With (1) the pinned system has exactly the solution of the singular
system, so the velocity does not depend on which degree of freedom is pinned.
"""

import time

import numpy as np
import ufl
from dolfinx import fem
from petsc4py import PETSc

from ._common import DIRECT, fem_petsc, parameter, write_solution
from ._flow import (
    _cells,
    _flow_boundary,
    _flow_domain,
    _flow_forcing,
    _flow_space,
    _FlowOutput,
    _pressure_pin,
    _ZeroMean,
)
from ._ufl_families import _flow_quadrature, _stokes_begin, _stokes_forms, _stokes_info

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # cells across the longest side of the bounding box (2-D)
    "resolution_3d": 8,  # the same for 3-D domains (MUMPS memory)
    "degree": 1,  # pressure degree k: Taylor-Hood P(k+1)-P(k)
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "petsc_options": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 64,
    "resolution_3d": 12,
    "degree": 2,
    "geometry_degree": 2,
    "petsc_options": None,
}


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg, pde, params = _stokes_begin(
        case_spec, DEFAULTS, SETTINGS if settings is None else settings
    )
    domain, resolution = _flow_domain(case_spec, cfg)
    msh = domain.msh
    W, p_dofs = _flow_space(msh, cfg["degree"])
    u, p = ufl.TrialFunctions(W)
    v, q = ufl.TestFunctions(W)
    nu = parameter(params, "nu", msh)
    f = _flow_forcing(pde, msh, None, params)
    metadata = _flow_quadrature(cfg["degree"])
    dxq = ufl.dx(metadata=metadata)
    dirichlet, natural, enclosed = _flow_boundary(
        W, domain, case_spec["bc"], v, None, params, metadata
    )
    a, L = _stokes_forms((u, p), (v, q), nu, f, natural, dxq)
    bcs = [d.bc for d in dirichlet]
    if enclosed:
        bcs.append(_pressure_pin(W, p_dofs))
    a_form, L_form = fem.form(a), fem.form(L)
    A = fem_petsc.assemble_matrix(a_form, bcs=bcs)
    A.assemble()
    b = fem_petsc.create_vector(W)
    fem_petsc.assemble_vector(b, L_form)
    fem_petsc.apply_lifting(b, [a_form], bcs=[bcs])
    b.ghostUpdate(addv=PETSc.InsertMode.ADD, mode=PETSc.ScatterMode.REVERSE)
    if enclosed:  # project onto the range of the singular operator (serial runtime)
        arr = b.getArray()
        arr[p_dofs] -= arr[p_dofs].mean()
    fem_petsc.set_bc(b, bcs)
    ksp = PETSc.KSP().create(msh.comm)
    ksp.setOptionsPrefix("stokes_")
    opts = PETSc.Options()
    options = cfg["petsc_options"] or DIRECT
    for key, value in options.items():
        opts[f"stokes_{key}"] = value
    ksp.setFromOptions()
    for key in options:  # do not leak into later solves of the same process
        del opts[f"stokes_{key}"]
    ksp.setOperators(A)
    w = fem.Function(W)
    ksp.solve(b, w.x.petsc_vec)
    reason = ksp.getConvergedReason()
    if reason <= 0:
        raise RuntimeError(f"linear solver did not converge (KSP reason {reason})")
    w.x.scatter_forward()
    if not np.all(np.isfinite(w.x.array)):
        raise RuntimeError("Stokes solve produced non-finite values")
    shift = _ZeroMean(msh, w, p_dofs).apply() if enclosed else 0.0
    fields = _FlowOutput(W).update(w).fields(case_spec)
    track_info = {
        "geometry_degree": cfg["geometry_degree"],
        "dofs": W.dofmap.index_map.size_global,
        "cells": _cells(msh),
    }
    null_space = "range projection + pinned dof + zero-mean shift" if enclosed else "none"
    info = _stokes_info(resolution, cfg["degree"], track_info, ksp, null_space, shift)
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
