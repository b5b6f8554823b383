"""Calibration ladders (frontier calibration, issue #19): every family's ladder for real
dataset cases is a list of cost-ordered chains of valid solver settings that straddle
the solvers' DEFAULTS; every rung bundles. The Firedrake-marked test runs three rungs
of a P2 chain in the runtime and checks that the error falls along the chain.

Run: .venv/bin/python -m pytest -q plugins/firedrake_track/tests/test_firedrake_ladder.py
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pdeagent_firedrake.bundle import FAMILIES, bundle, module_settings
from pdeagent_firedrake.ladder import MAX_RUNGS, TIME_SCALE, ladder

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"
# knobs a chain refines; everything else is the same on every rung of a chain
REFINED = {"resolution", "resolution_3d", "resolution_cip", "dt", "n_steps"}


@cache
def firedrake_cases() -> tuple[Case, ...]:
    return tuple(c for c in load_cases(DATASET) if "firedrake" in c.supported_libraries)


def _is_3d(case: Case) -> bool:
    return case.case_spec.domain.type == "unit_cube"


def _pick(family: str, kind: str) -> Case | None:
    """The first Firedrake case of ``family`` of a kind: ``first`` (any), ``3d``,
    ``transient`` or a ``tags.structure`` value."""
    for case in firedrake_cases():
        if case.case_spec.pde.type != family:
            continue
        if (
            kind == "first"
            or (kind == "3d" and _is_3d(case))
            or (kind == "transient" and case.case_spec.pde.time is not None)
            or case.tags.structure == kind
        ):
            return case
    return None


def _selection(kinds: tuple[str, ...]) -> list[str]:
    ids: list[str] = []
    for family in FAMILIES:
        for kind in kinds:
            case = _pick(family, kind)
            if case is not None and case.id not in ids:
                ids.append(case.id)
    return ids


def _every_structure() -> list[str]:
    structures = sorted({c.tags.structure or "" for c in firedrake_cases()})
    return _selection(("first", "3d", "transient", *structures))


BUNDLED = _selection(("first", "3d"))  # one case of every family, plus its 3-D case
EVERY_KIND = _every_structure()  # one case per family and structure, 3-D and transient


def _view(case_id: str) -> dict[str, Any]:
    case = next(c for c in firedrake_cases() if c.id == case_id)
    return agent_view(case, "firedrake")


@cache
def defaults(family: str) -> dict[str, Any]:
    """The family solver's DEFAULTS, read as the bundler reads them (no firedrake)."""
    settings = module_settings(family, "DEFAULTS")
    assert settings is not None
    return settings


# --------------------------------------------------------------------- a cost estimate


def _wavelength_cells(k: float, length: float, degree: int, ppw: float) -> int:
    n_waves = k * length / (2.0 * math.pi)
    if n_waves <= 0:
        return 1
    return math.ceil(ppw * max(1.0, n_waves) ** (1.0 / (2 * degree)) * n_waves / degree)


