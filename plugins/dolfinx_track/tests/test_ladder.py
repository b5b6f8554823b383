"""Calibration ladders of the DOLFINx track (``pdeagent_dolfinx.ladder``).

Unmarked tests check the ladders of real cases of the shipped dataset without the FEM
library: every rung is a valid, complete settings dict of its family, every chain gets
more expensive rung by rung (in a cost estimate computed here from the settings alone),
the ladder brackets the family's DEFAULTS, and every rung bundles. The dolfinx-marked
test runs the first rungs of one chain through the real pipeline and checks the error
falls along it.

Bundling: ``bundle(family, rung)`` depends on the rung only through the line
``SETTINGS = <the rung after a JSON round trip>`` (everything else is the family's fixed
source), and one call costs ~50 ms of parsing. So the real ``bundle`` runs once per
family and rung *shape* (key set and value types), and for every rung the test checks
exactly what ``bundle`` does with it: the JSON round trip is lossless and the SETTINGS
line it writes parses back to the rung.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import math
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent_dolfinx.bundle import FAMILIES, bundle, module_settings
from pdeagent_dolfinx.ladder import ladder

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
MAX_RUNGS = 40


@cache
def dataset() -> tuple[Case, ...]:
    return tuple(sorted(load_cases(DATASET), key=lambda c: c.id))


def _is_3d(case: Case) -> bool:
    return case.case_spec.domain.type == "unit_cube"


def _view(case: Case) -> dict[str, Any]:
    return agent_view(case, "dolfinx")


def _clamped(spec: dict[str, Any]) -> bool:
    return any(
        entry.get("quantity") == "normal_derivative"
        for kind in ("dirichlet", "neumann")
        for entry in spec["bc"].get(kind) or []
    )


# The cases checked: per family the first 2-D case and the first 3-D case (if any), and
# the first case of each variant that changes the ladder's shape.
VARIANTS = {
    "2d": lambda c, s: not _is_3d(c),
    "3d": lambda c, s: _is_3d(c),
    "transient": lambda c, s: bool(s["pde"].get("time")) and not _is_3d(c),
    "clamped": lambda c, s: _clamped(s),
    "near_incompressible": lambda c, s: (s["pde"]["params"] or {}).get("nu", 0) >= 0.49,
    "high_wavenumber": lambda c, s: float((s["pde"]["params"] or {}).get("k", 0)) >= 15,
}
VARIANT_FAMILIES = {
    "transient": ("convection_diffusion", "reaction_diffusion", "navier_stokes"),
    "clamped": ("biharmonic",),
    "near_incompressible": ("linear_elasticity",),
    "high_wavenumber": ("helmholtz",),
}


def case_for(family: str, variant: str) -> Case | None:
    for case in dataset():
        if case.family != family or "dolfinx" not in case.supported_libraries:
            continue
        if VARIANTS[variant](case, _view(case)["case_spec"]):
            return case
    return None


def selected_cases() -> list[tuple[str, str, str]]:
    """(family, variant, case id) of every variant the dataset has for a family."""
    out = []
    for family in FAMILIES:
        for variant in VARIANTS:
            if variant in VARIANT_FAMILIES and family not in VARIANT_FAMILIES[variant]:
                continue
            case = case_for(family, variant)
            if case is not None:
                out.append((family, variant, case.id))
            else:  # only some families have unit-cube cases
                assert variant == "3d", f"the dataset has no {variant} case of {family}"
    return out


CHECKED = selected_cases()
WITHOUT_3D = sorted(set(FAMILIES) - {f for f, v, _ in CHECKED if v == "3d"})


# ---------------------------------------------------------------- cost estimate (here)


def _k_resolution(spec: dict[str, Any], cfg: dict[str, Any]) -> int:
    """The Helmholtz solver's own wavelength rule (solvers/helmholtz.py)."""
    k = spec["pde"]["params"]["k"]
    assert isinstance(k, int | float), "the dataset's wavenumbers are numbers"
    length = max(hi - lo for lo, hi in spec["domain"]["bounds"])
    n_waves = abs(k) * length / (2 * math.pi)
    p = cfg["degree"]
    needed = 1
    if n_waves > 0:
        ppw = float(cfg["points_per_wavelength"]) * max(1.0, n_waves) ** (1 / (2 * p))
        needed = max(1, math.ceil(ppw * n_waves / p))
    return max(int(cfg["resolution"]), needed)


