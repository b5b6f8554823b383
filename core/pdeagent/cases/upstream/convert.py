"""One upstream record -> one case record (before the numerical checks)."""

from __future__ import annotations

import math
from typing import Any

from attrs import define, field

from pdeagent.cases.expressions import ExpressionError
from pdeagent.cases.families import FAMILIES, Family
from pdeagent.cases.mms import MMSError, forcing
from pdeagent.cases.model import SCHEMA_VERSION, EvaluationConfig, ExprOrVector, converter
from pdeagent.cases.upstream.conditions import (
    _COMPONENT_NAMES,
    _boundary,
    _burgers_initial,
    _burgers_time,
    _initial,
    _time,
)
from pdeagent.cases.upstream.domain import _map_domain
from pdeagent.cases.upstream.limits import MAX_GRID_POINTS
from pdeagent.cases.upstream.oracle import BURGERS_DT, ImportNote, _evidence
from pdeagent.cases.upstream.params import _params
from pdeagent.cases.upstream.reading import (
    _dict,
    _expression,
    _integer,
    _number,
    _short,
    _Skip,
    _vector,
)
from pdeagent.cases.validate import KNOWN_LIBRARIES
from pdeagent.geometry import GeometryError, get_geometry


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
