"""Linear elasticity: -div(sigma(u)) = f, sigma = 2 mu eps(u) + lam tr(eps(u)) I.

Parameters as {E, nu}, {young_modulus, poisson_ratio} or {lambda, mu} (numbers or
expressions); ``pde.params.model`` is plane_strain (lam = lambda), plane_stress
(lam = 2 lambda mu / (lambda + 2 mu)) or 3d. Dirichlet displacement data (quantity
None / "u" / "displacement"), traction data sigma(u) n = g (quantity None / "u" /
"traction") and the natural traction-free condition on unnamed boundary parts.

Discretisation (displacement form, or the Taylor-Hood displacement-pressure form near
the incompressible limit): see the shared ``_ufl_families._el_begin``.
Linear systems: direct solve (MUMPS) by default; with a ``gamg`` preconditioner the
rigid-body modes are attached as near-null space.
"""

import time

import dolfinx.fem.petsc as fem_petsc
import numpy as np
import ufl
from basix.ufl import element, mixed_element
from dolfinx import fem
from petsc4py import PETSc

from ._common import (
    COMM,
    DirichletData,
    GridSampler,
    LinearSystem,
    build_domain,
    to_numpy,
    to_ufl,
    write_solution,
)
from ._ufl_families import (
    _el_begin,
    _el_check_dirichlet,
    _el_check_neumann,
    _el_field_split_form,
    _el_info,
    _el_options_key,
    _el_output,
    _el_require_dirichlet,
)
from ._ufl_forms import _el_bilinear, _el_formulation, _el_lame

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 8,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree of the displacement (pressure: degree - 1)
    "geometry_degree": 2,  # curved boundaries: 2 = second-order geometry
    "formulation": "auto",  # auto | displacement | mixed
    "mixed_nu_threshold": 0.49,  # auto: mixed form when nu >= this (plane strain / 3d)
    "petsc_options": None,  # 2-D; None = direct solve (MUMPS)
    "petsc_options_3d": None,  # 3-D; None = direct solve (MUMPS)
    "petsc_options_mixed": None,  # mixed form, 2-D; None = direct solve (MUMPS)
    "petsc_options_mixed_3d": None,  # mixed form, 3-D; None = direct solve (MUMPS)
}
REFERENCE = {  # a literal (read by pdeagent_dolfinx.bundle.module_settings)
    "resolution": 96,
    "resolution_3d": 12,
    "degree": 3,
    "geometry_degree": 2,
    "formulation": "auto",
    "mixed_nu_threshold": 0.49,
    "petsc_options": None,
    # 3-D displacement form: CG + GAMG with the rigid-body modes as near-null space
    "petsc_options_3d": {
        "ksp_type": "cg",
        "ksp_rtol": 1e-12,
        "ksp_atol": 1e-14,
        "ksp_max_it": 5000,
        "pc_type": "gamg",
        "pc_gamg_threshold": 0.02,
        "mg_levels_ksp_type": "chebyshev",
        "mg_levels_pc_type": "jacobi",
    },
    "petsc_options_mixed": None,
    # the mixed form stays with MUMPS: P3-P2 at resolution 12 (168k dofs) takes about a
    # minute; MINRES with a GAMG/Jacobi field split (pc_type fieldsplit, see
    # _ElFieldSplitSystem) needs ~500 iterations and was much slower
    "petsc_options_mixed_3d": None,
}


def _el_numeric(params, name, points):
    """Values of a (number or expression) parameter at the given points (3, N)."""
    value = params[name]
    if isinstance(value, bool):
        raise TypeError(f"pde.params.{name} must be a number or an expression")
    if isinstance(value, (int, float)):
        return np.array([float(value)])
    return np.asarray(to_numpy(value, params)(points), dtype=float)


def _el_vector(value, dim, what):
    """Vector data as a list of expression strings (numbers become strings, so every
    component is a mesh-bound UFL object and a constant vector can be interpolated)."""
    if not isinstance(value, (list, tuple)) or len(value) != dim:
        raise ValueError(f"linear_elasticity: {what} must be a list of {dim} expressions")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise TypeError(f"linear_elasticity: {what} has an invalid component {item!r}")
        out.append(item if isinstance(item, str) else repr(float(item)))
    return out


def _el_body_force(pde, msh, dim, params):
    forcing = pde.get("forcing") or {}
    if not forcing:
        return None
    if len(forcing) == 1:
        (value,) = forcing.values()
    else:
        raise ValueError(
            f"linear_elasticity: unsupported forcing entries {sorted(forcing)}; expected one "
            "body force f"
        )
    return to_ufl(_el_vector(value, dim, "the body force f"), msh, params=params)


