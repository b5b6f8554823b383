"""Manufactured-solution tests of the DOLFINx linear-elasticity solver (harness venv).

Run with: .venv/bin/python -m pytest plugins/dolfinx_track/tests/test_linear_elasticity.py -q -s
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import dolfinx_harness as H
import pytest
import sympy as sp

from pdeagent_dolfinx.bundle import module_settings

pytestmark = pytest.mark.dolfinx

FAMILY = "linear_elasticity"
x, y, z = sp.symbols("x y z")
XY, XYZ = (x, y), (x, y, z)


# ------------------------------------------------------------------------- sympy helpers


def lame(params: dict) -> tuple[sp.Expr, sp.Expr]:
    """(mu, lam) of the law the case states (plane stress: the effective lam)."""
    if "lambda" in params:
        lam, mu = sp.nsimplify(params["lambda"]), sp.nsimplify(params["mu"])
    else:
        young = sp.nsimplify(params.get("E", params.get("young_modulus")))
        nu = sp.nsimplify(params.get("nu", params.get("poisson_ratio")))
        mu = young / (2 * (1 + nu))
        lam = young * nu / ((1 + nu) * (1 - 2 * nu))
    if params["model"] == "plane_stress":
        lam = 2 * lam * mu / (lam + 2 * mu)
    return mu, lam


def stress(u, params, X):
    mu, lam = lame(params)
    d = len(X)
    grad = sp.Matrix(d, d, lambda i, j: sp.diff(u[i], X[j]))
    eps = (grad + grad.T) / 2
    return 2 * mu * eps + lam * eps.trace() * sp.eye(d)


def body_force(u, params, X) -> list[str]:
    s = stress(u, params, X)
    return [str(-sum(sp.diff(s[i, j], X[j]) for j in range(len(X)))) for i in range(len(X))]


def traction(u, params, X, normal) -> list[str]:
    s = stress(u, params, X)
    return [str(sum(s[i, j] * normal[j] for j in range(len(X)))) for i in range(len(X))]


def strs(exprs) -> list[str]:
    return [str(e) for e in exprs]


def exact_of(u, names=("u_x", "u_y", "u_z")) -> dict[str, str]:
    return {name: str(c) for name, c in zip(names, u, strict=False)}


def errors_of(spec, records, exact) -> list[float]:
    return [H.grid_error(spec, r["arrays"], exact) for r in records]


def report(label, settings, errors, records):
    orders = H.observed_orders(errors) if len(errors) > 1 else []
    times = [round(r["wall_time_sec"], 3) for r in records]
    print(f"\n[{label}] settings={settings}\n  errors={errors}\n  orders={orders}\n  times={times}")
    return orders


# Manufactured solution of the unit-square cases: a linear field g (the Dirichlet data)
# plus a bubble part that vanishes on the boundary.
BUBBLE = x * y * (1 - x) * (1 - y)
G2 = [x * y / 10, x / 20 - y**2 / 20]
U2 = [G2[0] + BUBBLE * sp.sin(sp.pi * x), G2[1] + BUBBLE * sp.cos(sp.pi * y)]
OUT2 = {"field": "u", "components": ["u_x", "u_y"]}


def square_case(params, u=U2, g=G2, n=41):
    return H.case_spec(
        FAMILY,
        params=params,
        forcing={"f": body_force(u, params, XY)},
        bc={"dirichlet": [{"boundary": ["all"], "value": strs(g), "quantity": "displacement"}]},
        output=OUT2,
        n=n,
    )


# ---------------------------------------------------------------------------------- tests


def test_convergence_unit_square_plane_strain(tmp_path: Path):
    params = {"lambda": 1.5, "mu": 0.75, "model": "plane_strain"}
    spec = square_case(params)
    # mesh sizes chosen so that the P2 nodes do not coincide with the grid (no nodal
    # superconvergence)
    runs = {1: (8, 16, 32), 2: (6, 12, 24)}
    settings = [{"resolution": r, "degree": p} for p, rs in runs.items() for r in rs]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact_of(U2))
    for k, p in enumerate(runs):
        part = slice(3 * k, 3 * k + 3)
        orders = report(f"plane strain P{p}", settings[part], errors[part], records[part])
        assert min(orders) >= p + 1 - 0.3, (p, errors[part], orders)
    assert errors[-1] < 1e-4


def test_plane_stress(tmp_path: Path):
    params = {"E": 2.0, "nu": 0.35, "model": "plane_stress"}
    spec = square_case(params)
    settings = [{"resolution": r, "degree": 2} for r in (6, 12, 24)]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact_of(U2))
    orders = report("plane stress P2", settings, errors, records)
    assert min(orders) >= 2.7
    assert errors[-1] < 1e-4
    # the plane-strain law would be a different problem: the solution must not fit it
    strain = {**params, "model": "plane_strain"}
    mu_s, lam_s = lame(strain)
    mu_p, lam_p = lame(params)
    assert mu_s == mu_p and abs(float(lam_s - lam_p)) > 0.3


def _incompressible_case(nu: float):
    """nu near 1/2: u = g + curl(psi) + grad(phi) / lam with g linear and divergence free,
    so lam div(u) stays O(1); Dirichlet on xmin/ymin/ymax, traction on xmax."""
    params = {"E": 1.0, "nu": nu, "model": "plane_strain"}
    _mu, lam = lame(params)
    g = [y / 5 + x / 10, x / 4 - y / 10]
    b = (x * (1 - x) * y * (1 - y)) ** 2
    psi = 4 * b * sp.sin(sp.pi * x + 1)
    phi = 10 * b * sp.cos(sp.pi * y)
    u = [
        g[0] + sp.diff(psi, y) + sp.diff(phi, x) / lam,
        g[1] - sp.diff(psi, x) + sp.diff(phi, y) / lam,
    ]
    bc = {
        "dirichlet": [{"boundary": ["xmin", "ymin", "ymax"], "value": strs(g), "quantity": "u"}],
        "neumann": [
            {"boundary": ["xmax"], "value": traction(u, params, XY, (1, 0)), "quantity": "traction"}
        ],
    }
    spec = H.case_spec(
        FAMILY, params=params, forcing={"f": body_force(u, params, XY)}, bc=bc, output=OUT2
    )
    return spec, exact_of(u)


def test_nearly_incompressible_mixed(tmp_path: Path):
    spec, exact = _incompressible_case(0.4999)
    resolutions = (6, 12, 24)
    settings = [{"resolution": r} for r in resolutions]  # auto -> mixed P2-P1
    settings += [{"resolution": r, "formulation": "displacement"} for r in resolutions]
    settings += [{"resolution": 24, "degree": 1, "formulation": "displacement"}]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact)
    mixed = report("nu=0.4999 mixed P2-P1", settings[:3], errors[:3], records[:3])
    disp = report("nu=0.4999 displacement P2", settings[3:6], errors[3:6], records[3:6])
    report("nu=0.4999 displacement P1", settings[6:], errors[6:], records[6:])
    assert all(r["meta"]["solver_info"]["formulation"] == "mixed" for r in records[:3])
    assert all(r["meta"]["solver_info"]["formulation"] == "displacement" for r in records[3:])
    assert min(mixed) >= 2.7 and errors[2] < 1e-4
    # the pure displacement form locks: P2 loses its order and is far less accurate,
    # P1 is useless
    assert errors[5] > 5 * errors[2] and disp[-1] < mixed[-1] - 0.7
    assert errors[6] > 0.1


def test_annulus_dirichlet_and_traction(tmp_path: Path):
    """Annulus (curved, geometry degree 2): displacement on the inner circle, traction on the
    outer circle with n = (x, y) / r; also through the mixed formulation."""
    params = {"young_modulus": 1.0, "poisson_ratio": 0.25, "model": "plane_strain"}
    r2 = x**2 + y**2
    g = [sp.Rational(1, 10) * x - y / 5, x * y / 10]
    u = [
        g[0] + (r2 - sp.Rational(1, 4)) * sp.sin(x + 2 * y) / 5,
        g[1] + (r2 - sp.Rational(1, 4)) * sp.cos(2 * x - y) / 5,
    ]
    normal = (x / sp.sqrt(r2), y / sp.sqrt(r2))
    bc = {
        "dirichlet": [{"boundary": ["inner"], "value": strs(g), "quantity": None}],
        "neumann": [
            {"boundary": ["outer"], "value": traction(u, params, XY, normal), "quantity": None}
        ],
    }
    spec = H.case_spec(
        FAMILY,
        domain="annulus",
        params=params,
        forcing={"f": body_force(u, params, XY)},
        bc=bc,
        output=OUT2,
    )
    settings = [{"resolution": r, "degree": 2, "geometry_degree": 2} for r in (12, 24, 48)]
    settings.append({"resolution": 24, "formulation": "mixed"})
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact_of(u))
    orders = report("annulus P2 (geometry degree 2)", settings[:3], errors[:3], records[:3])
    report("annulus mixed P2-P1", settings[3:], errors[3:], records[3:])
    assert min(orders) >= 2.7 and errors[2] < 2e-5
    # the mixed form solves the same problem (with the same traction condition)
    assert errors[3] < 2 * errors[1]


def test_traction_and_traction_free(tmp_path: Path):
    """Displacement on xmin; traction on xmax and ymin; ymax is unnamed (traction free):
    u = rigid motion + x (1 - y)^2 w has zero stress on y = 1. Output: the magnitude."""
    params = {"lambda": 2.0, "mu": 1.0, "model": "plane_strain"}
    rigid = [sp.Rational(1, 10) - y / 5, sp.Rational(1, 20) + x / 5]
    w = [sp.sin(sp.pi * x) + y, sp.cos(x * y)]
    u = [rigid[i] + x * (1 - y) ** 2 * w[i] / 2 for i in range(2)]
    bc = {
        "dirichlet": [{"boundary": ["xmin"], "value": strs(rigid), "quantity": "displacement"}],
        "neumann": [
            {
                "boundary": ["xmax"],
                "value": traction(u, params, XY, (1, 0)),
                "quantity": "traction",
            },
            {"boundary": ["ymin"], "value": traction(u, params, XY, (0, -1)), "quantity": "u"},
        ],
    }
    spec = H.case_spec(
        FAMILY,
        params=params,
        forcing={"f": body_force(u, params, XY)},
        bc=bc,
        output={"field": "displacement_magnitude"},
    )
    settings = [{"resolution": r, "degree": 2} for r in (6, 12, 24)]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    magnitude = sp.sqrt(u[0] ** 2 + u[1] ** 2)
    errors = errors_of(spec, records, {"displacement_magnitude": str(magnitude)})
    orders = report("traction + traction-free, magnitude", settings, errors, records)
    assert min(orders) >= 2.7 and errors[-1] < 1e-4


def test_unit_cube_3d(tmp_path: Path):
    params = {"E": 1.0, "nu": 0.3, "model": "3d"}
    g = [x * y / 10, y * z / 10 - x / 20, z / 10]
    b = x * y * z * (1 - x) * (1 - y) * (1 - z)
    u = [g[0] + b * sp.sin(sp.pi * x), g[1] + b * sp.cos(y), g[2] + 2 * b]
    bc = {
        "dirichlet": [{"boundary": ["xmin", "xmax", "ymin", "ymax", "zmin"], "value": strs(g)}],
        "neumann": [
            {
                "boundary": ["zmax"],
                "value": traction(u, params, XYZ, (0, 0, 1)),
                "quantity": "traction",
            }
        ],
    }
    spec = H.case_spec(
        FAMILY,
        domain="unit_cube",
        params=params,
        forcing={"f": body_force(u, params, XYZ)},
        bc=bc,
        output={"field": "u", "components": ["ux", "uy", "uz"]},
        n=17,
    )
    gamg = {
        "resolution_3d": 6,
        "petsc_options_3d": {
            "ksp_type": "cg",
            "ksp_rtol": 1e-12,
            "pc_type": "gamg",
            "mg_levels_ksp_type": "chebyshev",
            "mg_levels_pc_type": "jacobi",
        },
    }
    settings = [{"resolution_3d": r} for r in (3, 6)] + [gamg]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact_of(u, ("ux", "uy", "uz")))
    orders = report("unit cube P2 (direct; last: CG+GAMG)", settings, errors, records)
    assert orders[0] >= 2.5 and errors[1] < 2e-3
    info = records[2]["meta"]["solver_info"]
    assert info["pc_type"] == "gamg" and info["linear_iterations"] > 0
    assert abs(errors[2] - errors[1]) < 1e-3 * errors[1]


def test_unit_cube_nearly_incompressible(tmp_path: Path):
    """3d, nu = 0.4999: u = g + curl(A) + grad(phi) / lam; the automatic choice is the mixed
    form (direct solve; and MINRES + GAMG/Jacobi field split), the displacement form
    locks."""
    params = {"E": 1.0, "nu": 0.4999, "model": "3d"}
    _mu, lam = lame(params)
    g = [x * y / 10, y * z / 10 - x / 20, -z * y / 10]
    b = (x * y * z * (1 - x) * (1 - y) * (1 - z)) ** 2
    A = [b * sp.sin(y), b * sp.cos(x + z), 3 * b]
    curl = [
        sp.diff(A[2], y) - sp.diff(A[1], z),
        sp.diff(A[0], z) - sp.diff(A[2], x),
        sp.diff(A[1], x) - sp.diff(A[0], y),
    ]
    u = [g[i] + 30 * curl[i] + sp.diff(30 * b, XYZ[i]) / lam for i in range(3)]
    bc = {"dirichlet": [{"boundary": ["all"], "value": strs(g)}]}
    spec = H.case_spec(
        FAMILY,
        domain="unit_cube",
        params=params,
        forcing={"f": body_force(u, params, XYZ)},
        bc=bc,
        output={"field": "u", "components": ["u_x", "u_y", "u_z"]},
        n=17,
    )
    iterative = {
        "ksp_type": "minres",
        "ksp_rtol": 1e-11,
        "pc_type": "fieldsplit",
        "pc_fieldsplit_type": "additive",
        "fieldsplit_u_ksp_type": "preonly",
        "fieldsplit_u_pc_type": "gamg",
        "fieldsplit_u_mg_levels_ksp_type": "chebyshev",
        "fieldsplit_u_mg_levels_pc_type": "jacobi",
        "fieldsplit_p_ksp_type": "preonly",
        "fieldsplit_p_pc_type": "jacobi",
    }
    settings = [
        {"resolution_3d": 4},
        {"resolution_3d": 8},
        {"resolution_3d": 8, "formulation": "displacement"},
        {"resolution_3d": 4, "petsc_options_mixed_3d": iterative},
    ]
    records = H.run_solver(FAMILY, spec, settings, tmp_path)
    errors = errors_of(spec, records, exact_of(u))
    orders = report(
        "unit cube nu=0.4999 (mixed, mixed, displacement, mixed MINRES)", settings, errors, records
    )
    assert [r["meta"]["solver_info"]["formulation"] for r in records] == [
        "mixed",
        "mixed",
        "displacement",
        "mixed",
    ]
    assert orders[0] >= 2.7 and errors[1] < 5e-3
    assert errors[2] > 5 * errors[1]
    info = records[3]["meta"]["solver_info"]
    assert info["ksp_type"] == "minres" and info["pc_type"] == "fieldsplit"
    assert abs(errors[3] - errors[0]) < 1e-4 * errors[0]


def test_calibration(tmp_path: Path):
    """The example case of cases/examples.jsonl: DEFAULTS (run twice: the second run is
    warm) and REFERENCE."""
    example = next(
        json.loads(line)
        for line in Path(__file__).parents[3].joinpath("cases/examples.jsonl").open()
        if '"linear_elasticity_unit_square_plane_strain_mms_001"' in line
    )
    spec = example["case_spec"]
    exact = example["evaluation_metadata"]["manufactured_solution"]
    reference = module_settings(FAMILY, "REFERENCE")  # also checks it is a literal
    records = H.run_solver(FAMILY, spec, [{}, {}, reference], tmp_path)
    errors = errors_of(spec, records, exact)
    report(
        "calibration: DEFAULTS, DEFAULTS, REFERENCE",
        ["DEFAULTS", "DEFAULTS", "REF"],
        errors,
        records,
    )
    assert 1e-6 <= errors[1] <= 1e-3
    assert errors[2] <= errors[1] / 10


def _plugin_dir() -> Path:
    return Path(H.__file__).resolve().parents[1] / "pdeagent_dolfinx"


FAILURE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from mpi4py import MPI
    sys.path.insert(0, sys.argv[1])
    from solvers import linear_elasticity as m
    jobs = json.load(sys.stdin)
    os.chdir(sys.argv[2])
    for spec, settings in jobs:
        try:
            m.solve(spec, settings)
            print(json.dumps({"raised": None}))
        except Exception as exc:
            print(json.dumps({"raised": type(exc).__name__, "message": str(exc)}))
    """
)


