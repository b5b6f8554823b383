"""Helmholtz: -laplace(u) - k**2 u = f (real-valued) with Dirichlet, Neumann
(du/dn = g), Robin (du/dn + alpha u = g) and periodic boundary parts.

k may be a constant or an expression in the space coordinates.  Continuous
Lagrange elements of degree ``degree``; the mesh is refined beyond ``resolution``
when needed to resolve the wavelength (rule below).  The system is symmetric but
indefinite: direct solve (MUMPS) by default.  On a periodic_square the mesh itself
is periodic.

Resolution rule: with k_max the largest |k| over the bounding box, L its longest
side and p the degree, the domain spans n_waves = k_max L / (2 pi) wavelengths;
the solver uses at least ``points_per_wavelength * max(1, n_waves)**(1/(2p))``
dofs per wavelength along a line (the growing factor compensates the pollution
error ~ k (kh)^(2p)), i.e. ``resolution >= ceil(that * n_waves / p)`` cells across L.
"""

import math
import time

import firedrake as fd

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    check_scalar_bc,
    check_steady,
    dirichlet_conditions,
    merged_settings,
    mesh_info,
    output_fields,
    write_solution,
)
from ._ufl_forms import _helmholtz_forms, _helmholtz_resolution, _helmholtz_source

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 32,  # minimum cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "points_per_wavelength": 30.0,  # dofs per wavelength (before the pollution factor)
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    "resolution": 96,
    "degree": 3,
    "points_per_wavelength": 60.0,
    "solver_parameters": None,
}


def _check(case_spec):
    pde = case_spec["pde"]
    check_steady("helmholtz", pde)
    f_value = _helmholtz_source(pde)
    check_scalar_bc("helmholtz", case_spec["bc"])
    return f_value


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    f_value = _check(case_spec)
    pde, bc = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}

    degree = int(cfg["degree"])
    resolution, k_max = _helmholtz_resolution(case_spec, cfg, degree)

    domain = build_domain(case_spec["domain"], resolution, periodic=bc.get("periodic"))
    msh = domain.msh
    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    a, L = _helmholtz_forms(u, v, domain, case_spec, f_value)
    bcs = dirichlet_conditions(V, domain, bc, params=params)
    uh = fd.Function(V)
    system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                          prefix="helmholtz_")  # fmt: skip
    system.solve()
    with uh.dat.vec_ro as vec:
        finite = math.isfinite(vec.norm())
    if not finite:
        raise RuntimeError("helmholtz: the discrete solution is not finite")
    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    info = {
        "family": "helmholtz",
        "resolution": resolution,
        "requested_resolution": int(cfg["resolution"]),
        "element_degree": degree,
        "k_max": k_max,
        "points_per_wavelength": float(cfg["points_per_wavelength"]),
        "dofs": V.dim(),
        **mesh_info(msh),
        **system.info(),
    }
    fields = output_fields(case_spec, {"u": values})
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
