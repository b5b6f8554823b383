"""Every domain template states its exact set definition in the prompt (issue #20).

Three checks:

* every prompt of the shipped dataset (every case, every installed track that
  supports it) contains the template's ``definition()`` at the end of section 3,
  with every geometry parameter written as ``name = value``;
* a point-membership function written here, only from what the definition text
  says (its parameter values are parsed back out of the text), agrees with the
  evaluator's ``inside`` on the evaluation grid of every dataset case and on
  non-standard instances of each template, away from the boundary;
* a prompt lint over all cases x tracks x modes: the prompt renders, has no
  unrendered jinja or None/nan placeholders and no evaluator-only data.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.io import load_cases
from pdeagent.cases.model import Case
from pdeagent.geometry import GEOMETRY_TEMPLATES, get_geometry, grid_points
from pdeagent.plugins import load_plugins
from pdeagent.prompts.builder import build_prompt

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "cases" / "pdeagent-v1.jsonl"
DOMAIN_HEADER = "Domain (the exact set Omega of `domain`):\n\n"
BOUNDARY_EPS = 1e-9
"""Points closer than this to the boundary are not compared (rounding decides them)."""

Arrays = tuple[np.ndarray, ...]


# --------------------------------------------------------------------------- data


@cache
def dataset() -> tuple[Case, ...]:
    if not DATASET.is_file():
        pytest.skip(f"{DATASET} not present")
    cases = tuple(load_cases(DATASET))
    assert len(cases) == 645, f"expected the 645 shipped cases, got {len(cases)}"
    return cases


@cache
def host() -> Any:
    return load_plugins()


def tracks_of(case: Case) -> list[str]:
    return [t for t in case.supported_libraries if t in host().tracks]


def domain_of(case: Case) -> tuple[str, dict[str, Any]]:
    domain = agent_view(case, case.supported_libraries[0])["case_spec"]["domain"]
    return domain["type"], dict(domain.get("geometry_params") or {})


@cache
def rendered(case_id: str, track_name: str, mode: str) -> tuple[str, tuple[str, ...]]:
    """(prompt, static track texts) for one case/track/mode; ("", ()) if the track has
    no scaffold for template mode."""
    case = next(c for c in dataset() if c.id == case_id)
    track = host().get_track(track_name)
    pieces = host().hook.pdeagent_prompt_pieces(
        track=track, case_view=agent_view(case, track_name), mode=mode
    )
    assert pieces is not None, f"no prompt pieces for track {track_name!r}"
    if mode == "template" and pieces.scaffold is None:
        return "", ()
    static = (pieces.contract, pieces.guide, pieces.scaffold or "", pieces.input_note or "")
    return build_prompt(case, track, pieces, mode=mode), tuple(t.strip() for t in static if t)


def test_dataset_has_every_template_and_tracks() -> None:
    types = {domain_of(c)[0] for c in dataset()}
    assert types == set(GEOMETRY_TEMPLATES)
    assert all(tracks_of(c) for c in dataset()), "a case with no installed track"


# --------------------------------------------------------------------------- the text


PARAM_RE = re.compile(r"`(\w+) = ([^`]+)`")


def stated_params(text: str) -> dict[str, Any]:
    """The ``name = value`` pairs of the definition's parameter line (values as JSON)."""
    line = next(ln for ln in text.splitlines() if ln.startswith("- Parameters"))
    return {k: json.loads(v) for k, v in PARAM_RE.findall(line)}


def json_value(value: Any) -> str:
    return json.dumps(value)