def estimated_cost(family: str, settings: dict[str, Any], spec: dict[str, Any]) -> float:
    """Unknowns x time steps of the family solver run with ``settings`` on top of its
    DEFAULTS (Lagrange unknowns on the bounding box, as the solver would size the mesh)."""
    cfg = {**defaults(family), **settings}
    dim = 3 if spec["domain"]["type"] == "unit_cube" else 2
    if family == "biharmonic":
        clamped = any(
            entry.get("quantity") == "normal_derivative"
            for kind in ("dirichlet", "neumann")
            for entry in spec["bc"].get(kind) or []
        )
        method = cfg["method"] if cfg["method"] != "auto" else ("cip" if clamped else "mixed")
        suffix = "_cip" if method == "cip" else ""
        degree = cfg["degree" + suffix]
        n = cfg["resolution_3d"] if dim == 3 else cfg["resolution" + suffix]
        fields = [(degree, 1 if method == "cip" else 2)]  # mixed: two Poisson solves
    else:
        degree = cfg["degree"]
        n = cfg["resolution_3d"] if dim == 3 and "resolution_3d" in cfg else cfg["resolution"]
        fields = {
            "stokes": [(degree + 1, dim), (degree, 1)],
            "linear_elasticity": [(degree, dim)],
        }.get(family, [(degree, 1)])
        if family == "helmholtz":
            length = max(hi - lo for lo, hi in spec["domain"]["bounds"])
            k = abs(float(spec["pde"]["params"]["k"]))
            n = max(n, _wavelength_cells(k, length, degree, cfg["points_per_wavelength"]))
    unknowns = sum(comps * (q * n + 1) ** dim for q, comps in fields)
    time = spec["pde"].get("time")
    if not time:
        return float(unknowns)
    span = time["t_end"] - time["t0"]
    steps = cfg["n_steps"] if cfg.get("n_steps") is not None else math.ceil(span / cfg["dt"] - 1e-9)
    return float(unknowns * steps)


# ---------------------------------------------------------------- harness-side checks


@pytest.mark.parametrize("case_id", EVERY_KIND)
def test_a_ladder_is_cost_ordered_chains_of_valid_settings_around_the_defaults(case_id):
    view = _view(case_id)
    spec = view["case_spec"]
    family = spec["pde"]["type"]
    chains = ladder(view)
    known = defaults(family)
    assert chains and all(chains), "a non-empty ladder of non-empty chains"
    rungs = [rung for chain in chains for rung in chain]
    assert len(rungs) <= MAX_RUNGS
    keys = set(rungs[0])
    for rung in rungs:
        assert set(rung) <= set(known), sorted(set(rung) - set(known))
        # the same knobs on every rung: none silently inherits a default the ladder varies
        assert set(rung) == keys, (rung, keys)
        for key, value in rung.items():
            default = known[key]
            if default is not None:
                assert type(value) is type(default), (key, value, default)
    for chain in chains:
        costs = [estimated_cost(family, rung, spec) for rung in chain]
        assert all(a < b for a, b in itertools.pairwise(costs)), (chain, costs)
        for rung in chain:  # a chain refines the mesh (and step) only
            fixed = {k: v for k, v in rung.items() if k not in REFINED}
            assert fixed == {k: v for k, v in chain[0].items() if k not in REFINED}
    costs = [estimated_cost(family, rung, spec) for rung in rungs]
    default_cost = estimated_cost(family, {}, spec)
    assert min(costs) < default_cost < max(costs), (min(costs), default_cost, max(costs))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_rung_bundles_into_a_calibration_solver_with_its_settings(family):
    rungs: dict[str, dict[str, Any]] = {}  # distinct rungs of the family's selected cases
    for case_id in BUNDLED:
        view = _view(case_id)
        if view["case_spec"]["pde"]["type"] == family:
            for chain in ladder(view):
                rungs.update({repr(sorted(rung.items())): rung for rung in chain})
    assert rungs
    for rung in rungs.values():
        tree = ast.parse(bundle(family, rung))
        [settings] = [
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["SETTINGS"]
        ]
        assert ast.literal_eval(settings) == rung


def test_transient_rungs_refine_the_bdf2_step_with_the_mesh():
    view = _view(_pick("heat", "first").id)
    time = view["case_spec"]["pde"]["time"]
    span = time["t_end"] - time["t0"]
    for chain in ladder(view):
        degree = chain[0]["degree"]
        assert chain[0]["scheme"] == "bdf2"
        for rung in chain:
            assert rung["dt"] * rung["n_steps"] == pytest.approx(span)
            rule = TIME_SCALE * (1 / rung["resolution"]) ** ((degree + 1) / 2)
            if rung["n_steps"] > 4:  # the rule, rounded to whole steps (and at least 4)
                assert rule / 1.5 < rung["dt"] <= rule * (1 + 1e-12), (rung, rule)
        steps = [rung["n_steps"] for rung in chain]
        assert steps == sorted(steps) and steps[-1] > steps[0]


