"""No deal.II calibration rung puts its nodes on the evaluation grid (SPEC §7.1,
``pdeagent.evaluation.grid_alignment``).

Unmarked (no compiler): over every deal.II case of the v2 dataset, every rung of every
chain is either on a gmsh mesh (no lattice) or leaves at least 70% of the grid off the
nodes of its scored fields; a hand-made Q2 rung on 32 x 32 cells of the unit square is
reported aligned (the check can fail); the rungs the rule moves, and what
``node_lattices`` reads from a rung.  Marked ``dealii``: a driver built with the track's
toolchain (programs/grid_support_points.cc) builds the meshes with meshing.h exactly as
the programs do and lists the support points of the scored FE spaces; the share of grid
points that really are support points never exceeds the lattices' ``aligned_fraction``,
and is high where the lattice says the rung is fully aligned."""

from __future__ import annotations

import collections
import itertools
import json
import math
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.evaluation.grid_alignment import (
    MAX_ALIGNED_FRACTION,
    aligned_fraction,
    grid_axes_of,
    is_grid_aligned,
)
from pdeagent_dealii.ladder import MIN_STEPS, STEP_SCALE, ladder, node_lattices

ROOT = Path(__file__).resolve().parents[3]
DATASET = ROOT / "cases" / "pdeagent-v2-records.jsonl"
STRUCTURED = ("unit_square", "periodic_square", "unit_cube")
"""The templates meshing.h builds with GridGenerator::subdivided_hyper_cube."""


@cache
def dataset() -> tuple[Case, ...]:
    cases = load_cases(DATASET)
    return tuple(
        sorted((c for c in cases if "dealii" in c.supported_libraries), key=lambda c: c.id)
    )


def view(case: Case) -> dict[str, Any]:
    return agent_view(case, "dealii")


def case_by_id(case_id: str) -> Case:
    return next(c for c in dataset() if c.id == case_id)


def first(family: str, domain: str, *, pressure: bool | None = None) -> Case:
    """The first deal.II case of ``family`` on ``domain`` (with or without a pressure
    output when ``pressure`` says so)."""
    for case in dataset():
        spec = view(case)["case_spec"]
        if case.family != family or spec["domain"]["type"] != domain:
            continue
        if pressure is None or bool(spec["output"].get("pressure")) == pressure:
            return case
    raise LookupError((family, domain, pressure))


def resolution_key(rung: dict[str, Any]) -> str:
    (key,) = [k for k in rung if k.startswith("resolution")]
    return key


# --- unmarked: the ladders of the whole dataset ---------------------------------------------


def test_no_rung_of_any_dealii_case_puts_its_nodes_on_the_grid():
    # the structured cases, counted from the raw records (not through the code under test)
    expected: collections.Counter[str] = collections.Counter()
    for line in DATASET.read_text().splitlines():
        record = json.loads(line)
        domain = record["case_spec"]["domain"]["type"]
        if "dealii" in record["supported_libraries"] and domain in STRUCTURED:
            expected[domain] += 1
    visited: collections.Counter[str] = collections.Counter()
    rungs: collections.Counter[str] = collections.Counter()
    worst = {domain: 0.0 for domain in STRUCTURED}
    for case in dataset():
        case_view = view(case)
        spec = case_view["case_spec"]
        domain = spec["domain"]["type"]
        if domain in STRUCTURED:
            visited[domain] += 1
        for chain in ladder(case_view):
            resolutions = [rung[resolution_key(rung)] for rung in chain]
            assert all(a < b for a, b in itertools.pairwise(resolutions)), (case.id, chain)
            for rung in chain:
                lattices = node_lattices(case_view, rung)
                if domain not in STRUCTURED:
                    assert lattices is None, (case.id, rung, lattices)
                    continue
                assert lattices, (case.id, rung)
                rungs[domain] += 1
                shares = [aligned_fraction(spec["eval_grid"], ls) for ls in lattices]
                worst[domain] = max(worst[domain], *shares)
                assert not is_grid_aligned(spec["eval_grid"], lattices), (case.id, rung, shares)
    print("structured cases", dict(visited), "rungs", dict(rungs), "largest share", worst)
    assert visited == expected
    assert set(visited) == set(STRUCTURED)
    assert sum(visited.values()) >= 100, visited  # 67 + 13 + 23 in v2
    assert all(rungs[d] >= 10 * visited[d] for d in STRUCTURED), (rungs, visited)
    assert all(0.0 < share <= MAX_ALIGNED_FRACTION for share in worst.values()), worst