def _el_rigid_modes(V, dim):
    """The rigid-body motions of V as an orthonormalised PETSc near-null space."""
    funcs = []
    if dim == 2:
        modes = [
            lambda x: np.vstack([np.ones_like(x[0]), np.zeros_like(x[0])]),
            lambda x: np.vstack([np.zeros_like(x[0]), np.ones_like(x[0])]),
            lambda x: np.vstack([-x[1], x[0]]),
        ]
    else:
        zero, one = np.zeros_like, np.ones_like
        modes = [
            lambda x: np.vstack([one(x[0]), zero(x[0]), zero(x[0])]),
            lambda x: np.vstack([zero(x[0]), one(x[0]), zero(x[0])]),
            lambda x: np.vstack([zero(x[0]), zero(x[0]), one(x[0])]),
            lambda x: np.vstack([-x[1], x[0], zero(x[0])]),
            lambda x: np.vstack([x[2], zero(x[0]), -x[0]]),
            lambda x: np.vstack([zero(x[0]), -x[2], x[1]]),
        ]
    for mode in modes:
        fn = fem.Function(V)
        fn.interpolate(mode)
        funcs.append(fn)
    vecs = [fn.x.petsc_vec.copy() for fn in funcs]
    for i, vec in enumerate(vecs):  # modified Gram-Schmidt
        for prev in vecs[:i]:
            vec.axpy(-vec.dot(prev), prev)
        vec.normalize()
    return PETSc.NullSpace().create(vectors=vecs), vecs


class _ElMixedDirichlet:
    """A displacement condition on the u part of the mixed space W = (u, p).

    Works in W's own numbering (data interpolated into a Function on W, dofs located on
    W.sub(0)) instead of going through the collapsed sub-space: in DOLFINx 0.11 the
    collapsed vector sub-space of a mixed element is unreliable for degree >= 3 on
    tetrahedra (wrong boundary values through the (W.sub(0), V) dof pairs; wrong point
    evaluation of collapsed functions), while this route is exact.
    """

    def __init__(self, W, domain, tags, value, params):
        msh = domain.msh
        self.g = fem.Function(W)
        sub = W.sub(0)
        expr = to_ufl(value, msh, None, params)
        self.g.sub(0).interpolate(fem.Expression(expr, sub.element.interpolation_points))
        dofs = fem.locate_dofs_topological(sub, msh.topology.dim - 1, domain.facets(tags))
        self.bc = fem.dirichletbc(self.g, dofs)


class _ElFieldSplitSystem:
    """The mixed system solved iteratively with a PETSc field split over (u, p): operator
    ``a``, preconditioner matrix from ``a_prec``; the displacement block gets the rigid-body
    modes as near-null space (for GAMG)."""

    def __init__(self, a, a_prec, L, bcs, wh, options, prefix):
        W = wh.function_space
        self.a, self.L = fem.form(a), fem.form(L)
        self.bcs, self.wh = list(bcs), wh
        A = fem_petsc.assemble_matrix(self.a, bcs=self.bcs)
        A.assemble()
        P = fem_petsc.assemble_matrix(fem.form(a_prec), bcs=self.bcs)
        P.assemble()
        self.ksp = PETSc.KSP().create(COMM)
        self.ksp.setOptionsPrefix(prefix)
        self.ksp.setOperators(A, P)
        opts = PETSc.Options()
        for key, value in options.items():
            opts[f"{prefix}{key}"] = value
        imap = W.dofmap.index_map
        n_owned, first = imap.size_local * W.dofmap.index_map_bs, imap.local_range[0]
        splits = []
        for i in range(2):
            space, dofs = W.sub(i).collapse()
            dofs = np.asarray(dofs, dtype=np.int64)
            owned = dofs[dofs < n_owned] + first
            splits.append((space, PETSc.IS().createGeneral(owned.astype(PETSc.IntType), COMM)))
        pc = self.ksp.getPC()
        pc.setType("fieldsplit")
        pc.setFieldSplitIS(("u", splits[0][1]), ("p", splits[1][1]))
        self.ksp.setFromOptions()
        self.ksp.setUp()
        self._modes = None
        if pc.getType() == "fieldsplit":
            V = splits[0][0]
            self._modes = _el_rigid_modes(V, V.mesh.geometry.dim)
            sub_u = pc.getFieldSplitSubKSP()[0]
            sub_u.getOperators()[1].setNearNullSpace(self._modes[0])
        self.iterations = 0

    def solve(self):
        b = fem_petsc.assemble_vector(self.L)
        fem_petsc.apply_lifting(b, [self.a], bcs=[self.bcs])
        b.ghostUpdate(addv=PETSc.InsertMode.ADD, mode=PETSc.ScatterMode.REVERSE)
        fem_petsc.set_bc(b, self.bcs)
        self.ksp.solve(b, self.wh.x.petsc_vec)
        reason = self.ksp.getConvergedReason()
        if reason <= 0:
            raise RuntimeError(f"linear solver did not converge (KSP reason {reason})")
        self.iterations += self.ksp.getIterationNumber()
        self.wh.x.scatter_forward()
        return self.wh

    def info(self):
        return {
            "ksp_type": self.ksp.getType(),
            "pc_type": self.ksp.getPC().getType(),
            "linear_iterations": int(self.iterations),
        }


