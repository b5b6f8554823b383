"""No calibration rung of the Firedrake track has its mesh nodes on the evaluation grid
(SPEC §7.1, :mod:`pdeagent.evaluation.grid_alignment`; ``ladder`` module docstring,
"Off the evaluation grid").

Harness side (no Firedrake): every rung of every ladder of the dataset's Firedrake cases
keeps at most 30% of its case's grid on the nodes of its scored fields, as
:func:`pdeagent_firedrake.ladder.node_lattices` describes them, and the check does fail
a rung that puts P2 nodes on every grid point. In the runtime (marked ``firedrake``):
the real solvers, run on a few rungs of the structured templates, sample fields whose
actual dof coordinates cover no more of the grid than the lattices say.

Run: .venv/bin/python -m pytest -q -s
    plugins/firedrake_track/tests/test_firedrake_grid_alignment.py
"""

from __future__ import annotations

import collections
import itertools
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pdeagent_firedrake.ladder as ladder_module
import pytest
from pdeagent_firedrake.bundle import bundle
from pdeagent_firedrake.ladder import STRUCTURED_MESHES, ladder, node_lattices

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.evaluation.grid_alignment import (
    MAX_ALIGNED_FRACTION,
    aligned_fraction,
    is_grid_aligned,
)

DATASET = Path(__file__).resolve().parents[3] / "cases" / "pdeagent-v2-records.jsonl"
RESOLUTION_KEYS = ("resolution", "resolution_3d", "resolution_cip")


@cache
def firedrake_cases() -> tuple[Case, ...]:
    return tuple(c for c in load_cases(DATASET) if "firedrake" in c.supported_libraries)


@cache
def structured_counts_in_file() -> dict[str, int]:
    """Firedrake cases per structured template, read from the raw JSON lines."""
    counts: collections.Counter[str] = collections.Counter()
    for line in DATASET.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            domain = record["case_spec"]["domain"]["type"]
            if "firedrake" in record["supported_libraries"] and domain in STRUCTURED_MESHES:
                counts[domain] += 1
    return dict(counts)


def _view(family: str, domain: str, *, pressure: bool | None = None, both_periodic=False):
    """The agent view of the first Firedrake case of ``family`` on ``domain`` (with or
    without a scored pressure; with both directions periodic)."""
    for case in firedrake_cases():
        view = agent_view(case, "firedrake")
        spec = view["case_spec"]
        if spec["pde"]["type"] != family or spec["domain"]["type"] != domain:
            continue
        if pressure is not None and bool(spec["output"].get("pressure")) != pressure:
            continue
        if both_periodic and len(spec["bc"].get("periodic") or []) != 2:
            continue
        return view
    raise LookupError(f"no Firedrake case of {family} on {domain}")


def _resolution(rung: dict[str, Any]) -> int:
    [key] = [k for k in RESOLUTION_KEYS if k in rung]
    return int(rung[key])


# ---------------------------------------------------------------------- harness side


def test_no_rung_of_any_ladder_puts_its_nodes_on_the_evaluation_grid():
    visited: collections.Counter[str] = collections.Counter()
    rungs_checked: collections.Counter[str] = collections.Counter()
    worst = 0.0
    for case in firedrake_cases():
        view = agent_view(case, "firedrake")
        spec = view["case_spec"]
        domain = spec["domain"]["type"]
        structured = domain in STRUCTURED_MESHES
        visited[domain if structured else "gmsh"] += 1
        for chain in ladder(view):
            resolutions = [_resolution(rung) for rung in chain]
            assert all(a < b for a, b in itertools.pairwise(resolutions)), (case.id, chain)
            for rung in chain:
                lattices = node_lattices(view, rung)
                if not structured:
                    assert lattices is None, (case.id, rung)
                    continue
                assert lattices, (case.id, rung)
                assert all(len(ls) == len(STRUCTURED_MESHES[domain]) for ls in lattices)
                assert not is_grid_aligned(spec["eval_grid"], lattices), (case.id, rung, lattices)
                worst = max(worst, *(aligned_fraction(spec["eval_grid"], ls) for ls in lattices))
                rungs_checked[domain] += 1
    print(f"\nstructured cases {dict(visited)}, rungs {dict(rungs_checked)}, worst {worst:.3f}")
    # not vacuous: every structured Firedrake case of the file was visited, with rungs
    expected = structured_counts_in_file()
    assert set(expected) == set(STRUCTURED_MESHES), expected
    assert {d: visited[d] for d in expected} == expected
    assert all(rungs_checked[d] >= 10 * expected[d] for d in expected), rungs_checked
    assert visited["gmsh"] > 0
    assert 0.0 < worst <= MAX_ALIGNED_FRACTION


