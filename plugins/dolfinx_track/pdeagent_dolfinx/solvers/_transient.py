"""Shared runtime helpers of the scalar time-dependent solvers (heat, wave), inlined by
the bundler: direct-solver choice, source term, time-step count, quadrature degree and
interpolation of case data."""

import math

import ufl
from dolfinx import fem

from ._common import to_ufl
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


def transient_check_bc(family, bc_spec):
    for kind in ("dirichlet", "neumann"):
        for entry in bc_spec.get(kind) or []:
            if entry.get("quantity") not in (None, "u"):
                raise ValueError(
                    f"{family}: a {kind} condition on quantity "
                    f"{entry.get('quantity')!r} is not defined (only u)"
                )


def transient_forcing(family, pde):
    """The source term f: 0 without forcing; a single entry is f whatever its name."""
    forcing = pde.get("forcing") or {}
    if not forcing:
        return 0.0
    if len(forcing) == 1:
        (value,) = forcing.values()
        return value
    raise ValueError(
        f"{family}: unsupported forcing entries {sorted(forcing)}; the equation has one "
        "source term f"
    )


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


def interpolate_data(func, value, msh, t, params):
    expr = to_ufl(value, msh, t, params)
    func.interpolate(fem.Expression(expr, func.function_space.element.interpolation_points))
