"""Convection-diffusion: [du/dt] - epsilon laplace(u) + beta . grad(u) = f.

Steady, or transient on (t0, t_end] with u(t0) = ic.u when ``pde.time`` is given.
epsilon (> 0) and the components of beta may be numbers or expressions of x, y[, z]
and t. Boundary conditions: Dirichlet u = g, Neumann epsilon du/dn = g, Robin
epsilon du/dn + alpha u = g, and the natural condition epsilon du/dn = 0 on boundary
parts not named. On a periodic_square the mesh itself is periodic.

Discretisation, stabilisation and time stepping: the shared ``_ufl_families._CdSetup``
(same in the DOLFINx track). Here time enters through fd.Constants, and the linear
systems are solved directly (MUMPS) by default, or with the PETSc options in
``solver_parameters`` (e.g. GMRES + ILU).
"""

import math
import time

import firedrake as fd

from ._common import (
    GridSampler,
    LinearSystem,
    build_domain,
    cell_diameters,
    dirichlet_conditions,
    mesh_info,
    output_fields,
    to_ufl,
    write_solution,
)
from ._ufl_families import _CdSetup

SETTINGS = None  # bundle: settings
DEFAULTS = {
    "resolution": 24,  # 2-D: cells across the longest side of the bounding box
    "resolution_3d": 8,  # 3-D (unit_cube): cells per side
    "degree": 2,  # Lagrange degree
    "stabilization": "auto",  # auto | supg | none
    "scheme": "bdf2",  # transient: bdf2 | crank_nicolson | backward_euler
    "dt": 0.01,  # transient: largest time step (the step is (t_end - t0) / n_steps)
    "n_steps": None,  # transient: number of steps (overrides dt when set)
    "quadrature_degree": None,  # cell integrals; None = 2 * degree + 2
    "solver_parameters": None,  # None = direct solve (MUMPS)
}
REFERENCE = {
    **DEFAULTS,
    "resolution": 128,
    "resolution_3d": 16,
    "degree": 3,
    "dt": 0.0005,
}


def _cd_cell_extreme(expr, msh, Q, op):
    """min or max (``op``) over all cells of a scalar UFL expression at the cell midpoints
    (DG0 interpolation), reduced over the mesh's communicator."""
    from mpi4py import MPI

    values = fd.Function(Q).interpolate(expr).dat.data_ro
    if op == "min":
        return msh.comm.allreduce(float(values.min(initial=math.inf)), op=MPI.MIN)
    return msh.comm.allreduce(float(values.max(initial=-math.inf)), op=MPI.MAX)


def solve(case_spec, settings=None):
    started = time.perf_counter()
    setup = _CdSetup(case_spec, DEFAULTS, SETTINGS if settings is None else settings)
    cfg, degree, bc_spec = setup.cfg, setup.degree, setup.bc_spec
    domain = build_domain(case_spec["domain"], setup.resolution, periodic=bc_spec.get("periodic"))
    msh = domain.msh
    setup.beta(msh.geometric_dimension)

    V = fd.FunctionSpace(msh, "CG", degree)
    u, v = fd.TrialFunction(V), fd.TestFunction(V)
    dx = setup.measure(msh)
    t_new = fd.Constant(setup.t_start)
    t_old = fd.Constant(setup.t_start)

    eps, beta, f = setup.coefficients(msh, t_new)
    hK = cell_diameters(msh) / degree
    Q = fd.FunctionSpace(msh, "DG", 0)
    supg, pe_max = setup.stabilization(
        eps, beta, hK, t_new.assign,
        lambda expr: _cd_cell_extreme(expr, msh, Q, "min"),
        lambda expr: _cd_cell_extreme(expr, msh, Q, "max"),
    )  # fmt: skip
    new = (eps, beta, f, *setup.boundary(v, domain, t_new, u))
    bcs = dirichlet_conditions(V, domain, bc_spec, t=t_new, params=setup.params)
    uh = fd.Function(V, name="u")
    options = {"solver_parameters": cfg["solver_parameters"], "prefix": "convdiff_"}
    step_info = {}

    if not setup.transient:
        a, L = setup.steady_system(u, v, dx, new, supg)
        system = LinearSystem(a, L, uh, bcs, **options)
        system.solve()
    else:
        t0, n_steps, dt, time_dependent_matrix, start, main = setup.time_steps()
        k = fd.Constant(dt)
        c0, c1, c2 = fd.Constant(1.0), fd.Constant(-1.0), fd.Constant(0.0)
        theta = fd.Constant(1.0)
        u_n, u_nm1 = fd.Function(V), fd.Function(V)
        t_new.assign(t0)
        u_n.interpolate(to_ufl(case_spec["ic"]["u"], msh, t_new, setup.params))
        u_nm1.assign(u_n)
        a, L = setup.transient_system(
            u, v, dx, (u_n, u_nm1), k, (c0, c1, c2, theta), new, domain, t_old, supg
        )

        def set_coefficients(values):
            for const, value in zip((c0, c1, c2, theta), values, strict=True):
                const.assign(value)

        set_coefficients(start)
        system = LinearSystem(a, L, uh, bcs, constant_matrix=not time_dependent_matrix, **options)
        matrix_assemblies = 0
        for step in range(1, n_steps + 1):
            t_old.assign(t0 + (step - 1) * dt)
            t_new.assign(t0 + step * dt)  # the Dirichlet data follows on apply
            reassemble = step == 1 or time_dependent_matrix
            if step == 2 and start != main:
                set_coefficients(main)
                system.solver.invalidate_jacobian()
                reassemble = True
            system.solve()
            matrix_assemblies += int(reassemble)
            u_nm1.assign(u_n)
            u_n.assign(uh)
        step_info = setup.step_info(n_steps, dt, matrix_assemblies)

    values = GridSampler(msh, case_spec["eval_grid"]).values(uh)[0]
    fields = output_fields(case_spec, {"u": values})
    track_info = {"dofs": V.dim(), **mesh_info(msh)}
    info = setup.info(supg, pe_max, track_info, step_info, system.info())
    write_solution(case_spec["eval_grid"], fields, solver_info=info, started=started)