def test_q2_on_32_cells_of_the_unit_square_is_aligned():
    """The rung of the superconvergence report: Q2 nodes on every point of the 65 x 65
    grid (32 cells, degree 2: 64 grid intervals)."""
    case_view = view(first("poisson", "unit_square"))
    grid = case_view["case_spec"]["eval_grid"]
    lattices = node_lattices(case_view, {"resolution": 32, "degree": 2})
    assert lattices == [[(0.0, 1.0, 64), (0.0, 1.0, 64)]]
    assert aligned_fraction(grid, lattices[0]) == 1.0
    assert is_grid_aligned(grid, lattices)
    # one cell more: only the two ends of each axis (gcd(66, 64) = 2)
    moved = node_lattices(case_view, {"resolution": 33, "degree": 2})
    assert aligned_fraction(grid, moved[0]) == pytest.approx((3 / 65) ** 2)
    assert not is_grid_aligned(grid, moved)


def test_the_rule_moves_aligned_rungs_to_the_next_resolution_and_dt_follows():
    """The dataset's aligned geometric rungs: reaction-diffusion Q2 at 256 and Q4 at 128
    cells (p n = 512, a multiple of the grid's 64 intervals) and 3-D convection-
    diffusion Q4 at 6 cells (p n = 24 on the 25^3 grid) take the next resolution."""
    rd = view(case_by_id("reaction_diffusion_unit_square_transient_mms_011"))
    chains = {chain[0]["degree"]: chain for chain in ladder(rd)}
    time_ = rd["case_spec"]["pde"]["time"]
    duration = time_["t_end"] - time_["t0"]
    for degree, aligned in ((2, 256), (4, 128)):
        resolutions = [rung["resolution"] for rung in chains[degree]]
        assert aligned not in resolutions and aligned + 1 in resolutions, resolutions
        assert is_grid_aligned(
            rd["case_spec"]["eval_grid"],
            node_lattices(rd, {**chains[degree][-1], "resolution": aligned}),
        )
        rung = next(r for r in chains[degree] if r["resolution"] == aligned + 1)
        target = STEP_SCALE * (1.0 / (aligned + 1)) ** ((degree + 1) / 2)
        steps = max(MIN_STEPS, math.ceil(duration / target - 1e-9))
        assert rung["dt"] == duration / steps, rung  # the dt of the moved resolution
    cd = view(case_by_id("convection_diffusion_unit_cube_cube_mms_004"))
    q4 = next(chain for chain in ladder(cd) if chain[0]["degree"] == 4)
    resolutions = [rung["resolution_cube"] for rung in q4]
    assert 6 not in resolutions and 7 in resolutions, resolutions
    assert is_grid_aligned(
        cd["case_spec"]["eval_grid"], node_lattices(cd, {**q4[0], "resolution_cube": 6})
    )


