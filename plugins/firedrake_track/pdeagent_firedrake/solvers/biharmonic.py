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
  ``-laplace(u) = w, u = g_u``, both with strong Dirichlet data.  L2 order
  ``degree + 1`` (3 for P2).
* ``"cip"`` (C0 interior penalty, any mix of Navier and clamped parts): continuous
  Lagrange of degree ``degree_cip >= 2`` on a mesh of ``resolution_cip``, ``u = g_u``
  strongly and the broken form ``sum_K (lap u, lap v)_K`` with symmetric consistency
  terms ``-({lap u}, [dv/dn]) - ({lap v}, [du/dn])`` and the penalty
  ``sigma = penalty * p**2 / h`` on the jumps of the normal derivative across interior
  facets (h there: the mean of the two cells' h); clamped data ``du/dn = g`` is imposed
  weakly by the same symmetric terms and penalty on its boundary parts (Nitsche), Navier
  data ``laplace(u) = g`` enters the right-hand side as ``(g, dv/dn)`` on its parts.
  L2 order 2 for P2 (suboptimal, as known for CIP), ``p + 1`` for ``p >= 3``.  h is the
  largest vertex distance of a cell (`_common.cell_diameters`).

``method = "auto"`` (default) takes ``mixed`` when no ``normal_derivative`` condition is
stated (the coverage check then guarantees laplacian_u on every facet) and ``cip``
otherwise.  The unit cube (3-D) uses ``resolution_3d`` for both methods.
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
    merged_settings,
    mesh_info,
    output_fields,
    to_ufl,
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


def _bh_check_coverage(domain, conditions):
    """Every exterior facet: exactly one u condition and exactly one second condition."""
    msh = domain.msh
    n_facets = msh.exterior_facets.set.size
    count = {q: np.zeros(n_facets, dtype=np.int64) for q in _BH_QUANTITIES}
    for q, entry in conditions:
        count[q][_bh_facets(msh, domain.ids(entry["boundary"]))] += 1
    _bh_check_counts(count, msh.comm.allreduce, domain.tag_ids)


def _bh_dirichlet(V, domain, entry, value, params):
    g = to_ufl(value, domain.msh, params=params)
    return fd.DirichletBC(V, g, domain.ids(entry["boundary"]))


def _bh_mixed(domain, conditions, f, degree, cfg, params):
    msh = domain.msh
    if degree < 1:
        raise ValueError(f"biharmonic: degree must be >= 1, got {degree}")
    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    a = ufl.inner(ufl.grad(u), ufl.grad(v)) * ufl.dx
    w_bcs = [
        _bh_dirichlet(V, domain, e, _bh_negated(e["value"]), params)
        for q, e in conditions
        if q == "laplacian_u"
    ]
    u_bcs = [_bh_dirichlet(V, domain, e, e["value"], params) for q, e in conditions if q == "u"]
    wh, uh = fd.Function(V), fd.Function(V)
    opts = cfg["solver_parameters"]
    first = LinearSystem(a, f * v * ufl.dx, wh, w_bcs, solver_parameters=opts, prefix="bh_w_")
    first.solve()
    second = LinearSystem(a, wh * v * ufl.dx, uh, u_bcs, solver_parameters=opts, prefix="bh_u_")
    second.solve()
    i1, i2 = first.info(), second.info()
    info = {
        "ksp_type": i2["ksp_type"],
        "pc_type": i2["pc_type"],
        "linear_iterations": i1["linear_iterations"] + i2["linear_iterations"],
        "dofs": 2 * V.dim(),  # u and w, one Poisson solve each
        "dofs_per_field": V.dim(),
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
    V = fd.FunctionSpace(msh, "CG", p)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    eta = fd.Constant(penalty * p**2)
    a, L = _bh_cip_forms(u, v, domain, conditions, f, eta, cell_diameters(msh), params)
    bcs = [_bh_dirichlet(V, domain, e, e["value"], params) for q, e in conditions if q == "u"]
    uh = fd.Function(V)
    system = LinearSystem(a, L, uh, bcs, solver_parameters=cfg["solver_parameters"],
                          prefix="bh_cip_")  # fmt: skip
    system.solve()
    info = {**system.info(), "dofs": V.dim(), "penalty": penalty}
    return uh, info


def solve(case_spec, settings=None):
    started = time.perf_counter()
    cfg = merged_settings(DEFAULTS, SETTINGS if settings is None else settings)
    pde = case_spec["pde"]
    params = pde.get("params") or {}
    conditions, method, degree, resolution = _bh_method(case_spec, cfg)
    domain = build_domain(case_spec["domain"], resolution)
    msh = domain.msh
    _bh_check_coverage(domain, conditions)
    f = _bh_forcing(pde, msh, params)
    if method == "mixed":
        uh, sinfo = _bh_mixed(domain, conditions, f, degree, cfg, params)
    else:
        uh, sinfo = _bh_cip(domain, conditions, f, degree, cfg, params)
    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    info = {
        "family": "biharmonic",
        "method": method,
        "resolution": resolution,
        "element_degree": degree,
        **mesh_info(msh),
        **sinfo,
    }
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
