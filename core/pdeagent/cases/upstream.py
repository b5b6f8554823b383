"""Import of the PDEAgent-Bench authors' ``benchmark_v2.jsonl`` records as case records.

The manufactured solution moves to ``evaluation_metadata``, the forcing is recomputed with
:func:`pdeagent.cases.mms.forcing`, the upstream Dirichlet data are kept as given, and each
case is validated. The report lists leaking cases (SPEC §4), forcing differences and skipped
records. The input is untrusted: capped line length, safe expression parser only, and a bad
record is skipped with a reason. A geometry is mapped only when the shape the upstream oracle
meshes is one of our templates.

Values a record leaves implicit that the authors' oracles fill in silently (the Burgers end
time and step, viscosities, the zero-traction condition on boundary parts without Dirichlet
data) are stated in the case and listed in :attr:`UpstreamImport.import_notes` with the oracle
file they were read from; see docs/upstream-import.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from attrs import define, field

from pdeagent.cases.expressions import (
    SYMBOLS,
    ExpressionError,
    compile_expression,
    is_parameter_name,
    parse_expression,
)
from pdeagent.cases.families import FAMILIES, Family
from pdeagent.cases.mms import MMSError, forcing, laplacian
from pdeagent.cases.model import (
    SCHEMA_VERSION,
    Case,
    EvaluationConfig,
    ExprOrVector,
    case_from_dict,
    converter,
)
from pdeagent.cases.validate import KNOWN_LIBRARIES, PRIMARY_QUANTITIES, validate_records
from pdeagent.evaluation.reference import reference_fields
from pdeagent.geometry import Geometry, GeometryError, evaluation_mask, get_geometry, grid_points
from pdeagent.scoring.metrics import relative_l2

LEAK_TOLERANCE = 1e-3
"""A case leaks when sampling its Dirichlet expression (at ``t_end``) or its initial condition
on the evaluation grid gives a relative L2 error below this against the manufactured solution
(scored points only). Such a "cheat" would pass typical accuracy thresholds: the upstream
paper's calibrated e_base has median 2.3e-4, and tau_acc is alpha_acc (10) * e_base.
``pdeagent cases validate`` uses 1e-2 (on interior points) and may reject more cases: see
:attr:`UpstreamImport.rejected_by_validator`."""

MAX_LINE_BYTES = 1_000_000
"""Longest accepted input line; a longer line is skipped unread."""
MAX_RECORDS = 100_000
"""Records read from one file at most; the rest is reported as skipped."""
MAX_GRID_POINTS = 4_000_000
"""Largest evaluation grid an imported case may have (checked before sampling anything)."""
MAX_ID_CHARS = 120
"""Longest case id produced (``upstream_`` plus the sanitised upstream id)."""
CONSISTENCY_RTOL = 1e-6
"""Relative tolerance of the checks that boundary and initial data agree with the
manufactured solution (on the boundary, at ``t0``)."""
FORCING_RTOL = 1e-6
"""Relative max-norm difference above which a recomputed forcing is reported as different."""
CHECK_POINTS = 20_000
"""Interior points used (at most) for the consistency and forcing comparisons."""

_LEAK_RULE_MARK = "SPEC §4 leak"
"""Marker of the validator's no-leak problems (pdeagent.cases.validate.check_leaks)."""

_COMPONENT_NAMES = ("u_x", "u_y", "u_z")
_VECTOR_QUANTITY = {
    "linear_elasticity": "displacement",
    "stokes": "velocity",
    "navier_stokes": "velocity",
}
_IC_FIELD = {"navier_stokes": "velocity"}
_BOX_TAGS = {
    "x0": "xmin",
    "xmin": "xmin",
    "x1": "xmax",
    "xmax": "xmax",
    "y0": "ymin",
    "ymin": "ymin",
    "y1": "ymax",
    "ymax": "ymax",
    "z0": "zmin",
    "zmin": "zmin",
    "z1": "zmax",
    "zmax": "zmax",
}
UPSTREAM_REPO = "YusanX/pde-agent-bench"
"""The PDEAgent-Bench authors' repository; the defaults below were read from its oracles."""

_ORACLE_FILES = {
    "burgers": "pdebench/oracle/burger.py",
    "stokes": "pdebench/oracle/stokes.py",
    "navier_stokes": "pdebench/oracle/navier_stokes.py",
    "linear_elasticity": "pdebench/oracle/linear_elasticity.py",
}
"""The DOLFINx oracle of a family (``pdebench/oracle/oracle.py`` dispatches on the type)."""

BURGERS_T_FINAL = 0.1
"""End time the published Burgers oracle integrates to when the record gives none: it reads
``oracle_config.pde.t_final`` (not ``pde.time``), starts at t = 0 and defaults to 0.1."""
BURGERS_DT = 0.01
"""Its time step when ``oracle_config.pde.dt`` is missing; it takes
``max(1, int(t_final / dt))`` steps of that size."""
BURGERS_NU = 0.01
"""Its viscosity when ``pde_params.nu`` is missing."""
FLOW_NU = 1.0
"""Viscosity of the published Stokes and Navier-Stokes oracles when ``pde_params.nu`` is
missing."""

