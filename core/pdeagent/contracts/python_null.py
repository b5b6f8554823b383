"""The null program of a Python track (SPEC §7): load the library, solve nothing.

It follows the Python contract exactly like a submission (``solve(case_spec)`` writes
``solution.npz`` and ``meta.json``), imports what a solver of the track imports, goes
through what every solver of the track must do to write an artifact with the library
(``sample``: e.g. a coarse mesh of the unit box and the library's point evaluation of a
zero field at the grid points, scaled into the box, with whatever kernels that compiles)
and writes zeros of the right names and shapes on the evaluation grid. Its median time
under the submission protocol is ``t_null``: the start-up cost (interpreter, imports,
shared libraries, the library's own sampling machinery, artifact writing) the solve time
rule leaves out of the budget; everything problem-specific (the forms and their
compilation, the solve) stays in it.
"""

from __future__ import annotations

from collections.abc import Sequence

_TEMPLATE = '''\
"""pdeagent null program ({library}): loads the library, writes zeros, solves nothing."""

import json
import time

import numpy as np

{imports}


def _unit_box_points(grid):
    """The evaluation grid's points scaled into the unit square / cube, shape (N, 3)."""
    axes = [np.linspace(0.05, 0.95, grid["nx"]), np.linspace(0.05, 0.95, grid["ny"])]
    if grid.get("nz"):
        axes.append(np.linspace(0.05, 0.95, grid["nz"]))
    mesh = np.meshgrid(*axes[::-1], indexing="ij")[::-1]
    points = np.zeros((mesh[0].size, 3))
    for k, coord in enumerate(mesh):
        points[:, k] = coord.ravel()
    return points


def _sample(grid):
{sample}


def solve(case_spec):
    started = time.perf_counter()
    grid = case_spec["eval_grid"]
    _sample(grid)
    bbox = grid["bbox"]
    axes = {{
        "x": np.linspace(bbox[0], bbox[1], grid["nx"]),
        "y": np.linspace(bbox[2], bbox[3], grid["ny"]),
    }}
    shape = (grid["ny"], grid["nx"])
    if grid.get("nz"):
        axes["z"] = np.linspace(bbox[4], bbox[5], grid["nz"])
        shape = (grid["nz"], *shape)
    output = case_spec["output"]
    names = list(output.get("components") or [output["field"]])
    if output.get("pressure"):
        names.append(output["pressure"]["array"])
    np.savez("solution.npz", **axes, **{{name: np.zeros(shape) for name in names}})
    meta = {{
        "wall_time_sec": time.perf_counter() - started,
        "status": "ok",
        "solver_info": {{"null_program": True}},
    }}
    with open("meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
'''


def null_source(library: str, imports: Sequence[str], sample: str = "") -> str:
    """The null program of a track whose solvers use ``library``; ``imports`` are the
    import statements a solver of the track runs (e.g. ``"import dolfinx.fem.petsc"``),
    ``sample`` the body of ``_sample(grid)`` (4-space indented): the library's own way of
    sampling a field at the grid points (``_unit_box_points(grid)`` gives them inside the
    unit box); empty for a track without a library (nothing to sample with)."""
    for line in imports:
        if not (line.startswith("import ") or line.startswith("from ")) or "\n" in line:
            raise ValueError(f"not one import statement: {line!r}")
    body = sample.rstrip() or "    return None"
    if any(line and not line.startswith("    ") for line in body.splitlines()):
        raise ValueError("sample must be a 4-space indented function body")
    return _TEMPLATE.format(
        library=library, imports="\n".join(imports) or "# no library", sample=body
    )
