"""Reference fields u_GT on the evaluation grid (evaluator side only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import Case
from pdeagent.geometry import grid_points


class ReferenceUnavailable(RuntimeError):
    """The case's reference cannot be produced (dataset problem, not a verdict)."""


def reference_file(case: Case, dataset_dir: Path) -> Path | None:
    """Where a no-exact case's reference arrays are: ``evaluation_metadata.reference_path``
    relative to the dataset file's directory; None when the case names none."""
    relative = case.evaluation_metadata.reference_path
    return (dataset_dir / relative).resolve() if relative else None


def reference_fields(case: Case, dataset_dir: Path | None = None) -> dict[str, np.ndarray]:
    """One array per scored output name (:attr:`OutputSpec.arrays`: the field's arrays and
    a flow case's pressure), on the case's grid.

    Manufactured-solution cases evaluate the exact solution at the final time
    (``t_end`` for transient cases); no-exact cases load the stored high-fidelity
    reference arrays (``evaluation_metadata.reference_path``, relative to
    ``dataset_dir``).
    """
    spec = case.case_spec
    grid = spec.eval_grid
    names = spec.output.arrays
    meta = case.evaluation_metadata
    if meta.construction_method == "manufactured_solution":
        exprs = meta.manufactured_solution or {}
        missing = [n for n in names if n not in exprs]
        if missing:
            raise ReferenceUnavailable(f"case {case.id}: no manufactured solution for {missing}")
        t = spec.pde.time.t_end if spec.pde.time is not None else 0.0
        points = grid_points(grid)
        out = {}
        for name in names:
            fn = compile_expression(exprs[name], grid.dim, parameters=spec.pde.params)
            values = np.asarray(fn(*points, t=t), dtype=np.float64)
            out[name] = np.broadcast_to(values, grid.shape).copy()
        return out
    if meta.reference_path is None:
        raise ReferenceUnavailable(
            f"case {case.id}: reference_numerical case without reference_path"
        )
    if dataset_dir is None:
        raise ReferenceUnavailable(
            f"case {case.id}: the dataset directory is needed for its reference"
        )
    path = reference_file(case, dataset_dir)
    if path is None or not path.is_file():
        raise ReferenceUnavailable(f"case {case.id}: reference file {path} not found")
    with np.load(path, allow_pickle=False) as data:
        out = {}
        for name in names:
            if name not in data.files:
                raise ReferenceUnavailable(f"case {case.id}: reference {path} lacks {name!r}")
            arr = np.asarray(data[name], dtype=np.float64)
            if arr.shape != grid.shape:
                raise ReferenceUnavailable(
                    f"case {case.id}: reference {name!r} has shape {arr.shape}, grid {grid.shape}"
                )
            out[name] = arr
    return out