def test_a_rung_with_p2_nodes_on_every_grid_point_is_aligned():
    view = _view("poisson", "unit_square")
    grid = view["case_spec"]["eval_grid"]
    assert (grid["nx"], grid["ny"], grid["bbox"]) == (65, 65, [0.0, 1.0, 0.0, 1.0])
    rung = {"resolution": 32, "degree": 2, "solver_parameters": None}
    lattices = node_lattices(view, rung)
    assert lattices == [[(0.0, 1.0, 64), (0.0, 1.0, 64)]]
    assert aligned_fraction(grid, lattices[0]) == 1.0
    assert is_grid_aligned(grid, lattices)
    # half of each axis on nodes (P2 on 48 cells: 96 intervals) is allowed
    assert not is_grid_aligned(grid, node_lattices(view, {**rung, "resolution": 48}))
    # the same mesh on the periodic square, and P2 on 12^3 cells of the unit cube
    periodic = _view("poisson", "periodic_square")
    assert is_grid_aligned(periodic["case_spec"]["eval_grid"], node_lattices(periodic, rung))
    cube = _view("poisson", "unit_cube")
    cube_lattices = node_lattices(cube, {"resolution": 12, "degree": 2})
    assert cube_lattices == [[(0.0, 1.0, 24)] * 3]
    assert is_grid_aligned(cube["case_spec"]["eval_grid"], cube_lattices)
    # Taylor-Hood: the scored pressure has a layout of its own; P3-P2 on 32 cells puts
    # the velocity on 26% of the grid, the P2 pressure on all of it
    stokes = _view("stokes", "unit_square", pressure=True)
    th = node_lattices(stokes, {"resolution": 32, "degree": 2})
    assert th == [[(0.0, 1.0, 96)] * 2, [(0.0, 1.0, 64)] * 2]
    assert is_grid_aligned(stokes["case_spec"]["eval_grid"], th)
    speed_only = _view("stokes", "unit_square", pressure=False)
    assert node_lattices(speed_only, {"resolution": 32, "degree": 2}) == [[(0.0, 1.0, 96)] * 2]
    # the 3-D keys: linear elasticity reads resolution_3d on the cube, poisson resolution
    elasticity = _view("linear_elasticity", "unit_cube")
    assert node_lattices(elasticity, {"resolution_3d": 8, "degree": 3}) == [[(0.0, 1.0, 24)] * 3]
    # gmsh templates have no lattice
    circle = _view("poisson", "circle")
    assert node_lattices(circle, rung) is None


def test_aligned_rungs_move_to_the_next_resolution_off_the_grid(monkeypatch):
    view = _view("poisson", "unit_square")
    grid = view["case_spec"]["eval_grid"]
    moved = ladder(view)
    monkeypatch.setattr(ladder_module, "_off_grid", lambda case, make, n: n)
    plain = ladder(view)
    changed = 0
    for before, after in zip(plain, moved, strict=True):
        assert len(before) == len(after)
        for old, new in zip(before, after, strict=True):
            if is_grid_aligned(grid, node_lattices(view, old)):
                assert new == {**old, "resolution": old["resolution"] + 1}, (old, new)
                changed += 1
            else:
                assert new == old
    assert changed > 0  # the sequence does hit the grid here (any degree on 128 cells)


def test_a_moved_transient_rung_takes_the_step_of_its_moved_resolution(monkeypatch):
    view = _view("heat", "unit_cube")
    spec = view["case_spec"]
    span = spec["pde"]["time"]["t_end"] - spec["pde"]["time"]["t0"]
    moved = ladder(view)
    monkeypatch.setattr(ladder_module, "_off_grid", lambda case, make, n: n)
    pairs = [
        (old, new)
        for before, after in zip(ladder(view), moved, strict=True)
        for old, new in zip(before, after, strict=True)
        if old != new
    ]
    assert pairs  # P3 on 8^3 cells: 24 intervals, every grid point a node
    for old, new in pairs:
        assert is_grid_aligned(spec["eval_grid"], node_lattices(view, old))
        assert new["resolution_3d"] == old["resolution_3d"] + 1
        rule = ladder_module._time_keys(
            ladder_module._Case(spec), new["degree"], new["resolution_3d"]
        )
        assert new["n_steps"] > old["n_steps"]
        assert {"dt": new["dt"], "n_steps": new["n_steps"]} == rule
        assert new["dt"] * new["n_steps"] == pytest.approx(span)


