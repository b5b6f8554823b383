"""Numerical checks of a converted case: consistency, forcing difference, leak errors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy as sp

from pdeagent.cases.expressions import (
    SYMBOLS,
    compile_expression,
    is_parameter_name,
    parse_expression,
)
from pdeagent.cases.model import Case, ExprOrVector
from pdeagent.cases.upstream.conditions import _IC_FIELD
from pdeagent.cases.upstream.limits import CHECK_POINTS, CONSISTENCY_RTOL, FORCING_RTOL
from pdeagent.cases.upstream.reading import _Skip
from pdeagent.cases.validate import PRIMARY_QUANTITIES
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import Geometry, grid_points
from pdeagent.scoring.metrics import relative_l2


def _numeric_params(case: Case) -> dict[str, float]:
    return {
        k: v
        for k, v in case.case_spec.pde.params.items()
        if is_parameter_name(k) and isinstance(v, int | float) and not isinstance(v, bool)
    }


def _sample(
    value: ExprOrVector, case: Case, points: Sequence[np.ndarray], t: float
) -> dict[str, np.ndarray] | None:
    """Arrays named like the case's scored outputs, or None if the value has another shape."""
    output = case.case_spec.output
    dim = case.case_spec.eval_grid.dim
    params = _numeric_params(case)
    if output.components:
        if not isinstance(value, list) or len(value) != len(output.components):
            return None
        return {
            name: compile_expression(v, dim, parameters=params)(*points, t=t)
            for name, v in zip(output.components, value, strict=True)
        }
    if not isinstance(value, str):
        return None
    return {output.field: compile_expression(value, dim, parameters=params)(*points, t=t)}


def _times(case: Case) -> list[float]:
    time = case.case_spec.pde.time
    if time is None:
        return [0.0]
    return [time.t0, 0.5 * (time.t0 + time.t_end), time.t_end]


def _covers(boundary: list[str], geometry: Geometry) -> bool:
    return "all" in boundary or set(geometry.boundary_tags) <= set(boundary)


def _leak_errors(case: Case, geometry: Geometry, scored: np.ndarray) -> dict[str, float]:
    """Relative L2 error of each cheat: the Dirichlet expression (t_end), the initial field."""
    spec = case.case_spec
    truth = reference_fields(case)
    points = grid_points(spec.eval_grid)
    t0 = spec.pde.time.t0 if spec.pde.time else 0.0
    t_end = spec.pde.time.t_end if spec.pde.time else 0.0
    candidates: list[tuple[str, ExprOrVector, float]] = []
    for cond in spec.bc.dirichlet:
        if cond.quantity in PRIMARY_QUANTITIES and _covers(cond.boundary, geometry):
            candidates.append(("dirichlet", cond.value, t_end))
            break
    ic = spec.ic or {}
    name = _IC_FIELD.get(case.family, "u")
    if name in ic:
        candidates.append(("initial_condition", ic[name], t0))
    errors = {}
    for kind, value, t in candidates:
        cheat = _sample(value, case, points, t)
        if cheat is not None:
            errors[kind] = relative_l2(cheat, truth, scored)
    return errors


def _boundary_points(geometry: Geometry, n: int = 65) -> tuple[np.ndarray, ...] | None:
    s = np.linspace(0.0, 1.0, n)
    if geometry.name == "unit_cube":
        a, b = (m.ravel() for m in np.meshgrid(s[::4], s[::4]))
        zero, one = np.zeros_like(a), np.ones_like(a)
        faces = [(zero, a, b), (one, a, b), (a, zero, b), (a, one, b), (a, b, zero), (a, b, one)]
        return tuple(np.concatenate(c) for c in zip(*faces, strict=True))
    pieces = getattr(geometry, "pieces", None)
    if pieces is None:
        return None
    xs, ys = [], []
    for _tag, kind, data in pieces():
        if kind == "seg":
            (ax, ay), (bx, by) = data
            xs.append(ax + s * (bx - ax))
            ys.append(ay + s * (by - ay))
        else:
            (cx, cy), r, theta0, span = data
            theta = theta0 + s * span
            xs.append(cx + r * np.cos(theta))
            ys.append(cy + r * np.sin(theta))
    return np.concatenate(xs), np.concatenate(ys)


