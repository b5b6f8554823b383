"""The "cheat" submission of SPEC §4, as arithmetic: sample the case's own data on the grid.

A cheat does not solve anything: it evaluates a Dirichlet expression of the primary
unknown (at ``t_end`` for transient cases) or an initial condition on the evaluation
grid and hands that in. :func:`cheat_errors` gives the relative L2 error each such
guess would score on the grid's scored points; a case is leak-free when every one of
them fails the accuracy gate (error > tau_acc of every track).

The data give the field (a flow case's velocity), never the pressure, so a guess is
scored on the field's group only (:func:`pdeagent.scoring.metrics.case_error` of the
output without its pressure): a leaked velocity is a leak even when the pressure is
scored too, since the momentum equation then gives the pressure without solving a PDE.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import evolve

from pdeagent.cases.expressions import compile_expression
from pdeagent.cases.model import Case
from pdeagent.cases.validate import PRIMARY_QUANTITIES
from pdeagent.geometry import evaluation_mask, get_geometry, grid_points
from pdeagent.scoring.metrics import case_error


def _guess(case: Case, value: Any, t: float, points: list[np.ndarray]) -> dict[str, np.ndarray]:
    spec = case.case_spec
    grid = spec.eval_grid
    params = spec.pde.params

    def ev(text: str) -> np.ndarray:
        fn = compile_expression(text, grid.dim, parameters=params)
        return np.broadcast_to(np.asarray(fn(*points, t=t), dtype=np.float64), grid.shape)

    output = spec.output
    if isinstance(value, str):
        return {name: ev(value) for name in output.field_arrays}
    parts = [ev(v) for v in value]
    if output.components:
        return dict(zip(output.components, parts, strict=False))
    return {output.field: np.sqrt(sum(p**2 for p in parts))}


def cheat_errors(case: Case, reference: dict[str, np.ndarray]) -> dict[str, float]:
    """Relative L2 error of every data-sampling cheat, keyed by the data's field path."""
    spec = case.case_spec
    mask = evaluation_mask(
        spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
    ).scored
    points = grid_points(spec.eval_grid)
    field_output = evolve(spec.output, pressure=None)
    field_reference = {name: reference[name] for name in field_output.arrays}

    def error(guess: dict[str, np.ndarray]) -> float:
        return float(case_error(guess, field_reference, mask, field_output))

    t_end = spec.pde.time.t_end if spec.pde.time is not None else 0.0
    t0 = spec.pde.time.t0 if spec.pde.time is not None else 0.0
    out: dict[str, float] = {}
    for i, cond in enumerate(spec.bc.dirichlet):
        if cond.quantity in PRIMARY_QUANTITIES:
            guess = _guess(case, cond.value, t_end, points)
            out[f"bc.dirichlet[{i}]"] = error(guess)
    for name, value in (spec.ic or {}).items():
        if name in ("u", "velocity"):
            guess = _guess(case, value, t0, points)
            out[f"ic.{name}"] = error(guess)
    return out
