"""Shared runtime helpers of the scalar time-dependent solvers (heat, wave), inlined by
the bundler: direct-solver choice and periodic-aware linear system; the time-step count
and quadrature degree are the core's shared UFL runtime (``_ufl_forms``)."""

from ._periodic import make_linear_system
from ._ufl_forms import transient_time_steps, with_quadrature  # noqa: F401  (shared runtime)


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
