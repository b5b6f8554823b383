"""The deal.II track's frontier-calibration ladders (``pdeagent_dealii.ladder``).

Unmarked (no compiler needed): for a real dataset case of every family (2-D, 3-D where
the family has 3-D cases, and the variants that change a ladder), every rung is a
settings dict the family's program accepts and can be bundled, every chain is ordered
by an estimated cost (unknowns times time steps, computed here from the rung the way
the programs read it), and the ladder brackets the current calibration defaults.
Marked ``dealii``: three rungs of one chain, run through the real pipeline on
manufactured-solution cases, cut the error by at least 2 per rung."""

from __future__ import annotations

import copy
import itertools
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent_dealii.bundle import DEFAULTS, FAMILIES, bundle, settings_of
from pdeagent_dealii.ladder import MIN_STEPS, ladder

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v1.jsonl"


@cache
def dataset() -> tuple[Case, ...]:
    cases = load_cases(DATASET)
    return tuple(
        sorted((c for c in cases if "dealii" in c.supported_libraries), key=lambda c: c.id)
    )


def dim_of(case: Case) -> int:
    return len(case.case_spec.domain.bounds)


def pick(family: str, dim: int = 2, marker: str = "") -> Case:
    """The first deal.II case of ``family`` in ``dim`` whose id contains ``marker``."""
    for case in dataset():
        if case.family == family and dim_of(case) == dim and marker in case.id:
            return case
    raise LookupError((family, dim, marker))


# (family, dim, id marker): one case per family, a 3-D case where the family has one,
# and the variants whose ladder differs (wave number, Peclet number, transient, clamped
# plates, near incompressibility).
SELECTED = [
    *[(family, 2, "") for family in FAMILIES],
    *[
        (family, 3, "")
        for family in FAMILIES
        if any(c.family == family and dim_of(c) == 3 for c in dataset())
    ],
    ("helmholtz", 2, "highk"),
    ("convection_diffusion", 2, "highpe"),
    ("convection_diffusion", 2, "transient"),
    ("reaction_diffusion", 2, "transient"),
    ("biharmonic", 2, "clamped"),
    ("linear_elasticity", 2, "incompressible"),
    ("navier_stokes", 2, "transient"),
]


def view(case: Case) -> dict[str, Any]:
    return agent_view(case, "dealii")


# --- the cost a rung costs, estimated from the settings as the programs read them ---------


def _wavelength_resolution(k: float, length: float, degree: int, ppw: float) -> int:
    """helmholtz.cc's floor on the resolution."""
    waves = k * length / (2 * math.pi)
    if not waves > 0:
        return 1
    return max(1, math.ceil(ppw * max(1.0, waves) ** (1 / (2 * degree)) * waves / degree))


def estimated_cost(case: Case, settings: dict[str, Any]) -> float:
    """Unknowns times time steps of ``settings`` (merged over the defaults) on ``case``."""
    family, spec = case.family, case.case_spec
    s = {**DEFAULTS[family], **settings}
    dim = dim_of(case)
    cube = spec.domain.type == "unit_cube"
    params = spec.pde.params

    def nodes(resolution: int, degree: int) -> int:
        return (resolution * degree + 1) ** dim

    if family == "biharmonic":
        bc = spec.bc
        clamped = any(e.quantity == "normal_derivative" for e in (*bc.dirichlet, *bc.neumann))
        method = s["method"] or (2 if clamped else 1)
        suffix = "_cip" if method == 2 else ""
        resolution = s["resolution_cube"] if cube else s[f"resolution{suffix}"]
        dofs = nodes(resolution, s[f"degree{suffix}"]) * (2 if method == 1 else 1)
    elif family == "stokes":
        k = s["degree"]
        dofs = dim * nodes(s["resolution"], k) + nodes(s["resolution"], k - 1)
    elif family == "navier_stokes":
        k = s["degree"]
        dofs = dim * nodes(s["resolution"], k + 1) + nodes(s["resolution"], k)
    elif family == "helmholtz":
        length = max(hi - lo for lo, hi in spec.domain.bounds)
        floor = _wavelength_resolution(
            abs(float(params["k"])), length, s["degree"], s["points_per_wavelength"]
        )
        dofs = nodes(max(s["resolution"], floor), s["degree"])
    elif family == "linear_elasticity":
        resolution = s["resolution_cube"] if dim == 3 else s["resolution"]
        mixed = params["model"] != "plane_stress" and float(params["nu"]) >= s["mixed_nu_threshold"]
        dofs = dim * nodes(resolution, s["degree"])
        if mixed:
            dofs += nodes(resolution, s["degree"] - 1)
    elif family == "poisson":
        dofs = nodes(s["resolution"], s["degree"])
    else:  # heat, convection_diffusion, reaction_diffusion
        resolution = s["resolution_cube"] if dim == 3 else s["resolution"]
        dofs = nodes(resolution, s["degree"])
    steps = 1
    if spec.pde.time is not None:
        duration = spec.pde.time.t_end - spec.pde.time.t0
        steps = max(1, math.ceil(duration / s["dt"] - 1e-9))
        if family == "navier_stokes":
            steps = max(steps, s["min_steps"])
    return float(dofs * steps)


