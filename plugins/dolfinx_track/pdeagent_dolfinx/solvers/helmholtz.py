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

import math
import time

import numpy as np
import ufl
from dolfinx import fem

from ._common import (
    GridSampler,
    boundary_terms,
    build_domain,
    dirichlet_conditions,
    merged_settings,
    output_fields,
    parameter,
    to_numpy,
    to_ufl,
    write_solution,
)
from ._periodic import make_linear_system

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

_HELMHOLTZ_SAMPLES = {2: 101, 3: 31}  # points per axis for sampling k over the bbox


def _helmholtz_k_max(k_value, params, bbox):
    """max |k| over a regular sample of the bounding box (``bbox``: [[lo, hi], ...])."""
    if isinstance(k_value, bool):
        raise TypeError(f"pde.params.k must be a number or an expression, got {k_value!r}")
    if isinstance(k_value, (int, float)):
        k_max = abs(float(k_value))
    else:
        n = _HELMHOLTZ_SAMPLES[len(bbox)]
        axes = [np.linspace(lo, hi, n) for lo, hi in bbox]
        mesh = np.meshgrid(*axes, indexing="ij")
        pts = np.zeros((3, mesh[0].size))
        for i, arr in enumerate(mesh):
            pts[i] = arr.ravel()
        values = np.asarray(to_numpy(k_value, params)(pts), dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError("pde.params.k is not finite everywhere on the domain's bounding box")
        k_max = float(np.max(np.abs(values)))
    if not math.isfinite(k_max):
        raise ValueError(f"pde.params.k is not finite: {k_value!r}")
    return k_max


def wavelength_resolution(k_max, length, degree, points_per_wavelength):
    """Cells across ``length`` needed by the wavelength/pollution rule (module docstring)."""
    n_waves = k_max * length / (2.0 * math.pi)
    if n_waves <= 0.0:
        return 1
    ppw = points_per_wavelength * max(1.0, n_waves) ** (1.0 / (2.0 * degree))
    return max(1, math.ceil(ppw * n_waves / degree))


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    pde = case_spec["pde"]
    if pde.get("time"):
        raise ValueError("the Helmholtz problem is steady: pde.time must not be given")
    params = pde.get("params") or {}
    if "k" not in params:
        raise KeyError("case_spec.pde.params has no 'k' (wave number)")
    forcing = pde.get("forcing") or {}
    if len(forcing) > 1 and "f" not in forcing:
        raise KeyError("with several forcing entries one must be named 'f'")
    extra = sorted(key for key in forcing if key != "f")
    if extra:
        raise NotImplementedError(f"helmholtz: additional forcing terms {extra} are not defined")
    f_value = next(iter(forcing.values())) if forcing else 0.0
    bc_spec = case_spec["bc"]
    for entry in bc_spec.get("dirichlet") or []:
        if entry.get("quantity") not in (None, "u"):
            raise ValueError(f"helmholtz: Dirichlet quantity {entry.get('quantity')!r} unknown")
    for entry in bc_spec.get("neumann") or []:
        if entry.get("quantity") not in (None, "u"):
            raise ValueError(f"helmholtz: Neumann quantity {entry.get('quantity')!r} unknown")

    degree = int(cfg["degree"])
    bbox = case_spec["domain"].get("bounds")
    if not bbox:
        raise KeyError("case_spec.domain.bounds is required")
    length = max(float(hi) - float(lo) for lo, hi in bbox)
    k_max = _helmholtz_k_max(params["k"], params, bbox)
    needed = wavelength_resolution(k_max, length, degree, float(cfg["points_per_wavelength"]))
    resolution = max(int(cfg["resolution"]), needed)

    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    V = fem.functionspace(msh, ("Lagrange", degree))
    u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
    k = parameter(params, "k", msh)
    f = to_ufl(f_value, msh, params=params)
    robin_lhs, natural_rhs = boundary_terms(v, domain, bc_spec, params=params, u=u)
    a = (ufl.inner(ufl.grad(u), ufl.grad(v)) - k * k * u * v) * ufl.dx + robin_lhs
    L = f * v * ufl.dx + natural_rhs
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
