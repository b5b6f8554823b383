"""Time interval, boundary conditions and initial fields of an upstream record."""

from __future__ import annotations

import math
from typing import Any

import sympy as sp

from pdeagent.cases.expressions import SYMBOLS, parse_expression
from pdeagent.cases.families import Family
from pdeagent.cases.mms import laplacian
from pdeagent.cases.model import ExprOrVector
from pdeagent.cases.upstream.oracle import (
    _PARTIAL_DIRICHLET,
    BURGERS_DT,
    BURGERS_T_FINAL,
    ImportNote,
    _evidence,
)
from pdeagent.cases.upstream.reading import _dict, _expression, _number, _short, _Skip, _vector
from pdeagent.geometry import Geometry

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