_PARTIAL_DIRICHLET = {
    "stokes": "zero traction nu*du/dn - p*n = 0",
    "navier_stokes": "zero traction nu*du/dn - p*n = 0",
    "linear_elasticity": "zero traction sigma(u)*n = 0",
}
"""Families whose upstream oracle honours ``bc.dirichlet[].on`` (each entry is imposed on its
part only) and adds no boundary term to its weak form, so the rest of the boundary carries
the form's natural condition. The flow oracles integrate ``nu grad(u):grad(v) - p div(v)`` by
parts, whose natural condition is ``nu du/dn - p n = 0`` (the gradient form, exactly what our
``traction`` quantity means for flows); the elasticity oracle's is ``sigma(u) n = 0``."""


def _evidence(family: str) -> str:
    return f"{UPSTREAM_REPO}/{_ORACLE_FILES[family]}"


@define(frozen=True)
class ImportNote:
    """A value the upstream record leaves implicit that the importer states explicitly."""

    field: str
    """Where it is stated in the case record (``case_spec.pde.time.t_end``)."""
    value: Any
    """The stated value (JSON-able)."""
    why: str
    """What the upstream oracle does, with the repository and path it was read from."""

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "value": self.value, "why": self.why}


class _Skip(Exception):
    """The record cannot be imported faithfully (message: why)."""


@define(frozen=True)
class LeakReport:
    """A case whose boundary or initial data reveal the manufactured solution (SPEC §4)."""

    case_id: str
    upstream_id: str
    expressions: tuple[str, ...]
    """Which data leak: ``dirichlet`` and/or ``initial_condition``."""
    errors: dict[str, float]
    """Relative L2 error, on the scored grid points, of sampling each examined expression
    instead of solving (the leaking ones are below :data:`LEAK_TOLERANCE`)."""

    @property
    def error(self) -> float:
        """The smallest error among the leaking expressions."""
        return min(self.errors[name] for name in self.expressions)


@define(frozen=True)
class ForcingDifference:
    """The upstream ``source_term`` is not the forcing our operator gives for the solution."""

    case_id: str
    relative_difference: float
    """max |f_ours - f_upstream| / max(|f_ours|, |f_upstream|) over interior points (and
    times)."""
    upstream: ExprOrVector
    recomputed: ExprOrVector