def solve(case_spec, settings=None):
    started = time.perf_counter()
    settings = SETTINGS if settings is None else settings
    cfg, params, model, is_3d, resolution, degree = _el_begin(case_spec, DEFAULTS, settings)
    pde, bc_spec = case_spec["pde"], case_spec["bc"]

    domain = build_domain(case_spec["domain"], resolution, degree=cfg["geometry_degree"])
    msh = domain.msh
    dim = msh.geometry.dim
    points = msh.geometry.x.T  # parameters sampled at the mesh nodes
    mu, lam, nu_min, nu_max = _el_lame(
        params, msh, model, lambda name, _: _el_numeric(params, name, points)
    )
    formulation = _el_formulation(cfg, model, degree, nu_min, nu_max)

    cell = msh.basix_cell()
    gdeg = msh.geometry.cmaps[0].degree
    v_el = element("Lagrange", cell, degree, shape=(dim,))
    if formulation == "mixed":
        p_el = element("Lagrange", cell, degree - 1)
        W = fem.functionspace(msh, mixed_element([v_el, p_el]))
        u, p = ufl.TrialFunctions(W)
        v, q = ufl.TestFunctions(W)
    else:
        W = fem.functionspace(msh, v_el)
        u, v = ufl.TrialFunction(W), ufl.TestFunction(W)
        p = q = None
    a = _el_bilinear(formulation, u, v, mu, lam, dim, p, q)

    f = _el_body_force(pde, msh, dim, params)
    L = ufl.inner(f, v) * ufl.dx if f is not None else None
    for k, entry in enumerate(bc_spec.get("neumann") or []):
        _el_check_neumann(entry)
        g = to_ufl(_el_vector(entry["value"], dim, f"bc.neumann[{k}].value"), msh, params=params)
        term = ufl.inner(g, v) * domain.ds(entry["boundary"])
        L = term if L is None else L + term
    if L is None:  # no load at all: a zero right-hand side of the right shape
        L = ufl.inner(fem.Constant(msh, np.zeros(dim)), v) * ufl.dx

    dirichlet = []
    for k, entry in enumerate(bc_spec.get("dirichlet") or []):
        _el_check_dirichlet(entry)
        value = _el_vector(entry["value"], dim, f"bc.dirichlet[{k}].value")
        if formulation == "mixed":
            dirichlet.append(_ElMixedDirichlet(W, domain, entry["boundary"], value, params))
        else:
            dirichlet.append(DirichletData(W, domain, entry["boundary"], value, params=params))
    _el_require_dirichlet(dirichlet)
    bcs = [d.bc for d in dirichlet]

    wh = fem.Function(W)
    petsc_options = cfg[_el_options_key("petsc_options", formulation, is_3d)]
    if formulation == "mixed" and petsc_options and petsc_options.get("pc_type") == "fieldsplit":
        a_prec = _el_field_split_form(u, v, p, q, mu, lam)
        system = _ElFieldSplitSystem(a, a_prec, L, bcs, wh, petsc_options, "elasticity_")
    else:
        system = LinearSystem(a, L, bcs, wh, petsc_options=petsc_options, prefix="elasticity_")
        if formulation == "displacement" and petsc_options is not None:
            modes = _el_rigid_modes(W, dim)
            system.A.setNearNullSpace(modes[0])
    system.solve()
    if formulation == "mixed":
        # copy the displacement into a plain vector space (see _ElMixedDirichlet)
        uh = fem.Function(fem.functionspace(msh, v_el))
        uh.interpolate(fem.Expression(wh.sub(0), uh.function_space.element.interpolation_points))
    else:
        uh = wh

    sampler = GridSampler(msh, case_spec["eval_grid"])
    fields = _el_output(case_spec, sampler.values(uh), dim)
    track_info = {
        "geometry_degree": gdeg,
        "dofs": W.dofmap.index_map.size_global * W.dofmap.index_map_bs,
        "cells": msh.topology.index_map(msh.topology.dim).size_global,
        "nu_range": [nu_min, nu_max],
    }
    info = _el_info(model, formulation, resolution, degree, track_info, system.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
