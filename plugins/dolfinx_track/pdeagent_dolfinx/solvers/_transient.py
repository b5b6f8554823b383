"""Shared runtime helpers of the scalar time-dependent solvers (heat, wave), inlined by
the bundler: direct-solver choice, periodic-aware linear system, time-step count and
quadrature degree."""

import math

import ufl

from ._periodic import make_linear_system


def transient_direct_options(dim):
    """Direct LU: PETSc's own with nested dissection in 2-D (fastest repeated back-solves),
    MUMPS in 3-D (PETSc's LU fills in badly there)."""
    if dim == 3:
        return {"ksp_type": "preonly", "pc_type": "lu", "pc_factor_mat_solver_type": "mumps"}
    return {
        "ksp_type": "preonly",
        "pc_type": "lu",
        "pc_factor_mat_solver_type": "petsc",
        "pc_factor_mat_ordering_type": "nd",
    }


def transient_linear_system(a, L, bcs, u, domain, bc_spec, **kw):
    """A linear system with truly periodic constraints when the case has any."""
    return make_linear_system(a, L, bcs, u, domain, bc_spec, **kw)


def transient_time_steps(family, cfg, t0, t_end):
    span = t_end - t0
    if not span > 0:
        raise ValueError(f"{family}: empty time interval [{t0}, {t_end}]")
    if cfg["n_steps"] is not None:
        n = int(cfg["n_steps"])
    else:
        dt = float(cfg["dt"])
        if not dt > 0:
            raise ValueError(f"{family}: dt must be positive, got {dt}")
        n = max(1, math.ceil(span / dt - 1e-9))
    if n < 1:
        raise ValueError(f"{family}: n_steps must be positive, got {n}")
    return n, span / n


def with_quadrature(form, degree):
    if degree is None:
        return form
    return ufl.Form(
        [
            itg.reconstruct(metadata={**itg.metadata(), "quadrature_degree": degree})
            for itg in form.integrals()
        ]
    )