def estimated_cost(family: str, spec: dict[str, Any], settings: dict[str, Any]) -> float:
    """Unknowns (P_p on a mesh of r cells across: (p r + 1)^d per component) times time
    steps, for the family's DEFAULTS overridden by ``settings``."""
    cfg = {**module_settings(family, "DEFAULTS"), **settings}
    dim = 3 if spec["domain"]["type"] == "unit_cube" else 2
    three_d_key = "resolution_3d" if dim == 3 and "resolution_3d" in cfg else "resolution"

    def unknowns(p: int, r: int, components: int = 1) -> float:
        return components * float(p * r + 1) ** dim

    if family == "biharmonic":
        method = cfg["method"]
        if method == "auto":
            method = "cip" if _clamped(spec) else "mixed"
        suffix = "_cip" if method == "cip" else ""
        r = cfg["resolution_3d"] if dim == 3 else cfg["resolution" + suffix]
        dofs = unknowns(cfg["degree" + suffix], r, 2 if method == "mixed" else 1)
    elif family in ("stokes", "navier_stokes"):
        k, r = cfg["degree"], cfg[three_d_key]
        dofs = unknowns(k + 1, r, dim) + unknowns(k, r)
    elif family == "helmholtz":
        dofs = unknowns(cfg["degree"], _k_resolution(spec, cfg))
    elif family == "linear_elasticity":
        p, r = cfg["degree"], cfg[three_d_key]
        mixed = cfg["formulation"] == "mixed" or (
            cfg["formulation"] == "auto"
            and spec["pde"]["params"].get("model") != "plane_stress"
            and spec["pde"]["params"].get("nu", 0) >= cfg["mixed_nu_threshold"]
        )
        dofs = unknowns(p, r, dim) + (unknowns(p - 1, r) if mixed else 0.0)
    else:
        dofs = unknowns(cfg["degree"], cfg[three_d_key])

    time = spec["pde"].get("time")
    if not time:
        return dofs
    span = time["t_end"] - time["t0"]
    if cfg.get("n_steps") is not None:
        steps = int(cfg["n_steps"])
    else:
        steps = math.ceil(span / cfg["dt"] - 1e-9)
    if family == "navier_stokes":
        steps = max(steps, int(cfg["min_steps"]))
    if cfg.get("richardson"):
        steps *= 3
    return dofs * steps


# ---------------------------------------------------------------- checks without dolfinx


def _type_ok(default: Any, value: Any) -> bool:
    if default is None:  # petsc_options, n_steps, quadrature_degree: None or a value
        return value is None or (isinstance(value, dict | int) and not isinstance(value, bool))
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, float) and math.isfinite(value)
    return isinstance(value, type(default))


def _shape(rung: dict[str, Any]) -> str:
    """Key set and value types of a rung (nested dicts: their key set too)."""
    return json.dumps(
        {k: sorted(v) if isinstance(v, dict) else type(v).__name__ for k, v in rung.items()},
        sort_keys=True,
    )


_BUNDLED: dict[tuple[str, str], str] = {}
"""(family, rung shape) -> the source ``bundle`` produced for the first such rung."""


def _settings_line(rung: dict[str, Any]) -> str:
    """The line ``bundle`` writes for ``rung`` (see python_bundle.PythonBundler.bundle)."""
    return f"SETTINGS = {json.loads(json.dumps(rung))!r}"


def check_bundles(family: str, rung: dict[str, Any]) -> None:
    key = (family, _shape(rung))
    if key not in _BUNDLED:
        _BUNDLED[key] = bundle(family, rung)
        assert _settings_line(rung) in _BUNDLED[key]
    line = ast.parse(_settings_line(rung)).body[0]
    assert isinstance(line, ast.Assign)
    assert ast.literal_eval(line.value) == rung


