"""Where the scored fields of a calibration solve have their nodes on the evaluation grid.

Runtime side of ``tests/test_dolfinx_grid_alignment.py`` (the harness runs it with the
DOLFINx runtime's interpreter; not a test file itself):

    python grid_nodes_probe.py jobs.json out.json

``jobs.json`` is a list of ``{"family", "case_spec", "settings"}``. Each job runs the
family's calibration solver from this source tree, ``solve(case_spec, settings)``, in
the current directory (it writes solution.npz there), with ``GridSampler.values`` --
the one way every solver samples a field on the grid -- recording the function space of
each field it samples. ``out.json`` gets per job the mesh (vertex range and distinct
vertex coordinates per axis) and per sampled space its Lagrange degree and the grid
points (index tuples, x index first) that are dof coordinates of the space.
"""

import importlib
import json
import sys
from pathlib import Path

import numpy as np
from mpi4py import MPI  # noqa: F401  (before dolfinx)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pdeagent_dolfinx"))
from solvers import _common

TOL = 1e-10
"""A dof coordinate within this distance (per axis, on [0, 1]) is on a grid point."""


def _grid_hits(space, eval_grid):
    """Sorted index tuples of the grid points that are dof coordinates of ``space``."""
    axes = _common.grid_axes(eval_grid)
    dim = len(axes)
    coords = space.tabulate_dof_coordinates()[:, :dim]
    on_grid = np.ones(len(coords), dtype=bool)
    index = np.zeros((len(coords), dim), dtype=np.int64)
    for k, axis in enumerate(axes):
        axis = np.asarray(axis, dtype=float)
        j = np.clip(np.searchsorted(axis, coords[:, k]), 0, len(axis) - 1)
        below = np.clip(j - 1, 0, len(axis) - 1)
        nearest = np.where(
            np.abs(axis[below] - coords[:, k]) < np.abs(axis[j] - coords[:, k]), below, j
        )
        on_grid &= np.abs(axis[nearest] - coords[:, k]) <= TOL
        index[:, k] = nearest
    return sorted({tuple(int(i) for i in row) for row in index[on_grid]})


def _mesh_info(msh):
    x = msh.geometry.x[:, : msh.geometry.dim]
    return {
        "lo": [float(v) for v in x.min(axis=0)],
        "hi": [float(v) for v in x.max(axis=0)],
        "vertices_per_axis": [len(np.unique(np.round(x[:, k], 12))) for k in range(x.shape[1])],
    }


def run(job):
    sampled = []
    original = _common.GridSampler.values

    def values(self, function):
        sampled.append(function.function_space)
        return original(self, function)

    _common.GridSampler.values = values
    try:
        module = importlib.import_module(f"solvers.{job['family']}")
        module.solve(job["case_spec"], job["settings"])
    finally:
        _common.GridSampler.values = original
    if not sampled:
        raise RuntimeError(f"{job['family']}: the solver sampled no field")
    return {
        "mesh": _mesh_info(sampled[0].mesh),
        "spaces": [
            {
                "degree": int(space.ufl_element().embedded_superdegree),
                "hits": _grid_hits(space, job["case_spec"]["eval_grid"]),
            }
            for space in sampled
        ],
    }


def main(jobs_path, out_path):
    jobs = json.loads(Path(jobs_path).read_text())
    Path(out_path).write_text(json.dumps([run(job) for job in jobs]))


if __name__ == "__main__":
    main(*sys.argv[1:3])
