"""Semantic checks of one structured case record (step 3 of
:func:`pdeagent.cases.validate.validate_records`).

Family rules, expressions, geometry and boundary tags, evaluation grid, output arrays
(and a flow case's pressure entry), libraries, construction method, thresholds, and the
no-leak rule of SPEC §4; the decisions are listed in :mod:`pdeagent.cases.validate`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from pdeagent.cases.expressions import (
    COORDINATES,
    RESERVED_NAMES,
    ExpressionError,
    compile_expression,
    is_parameter_name,
    parse_expression,
)
from pdeagent.cases.families import FAMILIES, MATH_TYPES, Family, flow_pressure_normalization
from pdeagent.cases.model import (
    FLOW_FAMILIES,
    PRESSURE_NORMALIZATIONS,
    PRISTINE_PROTOCOL,
    SCHEMA_VERSION,
    Case,
)
from pdeagent.cases.problems import Problem
from pdeagent.geometry import GEOMETRY_TEMPLATES, GeometryError, get_geometry
from pdeagent.scoring.verdict import TAU_ACC_MAX, thresholds

REFERENCE_CONFIG_KEYS: tuple[str, ...] = ("mesh_resolution", "element_degree")
"""Keys every ``reference_config`` must have; transient cases also need ``time_step``."""

DERIVED_SCALAR_OUTPUTS: dict[str, frozenset[str]] = {
    "linear_elasticity": frozenset({"displacement_magnitude"}),
    "stokes": frozenset({"velocity_magnitude"}),
    "navier_stokes": frozenset({"velocity_magnitude"}),
}
"""Scalars a vector family may output instead of its components."""

ELASTIC_PARAMETER_SETS: tuple[frozenset[str], ...] = (
    frozenset({"E", "nu"}),
    frozenset({"young_modulus", "poisson_ratio"}),
    frozenset({"lambda", "mu"}),
)
"""Linear elasticity must state one of these parameter pairs."""

PRIMARY_QUANTITIES = frozenset({None, "u", "displacement", "velocity"})
"""BC quantities that prescribe the (scored) primary unknown itself."""

LEAK_TOLERANCE = 1e-2
"""SPEC §4 rejection rule: a Dirichlet/initial expression within this relative L2 distance of
the manufactured solution inside the domain (a coarse interior lattice) leaks it (raised to
the largest ``tau_acc`` of the case). Other leak limits measure other things and are their
own constants: the upstream import's report threshold
(:data:`pdeagent.cases.upstream.LEAK_TOLERANCE`, on the scored grid points) and the case
builder's :data:`pdeagent.cases.build.CHEAT_FLOOR` (the scored error of each cheat)."""

THRESHOLD_RTOL = 1e-9
BOUNDS_TOL = 1e-9
MAX_GRID_POINTS = 50_000_000

