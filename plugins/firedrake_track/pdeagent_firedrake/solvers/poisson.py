"""Poisson: -div(kappa grad u) = f with Dirichlet, Neumann and Robin boundary parts.

kappa may be a constant or an expression (variable, high-contrast coefficients).
Continuous Lagrange elements of degree ``degree``; direct solve (MUMPS) by default.
On a periodic_square the mesh itself is periodic.
"""

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
from ._ufl_forms import _poisson_forms

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 16,  # cells across the longest side of the bounding box
    "degree": 2,  # Lagrange degree
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {"resolution": 96, "degree": 3}


def _check(case_spec):
    pde = case_spec["pde"]
    check_steady("poisson", pde)
    extra = sorted(key for key in (pde.get("forcing") or {}) if key != "f")
    if extra:
        raise NotImplementedError(f"poisson: forcing terms {extra} are not defined (only 'f')")
    check_scalar_bc("poisson", case_spec["bc"])


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    _check(case_spec)
    pde, bc = case_spec["pde"], case_spec["bc"]
    params = pde.get("params") or {}
    domain = build_domain(case_spec["domain"], cfg["resolution"], periodic=bc.get("periodic"))
    msh = domain.msh
    V = fd.FunctionSpace(msh, "CG", cfg["degree"])
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    a, L = _poisson_forms(u, v, domain, case_spec)
    bcs = dirichlet_conditions(V, domain, bc, params=params)
    if not bcs and not bc.get("robin"):
        raise ValueError("poisson: without Dirichlet or Robin conditions u is not unique")
    uh = fd.Function(V)
    system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                          prefix="poisson_")  # fmt: skip
    system.solve()
    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    info = {
        "family": "poisson",
        "resolution": cfg["resolution"],
        "element_degree": cfg["degree"],
        "dofs": V.dim(),
        **mesh_info(msh),
        **system.info(),
    }
    fields = output_fields(case_spec, {"u": values})
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