def test_node_lattices_follow_what_the_programs_build_and_score():
    square = view(first("poisson", "unit_square"))
    assert node_lattices(square, {"resolution": 10, "degree": 3}) == [[(0.0, 1.0, 30)] * 2]
    # a rung without a knob: the program's calibration default (poisson: 32 cells, Q2)
    assert node_lattices(square, {}) == [[(0.0, 1.0, 64)] * 2]
    # gmsh meshes have no lattice
    assert node_lattices(view(first("poisson", "annulus")), {"resolution": 32, "degree": 2}) is None
    # 3-D: the families with a cube knob read it, Poisson reads `resolution`
    heat3 = view(first("heat", "unit_cube"))
    rung = {"resolution": 99, "resolution_cube": 5, "degree": 2}
    assert node_lattices(heat3, rung) == [[(0.0, 1.0, 10)] * 3]
    poisson3 = view(first("poisson", "unit_cube"))
    assert node_lattices(poisson3, rung) == [[(0.0, 1.0, 198)] * 3]
    # Taylor-Hood: the pressure is a layout of its own when the output scores it
    stokes = view(first("stokes", "unit_square", pressure=True))
    assert node_lattices(stokes, {"resolution": 8, "degree": 3}) == [
        [(0.0, 1.0, 24)] * 2,
        [(0.0, 1.0, 16)] * 2,
    ]
    speed = view(first("stokes", "unit_square", pressure=False))
    assert node_lattices(speed, {"resolution": 8, "degree": 3}) == [[(0.0, 1.0, 24)] * 2]
    ns = view(first("navier_stokes", "unit_square", pressure=True))
    assert node_lattices(ns, {"resolution": 8, "degree": 1}) == [  # Q2 / Q1
        [(0.0, 1.0, 16)] * 2,
        [(0.0, 1.0, 8)] * 2,
    ]
    # biharmonic: the method's own knobs (cip with clamped conditions)
    for case in dataset():
        spec = view(case)["case_spec"]
        if case.family != "biharmonic" or spec["domain"]["type"] != "unit_square":
            continue
        clamped = any(
            entry.get("quantity") == "normal_derivative"
            for kind in ("dirichlet", "neumann")
            for entry in spec["bc"][kind]
        )
        rung = {"resolution": 10, "degree": 1, "resolution_cip": 12, "degree_cip": 3}
        expected = 36 if clamped else 10
        assert node_lattices(view(case), rung) == [[(0.0, 1.0, expected)] * 2], case.id
    # helmholtz: the program's wavelength floor raises the resolution it meshes with
    helm = view(first("helmholtz", "unit_square"))
    k = float(helm["case_spec"]["pde"]["params"]["k"])
    waves = k / (2 * math.pi)
    floor = math.ceil(60 * max(1.0, waves) ** (1 / 4) * waves / 2)
    assert floor > 4
    got = node_lattices(helm, {"resolution": 4, "degree": 2, "points_per_wavelength": 60})
    assert got == [[(0.0, 1.0, 2 * floor)] * 2]


# --- marked: the support points deal.II really places ---------------------------------------


def rungs_to_check() -> list[tuple[str, Case, dict[str, Any], dict[str, Any], bool]]:
    """(label, case, rung, driver job, whether the lattice says fully aligned): ladder
    rungs and hand-made aligned rungs on the three structured templates, a Q_p scalar
    family on each and Taylor-Hood (Stokes, Navier-Stokes) on the unit square."""
    out = []

    def add(label, case, rung, key, element, degree, mapping, aligned=False):
        domain = view(case)["case_spec"]["domain"]
        job = {
            "domain": domain,
            "resolution": rung[key],
            "element": element,
            "degree": degree,
            "mapping_degree": mapping,
        }
        out.append((label, case, rung, job, aligned))

    def chain(case, degree_key, degree):
        return next(c for c in ladder(view(case)) if c[0][degree_key] == degree)

    poisson = first("poisson", "unit_square")
    for p, count in ((2, 3), (3, 2)):
        for rung in chain(poisson, "degree", p)[:count]:
            add(f"poisson square Q{p}", poisson, rung, "resolution", "q", p, p)
    add("poisson square Q2 32", poisson, {"resolution": 32, "degree": 2}, "resolution",
        "q", 2, 2, aligned=True)  # fmt: skip
    rd = case_by_id("reaction_diffusion_unit_square_transient_mms_011")
    moved = next(r for r in chain(rd, "degree", 4) if r["resolution"] == 129)
    add("reaction-diffusion square Q4 moved", rd, moved, "resolution", "q", 4, 4)
    add("reaction-diffusion square Q4 128", rd, {**moved, "resolution": 128}, "resolution",
        "q", 4, 4, aligned=True)  # fmt: skip
    periodic = first("poisson", "periodic_square")
    for p, count in ((1, 3), (2, 2)):
        for rung in chain(periodic, "degree", p)[:count]:
            add(f"poisson periodic Q{p}", periodic, rung, "resolution", "q", p, p)
    add("poisson periodic Q1 64", periodic, {"resolution": 64, "degree": 1}, "resolution",
        "q", 1, 1, aligned=True)  # fmt: skip
    cd3 = case_by_id("convection_diffusion_unit_cube_cube_mms_004")
    for rung in chain(cd3, "degree", 4)[2:5]:  # resolutions 4, 7 (moved from 6), 10
        add("convection-diffusion cube Q4", cd3, rung, "resolution_cube", "q", 4, 4)
    poisson3 = first("poisson", "unit_cube")
    for rung in chain(poisson3, "degree", 2)[:3]:
        add("poisson cube Q2", poisson3, rung, "resolution", "q", 2, 2)
    add("poisson cube Q2 12", poisson3, {"resolution": 12, "degree": 2}, "resolution",
        "q", 2, 2, aligned=True)  # fmt: skip
    stokes = first("stokes", "unit_square", pressure=True)
    for k, count in ((2, 3), (3, 2)):
        for rung in chain(stokes, "degree", k)[:count]:
            add(f"stokes square Q{k}/Q{k - 1}", stokes, rung, "resolution", "taylor_hood",
                k, k)  # fmt: skip
    add("stokes square Q2/Q1 32", stokes, {"resolution": 32, "degree": 2}, "resolution",
        "taylor_hood", 2, 2, aligned=True)  # fmt: skip
    ns = first("navier_stokes", "unit_square", pressure=True)
    for rung in chain(ns, "degree", 1)[:2]:
        add("navier-stokes square Q2/Q1", ns, rung, "resolution", "taylor_hood", 2,
            rung["geometry_degree"])  # fmt: skip
    return out