def _first_resolutions(view: dict[str, Any]) -> list[int]:
    return [chain[0]["resolution"] for chain in ladder(view)]


def test_higher_wavenumbers_and_thinner_layers_start_finer():
    view = _view(_pick("helmholtz", "first").id)
    low, high = copy.deepcopy(view), copy.deepcopy(view)
    low["case_spec"]["pde"]["params"]["k"] = 2.0
    high["case_spec"]["pde"]["params"]["k"] = 30.0
    lows, highs = _first_resolutions(low), _first_resolutions(high)
    assert all(h > lo for h, lo in zip(highs, lows, strict=True)), (lows, highs)
    view = _view(_pick("convection_diffusion", "first").id)
    wide, thin = copy.deepcopy(view), copy.deepcopy(view)
    wide["case_spec"]["pde"]["params"]["epsilon"] = 1.0
    thin["case_spec"]["pde"]["params"]["epsilon"] = 1e-3
    wides, thins = _first_resolutions(wide), _first_resolutions(thin)
    assert all(t > w for t, w in zip(thins, wides, strict=True)), (wides, thins)


def test_three_d_ladders_start_coarser_and_stop_lower_than_two_d_ones():
    flat = ladder(_view(_pick("poisson", "first").id))
    cube = ladder(_view(_pick("poisson", "3d").id))
    assert all(chain[0]["solver_parameters"] is None for chain in flat)
    direct = [chain for chain in cube if chain[0]["solver_parameters"] is None]
    iterative = [chain for chain in cube if chain[0]["solver_parameters"] is not None]
    assert {chain[0]["solver_parameters"]["ksp_type"] for chain in iterative} == {"cg"}
    assert [chain[0]["degree"] for chain in iterative] == [2, 3, 4]
    flat_dofs = [(c[0]["degree"] * r["resolution"] + 1) ** 2 for c in flat for r in c]
    cube_dofs = [(c[0]["degree"] * r["resolution"] + 1) ** 3 for c in direct for r in c]
    assert min(cube_dofs) < min(flat_dofs) and max(cube_dofs) < max(flat_dofs)


def test_an_unknown_family_is_an_error_and_nothing_imports_firedrake():
    view = _view(_pick("poisson", "first").id)
    view["case_spec"]["pde"]["type"] = "navier_stokes"
    with pytest.raises(ValueError, match="navier_stokes"):
        ladder(view)
    assert ladder(_view(_pick("heat", "first").id)) == ladder(_view(_pick("heat", "first").id))
    assert not {"firedrake", "ufl", "petsc4py"} & set(sys.modules)


# ------------------------------------------------------------------ in the runtime


@pytest.mark.firedrake
@pytest.mark.parametrize("family", ["poisson", "heat"])
def test_the_error_falls_along_a_p2_chain(family, tmp_path):
    import firedrake_harness as H

    case = next(
        c
        for c in firedrake_cases()
        if c.case_spec.pde.type == family
        and c.case_spec.domain.type == "unit_square"
        and c.evaluation_metadata.manufactured_solution
    )
    view = agent_view(case, "firedrake")
    spec = view["case_spec"]
    chain = next(c for c in ladder(view) if c[0]["degree"] == 2)
    rungs = chain[1:4]  # past the coarsest mesh, still cheap
    records = H.run_solver(family, spec, rungs, tmp_path)
    exact = dict(case.evaluation_metadata.manufactured_solution)
    errors = [H.grid_error(spec, rec["arrays"], exact) for rec in records]
    print(f"\nfiredrake ladder {case.id}: rungs {rungs}\nerrors {errors}")
    assert all(math.isfinite(e) and e > 0 for e in errors), errors
    assert all(b <= a / 2 for a, b in itertools.pairwise(errors)), errors