# --- unmarked: the ladders' structure ------------------------------------------------------


def test_every_family_of_the_track_has_a_ladder_and_others_are_refused():
    assert {family for family, _, _ in SELECTED} == set(FAMILIES)
    with pytest.raises(ValueError, match=r"no deal\.II calibration ladder"):
        ladder({"case_spec": {"pde": {"type": "wave"}}, "target_library": "dealii"})


@pytest.mark.parametrize(("family", "dim", "marker"), SELECTED)
def test_ladder_rungs_are_valid_ordered_and_bracket_the_defaults(family, dim, marker):
    case = pick(family, dim, marker)
    chains = ladder(view(case))
    assert chains and all(chains), case.id
    rungs = [rung for chain in chains for rung in chain]
    assert len(rungs) <= 40, (case.id, len(rungs))
    defaults = DEFAULTS[family]
    varied = {k for k in {k for r in rungs for k in r} if len({repr(r.get(k)) for r in rungs}) > 1}
    for rung in rungs:
        assert set(rung) <= set(defaults), (case.id, set(rung) - set(defaults))
        for key, value in rung.items():
            assert type(value) is type(defaults[key]), (case.id, key, value)
        # a knob the ladder varies anywhere is named in every rung (no silent default)
        assert varied <= set(rung), (case.id, varied - set(rung))
        carried, _ = settings_of(bundle(family, rung))
        assert carried is not None, case.id
        for key, value in rung.items():
            assert carried[key] == value and type(carried[key]) is type(value), (case.id, key)
    for chain in chains:
        costs = [estimated_cost(case, rung) for rung in chain]
        assert all(a < b for a, b in itertools.pairwise(costs)), (case.id, costs)
    costs = [estimated_cost(case, rung) for rung in rungs]
    default = estimated_cost(case, {})
    assert min(costs) < default < max(costs), (case.id, min(costs), default, max(costs))
    # deterministic, and the case view is left alone
    given = view(case)
    before = copy.deepcopy(given)
    assert ladder(given) == chains
    assert given == before


@pytest.mark.parametrize(
    ("family", "marker"),
    [("heat", ""), ("convection_diffusion", "transient"), ("reaction_diffusion", "transient"),
     ("navier_stokes", "transient")],
)  # fmt: skip
def test_time_step_is_refined_with_the_mesh(family, marker):
    """dt ~ h^((p+1)/2): along a chain the steps grow with the mesh (never below
    MIN_STEPS), faster for higher degrees, and fit the interval exactly."""
    case = pick(family, 2, marker)
    duration = case.case_spec.pde.time.t_end - case.case_spec.pde.time.t0
    growth = []
    for chain in ladder(view(case)):
        steps = [duration / rung["dt"] for rung in chain]
        assert all(abs(n - round(n)) < 1e-6 and round(n) >= MIN_STEPS for n in steps)
        assert all(a <= b for a, b in itertools.pairwise(steps))
        assert steps[-1] >= 8 * steps[0], (case.id, steps)
        growth.append(steps[-1] / steps[0])
    assert growth == sorted(growth), growth  # higher degree, faster refinement in time