def check_ladder(family: str, view: dict[str, Any]) -> None:
    spec = view["case_spec"]
    defaults = module_settings(family, "DEFAULTS")
    chains = ladder(view)

    assert chains and all(chains), "no empty ladder or chain"
    rungs = [rung for chain in chains for rung in chain]
    assert len(rungs) <= MAX_RUNGS
    keys = set(rungs[0])
    for rung in rungs:
        assert set(rung) <= set(defaults), f"unknown settings {set(rung) - set(defaults)}"
        # complete: every rung states every knob any rung of the ladder states, so
        # none silently falls back to a DEFAULTS value the ladder varies elsewhere
        assert set(rung) == keys
        for key, value in rung.items():
            assert _type_ok(defaults[key], value), (key, value, defaults[key])
        # bundle() fixes SETTINGS through JSON: the rung must survive that unchanged
        assert json.loads(json.dumps(rung, allow_nan=False)) == rung
    if spec["pde"].get("time") and family != "navier_stokes":
        span = spec["pde"]["time"]["t_end"] - spec["pde"]["time"]["t0"]
        for rung in rungs:
            assert rung["n_steps"] >= 1 and rung["dt"] * rung["n_steps"] == pytest.approx(span)

    default_cost = estimated_cost(family, spec, {})
    costs = [[estimated_cost(family, spec, rung) for rung in chain] for chain in chains]
    for chain, chain_costs in zip(chains, costs, strict=True):
        assert all(a < b for a, b in itertools.pairwise(chain_costs)), (
            chain,
            chain_costs,
        )
    assert min(min(c) for c in costs) < default_cost < max(max(c) for c in costs)

    for rung in rungs:
        check_bundles(family, rung)

    assert ladder(copy.deepcopy(view)) == chains, "deterministic"


@pytest.mark.parametrize(("family", "variant", "case_id"), CHECKED)
def test_ladder_of_a_dataset_case_is_valid_ordered_and_brackets_the_defaults(
    family, variant, case_id
):
    case = next(c for c in dataset() if c.id == case_id)
    check_ladder(family, _view(case))


@pytest.mark.parametrize("family", WITHOUT_3D)
def test_unit_cube_ladder_of_a_family_without_3d_cases(family):
    """The solver runs on the unit cube too: the same checks on a 2-D case moved there."""
    view = _view(case_for(family, "2d"))
    spec = view["case_spec"]
    spec["domain"] = {"type": "unit_cube", "bounds": [[0.0, 1.0]] * 3, "geometry_params": None}
    check_ladder(family, view)
    assert max(r["degree"] for c in ladder(view) for r in c) <= 3


def test_every_family_has_a_ladder_and_an_unknown_family_has_none():
    for family in FAMILIES:
        case = case_for(family, "2d")
        assert case is not None and ladder(_view(case))
    view = _view(case_for("poisson", "2d"))
    view["case_spec"]["pde"]["type"] = "maxwell"
    with pytest.raises(ValueError, match="maxwell"):
        ladder(view)


def test_degrees_and_solvers_follow_the_case():
    poisson_2d = ladder(_view(case_for("poisson", "2d")))
    assert [c[0]["degree"] for c in poisson_2d] == [1, 2, 3, 4]
    assert all(r["petsc_options"] is None for c in poisson_2d for r in c)
    poisson_3d = ladder(_view(case_for("poisson", "3d")))
    assert {c[0]["degree"] for c in poisson_3d} == {1, 2, 3}
    iterative = [c for c in poisson_3d if c[0]["petsc_options"] is not None]
    assert len(iterative) == 3 and all(
        c[0]["petsc_options"]["pc_type"] == "gamg" for c in iterative
    )
    # the clamped biharmonic case uses C0 interior penalty (degree >= 2)
    cip = ladder(_view(case_for("biharmonic", "clamped")))
    assert {r["method"] for c in cip for r in c} == {"cip"}
    assert min(r["degree_cip"] for c in cip for r in c) == 2
    # near incompressibility: Taylor-Hood (displacement degree >= 2)
    mixed = ladder(_view(case_for("linear_elasticity", "near_incompressible")))
    assert {r["formulation"] for c in mixed for r in c} == {"mixed"}
    assert min(r["degree"] for c in mixed for r in c) == 2


