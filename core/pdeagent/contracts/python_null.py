"""The null program of a Python track (SPEC §7): load the library, solve nothing.

It follows the Python contract exactly like a submission (``solve(case_spec)`` writes
``solution.npz`` and ``meta.json``), imports what a solver of the track imports, and
writes zeros of the right names and shapes on the evaluation grid. Its median time under
the submission protocol is ``t_null``: the start-up cost (interpreter, imports, shared
libraries, artifact writing) the solve time rule leaves out of the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

_TEMPLATE = '''\
"""pdeagent null program ({library}): loads the library, writes zeros, solves nothing."""

import json
import time

import numpy as np

{imports}


def solve(case_spec):
    started = time.perf_counter()
    grid = case_spec["eval_grid"]
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
    names = output.get("components") or [output["field"]]
    np.savez("solution.npz", **axes, **{{name: np.zeros(shape) for name in names}})
    meta = {{
        "wall_time_sec": time.perf_counter() - started,
        "status": "ok",
        "solver_info": {{"null_program": True}},
    }}
    with open("meta.json", "w", encoding="utf-8") as fh:
        json.dump(meta, fh)
'''


def null_source(library: str, imports: Sequence[str]) -> str:
    """The null program of a track whose solvers use ``library``; ``imports`` are the
    import statements a solver of the track runs (e.g. ``"import dolfinx.fem.petsc"``)."""
    for line in imports:
        if not (line.startswith("import ") or line.startswith("from ")) or "\n" in line:
            raise ValueError(f"not one import statement: {line!r}")
    return _TEMPLATE.format(library=library, imports="\n".join(imports) or "# no library")
