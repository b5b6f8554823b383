"""Biharmonic: laplace(laplace(u)) = f with two boundary conditions on every boundary part.

Every exterior facet must carry exactly one condition on ``u`` (``bc.dirichlet`` with
quantity ``u``/None) and exactly one of ``laplacian_u`` (``laplace(u) = g``, Navier /
simply supported) or ``normal_derivative`` (``du/dn = g``, clamped); the latter two may
stand in ``bc.dirichlet`` or ``bc.neumann`` and mean the same there.  Anything else
(a part with a missing or doubled condition, Robin data, a neumann condition on ``u``,
a transient case) raises.

Two discretisations, chosen by the ``method`` setting ("mixed": two Poisson solves,
Navier conditions only; "cip": C0 interior penalty, any conditions; "auto"): see the
shared ``_ufl_families._BhSetup``. Here the CIP penalty's h on an interior facet is
the mean of the two cells' h (`_common.cell_diameters`).
"""

import time

import firedrake as fd
import numpy as np
import ufl

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    cell_diameters,
    mesh_info,
    output_fields,
    to_ufl,
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
    "penalty": 4.0,  # cip: sigma = penalty * degree**2 / h on normal-derivative jumps
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
# CIP matrices have condition numbers ~ h**-4: round-off grows like resolution**4, so the
# CIP reference stays at a moderate resolution with degree 4 (as the DOLFINx twin).
REFERENCE = {
    "method": "auto",
    "resolution": 64,
    "degree": 4,
    "resolution_cip": 40,
    "degree_cip": 4,
    "resolution_3d": 10,
    "penalty": 4.0,
    "solver_parameters": None,
}


def _bh_facets(msh, ids):
    """Indices (into the owned exterior facets) of the facets with the given boundary ids."""
    ext = msh.exterior_facets
    n_owned = ext.set.size
    if ids == "on_boundary":
        return np.arange(n_owned)
    present = [i for i in ids if i in set(int(m) for m in ext.unique_markers)]
    if not present:
        return np.zeros(0, dtype=int)
    indices = np.asarray(ext.subset(tuple(present)).indices)
    return indices[indices < n_owned]


def _bh_check_coverage(domain, setup):
    """Every exterior facet: exactly one u condition and exactly one second condition."""
    msh = domain.msh
    n_facets = msh.exterior_facets.set.size
    count = {q: np.zeros(n_facets, dtype=np.int64) for q in setup.quantities}
    for q, entry in setup.conditions:
        count[q][_bh_facets(msh, domain.ids(entry["boundary"]))] += 1
    setup.check_counts(count, msh.comm.allreduce, domain.tag_ids)


def _bh_dirichlet(V, domain, entry, value, params):
    g = to_ufl(value, domain.msh, params=params)
    return fd.DirichletBC(V, g, domain.ids(entry["boundary"]))


def _bh_mixed(setup, domain, f):
    msh, degree, params = domain.msh, setup.degree, setup.params
    setup.check_degree()
    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx
    w_data, u_data = setup.dirichlet_data()
    w_bcs = [_bh_dirichlet(V, domain, e, g, params) for e, g in w_data]
    u_bcs = [_bh_dirichlet(V, domain, e, g, params) for e, g in u_data]
    wh, uh = fd.Function(V), fd.Function(V)
    opts = setup.cfg["solver_parameters"]
    first = LinearSystem(a, f * v * ufl.dx, wh, w_bcs, solver_parameters=opts, prefix="bh_w_")
    first.solve()
    second = LinearSystem(a, wh * v * ufl.dx, uh, u_bcs, solver_parameters=opts, prefix="bh_u_")
    second.solve()
    return uh, setup.mixed_info(first, second, V.dim())


def _bh_cip(setup, domain, f):
    msh, p, params = domain.msh, setup.degree, setup.params
    penalty = setup.check_degree()
    V = fd.FunctionSpace(msh, "CG", p)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    eta = fd.Constant(penalty * p**2)
    a, L = setup.cip_forms(u, v, domain, f, eta, cell_diameters(msh))
    _, u_data = setup.dirichlet_data()
    bcs = [_bh_dirichlet(V, domain, e, g, params) for e, g in u_data]
    uh = fd.Function(V)
    system = LinearSystem(a, L, uh, bcs, solver_parameters=setup.cfg["solver_parameters"],
                          prefix="bh_cip_")  # fmt: skip
    system.solve()
    info = {**system.info(), "dofs": V.dim(), "penalty": penalty}
    return uh, info


def solve(case_spec, settings=None):
    started = time.perf_counter()
    setup = _BhSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    resolution = setup.resolution
    domain = build_domain(case_spec["domain"], resolution)
    msh = domain.msh
    _bh_check_coverage(domain, setup)
    f = setup.forcing(msh)
    if setup.method == "mixed":
        uh, sinfo = _bh_mixed(setup, domain, f)
    else:
        uh, sinfo = _bh_cip(setup, domain, f)
    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    track_info = {
        **mesh_info(msh),
    }
    info = setup.info(track_info, sinfo)
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