def test_failures(tmp_path: Path):
    base = square_case({"E": 1.0, "nu": 0.3, "model": "plane_strain"})

    def variant(**changes):
        spec = json.loads(json.dumps(base))
        for path, value in changes.items():
            *head, last = path.split("__")
            node = spec
            for key in head:
                node = node[key]
            if value is None:
                node.pop(last)
            else:
                node[last] = value
        return spec

    jobs = [
        (variant(pde__params__model=None), {}),  # missing model
        (variant(pde__params__model="3d"), {}),  # 3d on a 2-D domain
        (variant(pde__params__nu=None), {}),  # incomplete parameter pair
        (variant(bc__robin=[{"boundary": ["xmax"], "alpha": 1.0, "value": ["0", "0"]}]), {}),
        (variant(bc__periodic=[{"boundary": "xmin", "partner": "xmax", "axis": "x"}]), {}),
        (variant(bc__dirichlet=[]), {}),  # rigid motions not fixed
        (
            variant(
                bc__neumann=[{"boundary": ["xmax"], "value": ["0", "0"], "quantity": "pressure"}]
            ),
            {},
        ),
        (variant(pde__params__nu=0.5), {}),
        (base, {"formulation": "mixed", "degree": 1}),  # P1-P0 is not Taylor-Hood
        (base, {"resolutoin": 8}),  # typo in a setting
    ]
    proc = subprocess.run(
        [str(H.dolfinx_python()), "-c", FAILURE_SCRIPT, str(_plugin_dir()), str(tmp_path)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(jobs), proc.stdout + proc.stderr[-3000:]
    for (_spec, settings), res in zip(jobs, results, strict=True):
        print(res)
        assert res["raised"] is not None, settings
    assert results[0]["raised"] == "ValueError" and "model" in results[0]["message"]
    assert results[4]["raised"] == "NotImplementedError"
    assert results[9]["raised"] == "KeyError"
