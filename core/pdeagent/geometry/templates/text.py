"""Number formatting and the markdown builder of :meth:`Geometry.definition`."""

from __future__ import annotations

from typing import Any

import numpy as np

from pdeagent.geometry.base import Geometry


def _fmt(v: float) -> str:
    return f"{float(v):.6g}"


def _pt(p: Any) -> str:
    return "(" + ", ".join(_fmt(c) for c in p) + ")"


def _val(v: Any) -> str:
    """A parameter value as the case JSON writes it: ints as they are, floats by their
    shortest round-trip repr, sequences in brackets."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        return repr(float(v))
    if isinstance(v, list | tuple | np.ndarray):
        return "[" + ", ".join(_val(e) for e in v) + "]"
    return str(v)


def _g(v: float, scale: float = 1.0) -> str:
    """A derived number to 12 significant digits (rounding noise below 1e-13 of
    ``scale`` prints as 0)."""
    v = float(v)
    if abs(v) <= 1e-13 * max(abs(scale), 1.0):
        v = 0.0
    return f"{v:.12g}"


def _gpt(p: Any, scale: float = 1.0) -> str:
    return "(" + ", ".join(_g(c, scale) for c in p) + ")"


def _definition_text(
    geometry: Geometry,
    set_lines: list[str],
    tags: dict[str, str],
    notes: tuple[str, ...] = (),
) -> str:
    """The markdown of :meth:`Geometry.definition`: parameters, set, notes, boundary tags."""
    if geometry.params:
        plist = ", ".join(f"`{k} = {_val(v)}`" for k, v in geometry.params.items())
        params = f"- Parameters (`domain.geometry_params`, defaults filled in): {plist}."
    else:
        params = "- Parameters: none (this template has no `geometry_params`)."
    if set(tags) != set(geometry.boundary_tags):
        raise RuntimeError(
            f"{geometry.name}: definition() describes the tags {sorted(tags)}, but the "
            f"template's boundary_tags are {sorted(geometry.boundary_tags)}"
        )
    lines = [
        f"Template `{geometry.name}`. Omega is the closed set below: points on its boundary "
        "belong to Omega.",
        params,
        *(f"- {line}" for line in set_lines),
        *(f"- {note}" for note in notes),
        "- Boundary tags (the names `bc` uses; `all` means the whole boundary): "
        + "; ".join(f"`{tag}` = {tags[tag]}" for tag in geometry.boundary_tags)
        + ".",
    ]
    return "\n".join(lines)
