"""Checked reading of template parameters (errors name the template and the key)."""

from __future__ import annotations

import math
from typing import Any

from pdeagent.geometry.base import GeometryError


def _point(params: dict[str, Any], template: str, key: str) -> tuple[float, float]:
    value = params[key]
    try:
        px, py = (float(v) for v in value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a pair of numbers, got {value!r}") from exc
    if not (math.isfinite(px) and math.isfinite(py)):
        raise GeometryError(f"{template}: {key} must be finite, got {value!r}")
    return px, py


def _positive(params: dict[str, Any], template: str, key: str) -> float:
    value = params[key]
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a number, got {value!r}") from exc
    if not (math.isfinite(v) and v > 0.0):
        raise GeometryError(f"{template}: {key} must be a positive number, got {value!r}")
    return v


def _number(params: dict[str, Any], template: str, key: str) -> float:
    value = params[key]
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GeometryError(f"{template}: {key} must be a number, got {value!r}") from exc
    if not math.isfinite(v):
        raise GeometryError(f"{template}: {key} must be finite, got {value!r}")
    return v