# ------------------------------------------------------------------ in the runtime

DRIVER = '''

# ---- grid-alignment probe (test_firedrake_grid_alignment) ----------------------
import itertools as _itertools
import json as _json
import os as _os
import sys as _sys

_PROBE = {}
_probe_build_domain = build_domain


def build_domain(*args, **kwargs):  # noqa: F811  (records the mesh the solver builds)
    domain = _probe_build_domain(*args, **kwargs)
    _PROBE["domain"] = domain
    return domain


_probe_values = GridSampler.values


def _probe_sampled(self, function):  # records every Function the solver samples
    _PROBE.setdefault("sampled", []).append(function)
    return _probe_values(self, function)


GridSampler.values = _probe_sampled


def _probe_share(function, domain, eval_grid):
    """Share of the grid's points that are dof coordinates of ``function``'s space (a
    periodic axis' ends are one point: a node at 0 is also the grid point at 1)."""
    space = function.function_space()
    msh = space.mesh()
    element = space.ufl_element()
    base = element.sub_elements[0] if element.sub_elements else element  # vector: P_k^d
    X = fd.Function(fd.VectorFunctionSpace(msh, base))
    X.interpolate(fd.SpatialCoordinate(msh))
    coords = np.asarray(X.dat.data_ro).reshape(-1, msh.geometric_dimension)
    axes = grid_axes(eval_grid)
    periodic = {"xyz".index(a) for a in domain.periodic_axes}
    ok = np.ones(len(coords), dtype=bool)
    index = []
    for a, ax in enumerate(axes):
        step = (ax[-1] - ax[0]) / (len(ax) - 1)
        j = np.rint((coords[:, a] - ax[0]) / step)
        ok &= (np.abs(coords[:, a] - (ax[0] + j * step)) < 1e-9) & (j >= 0) & (j < len(ax))
        index.append(j.astype(int))
    hits = set()
    for row in np.array(index).T[ok]:
        images = []
        for a, j in enumerate(int(v) for v in row):
            last = len(axes[a]) - 1
            images.append({0, last} if a in periodic and j in (0, last) else {j})
        hits.update(_itertools.product(*images))
    total = int(np.prod([len(ax) for ax in axes]))
    return {
        "degree": int(base.degree()),
        "family": base.family(),
        "variant": base.variant(),
        "share": len(hits) / total,
    }


if __name__ == "__main__":
    _job = _json.loads(open(_sys.argv[1], encoding="utf-8").read())
    _out = []
    for _i, _rung in enumerate(_job["rungs"]):
        _dir = _os.path.join(_job["workdir"], f"rung{_i}")
        _os.makedirs(_dir, exist_ok=True)
        _os.chdir(_dir)
        _PROBE.clear()
        solve(_job["case_spec"], _rung)
        _domain = _PROBE["domain"]
        _vertices = np.asarray(_domain.msh.coordinates.dat.data_ro)
        _out.append({
            "cells": int(_domain.msh.num_cells()),
            "lo": _vertices.min(axis=0).tolist(),
            "hi": _vertices.max(axis=0).tolist(),
            "periodic_axes": list(_domain.periodic_axes),
            "fields": [_probe_share(f, _domain, _job["case_spec"]["eval_grid"])
                       for f in _PROBE["sampled"]],
        })
    with open(_job["result"], "w", encoding="utf-8") as _fh:
        _json.dump(_out, _fh)
'''