def test_high_wavenumbers_start_finer():
    cases = [
        c for c in dataset() if c.family == "helmholtz" and c.case_spec.domain.type == "annulus"
    ]
    low = min(cases, key=lambda c: (c.case_spec.pde.params["k"], c.id))
    high = max(cases, key=lambda c: (c.case_spec.pde.params["k"], c.id))
    assert low.case_spec.pde.params["k"] < high.case_spec.pde.params["k"]
    first = {c[0]["degree"]: c[0]["resolution"] for c in ladder(_view(low))}
    first_high = {c[0]["degree"]: c[0]["resolution"] for c in ladder(_view(high))}
    assert first_high[1] > first[1] and all(first_high[p] >= first[p] for p in first)


def test_a_wavenumber_beyond_every_chain_still_gives_non_empty_chains():
    view = _view(case_for("helmholtz", "2d"))
    view["case_spec"]["pde"]["params"]["k"] = "400 + 0*x"  # an expression: sampled
    chains = ladder(view)
    assert chains and all(chains)
    key_sets = {frozenset(r) for c in chains for r in c}
    assert len(key_sets) == 1
    assert chains[0][0]["resolution"] > 2 * 724  # P1: far beyond the usual top


def test_time_step_is_refined_with_the_mesh_second_order():
    chains = ladder(_view(case_for("heat", "2d")))
    for chain in chains:
        p = chain[0]["degree"]
        assert {r["scheme"] for r in chain} == {"bdf2"}
        (a, b) = chain[2], chain[-1]  # past the minimum step count
        ratio = b["resolution"] / a["resolution"]
        steps = b["n_steps"] / a["n_steps"]
        # dt ~ h^((p+1)/2): steps grow like resolution^((p+1)/2)
        assert steps == pytest.approx(ratio ** ((p + 1) / 2), rel=0.1)


# ---------------------------------------------------------------- with dolfinx


def _mms_case(family: str) -> Case:
    for case in dataset():
        if (
            case.family == family
            and case.case_spec.domain.type == "unit_square"
            and case.evaluation_metadata.construction_method == "manufactured_solution"
        ):
            return case
    raise AssertionError(f"no manufactured-solution unit-square case of {family}")


@pytest.mark.dolfinx
@pytest.mark.parametrize("family", ["poisson", "heat"])
def test_error_falls_along_a_chain_through_the_pipeline(family):
    """The first three rungs of the P3 chain of a manufactured-solution case, bundled by
    the track's calibration hook and measured by the pipeline (sandbox, grid error). The
    rungs share one JIT cache (the legacy protocol, as dataset builds do for trusted
    baselines) to keep the test quick."""
    dolfinx_python()
    from pdeagent.cases.model import LEGACY_PROTOCOL
    from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source
    from pdeagent.plugins import load_plugins
    from pdeagent.sandbox import default_sandbox
    from pdeagent.sandbox.base import Limits

    host = load_plugins(strict=True)
    track = host.get_track("dolfinx")
    case = _mms_case(family)
    view = _view(case)
    chain = next(c for c in ladder(view) if c[0]["degree"] == 3)
    errors = []
    with tempfile.TemporaryDirectory(prefix="pdeagent-ladder-", dir="/var/tmp") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        for i, rung in enumerate(chain[:3]):
            source = host.hook.pdeagent_calibration_source(
                track=track, case_view=view, calibration_config={"dolfinx": rung}
            )
            report = evaluate_source(
                host,
                track,
                case,
                source,
                sandbox=default_sandbox(),
                workroot=Path(tmp) / str(i),
                thresholds=None,
                policy=GradingPolicy(timed_repeats=1),
                limits=Limits(wall_time_sec=120),
                protocol=LEGACY_PROTOCOL,
                cache_dir=cache,
            )
            assert report.verdict is None, (report.reason, report.message, report.stderr_excerpt)
            assert report.diagnostics["solver_info"]["element_degree"] == 3
            errors.append(report.error)
    print(f"\n{case.id}: {[f'{e:.2e}' for e in errors]}")
    assert all(math.isfinite(e) and e > 0 for e in errors)
    assert all(a >= 2 * b for a, b in itertools.pairwise(errors)), errors