def _max_rel_diff(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """max |a - b| / max(|a|, |b|) over all arrays (NaN or inf -> inf)."""
    scale = max(float(np.max(np.abs(v))) for v in (*a.values(), *b.values()))
    scale = max(scale, 1e-12) if math.isfinite(scale) else math.inf
    diff = max(float(np.max(np.abs(a[k] - b[k]))) for k in b)
    return diff / scale if math.isfinite(diff) else math.inf


def _check_consistency(
    case: Case, geometry: Geometry, inner: Sequence[np.ndarray], exact: dict[str, Any]
) -> None:
    """Boundary and initial data of a manufactured case must agree with the solution."""
    spec = case.case_spec
    truth_expr = exact["u"]
    boundary = _boundary_points(geometry)
    tag_of = getattr(geometry, "boundary_tag_of", None)
    if boundary is not None and tag_of is not None:
        tags = np.asarray(tag_of(*boundary))
        for cond in spec.bc.dirichlet:
            if cond.quantity not in PRIMARY_QUANTITIES:
                continue
            if "all" in cond.boundary:
                sel = np.ones(tags.shape, dtype=bool)
            else:
                sel = np.isin(tags, cond.boundary)
            if not sel.any():
                continue
            pts = [p[sel] for p in boundary]
            for t in _times(case):
                given = _sample(cond.value, case, pts, t)
                want = _sample(truth_expr, case, pts, t)
                if given is None or want is None:
                    raise _Skip("Dirichlet data do not have the shape of the solution")
                rel = _max_rel_diff(given, want)
                if not rel <= CONSISTENCY_RTOL:
                    raise _Skip(
                        f"Dirichlet data on {', '.join(cond.boundary)} differ from the "
                        f"manufactured solution on the boundary (relative {rel:.3g} at t={t:g})"
                    )
    if spec.ic and spec.pde.time is not None:
        t0 = spec.pde.time.t0
        name = _IC_FIELD.get(case.family, "u")
        checks = [(name, truth_expr)]
        if "u_t" in spec.ic:
            checks.append(("u_t", str(sp.diff(parse_expression(truth_expr), SYMBOLS["t"]))))
        for key, want_expr in checks:
            given = _sample(spec.ic[key], case, inner, t0)
            want = _sample(want_expr, case, inner, t0)
            if given is None or want is None:
                raise _Skip(f"initial field {key!r} does not have the shape of the solution")
            rel = _max_rel_diff(given, want)
            if not rel <= CONSISTENCY_RTOL:
                raise _Skip(
                    f"initial field {key!r} differs from the manufactured solution at t0 "
                    f"(relative {rel:.3g})"
                )


def _forcing_difference(
    case: Case, inner: Sequence[np.ndarray], upstream: ExprOrVector
) -> float | None:
    """Relative max difference of our forcing and the upstream one (None: no difference)."""
    ours = case.case_spec.pde.forcing["f"]
    worst = 0.0
    for t in _times(case):
        a = _sample(ours, case, inner, t)
        b = _sample(upstream, case, inner, t)
        if a is None or b is None:
            return math.inf
        worst = max(worst, _max_rel_diff(b, a))
    return worst if not worst <= FORCING_RTOL else None


def _inner_points(
    case: Case, scored: np.ndarray, limit: int = CHECK_POINTS
) -> tuple[np.ndarray, ...]:
    points = grid_points(case.case_spec.eval_grid)
    flat = [p[scored] for p in points]
    step = max(1, math.ceil(flat[0].size / limit))
    return tuple(p[::step] for p in flat)
