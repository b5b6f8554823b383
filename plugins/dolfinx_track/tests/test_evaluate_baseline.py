"""`pdeagent evaluate` path on the DOLFINx track: the bundled calibration solver of a family,
calibrated (measured through the same pipeline) and then graded against its own
measurement, passes through the real sandbox: every family on the unit square, Poisson
on a curved 2D domain and on the unit cube.

Every (family, geometry) pair of the dataset is graded against the dataset's own
thresholds by test_dataset_sample.py (the `timing` pass); this file checks the
calibrate-then-grade path, so it does not repeat each geometry.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest
from dolfinx_harness import case_spec, dolfinx_python

from pdeagent.cases.model import Thresholds, case_from_dict
from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds
from pdeagent.plugins import load_plugins
from pdeagent.sandbox import default_sandbox
from pdeagent.sandbox.base import Limits
from pdeagent_dolfinx.bundle import FAMILIES, bundle
from pdeagent_dolfinx.representative import representative_case

pytestmark = [pytest.mark.dolfinx, pytest.mark.slow]


def record(spec: dict, exact: dict[str, str], case_id: str) -> dict:
    return {
        "schema_version": 1,
        "id": case_id,
        "pde_classification": {
            "equation_family": spec["pde"]["type"],
            "math_type": ["elliptic"],
        },
        "case_spec": spec,
        "evaluation_config": {"timeout_sec": 300.0, "timed_repeats": 1},
        "evaluation_metadata": {
            "construction_method": "manufactured_solution",
            "manufactured_solution": exact,
        },
        "supported_libraries": ["dolfinx"],
    }


def calibrate_then_grade(case, source: str) -> tuple:
    host = load_plugins(strict=True)
    track = host.get_track("dolfinx")
    with tempfile.TemporaryDirectory(prefix="pdeagent-dolfinx-", dir="/var/tmp") as tmp:
        kw = dict(sandbox=default_sandbox(), limits=Limits(wall_time_sec=300))
        measured = evaluate_source(
            host, track, case, source, workroot=Path(tmp) / "calib", thresholds=None, **kw
        )
        assert measured.verdict is None, measured
        base = Thresholds(
            e_base=measured.error, t_base=measured.runtime_sec, tau_acc=0.0, tau_time=0.0
        )
        thresholds = resolve_thresholds(case, "dolfinx", GradingPolicy(), calibration=base)
        graded = evaluate_source(
            host, track, case, source, workroot=Path(tmp) / "grade", thresholds=thresholds, **kw
        )
    return measured, graded


def test_poisson_baseline_passes_on_a_curved_2d_domain():
    dolfinx_python()
    geometry = "circle"
    exact = "sin(2*x)*cos(3*y) + x*y"
    spec = case_spec(
        "poisson",
        domain=geometry,
        params={"kappa": 1.0},
        forcing={"f": "13*sin(2*x)*cos(3*y)"},
        bc={"dirichlet": [{"boundary": ["all"], "value": exact, "quantity": None}]},
        output={"field": "u"},
        n=51,
    )
    case = case_from_dict(record(spec, {"u": exact}, f"poisson_{geometry}"))
    source = bundle("poisson", {"resolution": 24, "degree": 2})
    measured, graded = calibrate_then_grade(case, source)
    print(f"\n{geometry}: e={measured.error:.2e} t={measured.runtime_sec:.2f}s")
    assert 0 < measured.error < 1e-3
    assert graded.verdict == "PASS", (graded.reason, graded.message, graded.stderr_excerpt)
    info = graded.diagnostics["solver_info"]
    assert info["element_degree"] == 2 and info["dofs"] > 100


def test_poisson_baseline_passes_on_the_unit_cube():
    dolfinx_python()
    exact = "sin(x)*cos(2*y)*exp(z)"
    spec = case_spec(
        "poisson",
        domain="unit_cube",
        params={"kappa": 2.0},
        forcing={"f": "8*sin(x)*cos(2*y)*exp(z)"},
        bc={"dirichlet": [{"boundary": ["all"], "value": exact, "quantity": None}]},
        output={"field": "u"},
        n=17,
    )
    case = case_from_dict(record(spec, {"u": exact}, "poisson_unit_cube"))
    measured, graded = calibrate_then_grade(case, bundle("poisson", {"resolution": 8}))
    assert 0 < measured.error < 1e-2
    assert graded.verdict == "PASS", (graded.reason, graded.message, graded.stderr_excerpt)


def test_bundle_is_one_self_contained_file():
    source = bundle("poisson", {"resolution": 12})
    assert "from ." not in source
    assert "SETTINGS = {'resolution': 12}" in source
    tree = ast.parse(source)
    top = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert top.count("solve") == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_baseline_passes(family):
    dolfinx_python()
    case = representative_case(family, repeats=1, domain="unit_square")
    measured, graded = calibrate_then_grade(case, bundle(family, None))
    print(f"\n{family} on the unit square: e={measured.error:.2e} t={measured.runtime_sec:.2f}s")
    assert 0 < measured.error < 1e-3
    assert graded.verdict == "PASS", (graded.reason, graded.message, graded.stderr_excerpt)