def _probe(family: str, spec: dict[str, Any], rungs: list[dict[str, Any]], tmp_path: Path):
    """Run the bundled family solver on each rung in the Firedrake runtime and return,
    per rung, the mesh's cell count and, per sampled Function, its element and the share
    of the grid that its dof coordinates cover."""
    import firedrake_harness as H
    from pdeagent_firedrake import environment

    record = H.firedrake_record()
    program = tmp_path / f"probe_{family}.py"
    program.write_text(bundle(family, {}) + DRIVER, encoding="utf-8")
    job = tmp_path / f"job_{family}.json"
    result = tmp_path / f"result_{family}.json"
    job.write_text(json.dumps({"case_spec": spec, "rungs": rungs, "workdir": str(tmp_path),
                               "result": str(result)}))  # fmt: skip
    proc = subprocess.run(
        [record["python"], str(program), str(job)], cwd=tmp_path, capture_output=True,
        text=True, timeout=1800, env=environment.runtime_env(record),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(result.read_text())


def _cells_per_axis(cells: int, dim: int) -> int:
    """n of a structured n^d mesh of ``cells`` simplices (2 per square, 6 per cube)."""
    n = round((cells / (2 if dim == 2 else 6)) ** (1.0 / dim))
    assert (2 if dim == 2 else 6) * n**dim == cells, cells
    return n


PROBES = [  # (family, domain, case filter, chain degrees whose first rungs run)
    ("poisson", "unit_square", {}, {2: 2, 3: 2, 4: 1}),
    ("poisson", "periodic_square", {}, {2: 2, 3: 1}),
    ("helmholtz", "periodic_square", {"both_periodic": True}, {2: 1, 3: 1}),
    ("poisson", "unit_cube", {}, {2: 1, 3: 1}),
    ("stokes", "unit_square", {"pressure": True}, {1: 2, 2: 1}),
]
ALIGNED = {  # a rung the lattices call fully aligned, per probe
    "unit_square": {"resolution": 32, "degree": 2},
    "periodic_square": {"resolution": 32, "degree": 2},
    "unit_cube": {"resolution": 12, "degree": 2},
}


@pytest.mark.firedrake
@pytest.mark.parametrize(("family", "domain", "which", "degrees"), PROBES,
                         ids=[f"{f}-{d}" for f, d, _, _ in PROBES])  # fmt: skip
def test_the_actual_dofs_cover_no_more_of_the_grid_than_the_lattices_say(
    family, domain, which, degrees, tmp_path
):
    view = _view(family, domain, **which)
    spec = view["case_spec"]
    grid = spec["eval_grid"]
    dim = len(STRUCTURED_MESHES[domain])
    rungs = []
    for chain in ladder(view):
        rungs.extend(chain[: degrees.get(chain[0]["degree"], 0)])
    aligned = {**rungs[0], **ALIGNED[domain]}
    if family == "stokes":  # Taylor-Hood P2-P1: the velocity on every grid point
        aligned = {**rungs[0], "resolution": 32, "degree": 1}
    rungs.append(aligned)
    records = _probe(family, spec, rungs, tmp_path)
    lines = []
    for rung, rec in zip(rungs, records, strict=True):
        n = _cells_per_axis(rec["cells"], dim)
        lattices = node_lattices(view, rung)
        assert lattices is not None
        fields = rec["fields"]
        assert all(f["family"] == "Lagrange" for f in fields), fields
        for lattice_set in lattices:  # the mesh spans the lattice's extent exactly
            assert rec["lo"] == pytest.approx([lo for lo, _, _ in lattice_set], abs=1e-12)
            assert rec["hi"] == pytest.approx([hi for _, hi, _ in lattice_set], abs=1e-12)
            claimed = aligned_fraction(grid, lattice_set)
            scored = [f for f in fields if f["degree"] * n == lattice_set[0][2]]
            assert scored, (rung, lattice_set, fields)  # the lattice is the mesh's
            for field in scored:
                assert field["share"] <= claimed + 1e-12, (rung, field, claimed)
                lines.append(f"{rung} P{field['degree']}: actual {field['share']:.4f} "
                             f"<= lattice {claimed:.4f}")  # fmt: skip
        if rung is aligned:
            top = lattices[0]
            assert aligned_fraction(grid, top) == 1.0
            [velocity_or_u] = [f for f in fields if f["degree"] * n == top[0][2]][:1]
            assert velocity_or_u["share"] == 1.0, velocity_or_u
        else:
            assert not is_grid_aligned(grid, lattices)
    print(f"\n{family} on {domain} (periodic {records[0]['periodic_axes']}):\n  "
          + "\n  ".join(lines))  # fmt: skip
