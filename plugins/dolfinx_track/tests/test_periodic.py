"""Periodic boundary conditions of the DOLFINx track (``solvers/_periodic.py``).

Through the Poisson and Helmholtz solvers on periodic_square (convergence orders,
exact periodicity of the grid values) and directly in the runtime (prolongation
structure, time-dependent Dirichlet data with matrix reassembly, iterative solver).

Run (harness venv): .venv/bin/python -m pytest plugins/dolfinx_track/tests/test_periodic.py -q -s
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import dolfinx_harness as H
import numpy as np
import pytest
import sympy as sp

pytestmark = pytest.mark.dolfinx

x, y = sp.symbols("x y")
pi = sp.pi
PX = {"axis": "x", "boundary": "xmin", "partner": "xmax"}
PY = {"axis": "y", "boundary": "ymin", "partner": "ymax"}
PLUGIN = Path(__file__).resolve().parents[1] / "pdeagent_dolfinx"


def assert_periodic(u, axes):
    """Grid values on opposite sides agree to machine precision ((ny, nx) arrays)."""
    scale = float(np.abs(u).max())
    if "x" in axes:
        assert np.abs(u[:, 0] - u[:, -1]).max() <= 1e-12 * scale
    if "y" in axes:
        assert np.abs(u[0, :] - u[-1, :]).max() <= 1e-12 * scale


def test_poisson_periodic_x_dirichlet_y(tmp_path):
    g = sp.cos(2 * pi * x) * (1 + y)
    exact = g + y * (1 - y) * sp.sin(2 * pi * x + 1) * sp.exp(y)
    kappa = 1 + sp.sin(2 * pi * x) ** 2 / 2
    f = -(sp.diff(kappa * sp.diff(exact, x), x) + sp.diff(kappa * sp.diff(exact, y), y))
    spec = H.case_spec(
        "poisson",
        domain="periodic_square",
        params={"kappa": str(kappa)},
        forcing={"f": str(f)},
        bc={
            "dirichlet": [{"boundary": ["ymin", "ymax"], "value": str(g), "quantity": None}],
            "periodic": [PX],
        },
        output={"field": "u"},
    )
    ns = (8, 16, 32)
    settings = [{"resolution": n, "degree": p} for p in (1, 2) for n in ns]
    recs = H.run_solver("poisson", spec, settings, tmp_path)
    errs = [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs]
    for i, p in enumerate((1, 2)):
        e = errs[3 * i : 3 * i + 3]
        orders = H.observed_orders(e)
        print(
            f"\nperiodic poisson (x periodic, Dirichlet y) P{p} n={ns}: errors {e} orders {orders}"
        )
        assert min(orders) >= p + 1 - 0.3
    for rec in recs:
        assert_periodic(rec["arrays"]["u"], "x")
        info = rec["meta"]["solver_info"]["periodic"]
        assert info["dofs_full"] - info["dofs_reduced"] == info["periodic_pairs"]
        assert info["dirichlet_mismatch"] < 1e-12


@pytest.mark.parametrize("k", [5.0, 15.0])
def test_helmholtz_fully_periodic(k, tmp_path):
    exact = sp.sin(2 * pi * x) * sp.cos(4 * pi * y) + sp.exp(sp.sin(2 * pi * (x + y)))
    f = -sp.diff(exact, x, 2) - sp.diff(exact, y, 2) - k**2 * exact
    spec = H.case_spec(
        "helmholtz",
        domain="periodic_square",
        params={"k": k},
        forcing={"f": str(f)},
        bc={"periodic": [PX, PY]},
        output={"field": "u"},
    )
    runs = {1: (16, 32, 64), 2: (8, 16, 32)}
    settings = [
        {"resolution": n, "degree": p, "points_per_wavelength": 0.0}
        for p, ns in runs.items()
        for n in ns
    ]
    recs = H.run_solver("helmholtz", spec, settings, tmp_path)
    errs = [H.grid_error(spec, r["arrays"], {"u": str(exact)}) for r in recs]
    for i, p in enumerate(runs):
        e = errs[3 * i : 3 * i + 3]
        orders = H.observed_orders(e)
        print(f"\nperiodic helmholtz k={k} P{p} n={runs[p]}: errors {e} orders {orders}")
        assert min(orders) >= p + 1 - 0.3
    for rec, s in zip(recs, settings, strict=True):
        assert_periodic(rec["arrays"]["u"], "xy")
        info = rec["meta"]["solver_info"]["periodic"]
        assert info["dofs_reduced"] == (s["degree"] * s["resolution"]) ** 2  # torus


def test_singular_periodic_problem_fails(tmp_path):
    """Poisson periodic in x and y has constants in its kernel: it must raise, not return."""
    spec = H.case_spec(
        "poisson",
        domain="periodic_square",
        params={"kappa": 1.0},
        forcing={"f": "sin(2*pi*x)"},
        bc={"periodic": [PX, PY]},
        output={"field": "u"},
        n=11,
    )
    with pytest.raises(AssertionError, match="singular"):
        H.run_solver("poisson", spec, [{"resolution": 8}], tmp_path)


RUNTIME_CHECKS = textwrap.dedent(
    """
    import json, sys
    from mpi4py import MPI
    sys.path.insert(0, PLUGIN)
    import numpy as np, ufl
    from dolfinx import fem
    from solvers._common import DirichletData, LinearSystem
    from solvers._meshing import build_domain
    from solvers._periodic import PeriodicLinearSystem, make_linear_system, periodic_prolongation

    spec = {"type": "periodic_square", "bounds": [[0, 1], [0, 1]], "geometry_params": {}}
    px = {"axis": "x", "boundary": "xmin", "partner": "xmax"}
    py = {"axis": "y", "boundary": "ymin", "partner": "ymax"}
    out = {}
    dom = build_domain(spec, 4)
    V = fem.functionspace(dom.msh, ("Lagrange", 1))
    P, diag = periodic_prolongation(V, dom, [px, py])
    X = V.tabulate_dof_coordinates()
    corner = np.flatnonzero(np.all(np.isclose(X[:, :2] % 1.0, 0.0), axis=1))
    out["p1"] = [P.shape[0], P.shape[1], int(P.sum()), len(set(P.indices[corner]))]
    W = fem.functionspace(dom.msh, ("Lagrange", 2, (2,)))
    Pw, _ = periodic_prolongation(W, dom, [px])
    out["vector_p2"] = list(Pw.shape)
    try:
        periodic_prolongation(V, dom, [{"axis": "x", "boundary": "xmin", "partner": "ymax"}])
        out["bad_pair"] = "no error"
    except ValueError as exc:
        out["bad_pair"] = str(exc)

    # u_t - (1 + t) laplace(u) = f with exact u = 1 + t y^2 (in P2 and linear in t, so
    # implicit Euler reproduces it exactly): time-dependent Dirichlet data on ymin/ymax,
    # matrix reassembled every step; periodic in x (CG + GAMG) and natural in x (MUMPS)
    dom = build_domain({"type": "unit_square", "bounds": [[0, 1], [0, 1]],
                        "geometry_params": {}}, 8)
    V = fem.functionspace(dom.msh, ("Lagrange", 2))
    t = fem.Constant(dom.msh, 0.0)
    dt = 0.05
    results = []
    for periodic in (False, True):
        u, v = ufl.TrialFunction(V), ufl.TestFunction(V)
        u_old, uh = fem.Function(V), fem.Function(V)
        yy = ufl.SpatialCoordinate(dom.msh)[1]
        a = (u * v + dt * (1 + t) * ufl.inner(ufl.grad(u), ufl.grad(v))) * ufl.dx
        L = (u_old + dt * (yy**2 - 2 * t * (1 + t))) * v * ufl.dx
        data = DirichletData(V, dom, ["ymin", "ymax"], "1 + t*y**2", t=t)
        bc_spec = {"periodic": [px] if periodic else []}
        opts = {"ksp_type": "cg", "pc_type": "gamg", "ksp_rtol": 1e-13} if periodic else None
        system = make_linear_system(a, L, [data.bc], uh, dom, bc_spec, petsc_options=opts,
                                    prefix=f"check{int(periodic)}_", reassemble_matrix=True)
        out[f"class_{int(periodic)}"] = type(system).__name__
        t.value = 0.0
        u_old.x.array[:] = 1.0
        for step in range(5):
            t.value += dt
            data.update()
            system.solve()
            u_old.x.array[:] = uh.x.array
        X = V.tabulate_dof_coordinates()
        results.append(float(np.abs(uh.x.array - (1 + t.value * X[:, 1] ** 2)).max()))
        out[f"info_{int(periodic)}"] = system.info()
    out["td_errors"] = results
    print("RESULT" + json.dumps(out, default=str))
    """
)


def test_runtime_prolongation_and_time_dependent_data(tmp_path):
    python = H.dolfinx_python()
    proc = subprocess.run(
        [str(python), "-c", f"PLUGIN = {str(PLUGIN)!r}\n" + RUNTIME_CHECKS],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    out = json.loads(line[len("RESULT") :])
    print("\nperiodic runtime checks:", out)
    assert out["p1"] == [25, 16, 25, 1]  # 5x5 nodes on the torus -> 4x4; 4 corners -> 1 dof
    assert out["vector_p2"] == [2 * 9 * 9, 2 * 8 * 9]  # P2 on 4x4 cells, periodic in x
    assert "not opposite sides" in out["bad_pair"]
    assert out["class_0"] == "LinearSystem" and out["class_1"] == "PeriodicLinearSystem"
    assert out["info_1"]["ksp_type"] == "cg" and out["info_1"]["linear_iterations"] > 5
    assert max(out["td_errors"]) <= 1e-9
