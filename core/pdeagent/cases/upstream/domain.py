"""Mapping of the shape an upstream oracle meshes onto one of our geometry templates."""

from __future__ import annotations

import math
from typing import Any

from pdeagent.cases.upstream.reading import _dict, _number, _point, _short, _Skip


def _map_domain(domain: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """(our template, its geometry_params, notes) for the shape the upstream oracle meshes."""
    kind = domain.get("type")
    if not isinstance(kind, str):
        raise _Skip("oracle_config.domain.type is missing")
    p = _dict(domain.get("geometry_params"), "oracle_config.domain.geometry_params")
    where = "oracle_config.domain.geometry_params"
    if kind in ("unit_square", "unit_cube"):
        return kind, {}, []
    if kind == "circle":
        return (
            "circle",
            {
                "center": _point(p.get("center", [0.5, 0.5]), f"{where}.center"),
                "radius": _number(p.get("radius", 0.5), f"{where}.radius"),
            },
            [],
        )
    if kind == "annulus":
        return (
            "annulus",
            {
                "center": _point(p.get("center", [0.0, 0.0]), f"{where}.center"),
                "r_inner": _number(p.get("inner_r", 0.5), f"{where}.inner_r"),
                "r_outer": _number(p.get("outer_r", 1.0), f"{where}.outer_r"),
            },
            [],
        )
    if kind == "eccentric_annulus":
        outer = _dict(p.get("outer_circle", {"c": [0, 0], "r": 1.0}), f"{where}.outer_circle")
        inner = _dict(p.get("inner_circle", {"c": [0.2, 0], "r": 0.4}), f"{where}.inner_circle")
        return (
            "eccentric_annulus",
            {
                "center_outer": _point(outer.get("c"), f"{where}.outer_circle.c"),
                "r_outer": _number(outer.get("r"), f"{where}.outer_circle.r"),
                "center_inner": _point(inner.get("c"), f"{where}.inner_circle.c"),
                "r_inner": _number(inner.get("r"), f"{where}.inner_circle.r"),
            },
            [],
        )
    if kind == "dumbbell":
        left = _point(p.get("left_center", [0.2, 0.5]), f"{where}.left_center")
        right = _point(p.get("right_center", [0.8, 0.5]), f"{where}.right_center")
        if left[1] != 0.5 or right[1] != 0.5:
            # The upstream oracle draws the bar at y = 0.5 whatever the centres are.
            raise _Skip("dumbbell with disk centres off y = 0.5 (the upstream bar stays at 0.5)")
        return (
            "dumbbell",
            {
                "center_left": left,
                "center_right": right,
                "radius": _number(p.get("radius", 0.2), f"{where}.radius"),
                "bar_width": _number(p.get("bar_width", 0.2), f"{where}.bar_width"),
            },
            [],
        )
    if kind == "l_shape":
        return "l_shape", {"corner": _l_corner(p.get("vertices"))}, []
    if kind == "square_with_hole":
        _unit_outer(p)
        hole = _dict(p.get("inner_hole"), f"{where}.inner_hole")
        if hole.get("type") != "circle":
            raise _Skip("square_with_hole with a non-circular hole has no matching template")
        return (
            "square_with_hole",
            {
                "center": _point(hole.get("center", [0.5, 0.5]), f"{where}.inner_hole.center"),
                "radius": _number(hole.get("radius", 0.2), f"{where}.inner_hole.radius"),
            },
            [],
        )
    if kind == "multi_hole":
        _unit_outer(p)
        holes = p.get("holes")
        if not isinstance(holes, list) or not holes:
            raise _Skip("multi_hole without holes has no matching template")
        out = []
        for i, h in enumerate(holes):
            h = _dict(h, f"{where}.holes[{i}]", required=True)
            c = _point(h.get("c", [0, 0]), f"{where}.holes[{i}].c")
            out.append([*c, _number(h.get("r", 0.1), f"{where}.holes[{i}].r")])
        return "multi_hole", {"holes": out}, []
    if kind == "t_junction":
        return "t_junction", _t_junction(p), []
    if kind == "sector":
        angle = _number(p.get("angle", 90), f"{where}.angle")
        return (
            "sector",
            {
                "center": _point(p.get("center", [0.0, 0.0]), f"{where}.center"),
                "radius": _number(p.get("radius", 1.0), f"{where}.radius"),
                "angle_start": 0.0,
                "angle_end": math.radians(angle),
            },
            [
                "the upstream oracle meshes the sector's arc as a 15-point polygon; imported as "
                "the exact circular sector"
            ],
        )
    if kind in ("star", "star_shape", "gear"):
        raise _Skip(
            f"upstream {kind!r} is a zig-zag polygon of alternating radii, not our {kind} "
            "template (no faithful mapping)"
        )
    if kind == "periodic_square":
        raise _Skip("periodic_square: the upstream record does not state the periodicity")
    raise _Skip(f"unknown upstream geometry {_short(kind)}")


def _unit_outer(p: dict[str, Any]) -> None:
    outer = p.get("outer", [0, 1, 0, 1])
    if outer != [0, 1, 0, 1]:
        raise _Skip(f"outer rectangle {_short(outer)} is not the unit square of our template")


def _l_corner(vertices: Any) -> list[float]:
    if vertices is None:
        return [0.5, 0.5]
    if not isinstance(vertices, list) or len(vertices) != 6:
        raise _Skip("l_shape vertices are not the unit square minus its upper-right corner")
    pts = [_point(v, "oracle_config.domain.geometry_params.vertices") for v in vertices]
    cx, cy = pts[3]
    want = [[0, 0], [1, 0], [1, cy], [cx, cy], [cx, 1], [0, 1]]
    if pts != want or not (0 < cx < 1 and 0 < cy < 1):
        raise _Skip("l_shape vertices are not the unit square minus its upper-right corner")
    return [cx, cy]


def _t_junction(p: dict[str, Any]) -> dict[str, Any]:
    where = "oracle_config.domain.geometry_params"
    bar = p.get("horizontal_rect", [0.0, 1.0, 0.4, 0.6])
    stem = p.get("vertical_rect", [0.4, 0.6, 0.0, 0.5])
    if not (isinstance(bar, list) and isinstance(stem, list) and len(bar) == len(stem) == 4):
        raise _Skip("t_junction rectangles must be [xmin, xmax, ymin, ymax]")
    bx0, bx1, by0, by1 = (_number(v, f"{where}.horizontal_rect") for v in bar)
    sx0, sx1, sy0, sy1 = (_number(v, f"{where}.vertical_rect") for v in stem)
    length = bx1 - bx0
    centred = math.isclose(sx0 + sx1, length, rel_tol=0, abs_tol=1e-12)
    if bx0 != 0 or sy0 != 0 or not centred or not by0 < sy1 <= by1 or not by0 > 0:
        raise _Skip("t_junction rectangles do not form our T (bar from x=0, centred stem from y=0)")
    return {
        "bar_length": length,
        "bar_height": by1 - by0,
        "stem_width": sx1 - sx0,
        "stem_length": by0,
    }
