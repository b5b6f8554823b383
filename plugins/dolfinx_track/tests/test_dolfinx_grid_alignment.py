"""No DOLFINx calibration rung has its mesh nodes on the evaluation grid (SPEC §7.1,
:mod:`pdeagent.evaluation.grid_alignment`; ``pdeagent_dolfinx.ladder`` "Common rules").

Unmarked tests (no DOLFINx): every rung of every case of the dataset 2.0 records is off
the grid by :func:`~pdeagent_dolfinx.ladder.node_lattices`, the check can fail, and the
lattices follow the settings the solvers read. The dolfinx-marked truth test runs the
calibration solvers in the DOLFINx runtime on a few rungs and compares the share of the
grid's points that really are dof coordinates of the scored spaces with the lattices'.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from collections import Counter
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from dolfinx_harness import dolfinx_python

from pdeagent.evaluation.grid_alignment import (
    MAX_ALIGNED_FRACTION,
    aligned_fraction,
    axis_aligned_count,
    grid_axes_of,
    is_grid_aligned,
)
from pdeagent_dolfinx import ladder as ladder_module
from pdeagent_dolfinx.ladder import STRUCTURED, ladder, node_lattices

RECORDS = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v2-records.jsonl"
PROBE = Path(__file__).parent / "runtime" / "grid_nodes_probe.py"


@cache
def records() -> tuple[dict[str, Any], ...]:
    lines = RECORDS.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def _view(record: dict[str, Any]) -> dict[str, Any]:
    """The agent view the ladder gets (``pdeagent.cases.agent_view``): the case_spec."""
    return {"case_spec": json.loads(json.dumps(record["case_spec"])), "target_library": "dolfinx"}


def _dolfinx_records() -> list[dict[str, Any]]:
    return [r for r in records() if "dolfinx" in r["supported_libraries"]]


def _record(family: str, domain: str, *, pressure: bool | None = None) -> dict[str, Any]:
    for record in _dolfinx_records():
        spec = record["case_spec"]
        if spec["pde"]["type"] != family or spec["domain"]["type"] != domain:
            continue
        if pressure is not None and bool(spec["output"].get("pressure")) != pressure:
            continue
        return record
    raise AssertionError(f"the dataset has no {family} case on {domain}")


@cache
def _aligned(grid: str, lattices: tuple) -> bool:
    """:func:`is_grid_aligned` memoised on (the grid as JSON, the lattices): the dataset's
    ~7000 structured rungs share a few hundred distinct questions."""
    return is_grid_aligned(json.loads(grid), lattices)


def _resolution(rung: dict[str, Any]) -> int:
    (key,) = [k for k in rung if k.startswith("resolution")]
    return rung[key]


# ------------------------------------------------------------------- without dolfinx


def test_no_rung_of_the_dataset_has_its_nodes_on_the_evaluation_grid():
    visited: Counter[str] = Counter()
    checked_rungs: Counter[str] = Counter()
    expected = Counter(
        r["case_spec"]["domain"]["type"]
        for r in _dolfinx_records()
        if r["case_spec"]["domain"]["type"] in STRUCTURED
    )
    for record in _dolfinx_records():
        view = _view(record)
        spec = view["case_spec"]
        domain = spec["domain"]["type"]
        for chain in ladder(view):
            resolutions = [_resolution(rung) for rung in chain]
            assert all(a < b for a, b in itertools.pairwise(resolutions))
            for rung in chain:
                lattices = node_lattices(view, rung)
                if domain not in STRUCTURED:
                    assert lattices is None, (record["id"], domain)
                    continue
                assert lattices, (record["id"], rung)
                key = (json.dumps(spec["eval_grid"], sort_keys=True), tuple(map(tuple, lattices)))
                assert not _aligned(*key), (record["id"], rung)
                checked_rungs[domain] += 1
        if domain in STRUCTURED:
            visited[domain] += 1
    # not vacuous: every structured case was visited, and its rungs checked
    assert visited == expected
    assert set(visited) == set(STRUCTURED)
    assert sum(visited.values()) >= 200
    assert all(checked_rungs[d] >= 10 * visited[d] for d in STRUCTURED), checked_rungs


def test_a_p2_rung_on_32_cells_of_the_unit_square_is_aligned():
    view = _view(_record("poisson", "unit_square"))
    grid = view["case_spec"]["eval_grid"]
    assert grid_axes_of(grid) == [(0.0, 1.0, 65), (0.0, 1.0, 65)]
    rung = {"resolution": 32, "degree": 2, "petsc_options": None}
    lattices = node_lattices(view, rung)
    assert lattices == [[(0.0, 1.0, 64), (0.0, 1.0, 64)]]
    assert aligned_fraction(grid, lattices[0]) == 1.0
    assert is_grid_aligned(grid, lattices)
    # the P2 chain's geometric sequence (12, 17, 24, 34, 48, 68, 96, ...) skips 32, but
    # its 96 (2 * 96 = 3 * 64 intervals) is aligned too: the ladder moved it to 97
    chain = next(c for c in ladder(view) if c[0]["degree"] == 2)
    resolutions = [r["resolution"] for r in chain]
    assert 96 not in resolutions and 97 in resolutions
    assert is_grid_aligned(grid, node_lattices(view, {**chain[0], "resolution": 96}))


def test_only_structured_meshes_move_and_time_steps_follow_the_moved_resolution():
    square = _view(_record("heat", "unit_square"))
    circle = _view(_record("heat", "circle"))
    p1 = {c[0]["degree"]: c for c in ladder(square)}[1]
    p1_circle = {c[0]["degree"]: c for c in ladder(circle)}[1]
    assert 192 in [r["resolution"] for r in p1_circle]  # gmsh: no lattice, unchanged
    moved = next(r for r in p1 if r["resolution"] == 193)
    assert 192 not in [r["resolution"] for r in p1]
    time = square["case_spec"]["pde"]["time"]
    span = time["t_end"] - time["t0"]
    assert moved["n_steps"] == ladder_module._steps(span, 1, 193)
    assert moved["dt"] * moved["n_steps"] == pytest.approx(span)
    assert node_lattices(circle, p1_circle[0]) is None


def test_lattices_follow_the_settings_each_solver_reads():
    cube = _view(_record("poisson", "unit_cube"))
    # Poisson reads ``resolution`` on the unit cube too (solvers/poisson.py)
    assert node_lattices(cube, {"resolution": 8, "degree": 3}) == [[(0.0, 1.0, 24)] * 3]
    heat_cube = _view(_record("heat", "unit_cube"))
    assert node_lattices(heat_cube, {"resolution": 99, "resolution_3d": 5, "degree": 2}) == [
        [(0.0, 1.0, 10)] * 3
    ]
    # Taylor-Hood: velocity P(k + 1) and, when scored, the pressure P(k)
    with_p = _view(_record("stokes", "unit_square", pressure=True))
    assert node_lattices(with_p, {"resolution": 32, "degree": 2}) == [
        [(0.0, 1.0, 96)] * 2,
        [(0.0, 1.0, 64)] * 2,
    ]
    assert is_grid_aligned(
        with_p["case_spec"]["eval_grid"], node_lattices(with_p, {"resolution": 32, "degree": 2})
    )
    magnitude = _view(_record("stokes", "unit_square", pressure=False))
    assert node_lattices(magnitude, {"resolution": 32, "degree": 2}) == [[(0.0, 1.0, 96)] * 2]
    # clamped biharmonic: C0-IP reads resolution_cip and degree_cip
    clamped = next(
        _view(r)
        for r in _dolfinx_records()
        if r["case_spec"]["pde"]["type"] == "biharmonic"
        and r["case_spec"]["domain"]["type"] == "unit_square"
        and ladder_module._clamped(r["case_spec"])
    )
    assert node_lattices(clamped, {"method": "auto", "resolution_cip": 20, "degree_cip": 3}) == [
        [(0.0, 1.0, 60)] * 2
    ]
    # Helmholtz: the solver's wavelength rule raises the mesh unless it is switched off
    helm = _view(_record("helmholtz", "unit_square"))
    k = helm["case_spec"]["pde"]["params"]["k"]
    n_waves = abs(k) / (2 * math.pi)
    ppw = 30.0 * max(1.0, n_waves) ** 0.5
    needed = math.ceil(ppw * n_waves)
    assert node_lattices(helm, {"resolution": 4, "degree": 1, "points_per_wavelength": 0.0}) == [
        [(0.0, 1.0, 4)] * 2
    ]
    assert node_lattices(helm, {"resolution": 4, "degree": 1}) == [[(0.0, 1.0, max(4, needed))] * 2]
    # gmsh templates: no lattice
    assert node_lattices(_view(_record("poisson", "l_shape")), {"resolution": 32}) is None


# ------------------------------------------------------------------- with dolfinx


def _lattice_indices(lo: float, hi: float, points: int, lattice: tuple) -> set[int]:
    """Indices of ``linspace(lo, hi, points)`` on the lattice (exact, as
    :func:`~pdeagent.evaluation.grid_alignment.axis_aligned_count` counts them)."""
    a, b, n = Fraction(repr(lattice[0])), Fraction(repr(lattice[1])), lattice[2]
    g_lo, g_hi = Fraction(repr(lo)), Fraction(repr(hi))
    step = (g_hi - g_lo) / (points - 1)
    out = set()
    for j in range(points):
        k = (g_lo + j * step - a) / ((b - a) / n)
        if k.denominator == 1 and 0 <= k <= n:
            out.add(j)
    assert len(out) == axis_aligned_count(lo, hi, points, lattice)
    return out


def _chain_rung(view: dict[str, Any], degree: int, at_least: int) -> dict[str, Any]:
    """The first rung of the (direct) chain of ``degree`` with a resolution >= at_least."""
    chain = next(
        c for c in ladder(view) if c[0]["degree"] == degree and c[0]["petsc_options"] is None
    )
    return next(r for r in chain if _resolution(r) >= at_least)


def _truth_jobs() -> list[tuple[str, dict[str, Any], dict[str, Any], bool]]:
    """(label, view, settings, fully aligned by the lattice)."""
    square = _view(_record("poisson", "unit_square"))
    periodic = _view(_record("poisson", "periodic_square"))
    cube = _view(_record("poisson", "unit_cube"))
    stokes = _view(_record("stokes", "unit_square", pressure=True))
    return [
        ("square P2/32 (hand-made)", square, {"resolution": 32, "degree": 2}, True),
        ("square P2 ladder", square, _chain_rung(square, 2, 90), False),
        ("periodic P3 ladder", periodic, _chain_rung(periodic, 3, 60), False),
        ("periodic P2/32 (hand-made)", periodic, {"resolution": 32, "degree": 2}, True),
        ("cube P3/8 (hand-made)", cube, {"resolution": 8, "degree": 3}, True),
        ("cube P3 ladder", cube, _chain_rung(cube, 3, 8), False),
        ("stokes TH k=2/32 (hand-made)", stokes, {"resolution": 32, "degree": 2}, True),
        ("stokes TH k=2 ladder", stokes, _chain_rung(stokes, 2, 30), False),
        ("stokes TH k=1 ladder", stokes, _chain_rung(stokes, 1, 20), False),
    ]


@pytest.mark.dolfinx
def test_dof_coordinates_on_the_grid_are_bounded_by_the_lattices(tmp_path):
    python = dolfinx_python()
    from pdeagent_dolfinx.environment import runtime_env

    jobs = _truth_jobs()
    payload = [
        {
            "family": view["case_spec"]["pde"]["type"],
            "case_spec": view["case_spec"],
            "settings": settings,
        }
        for _, view, settings, _ in jobs
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(payload))
    env = runtime_env(python)
    env["OMP_NUM_THREADS"] = "1"
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [str(python), str(PROBE), "jobs.json", "out.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / "out.json").read_text())

    lines = []
    for (label, view, settings, fully), result in zip(jobs, results, strict=True):
        spec = view["case_spec"]
        grid = spec["eval_grid"]
        axes = grid_axes_of(grid)
        total = math.prod(points for _, _, points in axes)
        lattices = node_lattices(view, settings)
        assert lattices is not None
        # the mesh the solver built: n cells per side of [0, 1] per axis, n as read
        mesh = result["mesh"]
        cells = {v - 1 for v in mesh["vertices_per_axis"]}
        assert len(cells) == 1, mesh
        (n,) = cells
        assert mesh["lo"] == [0.0] * len(axes) and mesh["hi"] == [1.0] * len(axes), mesh
        # one lattice set per distinct degree of the spaces the solver sampled (scored)
        by_intervals = {ls[0][2]: ls for ls in lattices}
        assert sorted(by_intervals) == sorted({s["degree"] * n for s in result["spaces"]})
        hits_all: set[tuple[int, ...]] = set()
        for space in result["spaces"]:
            lattice_set = by_intervals[space["degree"] * n]
            on_lattice = [
                _lattice_indices(lo, hi, points, lat)
                for (lo, hi, points), lat in zip(axes, lattice_set, strict=True)
            ]
            hits = {tuple(h) for h in space["hits"]}
            outside = [
                h for h in hits if any(i not in on for i, on in zip(h, on_lattice, strict=True))
            ]
            assert not outside, (label, space["degree"], sorted(outside)[:5])
            actual = len(hits) / total
            bound = aligned_fraction(grid, lattice_set)
            assert actual <= bound + 1e-12, (label, actual, bound)
            hits_all |= hits
            lines.append(f"{label}: P{space['degree']} on {n}: actual {actual:.4f} <= {bound:.4f}")
        share = len(hits_all) / total
        if fully:  # the lattice puts every grid point on a node: the real share is high
            assert max(aligned_fraction(grid, ls) for ls in lattices) == 1.0
            assert share > MAX_ALIGNED_FRACTION, (label, share)
            if max(s["degree"] for s in result["spaces"]) <= 2:
                # P1 and P2 nodes are the equispaced ones in every variant: exactly all
                assert share == 1.0, (label, share)
        else:  # a ladder rung: off the grid for real too
            assert not is_grid_aligned(grid, lattices)
            assert all(len(s["hits"]) / total <= MAX_ALIGNED_FRACTION for s in result["spaces"])
    print("\n" + "\n".join(lines))