def leaves(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [x for v in value for x in leaves(v)]
    return [value]


@pytest.mark.parametrize("name", sorted(GEOMETRY_TEMPLATES))
def test_definition_states_parameters_and_tags(name: str) -> None:
    geometry = get_geometry(name)
    text = geometry.definition()
    assert "closed set" in text and "boundary belong to Omega" in text
    assert stated_params(text) == {k: json.loads(json.dumps(v)) for k, v in geometry.params.items()}
    tag_line = next(ln for ln in text.splitlines() if ln.startswith("- Boundary tags"))
    for tag in geometry.boundary_tags:
        assert f"`{tag}` = " in tag_line, f"{name}: tag {tag!r} not described"


def test_prompt_contains_the_definition_for_every_case_and_track() -> None:
    checked = 0
    for case in dataset():
        kind, params = domain_of(case)
        definition = get_geometry(kind, params).definition().strip()
        for track in tracks_of(case):
            prompt, _ = rendered(case.id, track, "single")
            block = DOMAIN_HEADER + definition + "\n\n## 4. Implementation contract"
            assert block in prompt, f"{case.id}/{track}: definition block missing or misplaced"
            section3 = prompt.index("## 3. Case specification")
            assert section3 < prompt.index(DOMAIN_HEADER), f"{case.id}/{track}"
            for key, value in params.items():
                assert f"`{key} = {json_value(value)}`" in definition, f"{case.id}: {key}"
                for leaf in leaves(value):
                    assert json_value(leaf) in definition, f"{case.id}: {key} value {leaf}"
            checked += 1
    assert checked >= len(dataset())


# --------------------------------------------------------------------------- membership


def _require(text: str, *phrases: str) -> None:
    """The membership function below relies on these statements of the text."""
    for phrase in phrases:
        assert phrase in text, f"definition does not state {phrase!r}:\n{text}"


def _polar(p: dict[str, Any], x: np.ndarray, y: np.ndarray, key: str = "center") -> Arrays:
    cx, cy = p[key]
    return np.hypot(x - cx, y - cy), np.arctan2(y - cy, x - cx)


def _even_odd(x: np.ndarray, y: np.ndarray, vx: np.ndarray, vy: np.ndarray) -> np.ndarray:
    """Ray casting towards +x (winding parity), written independently of the evaluator."""
    px, py = x.ravel()[:, None], y.ravel()[:, None]
    ax, ay = vx[None, :], vy[None, :]
    bx, by = np.roll(vx, -1)[None, :], np.roll(vy, -1)[None, :]
    crosses = (ay <= py) != (by <= py)
    with np.errstate(divide="ignore", invalid="ignore"):
        xi = ax + (py - ay) * (bx - ax) / (by - ay)
    count = (crosses & (px < xi)).sum(axis=1)
    return (count % 2 == 1).reshape(x.shape)


def member_square(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(text, "Omega = [0, 1] x [0, 1]")
    return (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)


def member_cube(text: str, p: dict[str, Any], *xyz: np.ndarray) -> np.ndarray:
    _require(text, "Omega = [0, 1] x [0, 1] x [0, 1]")
    return np.logical_and.reduce([(c >= 0) & (c <= 1) for c in xyz])


def member_l_shape(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(text, "(cx, cy) = `corner`", "(x <= cx or y <= cy)")
    cx, cy = p["corner"]
    return (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1) & ((x <= cx) | (y <= cy))


def member_t_junction(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(
        text,
        "S = [L/2 - w/2, L/2 + w/2] x [0, H_stem]",
        "B = [0, L] x [H_stem, H_stem + H_bar]",
        "L = `bar_length`, H_bar = `bar_height`, w = `stem_width` and H_stem = `stem_length`",
    )
    length, hb, w, hs = p["bar_length"], p["bar_height"], p["stem_width"], p["stem_length"]
    stem = (np.abs(x - length / 2) <= w / 2) & (y >= 0) & (y <= hs)
    bar = (x >= 0) & (x <= length) & (y >= hs) & (y <= hs + hb)
    return stem | bar


def gear_vertices(text: str, p: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    _require(
        text,
        "theta_k = k*p",
        "p = 2*pi/n",
        "P(r, a) = (cx + r*cos(a), cy + r*sin(a))",
        "P(r_root, theta_k - root_fraction*p/2), P(r_tip, theta_k - tip_fraction*p/2), "
        "P(r_tip, theta_k + tip_fraction*p/2), P(r_root, theta_k + root_fraction*p/2)",
        "joined by straight segments",
    )
    cx, cy = p["center"]
    n = p["n_teeth"]
    pitch = 2 * math.pi / n
    radii, angles = [], []
    for k in range(n):
        t = k * pitch
        fr, ft = p["root_fraction"] * pitch / 2, p["tip_fraction"] * pitch / 2
        radii += [p["r_root"], p["r_tip"], p["r_tip"], p["r_root"]]
        angles += [t - fr, t - ft, t + ft, t + fr]
    r, a = np.array(radii), np.array(angles)
    vx, vy = cx + r * np.cos(a), cy + r * np.sin(a)
    # The text also lists tooth 0's vertices numerically: they must be these.
    listed = re.search(r"The four vertices of tooth 0 are (.*)\.", text)
    assert listed, "tooth 0 vertices not listed"
    nums = [float(v) for v in re.findall(r"-?[\d.]+(?:e-?\d+)?", listed.group(1))]
    assert np.allclose(nums, np.column_stack([vx[:4], vy[:4]]).ravel(), atol=1e-9)
    return vx, vy


def member_gear(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _even_odd(x, y, *gear_vertices(text, p))


def member_square_with_hole(
    text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray
) -> np.ndarray:
    _require(text, "(x - cx)^2 + (y - cy)^2 >= R^2", "R = `radius`", "(cx, cy) = `center`")
    r, _ = _polar(p, x, y)
    return (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1) & (r >= p["radius"])


def member_multi_hole(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(text, "[cx_i, cy_i, r_i] of `holes`", "(x - cx_i)^2 + (y - cy_i)^2 >= r_i^2")
    out = (x >= 0) & (x <= 1) & (y >= 0) & (y <= 1)
    for cx, cy, r in p["holes"]:
        out &= (x - cx) ** 2 + (y - cy) ** 2 >= r * r
    return out


def member_circle(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(text, "(x - cx)^2 + (y - cy)^2 <= R^2", "R = `radius`")
    return _polar(p, x, y)[0] <= p["radius"]


def member_annulus(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(text, "r_inner <= sqrt((x - cx)^2 + (y - cy)^2) <= r_outer")
    r = _polar(p, x, y)[0]
    return (r >= p["r_inner"]) & (r <= p["r_outer"])


def member_eccentric(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(
        text,
        "(x - ox)^2 + (y - oy)^2 <= R^2 and (x - ix)^2 + (y - iy)^2 >= r^2",
        "(ox, oy) = `center_outer`",
        "(ix, iy) = `center_inner`",
        "R = `r_outer`",
        "r = `r_inner`",
    )
    outer = _polar(p, x, y, "center_outer")[0] <= p["r_outer"]
    return outer & (_polar(p, x, y, "center_inner")[0] >= p["r_inner"])


def member_sector(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(
        text,
        "a0 = `angle_start`",
        "a1 = `angle_end`",
        "(phi - a0) mod 2*pi <= a1 - a0",
        "phi = atan2(y - cy, x - cx)",
        "maps into [0, 2*pi)",
    )
    r, phi = _polar(p, x, y)
    a0, a1 = p["angle_start"], p["angle_end"]
    # Turn counter-clockwise from a0 until phi is reached: that angle must not exceed a1 - a0.
    turn = phi - a0 - 2 * math.pi * np.floor((phi - a0) / (2 * math.pi))
    return (r <= p["radius"]) & (turn <= a1 - a0)


def member_dumbbell(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(
        text,
        "Omega = D_left ∪ D_right ∪ B",
        "B = [xl, xr] x [yc - h, yc + h]",
        "h = `bar_width`/2",
        "(xl, yc) = `center_left`",
        "(xr, yc) = `center_right`",
    )
    (xl, yc), (xr, _) = p["center_left"], p["center_right"]
    r, h = p["radius"], p["bar_width"] / 2
    disks = (np.hypot(x - xl, y - yc) <= r) | (np.hypot(x - xr, y - yc) <= r)
    return disks | ((x >= xl) & (x <= xr) & (np.abs(y - yc) <= h))


def member_star(text: str, p: dict[str, Any], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _require(
        text,
        "rho <= r0*(1 + A*cos(n*theta))",
        "theta = atan2(y - cy, x - cx)",
        "A = `amplitude`",
        "n = `n_points`",
    )
    rho, theta = _polar(p, x, y)
    return rho <= p["r0"] * (1 + p["amplitude"] * np.cos(p["n_points"] * theta))


MEMBERS = {
    "unit_square": member_square,
    "periodic_square": member_square,
    "unit_cube": member_cube,
    "l_shape": member_l_shape,
    "t_junction": member_t_junction,
    "gear": member_gear,
    "square_with_hole": member_square_with_hole,
    "multi_hole": member_multi_hole,
    "circle": member_circle,
    "annulus": member_annulus,
    "eccentric_annulus": member_eccentric,
    "sector": member_sector,
    "dumbbell": member_dumbbell,
    "star": member_star,
}

EXTRA_INSTANCES: list[tuple[str, dict[str, Any]]] = [
    ("l_shape", {"corner": [0.3, 0.7]}),
    ("t_junction", {"bar_length": 2.0, "bar_height": 0.3, "stem_width": 0.5, "stem_length": 1.1}),
    (
        "gear",
        {
            "center": [0.1, -0.2],
            "r_root": 0.5,
            "r_tip": 0.8,
            "n_teeth": 7,
            "root_fraction": 0.7,
            "tip_fraction": 0.25,
        },
    ),
    ("gear", {"n_teeth": 3, "root_fraction": 0.9, "tip_fraction": 0.9}),
    ("square_with_hole", {"center": [0.3, 0.6], "radius": 0.25}),
    ("multi_hole", {"holes": [[0.2, 0.25, 0.1], [0.75, 0.7, 0.2]]}),
    ("circle", {"center": [-1.0, 2.0], "radius": 0.7}),
    ("annulus", {"center": [0.3, -0.4], "r_inner": 0.2, "r_outer": 0.9}),
    (
        "eccentric_annulus",
        {"center_outer": [1.0, 1.0], "r_outer": 2.0, "center_inner": [1.5, 0.6], "r_inner": 0.5},
    ),
    ("sector", {"center": [0.2, 0.1], "radius": 0.8, "angle_start": -2.5, "angle_end": 1.0}),
    ("sector", {"angle_start": 4.0, "angle_end": 7.0}),
    ("sector", {"angle_start": 0.3, "angle_end": 0.3 + 2 * math.pi - 0.2}),
    (
        "dumbbell",
        {"center_left": [-1.0, 0.2], "center_right": [1.5, 0.2], "radius": 0.6, "bar_width": 0.5},
    ),
    ("star", {"center": [0.1, 0.3], "r0": 1.0, "amplitude": 0.6, "n_points": 3}),
    ("star", {"n_points": 2, "amplitude": 0.9}),
]


def _compare(kind: str, params: dict[str, Any], points: Arrays, label: str) -> int:
    """Assert the text-based membership equals ``inside`` away from the boundary;
    return the number of points compared."""
    geometry = get_geometry(kind, params)
    text = geometry.definition()
    stated = stated_params(text)
    for key, value in params.items():
        assert stated[key] == json.loads(json.dumps(value)), f"{label}: {key} misstated"
    mine = np.asarray(MEMBERS[kind](text, stated, *points), dtype=bool)
    truth = np.asarray(geometry.inside(*points), dtype=bool)
    far = np.asarray(geometry.distance_to_boundary(*points)) > BOUNDARY_EPS
    bad = far & (mine != truth)
    if bad.any():
        where = [tuple(float(c[bad][i]) for c in points) for i in range(min(3, int(bad.sum())))]
        raise AssertionError(
            f"{label}: text-based membership differs from inside() at {int(bad.sum())} "
            f"points, e.g. {where}"
        )
    assert far.sum() > 0.5 * far.size, f"{label}: too few points away from the boundary"
    return int(far.sum())


def test_membership_from_text_matches_inside_on_every_dataset_grid() -> None:
    seen: dict[tuple[str, str, str], str] = {}
    for case in dataset():
        kind, params = domain_of(case)
        grid = agent_view(case, case.supported_libraries[0])["case_spec"]["eval_grid"]
        key = (kind, json.dumps(params, sort_keys=True), json.dumps(grid, sort_keys=True))
        seen.setdefault(key, case.id)
    kinds = set()
    for (kind, params_json, _), case_id in seen.items():
        case = next(c for c in dataset() if c.id == case_id)
        points = grid_points(case.case_spec.eval_grid)
        _compare(kind, json.loads(params_json), points, case_id)
        kinds.add(kind)
    assert kinds == set(GEOMETRY_TEMPLATES)


def _cloud(kind: str, params: dict[str, Any], n: int = 241) -> Arrays:
    """A grid plus random points over the bounding box enlarged by 10 %."""
    box = np.asarray(get_geometry(kind, params).bbox(), dtype=float)
    pad = 0.1 * (box[:, 1] - box[:, 0])
    lo, hi = box[:, 0] - pad, box[:, 1] + pad
    rng = np.random.default_rng(20)
    if len(box) == 3:
        axes = [np.linspace(lo[k], hi[k], 41) for k in range(3)]
        return tuple(np.meshgrid(*axes, indexing="ij"))
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], n), np.linspace(lo[1], hi[1], n))
    rx, ry = rng.uniform(lo[0], hi[0], 20000), rng.uniform(lo[1], hi[1], 20000)
    return np.concatenate([gx.ravel(), rx]), np.concatenate([gy.ravel(), ry])


@pytest.mark.parametrize(
    ("kind", "params"),
    [*((k, {}) for k in sorted(GEOMETRY_TEMPLATES)), *EXTRA_INSTANCES],
    ids=lambda v: v if isinstance(v, str) else json.dumps(v, sort_keys=True)[:40],
)
def test_membership_from_text_matches_inside_on_other_instances(
    kind: str, params: dict[str, Any]
) -> None:
    _compare(kind, params, _cloud(kind, params), f"{kind} {params}")


@pytest.mark.parametrize(
    ("kind", "params", "wrong"),
    [
        ("gear", {}, {"shift": math.pi / 12}),
        ("star", {}, {"shift": math.pi / 5}),
        ("sector", {"angle_start": 1.0, "angle_end": 2.5}, {"shift": 0.3}),
    ],
)
def test_angle_origin_matters(kind: str, params: dict[str, Any], wrong: dict[str, float]) -> None:
    """A reading with the wrong angle origin (rotated by ``shift``) disagrees with
    ``inside``: the membership comparison above can fail on the angular offset."""
    geometry = get_geometry(kind, params)
    text = geometry.definition()
    x, y = _cloud(kind, params)
    cx, cy = geometry.params["center"]
    c, s = math.cos(wrong["shift"]), math.sin(wrong["shift"])
    xr, yr = cx + c * (x - cx) + s * (y - cy), cy - s * (x - cx) + c * (y - cy)
    rotated = MEMBERS[kind](text, stated_params(text), xr, yr)
    far = geometry.distance_to_boundary(x, y) > BOUNDARY_EPS
    assert (far & (rotated != geometry.inside(x, y))).sum() > 100


# --------------------------------------------------------------------------- prompt lint


def _threshold_strings(case: Case) -> set[str]:
    numbers: list[float] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("e_base", "t_base", "tau_acc", "tau_time") and isinstance(
                    value, int | float
                ):
                    numbers.append(float(value))
                else:
                    walk(value)

    walk(case.evaluation_metadata.thresholds or {})
    return {f for v in numbers for f in (repr(v), f"{v:.6g}", f"{v:.4e}")}


PLACEHOLDER_RE = re.compile(r"\bNone\b|\bnan\b|\{\{|\{%|\}\}|%\}")


def test_prompt_lint_all_cases_tracks_modes() -> None:
    rendered_count = 0
    for case in dataset():
        secrets = _threshold_strings(case)
        for track in tracks_of(case):
            visible = json.dumps(agent_view(case, track)["case_spec"])
            leaks = {s for s in secrets if s not in visible}
            for mode in ("single", "template"):
                prompt, static = rendered(case.id, track, mode)
                if mode == "template" and not prompt:
                    continue
                label = f"{case.id}/{track}/{mode}"
                assert prompt.startswith("# ") and "## 6." in prompt, label
                # Track texts (API guide, scaffold code) may legitimately say None or {{.
                own = prompt
                for piece in static:
                    own = own.replace(piece, "")
                bad = PLACEHOLDER_RE.search(own)
                assert bad is None, f"{label}: placeholder {bad.group(0)!r} in the prompt"
                for word in ("tau_acc", "tau_time", "reference_path"):
                    assert word not in prompt, f"{label}: evaluator-only {word!r}"
                for secret in leaks:
                    assert secret not in prompt, f"{label}: threshold value {secret} leaked"
                rendered_count += 1
    assert rendered_count >= len(dataset())
