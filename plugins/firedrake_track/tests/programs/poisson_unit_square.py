"""A hand-written Firedrake solver (tests only): P2 Poisson with Dirichlet data on the unit
square, MUMPS, grid sampling with NaN outside; the case's expressions evaluated as UFL."""

import json
import time

import numpy as np
from firedrake import (
    DirichletBC,
    Function,
    FunctionSpace,
    PointEvaluator,
    SpatialCoordinate,
    TestFunction,
    TrialFunction,
    UnitSquareMesh,
    cos,
    dx,
    exp,
    grad,
    inner,
    pi,
    sin,
    sqrt,
)
from firedrake import solve as firedrake_solve


def solve(case_spec):
    start = time.perf_counter()
    mesh = UnitSquareMesh(48, 48)
    V = FunctionSpace(mesh, "CG", 2)
    x, y = SpatialCoordinate(mesh)
    names = {"x": x, "y": y, "pi": pi, "sin": sin, "cos": cos, "exp": exp, "sqrt": sqrt}
    f = eval(case_spec["pde"]["forcing"]["f"], {}, names)
    kappa = float(case_spec["pde"]["params"]["kappa"])
    g = eval(case_spec["bc"]["dirichlet"][0]["value"], {}, names)
    u, v = TrialFunction(V), TestFunction(V)
    uh = Function(V)
    firedrake_solve(
        kappa * inner(grad(u), grad(v)) * dx == f * v * dx,
        uh,
        bcs=[DirichletBC(V, g, "on_boundary")],
        solver_parameters={
            "ksp_type": "preonly",
            "pc_type": "lu",
            "pc_factor_mat_solver_type": "mumps",
        },
    )
    grid = case_spec["eval_grid"]
    xs = np.linspace(grid["bbox"][0], grid["bbox"][1], grid["nx"])
    ys = np.linspace(grid["bbox"][2], grid["bbox"][3], grid["ny"])
    X, Y = np.meshgrid(xs, ys)
    points = np.column_stack([X.ravel(), Y.ravel()])
    evaluator = PointEvaluator(mesh, points, tolerance=1e-10, missing_points_behaviour="ignore")
    values = np.asarray(evaluator.evaluate(uh), dtype=float)  # NaN outside the mesh
    np.savez("solution.npz", x=xs, y=ys, u=values.reshape(X.shape))
    with open("meta.json", "w") as out:
        json.dump(
            {
                "wall_time_sec": time.perf_counter() - start,
                "status": "ok",
                "solver_info": {"resolution": 48, "degree": 2, "num_dofs": int(V.dof_count)},
            },
            out,
        )