def test_ladders_follow_the_case():
    def first_nodes(case: Case) -> list[int]:
        return [chain[0]["resolution"] * chain[0]["degree"] for chain in ladder(view(case))]

    # a higher wave number / Peclet number starts finer
    squares = [
        c for c in dataset() if c.family == "helmholtz" and c.case_spec.domain.type == "unit_square"
    ]
    low_k = min(squares, key=lambda c: float(c.case_spec.pde.params["k"]))
    high_k = max(squares, key=lambda c: float(c.case_spec.pde.params["k"]))
    assert float(high_k.case_spec.pde.params["k"]) > 2 * float(low_k.case_spec.pde.params["k"])
    for low, high in ((low_k, high_k), (pick("convection_diffusion", 2, "moderate"),
                                        pick("convection_diffusion", 2, "highpe"))):  # fmt: skip
        coarse, fine = first_nodes(low), first_nodes(high)
        assert all(a <= b for a, b in zip(coarse, fine, strict=True)), (coarse, fine)
        assert coarse[0] < fine[0], (coarse, fine)  # Q1 (higher degrees may hit the floor)
    # clamped plates: C0 interior penalty (degree >= 2); Navier plates: the mixed method
    clamped = ladder(view(pick("biharmonic", 2, "clamped")))
    assert {r["method"] for c in clamped for r in c} == {2}
    assert sorted(c[0]["degree_cip"] for c in clamped) == [2, 3, 4]
    navier = ladder(view(pick("biharmonic", 2, "navier")))
    assert {r["method"] for c in navier for r in c} == {1}
    assert sorted(c[0]["degree"] for c in navier) == [1, 2, 3, 4]
    # near incompressible elasticity: Taylor-Hood needs degree >= 2
    incompressible = ladder(view(pick("linear_elasticity", 2, "incompressible")))
    assert min(c[0]["degree"] for c in incompressible) == 2
    assert min(c[0]["degree"] for c in ladder(view(pick("linear_elasticity", 2, "smooth")))) == 1
    # 3-D: the 3-D resolution knob, a coarser start and a smaller top than 2-D
    flat, cube = ladder(view(pick("poisson"))), ladder(view(pick("poisson", 3)))
    for p2, p3 in zip(flat, cube, strict=True):
        assert p3[0]["resolution"] <= p2[0]["resolution"]
        assert p3[-1]["resolution"] < p2[-1]["resolution"]
    heat3 = ladder(view(pick("heat", 3)))
    assert all("resolution_cube" in r and "resolution" not in r for c in heat3 for r in c)


def test_heat_3d_factorises_once_unless_the_operator_changes_in_time():
    for case in dataset():
        if case.family != "heat" or dim_of(case) != 3:
            continue
        kappa = str(case.case_spec.pde.params["kappa"])
        changing = re.search(r"(?<![\w.])t(?!\w)", kappa) is not None or any(
            re.search(r"(?<![\w.])t(?!\w)", str(r.alpha)) for r in case.case_spec.bc.robin
        )
        thresholds = {r["direct_max_dofs_cube"] for c in ladder(view(case)) for r in c}
        assert thresholds == ({0} if changing else {25_000}), case.id


# --- marked: the errors along a chain, through the real pipeline ---------------------------


@pytest.fixture(scope="module")
def setup():
    from dealii_harness import Setup

    return Setup()


@pytest.mark.dealii
@pytest.mark.slow
@pytest.mark.parametrize(
    ("case_id", "degree", "first"),
    # Poisson only: each rung is a cold compile (~1 min in CI); the dt coupling of the
    # transient ladders is checked without the toolchain above
    [("poisson_unit_square_smooth_mms_000", 2, 1)],
)
def test_error_falls_along_a_chain(setup, case_id, degree, first):
    """Three consecutive rungs of the Q2 chain (the heat ones with dt refined along)
    on a manufactured solution: each cuts the error by at least 2 (a factor 1.5 in h
    gives about 3.4 at third order in space and second order in time)."""
    from dealii_harness import failure

    case = setup.case(case_id)
    chain = next(c for c in ladder(view(case)) if c[0]["degree"] == degree)
    errors = []
    for rung in chain[first : first + 3]:
        report = setup.grade(case, bundle(case.family, rung), tau_acc=1.0)
        assert report.verdict == "PASS", (rung, *failure(report))
        errors.append(report.error)
    print(case_id, [rung[key] for rung in chain[first : first + 3] for key in ("resolution", "dt")
                    if key in rung], errors)  # fmt: skip
    assert all(math.isfinite(e) for e in errors), errors
    assert all(a >= 2 * b for a, b in itertools.pairwise(errors)), errors