def grid_share(eval_grid: dict[str, Any], flat: list[float]) -> float:
    """The share of the grid's points that are among the support points ``flat``."""
    axes = grid_axes_of(eval_grid)
    points = np.asarray(flat, dtype=float).reshape(-1, len(axes))
    on_grid = np.ones(len(points), dtype=bool)
    indices = []
    for d, (lo, hi, count) in enumerate(axes):
        j = (points[:, d] - lo) / (hi - lo) * (count - 1)
        nearest = np.rint(j)
        on_grid &= (np.abs(j - nearest) < 1e-8) & (nearest >= 0) & (nearest <= count - 1)
        indices.append(nearest.astype(np.int64))
    hits = np.unique(np.stack(indices, axis=1)[on_grid], axis=0)
    return len(hits) / math.prod(count for _, _, count in axes)


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    from dealii_harness import compile_driver

    return compile_driver("grid_support_points", tmp_path_factory.mktemp("grid_support_points"))


@pytest.mark.dealii
@pytest.mark.slow
def test_real_support_points_cover_no_more_of_the_grid_than_the_lattices_say(driver):
    checks = rungs_to_check()
    jobs = driver.parent / "jobs.json"
    jobs.write_text(json.dumps([job for _, _, _, job, _ in checks]))
    result = subprocess.run(
        [str(driver), str(jobs)], cwd=driver.parent, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(answers) == len(checks)
    domains = collections.Counter()
    for (label, case, rung, job, aligned), answer in zip(checks, answers, strict=True):
        case_view = view(case)
        grid = case_view["case_spec"]["eval_grid"]
        dim = len(grid_axes_of(grid))
        # n = ceil(1 / h) = resolution cells per side, as the lattice assumes
        assert answer["cells"] == job["resolution"] ** dim, (label, answer["cells"])
        lattices = node_lattices(case_view, rung)
        assert lattices is not None
        # the scored fields: all of them here (Taylor-Hood cases with a pressure output)
        fields = answer["fields"]
        assert len(fields) == len(lattices), (label, len(fields), len(lattices))
        for field, lattice_set in zip(fields, lattices, strict=True):
            actual = grid_share(grid, field["points"])
            bound = aligned_fraction(grid, lattice_set)
            print(f"{label:40s} r={job['resolution']:4d} Q{field['degree']}: "
                  f"actual {actual:.4f} <= lattice {bound:.4f}")  # fmt: skip
            assert actual <= bound + 1e-12, (label, rung, field["degree"], actual, bound)
            if aligned and field is fields[0]:
                assert bound == 1.0, (label, bound)
                assert actual >= 0.9, (label, actual)  # the superconvergent rung, for real
        assert aligned == is_grid_aligned(grid, lattices), label
        domains[case_view["case_spec"]["domain"]["type"]] += 1
    assert set(domains) == set(STRUCTURED), domains