@define
class UpstreamImport:
    """Outcome of :func:`import_upstream`."""

    cases: list[Case] = field(factory=list)
    """Every converted case. Each passes all checks of ``pdeagent cases validate`` except,
    possibly, the no-leak rule of SPEC §4 (the upstream Dirichlet data are kept as given)."""
    leaks: list[LeakReport] = field(factory=list)
    skipped: list[tuple[str, str]] = field(factory=list)
    """(upstream id, or ``line N`` when the record has none; reason)."""
    forcing_differences: list[ForcingDifference] = field(factory=list)
    notes: list[tuple[str, str]] = field(factory=list)
    """(case id, what was stated that the upstream record leaves implicit)."""
    import_notes: dict[str, list[ImportNote]] = field(factory=dict)
    """Case id -> the upstream oracles' implicit defaults stated in that case (field, value,
    why). Only cases with at least one such default appear."""
    rejected_by_validator: list[str] = field(factory=list)
    """Ids of cases that ``pdeagent cases validate`` rejects under its no-leak rule."""
    upstream_ids: dict[str, str] = field(factory=dict)
    """Case id -> upstream id."""
    cheat_errors: dict[str, dict[str, float]] = field(factory=dict)
    """Case id -> relative L2 error of each cheat examined (manufactured cases only)."""

    @property
    def manufactured(self) -> int:
        """Number of imported manufactured-solution cases (the only ones a leak is checked on)."""
        return sum(
            c.evaluation_metadata.construction_method == "manufactured_solution" for c in self.cases
        )

    @property
    def leak_share(self) -> float:
        """Leaking cases / imported cases (0 when nothing was imported)."""
        return len(self.leaks) / len(self.cases) if self.cases else 0.0

    def writable_cases(self) -> list[Case]:
        """The cases ``pdeagent cases validate`` accepts (all but the validator-rejected)."""
        rejected = set(self.rejected_by_validator)
        return [c for c in self.cases if c.id not in rejected]

    def skipped_by_reason(self) -> dict[str, int]:
        """Refusal reason -> number of records refused with it (most frequent first)."""
        counts: dict[str, int] = {}
        for _, why in self.skipped:
            counts[why] = counts.get(why, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def leak_summary(self) -> str:
        n, k, m = len(self.cases), len(self.leaks), self.manufactured
        return (
            f"{k} of {n} imported cases leak their solution through the boundary or initial "
            f"data ({100.0 * self.leak_share:.0f}%; {k} of {m} manufactured-solution cases, "
            "the only ones with a solution to leak)"
        )


# ----------------------------------------------------------------------------- reading


def _lines(path: Path) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text or None, problem or None) for each line, with the length cap."""
    with path.open("rb") as fh:
        number = 0
        while True:
            chunk = fh.readline(MAX_LINE_BYTES + 1)
            if not chunk:
                return
            number += 1
            if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                while True:
                    rest = fh.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield number, None, f"line longer than {MAX_LINE_BYTES} bytes"
                continue
            try:
                text = chunk.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                yield number, None, "line is not valid UTF-8"
                continue
            yield number, text, None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _parse_line(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise _Skip("malformed JSON: nested too deeply") from None
    except ValueError as exc:
        raise _Skip(f"malformed JSON: {exc}") from None


def sanitize_id(upstream_id: str) -> str:
    """``upstream_<id>`` lower-cased, runs of characters outside ``[a-z0-9_]`` -> ``_``."""
    body = re.sub(r"[^a-z0-9_]+", "_", upstream_id.lower()).strip("_")
    return f"upstream_{body}"[:MAX_ID_CHARS].rstrip("_")


# ----------------------------------------------------------------------------- small parsers


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Skip(f"{where} must be a number, got {_short(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise _Skip(f"{where} must be finite")
    return number


def _integer(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Skip(f"{where} must be an integer, got {_short(value)}")
    return value


def _point(value: Any, where: str) -> list[float]:
    if not isinstance(value, list) or len(value) != 2:
        raise _Skip(f"{where} must be a pair of numbers, got {_short(value)}")
    return [_number(v, where) for v in value]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expression(value: Any, where: str) -> str:
    """An upstream scalar expression (string or number) as checked expression text."""
    if isinstance(value, str):
        text = value.strip()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        text = repr(_number(value, where) if isinstance(value, float) else value)
    else:
        raise _Skip(f"{where} must be an expression string or a number, got {_short(value)}")
    try:
        parse_expression(text)
    except ExpressionError as exc:
        raise _Skip(f"unparsable expression in {where}: {exc}") from None
    return text


def _vector(value: Any, dim: int, where: str, *, broadcast: bool) -> list[str]:
    if isinstance(value, list):
        if len(value) != dim:
            raise _Skip(f"{where} has {len(value)} components, expected {dim}")
        return [_expression(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if broadcast:
        return [_expression(value, where)] * dim
    raise _Skip(f"{where} must be a list of {dim} expressions")


def _dict(value: Any, where: str, *, required: bool = False) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"{where} must be an object")
    return value


# ----------------------------------------------------------------------------- geometry


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


# ----------------------------------------------------------------------------- parameters


def _coefficient(pde: dict[str, Any], name: str) -> float | str | None:
    coeffs = _dict(pde.get("coefficients"), "oracle_config.pde.coefficients")
    spec = coeffs.get(name, _dict(pde.get("pde_params"), "pde_params").get(name))
    if spec is None:
        return None
    where = f"oracle_config.pde.coefficients.{name}"
    if isinstance(spec, dict):
        kind = spec.get("type")
        if kind == "constant":
            spec = spec.get("value")
        elif kind == "expr":
            spec = spec.get("expr")
        else:
            raise _Skip(f"{where}: unknown coefficient type {_short(kind)}")
    return _param_value(spec, where)


def _param_value(value: Any, where: str) -> float | str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value, where)
    return _expression(value, where)


def _params(
    family: str,
    pde: dict[str, Any],
    dim: int,
    notes: list[str],
    defaults: list[ImportNote],
) -> dict[str, Any]:
    raw = _dict(pde.get("pde_params"), "oracle_config.pde.pde_params")

    def need(name: str, default: float | None = None) -> float | str:
        value = _coefficient(pde, name)
        if value is None:
            if default is None:
                raise _Skip(f"parameter {name!r} is not given")
            if family in _ORACLE_FILES:
                defaults.append(
                    ImportNote(
                        f"case_spec.pde.params.{name}",
                        default,
                        f"the published {family} oracle uses {name} = {default} when the "
                        f"record gives none ({_evidence(family)})",
                    )
                )
            else:  # pragma: no cover - only the families above have a default here
                notes.append(f"{name} not given: stated the upstream oracle's default {default}")
            return default
        return value

    if family in ("poisson", "heat"):
        return {"kappa": need("kappa")}
    if family == "helmholtz":
        return {"k": need("k")}
    if family == "biharmonic":
        return {}
    if family == "wave":
        return {"c": need("c")}
    if family in ("stokes", "navier_stokes"):
        return {"nu": need("nu", FLOW_NU)}
    if family == "burgers":
        if dim != 2:
            raise _Skip("burgers: the upstream convection u*(u_x+u_y) is only verified in 2-D")
        notes.append("stated the upstream convective term u*(u_x+u_y) as b = [1, 1]")
        return {"nu": need("nu", BURGERS_NU), "b": [1.0, 1.0]}
    if family == "convection_diffusion":
        beta = raw.get("beta")
        if beta is None:
            raise _Skip("parameter 'beta' is not given")
        where = "oracle_config.pde.pde_params.beta"
        if not isinstance(beta, list) or len(beta) != dim:
            raise _Skip(f"{where} must list {dim} components")
        return {
            "epsilon": need("epsilon"),
            "beta": [_param_value(b, f"{where}[{i}]") for i, b in enumerate(beta)],
        }
    if family == "reaction_diffusion":
        eps = raw.get("epsilon", raw.get("diffusion"))
        if eps is None:
            notes.append("epsilon not given: stated the upstream oracle's default 0.1")
            eps = 0.1
        law, sigma = _reaction(raw.get("reaction", {"type": "linear", "alpha": 0.0}))
        notes.append(f"stated the reaction law {law} with sigma = {sigma}")
        return {
            "epsilon": _param_value(eps, "oracle_config.pde.pde_params.epsilon"),
            "sigma": sigma,
            "reaction_law": law,
        }
    if family == "linear_elasticity":
        model = "3d" if dim == 3 else "plane_strain"
        notes.append(f"stated model {model} (the upstream oracle's lambda formula)")
        if "lambda" in raw and "mu" in raw:
            where = "oracle_config.pde.pde_params"
            return {
                "lambda": _number(raw["lambda"], f"{where}.lambda"),
                "mu": _number(raw["mu"], f"{where}.mu"),
                "model": model,
            }
        return {"E": need("E", 1.0), "nu": need("nu", 0.3), "model": model}
    raise _Skip(f"unknown family {family!r}")  # pragma: no cover - families are checked first


def _reaction(spec: Any) -> tuple[str, float]:
    """Our (reaction_law, sigma) for the upstream reaction term R(u) (same sign convention:
    ``du/dt - epsilon laplace(u) + R(u) = f``)."""
    spec = _dict(spec, "oracle_config.pde.pde_params.reaction", required=True)
    kind = str(spec.get("type", "linear")).lower()
    where = "oracle_config.pde.pde_params.reaction"
    if kind == "linear":
        return "linear", _number(spec.get("alpha", 0.0), f"{where}.alpha")
    if kind in ("cubic", "poly3"):
        alpha = _number(spec.get("alpha", 0.0), f"{where}.alpha")
        beta = _number(spec.get("beta", 1.0), f"{where}.beta")
        if alpha == 0.0:
            return "cubic", beta
        if alpha == -beta:
            return "allen_cahn", beta
        raise _Skip(
            f"reaction alpha*u + beta*u**3 with alpha={alpha}, beta={beta} is none of our "
            "reaction laws (linear, cubic, allen_cahn, logistic)"
        )
    if kind in ("allen_cahn", "allen-cahn"):
        return "allen_cahn", _number(spec.get("lambda", spec.get("lam", 1.0)), f"{where}.lambda")
    if kind in ("logistic", "fisher_kpp", "fisher-kpp"):
        # upstream R(u) = rho*u*(1-u); ours R(u) = -sigma*u*(1-u)
        return "logistic", -_number(spec.get("rho", 1.0), f"{where}.rho")
    raise _Skip(f"unknown reaction type {_short(kind)}")


# ----------------------------------------------------------------------------- record


@define
class _Converted:
    record: dict[str, Any]
    exact: dict[str, Any] | None
    """The manufactured solution as handed to :func:`mms.forcing` (None: no exact)."""
    upstream_forcing: ExprOrVector | None
    notes: list[str]
    defaults: list[ImportNote] = field(factory=list)


def _convert(raw: dict[str, Any], case_id: str) -> _Converted:
    notes: list[str] = []
    defaults: list[ImportNote] = []
    cls = _dict(raw.get("pde_classification"), "pde_classification", required=True)
    oracle = _dict(raw.get("oracle_config"), "oracle_config", required=True)
    pde = _dict(oracle.get("pde"), "oracle_config.pde", required=True)
    family_name = cls.get("equation_type", pde.get("type"))
    if not isinstance(family_name, str) or family_name not in FAMILIES:
        raise _Skip(f"unknown family {_short(family_name)}")
    if pde.get("type", family_name) != family_name:
        raise _Skip(f"oracle_config.pde.type {_short(pde.get('type'))} != {family_name!r}")
    family = FAMILIES[family_name]

    grid = _dict(_dict(oracle.get("output"), "oracle_config.output").get("grid"), "grid")
    dim = 3 if "nz" in grid else 2
    declared = cls.get("dim", dim)
    if declared != dim:
        raise _Skip(f"pde_classification.dim {_short(declared)} does not match the output grid")

    geometry_name, geometry_params, geo_notes = _map_domain(
        _dict(oracle.get("domain"), "oracle_config.domain", required=True)
    )
    notes += geo_notes
    try:
        geometry = get_geometry(geometry_name, geometry_params)
    except GeometryError as exc:
        raise _Skip(f"geometry: {exc}") from None
    if geometry.dim != dim:
        raise _Skip(f"{geometry_name} is {geometry.dim}-D but the output grid is {dim}-D")

    eval_grid = _eval_grid(grid, dim)
    params = _params(family_name, pde, dim, notes, defaults)
    time_step: float | None = None
    if family_name == "burgers":
        time, time_step = _burgers_time(pde, defaults)
    else:
        time = _time(pde.get("time"))
    transient = time is not None
    if family.time == "required" and not transient:
        raise _Skip(
            f"family {family_name} is transient but the record gives no time interval "
            "(oracle_config.pde.time)"
        )
    if family.time == "forbidden" and transient:
        raise _Skip(f"family {family_name} is stationary but the record gives a time interval")

    exact = _exact(pde, family, dim)
    vector = family.vector_output
    output: dict[str, Any] = {"format": "npz", "field": "u", "components": None}
    if vector:
        output["components"] = list(_COMPONENT_NAMES[:dim])
        notes.append("scored component-wise (the upstream scores the magnitude only)")

    source = pde.get("source_term")
    upstream_forcing: ExprOrVector | None = None
    if source is not None:
        where = "oracle_config.pde.source_term"
        upstream_forcing = (
            _vector(source, dim, where, broadcast=True) if vector else _expression(source, where)
        )
    if exact is not None:
        try:
            forcing_value = forcing(family_name, exact, params, dim=dim, transient=transient)["f"]
        except (MMSError, ExpressionError) as exc:
            raise _Skip(f"cannot recompute the forcing: {exc}") from None
    elif upstream_forcing is not None:
        forcing_value = upstream_forcing
    else:
        forcing_value = ["0"] * dim if vector else "0"

    dirichlet, neumann = _boundary(oracle.get("bc"), family, geometry, dim, exact, defaults)
    if family_name == "burgers" and exact is None:
        ic: dict[str, ExprOrVector] | None = _burgers_initial(pde, defaults)
        if "dt" not in pde:
            defaults.append(
                ImportNote(
                    "evaluation_metadata.reference_config.time_step",
                    time_step,
                    f"the published Burgers oracle steps with dt = {BURGERS_DT:g} when the "
                    f"record gives no oracle_config.pde.dt ({_evidence('burgers')}); kept as "
                    "the reference's time step (not shown to the agent)",
                )
            )
    else:
        ic = _initial(pde, family, dim, exact, time, notes) if transient else None

    meta: dict[str, Any] = {
        "construction_method": "manufactured_solution" if exact else "reference_numerical",
        "manufactured_solution": None,
        "reference_config": None,
        "calibration_config": None,
        "reference_path": None,
        "thresholds": {},
    }
    if exact is not None:
        u = exact["u"]
        meta["manufactured_solution"] = (
            dict(zip(output["components"], u, strict=True)) if vector else {"u": u}
        )
    else:
        meta["reference_config"] = _reference_config(oracle, pde, time_step)

    record = {
        "schema_version": SCHEMA_VERSION,
        "id": case_id,
        "pde_classification": {
            "equation_family": family_name,
            "math_type": _math_types(cls.get("math_type"), family),
        },
        "case_spec": {
            "pde": {
                "type": family_name,
                "params": params,
                "forcing": {"f": forcing_value},
                "time": time,
            },
            "domain": {
                "type": geometry_name,
                "bounds": geometry.bbox(),
                "geometry_params": geometry_params,
            },
            "bc": {"dirichlet": dirichlet, "neumann": neumann, "robin": [], "periodic": []},
            "ic": ic,
            "eval_grid": eval_grid,
            "output": output,
        },
        "evaluation_config": converter.unstructure(EvaluationConfig()),
        "evaluation_metadata": meta,
        "tags": {"structure": None, "difficulty": None},
        "supported_libraries": _libraries(raw.get("supported_libraries")),
    }
    return _Converted(record, exact, upstream_forcing if exact else None, notes, defaults)


def _eval_grid(grid: dict[str, Any], dim: int) -> dict[str, Any]:
    bbox = grid.get("bbox")
    if not isinstance(bbox, list) or len(bbox) != 2 * dim:
        raise _Skip(f"oracle_config.output.grid.bbox must list {2 * dim} numbers")
    counts = {k: _integer(grid.get(k), f"oracle_config.output.grid.{k}") for k in "nx ny".split()}
    if dim == 3:
        counts["nz"] = _integer(grid.get("nz"), "oracle_config.output.grid.nz")
    if any(n < 2 for n in counts.values()):
        raise _Skip("oracle_config.output.grid: every count must be at least 2")
    if math.prod(counts.values()) > MAX_GRID_POINTS:
        raise _Skip(f"evaluation grid larger than {MAX_GRID_POINTS} points")
    return {
        "type": "cartesian",
        **counts,
        "nz": counts.get("nz"),
        "bbox": [_number(v, "oracle_config.output.grid.bbox") for v in bbox],
        "mask_outside": True,
    }


def _time(spec: Any) -> dict[str, float] | None:
    if spec is None:
        return None
    spec = _dict(spec, "oracle_config.pde.time", required=True)
    if "t_end" not in spec:
        raise _Skip("oracle_config.pde.time.t_end is not given")
    return {
        "t0": _number(spec.get("t0", 0.0), "oracle_config.pde.time.t0"),
        "t_end": _number(spec["t_end"], "oracle_config.pde.time.t_end"),
    }


def _burgers_time(
    pde: dict[str, Any], defaults: list[ImportNote]
) -> tuple[dict[str, float], float]:
    """The interval and step the published Burgers oracle integrates with.

    It reads ``pde.t_final`` and ``pde.dt`` (defaults :data:`BURGERS_T_FINAL`,
    :data:`BURGERS_DT`), starts at t = 0, ignores ``pde.time`` and takes
    ``max(1, int(t_final / dt))`` steps, so it stops at that many steps times dt.
    """
    evidence = _evidence("burgers")
    where = "oracle_config.pde"
    if "t_final" in pde:
        t_final = _number(pde["t_final"], f"{where}.t_final")
    else:
        t_final = BURGERS_T_FINAL
    if "dt" in pde:
        dt = _number(pde["dt"], f"{where}.dt")
    else:
        dt = BURGERS_DT
    if not (t_final > 0 and dt > 0):
        raise _Skip(f"burgers: {where}.t_final and {where}.dt must be positive")
    steps = max(1, int(t_final / dt))
    t_end = steps * dt
    stated = _time(pde.get("time"))
    if stated is not None and (
        stated["t0"] != 0.0 or not math.isclose(stated["t_end"], t_end, rel_tol=1e-12)
    ):
        raise _Skip(
            f"burgers: the record states the interval [{stated['t0']:g}, {stated['t_end']:g}] in "
            f"{where}.time, but the published Burgers oracle ignores that field and integrates "
            f"over [0, {t_end:g}] ({evidence}): the reference does not solve the stated problem"
        )
    if stated is None:
        if "t_final" in pde and math.isclose(t_end, t_final, rel_tol=1e-12):
            why = f"the record gives {where}.t_final = {t_final:g}, read by the Burgers oracle"
        elif "t_final" in pde:
            why = (
                f"the published Burgers oracle stops after max(1, int(t_final/dt)) = {steps} "
                f"steps of dt = {dt:g}, short of the record's t_final = {t_final:g}"
            )
        else:
            why = (
                f"the published Burgers oracle uses t_final = {BURGERS_T_FINAL:g} when the "
                f"record gives none (it reads {where}.t_final, not {where}.time)"
            )
            if not math.isclose(t_end, t_final, rel_tol=1e-12):
                why += f" and stops after {steps} steps of dt = {dt:g}"
        if "t_final" not in pde or not math.isclose(t_end, t_final, rel_tol=1e-12):
            defaults.append(ImportNote("case_spec.pde.time.t_end", t_end, f"{why} ({evidence})"))
        defaults.append(
            ImportNote(
                "case_spec.pde.time.t0",
                0.0,
                f"the published Burgers oracle always starts at t = 0 ({evidence})",
            )
        )
    return {"t0": 0.0, "t_end": t_end}, dt


def _burgers_initial(pde: dict[str, Any], defaults: list[ImportNote]) -> dict[str, ExprOrVector]:
    """The initial field of a Burgers record without manufactured solution: the published
    oracle starts from zero and never reads ``pde.initial_condition``."""
    raw = pde.get("initial_condition")
    why = "the published Burgers oracle starts from u = 0 when there is no manufactured solution"
    if raw is not None:
        given = _expression(raw, "oracle_config.pde.initial_condition")
        if parse_expression(given) != 0:
            why += (
                f"; it never reads oracle_config.pde.initial_condition ({_short(given)}), so "
                "its reference is computed from zero, and zero is stated"
            )
    defaults.append(ImportNote("case_spec.ic.u", "0", f"{why} ({_evidence('burgers')})"))
    return {"u": "0"}


def _exact(pde: dict[str, Any], family: Family, dim: int) -> dict[str, Any] | None:
    solution = pde.get("manufactured_solution")
    if solution is None:
        return None
    solution = _dict(solution, "oracle_config.pde.manufactured_solution", required=True)
    where = "oracle_config.pde.manufactured_solution"
    if "u" not in solution:
        raise _Skip(f"{where} has no 'u'")
    if family.vector_output:
        exact: dict[str, Any] = {"u": _vector(solution["u"], dim, f"{where}.u", broadcast=False)}
    else:
        exact = {"u": _expression(solution["u"], f"{where}.u")}
    if family.name in ("stokes", "navier_stokes"):
        if "p" not in solution:
            raise _Skip(f"{where} has no pressure 'p' (needed for the forcing)")
        exact["p"] = _expression(solution["p"], f"{where}.p")
    return exact


def _boundary(
    bc: Any,
    family: Family,
    geometry: Geometry,
    dim: int,
    exact: dict[str, Any] | None,
    defaults: list[ImportNote],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    bc = _dict(bc, "oracle_config.bc")
    other = sorted(str(k) for k in bc if k != "dirichlet")
    if other:
        raise _Skip(f"unsupported boundary condition kind(s): {', '.join(other)}")
    raw = bc.get("dirichlet")
    if raw is None:
        # the upstream oracles default to the exact solution, else zero, on the whole boundary
        raw = [{"on": "all", "value": "u" if exact else "0.0"}]
        defaults.append(
            ImportNote(
                "case_spec.bc.dirichlet",
                "the exact solution on all" if exact else "0 on all",
                "the upstream oracles impose the exact solution (else zero) on the whole "
                "boundary when the record gives no Dirichlet data",
            )
        )
    entries = [raw] if isinstance(raw, dict) else raw
    if not isinstance(entries, list) or not entries:
        raise _Skip("oracle_config.bc.dirichlet must be an object or a non-empty list")
    vector = family.vector_output
    quantity = _VECTOR_QUANTITY.get(family.name, "u" if family.name == "biharmonic" else None)
    dirichlet = []
    covered: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"oracle_config.bc.dirichlet[{i}]"
        entry = _dict(entry, where, required=True)
        tags = _tags(entry.get("on", "all"), geometry, where)
        covered |= set(tags)
        value = entry.get("value", "0.0")
        if isinstance(value, str) and value.strip() in ("u", "u_exact"):
            if exact is None:
                raise _Skip(f"{where}.value refers to the exact solution, which is not given")
            value = exact["u"]
        if vector:
            value = _vector(value, dim, f"{where}.value", broadcast=True)
        else:
            value = _expression(value, f"{where}.value")
        dirichlet.append({"boundary": tags, "value": value, "quantity": quantity})
    rest = [] if "all" in covered else [t for t in geometry.boundary_tags if t not in covered]
    neumann = []
    if rest:
        if family.name not in _PARTIAL_DIRICHLET:
            raise _Skip(
                f"Dirichlet data on part of the boundary only (missing: {', '.join(rest)}); "
                f"the upstream condition on the rest is not stated for {family.name}"
            )
        neumann.append(
            {"boundary": rest, "value": ["0"] * dim, "quantity": "traction"},
        )
        defaults.append(
            ImportNote(
                "case_spec.bc.neumann",
                {"boundary": rest, "quantity": "traction", "value": ["0"] * dim},
                f"the published {family.name} oracle imposes the Dirichlet data only on the "
                f"parts the record names and adds no boundary term, so {', '.join(rest)} "
                f"carry its weak form's natural condition, {_PARTIAL_DIRICHLET[family.name]} "
                f"({_evidence(family.name)})",
            )
        )
    if family.name == "biharmonic":
        # The upstream oracle splits w = -laplace(u) and imposes w = -laplace(u_exact) for
        # manufactured solutions, w = 0 otherwise; the record does not say so.
        second = "0"
        if exact is not None:
            lap = laplacian(parse_expression(exact["u"]), dim)
            second = str(sp.simplify(lap) if sp.count_ops(lap) < 200 else lap)
        dirichlet.append({"boundary": ["all"], "value": second, "quantity": "laplacian_u"})
        defaults.append(
            ImportNote(
                "case_spec.bc.dirichlet[laplacian_u]",
                second,
                "the upstream biharmonic oracle splits w = -laplace(u) and imposes "
                "w = -laplace(u_exact) (zero without a manufactured solution) on the boundary",
            )
        )
    return dirichlet, neumann


def _tags(on: Any, geometry: Geometry, where: str) -> list[str]:
    if not isinstance(on, str):
        raise _Skip(f"{where}.on must be a string")
    key = on.strip().lower()
    if key in ("all", "*"):
        return ["all"]
    if geometry.name in ("unit_square", "unit_cube") and key in _BOX_TAGS:
        tag = _BOX_TAGS[key]
        if tag in geometry.boundary_tags:
            return [tag]
    raise _Skip(f"{where}.on: unknown boundary {_short(on)} for {geometry.name}")


def _initial(
    pde: dict[str, Any],
    family: Family,
    dim: int,
    exact: dict[str, Any] | None,
    time: dict[str, float] | None,
    notes: list[str],
) -> dict[str, ExprOrVector]:
    t0 = time["t0"] if time else 0.0
    name = _IC_FIELD.get(family.name, "u")
    ic: dict[str, ExprOrVector] = {}
    raw = pde.get("initial_condition")
    where = "oracle_config.pde.initial_condition"
    if raw is not None:
        ic[name] = (
            _vector(raw, dim, where, broadcast=False)
            if family.vector_output
            else _expression(raw, where)
        )
    elif exact is not None:
        ic[name] = _at_time(exact["u"], t0)
        notes.append("no initial condition given: stated the exact solution at t0")
    else:
        raise _Skip("transient case without initial_condition")
    if "u_t" in family.ic_fields:
        raw = pde.get("initial_velocity")
        if raw is not None:
            ic["u_t"] = _expression(raw, "oracle_config.pde.initial_velocity")
        elif exact is not None:
            ic["u_t"] = _at_time(str(sp.diff(parse_expression(exact["u"]), SYMBOLS["t"])), t0)
            notes.append("no initial velocity given: stated du/dt of the exact solution at t0")
        else:
            raise _Skip("wave case without initial_velocity")
    return ic


def _at_time(value: ExprOrVector, t: float) -> ExprOrVector:
    if isinstance(value, list):
        return [str(_at_time(v, t)) for v in value]
    tt = sp.Integer(int(t)) if float(t).is_integer() else sp.Float(t)
    return str(parse_expression(value).subs(SYMBOLS["t"], tt))


def _reference_config(
    oracle: dict[str, Any], pde: dict[str, Any], time_step: float | None = None
) -> dict[str, Any]:
    """The upstream reference settings (its oracle's settings when it has none)."""
    ref = _dict(oracle.get("reference_config"), "oracle_config.reference_config")
    source = "upstream reference_config" if ref else "upstream oracle_config"
    mesh = _dict(ref.get("mesh", oracle.get("mesh")), "mesh")
    fem = _dict(ref.get("fem", oracle.get("fem")), "fem")
    out: dict[str, Any] = {"source": source}
    if "resolution" in mesh:
        out["mesh_resolution"] = _integer(mesh["resolution"], "mesh.resolution")
    degree = fem.get("degree", fem.get("degree_u"))
    if degree is not None:
        out["element_degree"] = _integer(degree, "fem.degree")
    time = _dict(pde.get("time"), "oracle_config.pde.time")
    if time_step is not None:
        out["time_step"] = time_step
    elif "dt" in time:
        out["time_step"] = _number(time["dt"], "oracle_config.pde.time.dt")
    return out


def _math_types(upstream: Any, family: Family) -> list[str]:
    types = [family.primary_math_type]
    for t in upstream if isinstance(upstream, list) else []:
        if isinstance(t, str) and t in family.math_types and t not in types:
            types.append(t)
    return types


def _libraries(upstream: Any) -> list[str]:
    if upstream is None:
        return list(KNOWN_LIBRARIES)
    if not isinstance(upstream, list):
        raise _Skip("supported_libraries must be a list")
    libs = []
    for lib in upstream:
        if isinstance(lib, str) and lib in KNOWN_LIBRARIES and lib not in libs:
            libs.append(lib)
    if not libs:
        raise _Skip(f"no supported library among {', '.join(KNOWN_LIBRARIES)}")
    return libs


# ----------------------------------------------------------------------------- numerics


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


# ----------------------------------------------------------------------------- entry point


def _validation_problems(record: dict[str, Any]) -> tuple[list[str], bool]:
    """(problems other than the no-leak rule, whether the no-leak rule fired)."""
    problems = validate_records([record], known_libraries=KNOWN_LIBRARIES)
    leak = any(_LEAK_RULE_MARK in p.message for p in problems)
    other = [
        f"{p.field}: {p.message}" if p.field else p.message
        for p in problems
        if _LEAK_RULE_MARK not in p.message
    ]
    return other, leak


def import_upstream(path: Path) -> UpstreamImport:
    """Convert an upstream ``benchmark_v2.jsonl`` file; never raises on a bad record.

    Raises OSError only when the file itself cannot be opened.
    """
    result = UpstreamImport()
    first_line: dict[str, int] = {}
    records = 0
    for number, text, problem in _lines(Path(path)):
        label = f"line {number}"
        if problem is not None:
            result.skipped.append((label, problem))
            continue
        assert text is not None
        if not text.strip():
            continue
        records += 1
        if records > MAX_RECORDS:
            result.skipped.append((label, f"more than {MAX_RECORDS} records; the rest is unread"))
            break
        try:
            raw = _parse_line(text)
            if not isinstance(raw, dict):
                raise _Skip("record is not a JSON object")
            upstream_id = raw.get("id")
            if not isinstance(upstream_id, str) or not upstream_id.strip():
                raise _Skip("record has no string id")
            label = upstream_id[:MAX_ID_CHARS]
            case_id = sanitize_id(upstream_id)
            if case_id == "upstream":
                raise _Skip("id has no character in [a-z0-9_]")
            if case_id in first_line:
                raise _Skip(f"duplicate id {case_id} (first at line {first_line[case_id]})")
            first_line[case_id] = number
            _import_record(raw, case_id, upstream_id, result)
        except _Skip as exc:
            result.skipped.append((label, str(exc)))
        except Exception as exc:  # hostile input must never crash the import
            result.skipped.append((label, f"cannot convert: {type(exc).__name__}: {exc}"))
    return result


def _import_record(
    raw: dict[str, Any], case_id: str, upstream_id: str, result: UpstreamImport
) -> None:
    converted = _convert(raw, case_id)
    problems, leak_rule = _validation_problems(converted.record)
    if problems:
        shown = "; ".join(problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise _Skip(f"fails validation: {shown}{more}")
    case = case_from_dict(converted.record)
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    try:
        scored = evaluation_mask(spec.eval_grid, geometry).scored
    except ValueError as exc:
        raise _Skip(str(exc)) from None
    inner = _inner_points(case, scored)

    difference = None
    errors: dict[str, float] = {}
    if converted.exact is not None:
        _check_consistency(case, geometry, inner, converted.exact)
        if converted.upstream_forcing is not None:
            difference = _forcing_difference(case, inner, converted.upstream_forcing)
        errors = _leak_errors(case, geometry, scored)

    result.cases.append(case)
    result.upstream_ids[case.id] = upstream_id
    result.notes.extend((case.id, note) for note in converted.notes)
    if converted.defaults:
        result.import_notes[case.id] = list(converted.defaults)
    if leak_rule:
        result.rejected_by_validator.append(case.id)
    if errors:
        result.cheat_errors[case.id] = errors
    if difference is not None:
        assert converted.upstream_forcing is not None
        result.forcing_differences.append(
            ForcingDifference(
                case.id, difference, converted.upstream_forcing, spec.pde.forcing["f"]
            )
        )
    leaking = tuple(k for k, e in errors.items() if e < LEAK_TOLERANCE)
    if leaking:
        result.leaks.append(LeakReport(case.id, upstream_id, leaking, errors))


def summary_dict(result: UpstreamImport) -> dict[str, Any]:
    """The report as JSON-able data (non-finite numbers as None)."""

    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    return {
        "imported": len(result.cases),
        "manufactured": result.manufactured,
        "leaking": len(result.leaks),
        "leak_share": result.leak_share,
        "leak_tolerance": LEAK_TOLERANCE,
        "leaks": [
            {
                "case_id": r.case_id,
                "upstream_id": r.upstream_id,
                "expressions": list(r.expressions),
                "errors": {k: num(v) for k, v in r.errors.items()},
            }
            for r in result.leaks
        ],
        "skipped": [{"upstream": who, "reason": why} for who, why in result.skipped],
        "skipped_by_reason": [
            {"reason": why, "count": n} for why, n in result.skipped_by_reason().items()
        ],
        "import_notes": [
            {
                "case_id": case_id,
                "upstream_id": result.upstream_ids[case_id],
                "notes": [n.as_dict() for n in notes],
            }
            for case_id, notes in result.import_notes.items()
        ],
        "forcing_differences": [
            {"case_id": d.case_id, "relative_difference": num(d.relative_difference)}
            for d in result.forcing_differences
        ],
        "rejected_by_validator": list(result.rejected_by_validator),
        "notes": [{"case_id": c, "note": n} for c, n in result.notes],
    }


__all__ = [
    "LEAK_TOLERANCE",
    "ForcingDifference",
    "ImportNote",
    "LeakReport",
    "UpstreamImport",
    "import_upstream",
    "sanitize_id",
    "summary_dict",
]