_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ARRAY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_AXES = ("x", "y", "z")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _RecordChecker:
    """Semantic checks of one structured case."""

    def __init__(self, case: Case, line: int | None, tracks: frozenset[str]) -> None:
        self.case = case
        self.line = line
        self.tracks = tracks
        self.problems: list[Problem] = []
        self.geometry: Any = None
        spec = case.case_spec
        self.transient = spec.pde.time is not None
        self.dim = (
            len(spec.domain.bounds) if len(spec.domain.bounds) in (2, 3) else spec.eval_grid.dim
        )
        self.params = {
            k: v for k, v in spec.pde.params.items() if is_parameter_name(k) and _is_number(v)
        }

    def add(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.case.id, self.line, field, message))

    def run(self) -> list[Problem]:
        self.check_id()
        self.check_geometry()
        family = self.check_family()
        if family is not None:
            self.check_time(family)
            self.check_params(family)
            self.check_ic(family)
            self.check_bc(family)
            self.check_output(family)
        self.check_forcing()
        self.check_grid()
        self.check_libraries()
        self.check_evaluation_config()
        self.check_construction()
        self.check_thresholds()
        if not self.problems:
            self.check_leaks()
        return self.problems

    # -- helpers

    @property
    def symbols(self) -> tuple[str, ...]:
        coords = COORDINATES[: self.dim]
        return (*coords, "t") if self.transient else coords

    def expression(self, field: str, value: Any, *, components: int | None = None) -> None:
        """Check an expression or vector of expressions (number allowed where noted)."""
        if isinstance(value, list):
            if components is not None and len(value) != components:
                self.add(field, f"vector has {len(value)} components, expected {components}")
            for i, item in enumerate(value):
                self.expression(f"{field}[{i}]", item)
            return
        if _is_number(value):
            if not math.isfinite(value):
                self.add(field, "number must be finite")
            return
        try:
            parse_expression(value, allowed_symbols=self.symbols, parameters=self.params)
        except ExpressionError as exc:
            self.add(field, f"invalid expression: {exc}")
            return
        if "E" in self.case.case_spec.pde.params and re.search(r"\bE\b", value):
            self.add(
                field,
                "ambiguous name 'E': it is a parameter of this case and Euler's number in "
                "expressions; write exp(1) or the parameter's value",
            )

    # -- checks

    def check_id(self) -> None:
        if not _ID_PATTERN.match(self.case.id):
            self.add("id", "id must match [A-Za-z0-9][A-Za-z0-9_.-]* (it names files)")
        if self.case.schema_version != SCHEMA_VERSION:
            self.add(
                "schema_version",
                f"unsupported schema_version {self.case.schema_version} "
                f"(this version reads {SCHEMA_VERSION})",
            )

    def check_family(self) -> Family | None:
        cls = self.case.pde_classification
        family = FAMILIES.get(cls.equation_family)
        if family is None:
            known = ", ".join(sorted(FAMILIES))
            self.add(
                "pde_classification.equation_family",
                f"unknown equation family {cls.equation_family!r} (known: {known})",
            )
        elif self.case.case_spec.pde.type != cls.equation_family:
            self.add(
                "case_spec.pde.type",
                f"{self.case.case_spec.pde.type!r} does not match "
                f"pde_classification.equation_family {cls.equation_family!r}",
            )
        field = "pde_classification.math_type"
        if not cls.math_type:
            self.add(field, "math_type is empty")
        if len(set(cls.math_type)) != len(cls.math_type):
            self.add(field, "duplicate math type")
        for i, math_type in enumerate(cls.math_type):
            if math_type not in MATH_TYPES:
                self.add(f"{field}[{i}]", f"unknown math type {math_type!r}")
            elif family is not None and math_type not in family.math_types:
                allowed = ", ".join(sorted(family.math_types))
                self.add(
                    f"{field}[{i}]",
                    f"math type {math_type!r} is not allowed for family {family.name} "
                    f"(allowed: {allowed})",
                )
        if family is not None and cls.math_type and family.primary_math_type not in cls.math_type:
            self.add(
                field, f"must include the family's primary math type {family.primary_math_type!r}"
            )
        return family

    def check_time(self, family: Family) -> None:
        time = self.case.case_spec.pde.time
        if family.time == "required" and time is None:
            self.add("case_spec.pde.time", f"family {family.name} is transient: time is required")
        elif family.time == "forbidden" and time is not None:
            self.add(
                "case_spec.pde.time", f"family {family.name} is stationary: time must be absent"
            )
        if time is not None and not time.t_end > time.t0:
            self.add(
                "case_spec.pde.time.t_end",
                f"t_end ({time.t_end}) must be greater than t0 ({time.t0})",
            )

    def check_params(self, family: Family) -> None:
        params = self.case.case_spec.pde.params
        base = "case_spec.pde.params"
        for name in sorted(family.required_params - params.keys()):
            self.add(f"{base}.{name}", f"required parameter of family {family.name} is missing")
        for name in sorted(family.required_options - params.keys()):
            allowed = ", ".join(sorted(family.options[name]))
            self.add(
                f"{base}.{name}",
                f"required option of family {family.name} is missing (one of: {allowed})",
            )
        for name, value in params.items():
            field = f"{base}.{name}"
            if name in family.options:
                if not isinstance(value, str) or value not in family.options[name]:
                    allowed = ", ".join(sorted(family.options[name]))
                    self.add(field, f"option value {value!r} is not allowed (one of: {allowed})")
                continue
            if name in RESERVED_NAMES and name != "E":
                self.add(
                    field,
                    f"parameter name {name!r} is reserved in expressions "
                    "(coordinates, t, pi, E, function names); rename it",
                )
            if isinstance(value, str | list) or _is_number(value):
                components = self.dim if isinstance(value, list) else None
                if isinstance(value, list) and not all(
                    isinstance(v, str) or _is_number(v) for v in value
                ):
                    self.add(field, "vector parameter entries must be numbers or expressions")
                    continue
                self.expression(field, value, components=components)
            else:
                self.add(
                    field, "parameter must be a number, an expression string or a list of them"
                )
        if family.name == "linear_elasticity" and not any(
            pair <= params.keys() for pair in ELASTIC_PARAMETER_SETS
        ):
            sets = " or ".join(" and ".join(sorted(pair)) for pair in ELASTIC_PARAMETER_SETS)
            self.add(base, f"linear elasticity must state {sets}")
        model = params.get("model")
        if family.name == "linear_elasticity" and isinstance(model, str):
            if (model == "3d") != (self.dim == 3):
                self.add(f"{base}.model", f"model {model!r} does not fit a {self.dim}-D domain")

    def check_ic(self, family: Family) -> None:
        ic = self.case.case_spec.ic
        if not self.transient:
            if ic:
                self.add("case_spec.ic", "a stationary case must not give initial conditions")
            return
        ic = ic or {}
        for name in sorted(family.ic_fields - ic.keys()):
            self.add(f"case_spec.ic.{name}", "initial condition is required for a transient case")
        for name, value in ic.items():
            field = f"case_spec.ic.{name}"
            if name not in family.ic_fields:
                allowed = ", ".join(sorted(family.ic_fields))
                self.add(field, f"unknown initial field (family {family.name} has: {allowed})")
            self.expression(field, value, components=self.dim if isinstance(value, list) else None)

    def check_forcing(self) -> None:
        for name, value in self.case.case_spec.pde.forcing.items():
            components = self.dim if isinstance(value, list) else None
            self.expression(f"case_spec.pde.forcing.{name}", value, components=components)

    def _check_tag(self, field: str, tag: str, *, allow_all: bool = True) -> None:
        if self.geometry is None:
            return
        tags = self.geometry.boundary_tags
        if tag == "all" and allow_all:
            return
        if tag not in tags:
            known = ", ".join(("all", *tags) if allow_all else tags)
            self.add(
                field,
                f"unknown boundary tag {tag!r} for geometry {self.case.case_spec.domain.type} "
                f"(known: {known})",
            )

    def check_bc(self, family: Family) -> None:
        bc = self.case.case_spec.bc
        for kind in ("dirichlet", "neumann"):
            for i, cond in enumerate(getattr(bc, kind)):
                base = f"case_spec.bc.{kind}[{i}]"
                self._check_boundary_list(f"{base}.boundary", cond.boundary)
                if cond.quantity is not None and cond.quantity not in family.bc_quantities:
                    allowed = ", ".join(sorted(family.bc_quantities))
                    self.add(
                        f"{base}.quantity",
                        f"quantity {cond.quantity!r} is not allowed for family {family.name} "
                        f"(allowed: {allowed})",
                    )
                self.expression(
                    f"{base}.value",
                    cond.value,
                    components=self.dim if isinstance(cond.value, list) else None,
                )
        for i, robin in enumerate(bc.robin):
            base = f"case_spec.bc.robin[{i}]"
            self._check_boundary_list(f"{base}.boundary", robin.boundary)
            self.expression(f"{base}.alpha", robin.alpha)
            self.expression(
                f"{base}.value",
                robin.value,
                components=self.dim if isinstance(robin.value, list) else None,
            )
        for i, periodic in enumerate(bc.periodic):
            base = f"case_spec.bc.periodic[{i}]"
            if _AXES.index(periodic.axis) >= self.dim:
                self.add(f"{base}.axis", f"axis {periodic.axis!r} does not exist in {self.dim}-D")
            self._check_tag(f"{base}.boundary", periodic.boundary, allow_all=False)
            self._check_tag(f"{base}.partner", periodic.partner, allow_all=False)
            if periodic.boundary == periodic.partner:
                self.add(f"{base}.partner", "partner must differ from boundary")

    def _check_boundary_list(self, field: str, tags: list[str]) -> None:
        if not tags:
            self.add(field, "boundary list is empty")
        for tag in tags:
            self._check_tag(field, tag)

    def check_geometry(self) -> None:
        domain = self.case.case_spec.domain
        if domain.type not in GEOMETRY_TEMPLATES:
            known = ", ".join(sorted(GEOMETRY_TEMPLATES))
            self.add("case_spec.domain.type", f"unknown geometry {domain.type!r} (known: {known})")
            return
        try:
            geometry = get_geometry(domain.type, domain.geometry_params)
        except GeometryError as exc:
            self.add("case_spec.domain.geometry_params", str(exc))
            return
        self.geometry = geometry
        self.dim = geometry.dim
        bbox = geometry.bbox()
        bounds = domain.bounds
        close = len(bounds) == len(bbox) and all(
            abs(a - b) <= BOUNDS_TOL * max(1.0, abs(b))
            for pair, ref in zip(bounds, bbox, strict=True)
            for a, b in zip(pair, ref, strict=True)
        )
        if not close:
            self.add(
                "case_spec.domain.bounds",
                f"bounds {bounds} differ from the bounding box {bbox} of the geometry",
            )

    def check_grid(self) -> None:
        grid = self.case.case_spec.eval_grid
        base = "case_spec.eval_grid"
        if self.dim == 3 and grid.nz is None:
            self.add(f"{base}.nz", "nz is required for a 3-D domain")
        elif self.dim != 3 and grid.nz is not None:
            self.add(f"{base}.nz", f"nz must be absent for a {self.dim}-D domain")
        counts = {"nx": grid.nx, "ny": grid.ny, "nz": grid.nz}
        for name, n in counts.items():
            if n is not None and n < 2:
                self.add(f"{base}.{name}", f"{name} must be at least 2, got {n}")
        total = math.prod(n for n in counts.values() if n is not None and n > 0)
        if total > MAX_GRID_POINTS:
            self.add(base, f"grid too large ({total} points > {MAX_GRID_POINTS})")
        if len(grid.bbox) != 2 * self.dim:
            self.add(
                f"{base}.bbox",
                f"bbox needs {2 * self.dim} numbers for a {self.dim}-D domain, "
                f"got {len(grid.bbox)}",
            )
            return
        bounds = self.case.case_spec.domain.bounds
        for axis in range(self.dim):
            lo, hi = grid.bbox[2 * axis], grid.bbox[2 * axis + 1]
            name = _AXES[axis]
            if not lo < hi:
                self.add(f"{base}.bbox", f"{name}: min ({lo}) must be less than max ({hi})")
                continue
            if axis < len(bounds) and len(bounds[axis]) == 2:
                dlo, dhi = bounds[axis]
                if lo > dlo + BOUNDS_TOL or hi < dhi - BOUNDS_TOL:
                    self.add(
                        f"{base}.bbox",
                        f"{name}: [{lo}, {hi}] does not cover the domain bounds [{dlo}, {dhi}]",
                    )

    def check_output(self, family: Family) -> None:
        output = self.case.case_spec.output
        base = "case_spec.output"
        names = [output.field, *(output.components or [])]
        for name in names:
            if not _ARRAY_NAME.match(name) or name in _AXES:
                self.add(base, f"array name {name!r} must be an identifier and not x, y or z")
        if family.vector_output:
            derived = DERIVED_SCALAR_OUTPUTS.get(family.name, frozenset())
            if output.components is None:
                if output.field not in derived:
                    allowed = ", ".join(sorted(derived)) or "none"
                    self.add(
                        f"{base}.components",
                        f"family {family.name} has a vector output: give components or a "
                        f"derived scalar field (allowed: {allowed})",
                    )
            elif len(output.components) != self.dim:
                self.add(
                    f"{base}.components",
                    f"{len(output.components)} components given, expected {self.dim}",
                )
            elif len(set(output.components)) != len(output.components):
                self.add(f"{base}.components", "duplicate component names")
        elif output.components is not None:
            self.add(
                f"{base}.components",
                f"family {family.name} has a scalar output: components must be absent",
            )
        if output.reason is not None:
            if not (family.vector_output and output.components is None):
                self.add(
                    f"{base}.reason",
                    "a reason is given only for a vector family's derived scalar output "
                    "(why the case scores the magnitude only)",
                )
            elif output.pressure is not None:
                self.add(
                    f"{base}.reason",
                    "a reason explains a magnitude-only output: it must be absent when the "
                    "pressure is scored too",
                )
            elif not output.reason.strip():
                self.add(f"{base}.reason", "reason must not be empty")
        if output.pressure is not None:
            self.check_pressure(family, names)

    def check_pressure(self, family: Family, names: list[str]) -> None:
        """Rules of ``output.pressure``: a flow family only; the array name an identifier
        distinct from the field and component names; the normalization the one the
        boundary conditions imply (:func:`flow_pressure_normalization`)."""
        pressure = self.case.case_spec.output.pressure
        assert pressure is not None
        base = "case_spec.output.pressure"
        if family.name not in FLOW_FAMILIES:
            flows = " and ".join(sorted(FLOW_FAMILIES))
            self.add(
                base,
                f"a pressure output is defined only for {flows}; family {family.name} has "
                "no pressure",
            )
            return
        name = pressure.array
        if not _ARRAY_NAME.match(name) or name in _AXES:
            self.add(
                f"{base}.array", f"array name {name!r} must be an identifier and not x, y or z"
            )
        elif name in names:
            self.add(
                f"{base}.array",
                f"array name {name!r} is already the name of the field or a component",
            )
        if pressure.normalization not in PRESSURE_NORMALIZATIONS:
            allowed = ", ".join(PRESSURE_NORMALIZATIONS)
            self.add(
                f"{base}.normalization",
                f"unknown normalization {pressure.normalization!r} (one of: {allowed})",
            )
            return
        if self.geometry is None:
            return
        implied = flow_pressure_normalization(self.case.case_spec.bc, self.geometry.boundary_tags)
        if pressure.normalization != implied:
            why = (
                "the velocity is prescribed on the whole boundary and no condition involves "
                "the pressure or the traction: the pressure is determined only up to a "
                "constant"
                if implied == "zero_mean"
                else "a boundary condition fixes the pressure (a traction or pressure "
                "condition, or a boundary part without a velocity condition)"
            )
            self.add(
                f"{base}.normalization",
                f"normalization {pressure.normalization!r} does not fit the boundary "
                f"conditions: {why}, so it must be {implied!r}",
            )

    def check_libraries(self) -> None:
        libs = self.case.supported_libraries
        if not libs:
            self.add("supported_libraries", "must list at least one library")
        seen: set[str] = set()
        for i, lib in enumerate(libs):
            field = f"supported_libraries[{i}]"
            if lib in seen:
                self.add(field, f"duplicate library {lib!r}")
            seen.add(lib)
            if lib not in self.tracks:
                known = ", ".join(sorted(self.tracks))
                self.add(field, f"unknown library {lib!r} (known: {known})")

    def check_evaluation_config(self) -> None:
        cfg = self.case.evaluation_config
        base = "evaluation_config"
        positive = {
            "timeout_sec": cfg.timeout_sec,
            "alpha_acc": cfg.alpha_acc,
            "alpha_time": cfg.alpha_time,
            "timed_repeats": cfg.timed_repeats,
        }
        for name, value in positive.items():
            if not value > 0:
                self.add(f"{base}.{name}", f"must be positive, got {value}")
        if not cfg.tau_min >= 0:
            self.add(f"{base}.tau_min", f"must not be negative, got {cfg.tau_min}")

    def check_construction(self) -> None:
        meta = self.case.evaluation_metadata
        base = "evaluation_metadata"
        for name, value in (meta.manufactured_solution or {}).items():
            self.expression(f"{base}.manufactured_solution.{name}", value)
        if meta.construction_method == "manufactured_solution":
            solution = meta.manufactured_solution or {}
            if not solution:
                self.add(
                    f"{base}.manufactured_solution",
                    "required when construction_method is manufactured_solution",
                )
                return
            for name in self.case.case_spec.output.arrays:
                if name not in solution:
                    self.add(
                        f"{base}.manufactured_solution",
                        f"missing expression for output array {name!r}",
                    )
        else:
            config = meta.reference_config
            field = f"{base}.reference_config"
            if not config:
                self.add(field, "a complete reference_config is required for reference_numerical")
                return
            required = [*REFERENCE_CONFIG_KEYS, *(["time_step"] if self.transient else [])]
            for key in required:
                if key not in config:
                    self.add(f"{field}.{key}", "required key of reference_config is missing")
            degree = config.get("element_degree")
            if degree is not None and not (isinstance(degree, int) and degree >= 1):
                self.add(f"{field}.element_degree", "must be an integer >= 1")
            resolution = config.get("mesh_resolution")
            if resolution is not None and not _positive_resolution(resolution):
                self.add(f"{field}.mesh_resolution", "must be a positive integer (or list of them)")
            step = config.get("time_step")
            if step is not None and not (_is_number(step) and step > 0):
                self.add(f"{field}.time_step", "must be a positive number")

    def check_thresholds(self) -> None:
        cfg = self.case.evaluation_config
        for lib, th in self.case.evaluation_metadata.thresholds.items():
            base = f"evaluation_metadata.thresholds.{lib}"
            if lib not in self.case.supported_libraries:
                self.add(base, f"thresholds for {lib!r}, which is not in supported_libraries")
            if not th.e_base >= 0:
                self.add(f"{base}.e_base", f"must not be negative, got {th.e_base}")
            if not th.t_base > 0:
                self.add(f"{base}.t_base", f"must be positive, got {th.t_base}")
            pristine = th.protocol >= PRISTINE_PROTOCOL
            if pristine and th.t_null is None:
                self.add(f"{base}.t_null", "pristine-protocol thresholds must carry t_null")
            if not pristine and th.t_null is not None:
                self.add(f"{base}.t_null", "legacy-protocol thresholds have no t_null")
            if th.t_null is not None and not (math.isfinite(th.t_null) and th.t_null >= 0):
                self.add(f"{base}.t_null", f"must be finite and >= 0, got {th.t_null}")
                continue
            if th.t_noise is not None:
                if th.t_null is None:
                    self.add(f"{base}.t_noise", "a timing noise floor needs t_null")
                if not (math.isfinite(th.t_noise) and th.t_noise >= 0):
                    self.add(f"{base}.t_noise", f"must be finite and >= 0, got {th.t_noise}")
                    continue
            if not (math.isfinite(th.e_base) and math.isfinite(th.t_base)) or th.t_base <= 0:
                continue
            try:
                want_acc, want_time = thresholds(
                    th.e_base,
                    th.t_base,
                    alpha_acc=cfg.alpha_acc,
                    alpha_time=cfg.alpha_time,
                    tau_min=cfg.tau_min,
                    t_null=th.t_null if pristine else None,
                    tau_acc_max=TAU_ACC_MAX if pristine else None,
                    t_noise=th.t_noise if pristine else None,
                )
            except ValueError:
                continue  # a bad alpha or tau_min: reported by the evaluation_config check
            acc_rule = "max(alpha_acc*e_base, tau_min)" + (f" capped at {TAU_ACC_MAX}" * pristine)
            if not math.isclose(th.tau_acc, want_acc, rel_tol=THRESHOLD_RTOL, abs_tol=0.0):
                self.add(f"{base}.tau_acc", f"tau_acc {th.tau_acc!r} != {acc_rule} = {want_acc!r}")
            time_rule = (
                "t_null + alpha_time*max(t_base - t_null, t_noise)"
                if pristine
                else "alpha_time*t_base"
            )
            if not math.isclose(th.tau_time, want_time, rel_tol=THRESHOLD_RTOL, abs_tol=0.0):
                self.add(
                    f"{base}.tau_time", f"tau_time {th.tau_time!r} != {time_rule} = {want_time!r}"
                )

    # -- SPEC §4: boundary and initial data must not reveal the interior solution

    def check_leaks(self) -> None:
        meta = self.case.evaluation_metadata
        if meta.construction_method != "manufactured_solution" or not meta.manufactured_solution:
            return
        spec = self.case.case_spec
        points = self._interior_points()
        if points is None:
            return
        t_end = spec.pde.time.t_end if spec.pde.time is not None else 0.0
        t0 = spec.pde.time.t0 if spec.pde.time is not None else 0.0
        # the field's arrays only: boundary and initial data give the velocity, never the
        # pressure, and a leaked velocity gives the pressure away cheaply (integrate the
        # momentum equation), so a separately scored pressure does not make a leak harmless
        arrays = spec.output.field_arrays
        try:
            truth = {
                name: self._evaluate(meta.manufactured_solution[name], points, t_end)
                for name in arrays
            }
        except (ExpressionError, ValueError, TypeError):
            return
        norm = math.sqrt(sum(float(np.sum(v**2)) for v in truth.values()))
        tolerance = max([LEAK_TOLERANCE, *(th.tau_acc for th in meta.thresholds.values())])
        candidates: list[tuple[str, Any, float]] = [
            (f"case_spec.bc.dirichlet[{i}].value", cond.value, t_end)
            for i, cond in enumerate(spec.bc.dirichlet)
            if cond.quantity in PRIMARY_QUANTITIES
        ]
        candidates += [(f"case_spec.ic.{k}", v, t0) for k, v in (spec.ic or {}).items()]
        for field, value, t in candidates:
            guess = self._cheat(value, points, t)
            if guess is None:
                continue
            diff = math.sqrt(sum(float(np.sum((guess[n] - truth[n]) ** 2)) for n in arrays))
            if diff <= tolerance * max(norm, 1e-12):
                self.add(
                    field,
                    "equals the manufactured solution inside the domain: sampling it on the "
                    "grid would pass without solving (SPEC §4 leak)",
                )

    def _evaluate(self, value: str, points: list[np.ndarray], t: float) -> np.ndarray:
        return compile_expression(value, self.dim, parameters=self.params)(*points, t=t)

    def _cheat(
        self, value: Any, points: list[np.ndarray], t: float
    ) -> dict[str, np.ndarray] | None:
        output = self.case.case_spec.output
        try:
            if isinstance(value, str):
                if output.components:
                    return None
                return {output.field: self._evaluate(value, points, t)}
            parts = [self._evaluate(v, points, t) for v in value]
        except (ExpressionError, ValueError, TypeError):
            return None
        if output.components:
            if len(output.components) != len(parts):
                return None
            return dict(zip(output.components, parts, strict=True))
        return {output.field: np.sqrt(sum(p**2 for p in parts))}

    def _interior_points(self) -> list[np.ndarray] | None:
        grid = self.case.case_spec.eval_grid
        if self.geometry is None or len(grid.bbox) != 2 * self.dim:
            return None
        n = 41 if self.dim == 2 else 15
        axes = [
            np.linspace(grid.bbox[2 * a], grid.bbox[2 * a + 1], n)[1:-1] for a in range(self.dim)
        ]
        mesh = [m.ravel() for m in np.meshgrid(*axes, indexing="ij")]
        try:
            inside = np.asarray(self.geometry.inside(*mesh), dtype=bool)
        except Exception:
            return None
        if inside.sum() < 10:
            return None
        return [m[inside] for m in mesh]


def _positive_resolution(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_positive_resolution(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
