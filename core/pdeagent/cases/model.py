"""attrs models of the case record (SPEC §3) and the one cattrs converter.

Expressions are strings in sympy syntax over ``x, y, z, t, pi``; a vector-valued
expression is a list of such strings (one per component).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import cattrs
from attrs import define, field
from cattrs.gen import make_dict_unstructure_fn, override

SCHEMA_VERSION = 1

Expr = str
ExprOrVector = str | list[str]


@define(frozen=True)
class PdeClassification:
    equation_family: str
    math_type: list[str]


@define(frozen=True)
class TimeSpec:
    t0: float
    t_end: float


@define(frozen=True)
class Pde:
    type: str
    params: dict[str, Any] = field(factory=dict)
    """Coefficients (numbers or expressions) and stated options (e.g. ``reaction_law``)."""
    forcing: dict[str, ExprOrVector] = field(factory=dict)
    time: TimeSpec | None = None


@define(frozen=True)
class Domain:
    type: str
    bounds: list[list[float]]
    """Bounding box of the domain, one ``[min, max]`` per axis."""
    geometry_params: dict[str, Any] = field(factory=dict)


@define(frozen=True)
class BoundaryCondition:
    """Dirichlet or Neumann data on named boundary parts.

    ``quantity`` says what is prescribed when the family has several unknowns or
    a fourth-order operator (e.g. ``u`` and ``laplacian_u`` for biharmonic,
    ``velocity`` for Stokes); None means the primary unknown.
    """

    boundary: list[str]
    value: ExprOrVector
    quantity: str | None = None


@define(frozen=True)
class RobinCondition:
    """``kappa * du/dn + alpha * u = value`` on ``boundary``."""

    boundary: list[str]
    alpha: float | str
    value: ExprOrVector


@define(frozen=True)
class PeriodicCondition:
    """``u`` on ``boundary`` equals ``u`` on ``partner`` (shifted along ``axis``)."""

    axis: Literal["x", "y", "z"]
    boundary: str
    partner: str


@define(frozen=True)
class BoundaryConditions:
    dirichlet: list[BoundaryCondition] = field(factory=list)
    neumann: list[BoundaryCondition] = field(factory=list)
    robin: list[RobinCondition] = field(factory=list)
    periodic: list[PeriodicCondition] = field(factory=list)


@define(frozen=True)
class EvalGrid:
    nx: int
    ny: int
    bbox: list[float]
    """``[xmin, xmax, ymin, ymax]`` or ``[xmin, xmax, ymin, ymax, zmin, zmax]``."""
    nz: int | None = None
    type: Literal["cartesian"] = "cartesian"
    mask_outside: bool = True

    @property
    def dim(self) -> int:
        return 2 if self.nz is None else 3

    @property
    def shape(self) -> tuple[int, ...]:
        """Array shape of a scalar field on this grid: (ny, nx) or (nz, ny, nx)."""
        if self.nz is None:
            return (self.ny, self.nx)
        return (self.nz, self.ny, self.nx)


PRESSURE_NORMALIZATIONS: tuple[str, ...] = ("zero_mean", "absolute")
"""How a scored pressure is compared (:attr:`PressureOutput.normalization`)."""

FLOW_FAMILIES: frozenset[str] = frozenset({"stokes", "navier_stokes"})
"""Families whose output may carry a separately scored pressure."""


@define(frozen=True)
class PressureOutput:
    """The pressure of a flow case, written as its own array and scored as its own group."""

    array: str
    """Array name of the pressure (``p``)."""
    normalization: Literal["zero_mean", "absolute"]
    """``zero_mean``: the velocity is prescribed on the whole boundary and no condition
    involves the pressure or the traction, so the pressure is determined only up to an
    additive constant; scoring subtracts the mean over the scored grid points from the
    submitted and (separately) from the reference pressure. ``absolute``: a boundary
    condition fixes the constant; the pressure is compared as it is."""


@define(frozen=True)
class OutputSpec:
    field: str
    """Name of the scored scalar (``u``, ``velocity_magnitude``) or of the vector field."""
    components: list[str] | None = None
    """Array names of a vector output scored component-wise (``u_x``, ``u_y``)."""
    format: Literal["npz"] = "npz"
    pressure: PressureOutput | None = None
    """Flow cases: the pressure array, scored separately from the velocity (absent in
    records before dataset 2.0 and in every non-flow case; omitted from the record when
    None)."""
    reason: str | None = None
    """Why a vector family's case scores a derived scalar only (``velocity_magnitude``);
    omitted from the record when None."""

    @property
    def field_arrays(self) -> list[str]:
        """The arrays of the field itself: the components, or ``[field]``."""
        return list(self.components) if self.components else [self.field]

    @property
    def arrays(self) -> list[str]:
        """Names of the arrays that are scored: the field's arrays, then the pressure's."""
        pressure = [self.pressure.array] if self.pressure is not None else []
        return [*self.field_arrays, *pressure]

    @property
    def groups(self) -> list[tuple[str, list[str]]]:
        """The groups scored separately, as ``(group name, array names)``: the field
        (named :attr:`field`) and, when present, the pressure (named by its array). A
        case's verdict error is the largest relative L2 error of its groups
        (:func:`pdeagent.scoring.metrics.case_error`)."""
        groups = [(self.field, self.field_arrays)]
        if self.pressure is not None:
            groups.append((self.pressure.array, [self.pressure.array]))
        return groups


def output_arrays(output: Mapping[str, Any]) -> list[str]:
    """:attr:`OutputSpec.arrays` of an unstructured output spec (the agent-view dict)."""
    names = list(output.get("components") or [output["field"]])
    pressure = output.get("pressure")
    if pressure:
        names.append(pressure["array"])
    return names


@define(frozen=True)
class NumericalDecision:
    """A decision the agent is expected to make: its name and role, never a value."""

    name: Literal[
        "mesh_resolution",
        "element_degree",
        "time_step",
        "time_scheme",
        "stabilization",
        "linearization",
        "linear_solver",
        "formulation",
    ]
    role: str


@define(frozen=True)
class CaseSpec:
    """The only part of a case an agent ever sees."""

    pde: Pde
    domain: Domain
    bc: BoundaryConditions
    eval_grid: EvalGrid
    output: OutputSpec
    ic: dict[str, ExprOrVector] | None = None
    numerical_decisions: list[NumericalDecision] = field(factory=list)


@define(frozen=True)
class EvaluationConfig:
    timeout_sec: float = 600.0
    alpha_acc: float = 10.0
    alpha_time: float = 3.0
    tau_min: float = 1e-6
    target_metric: Literal["rel_L2_grid"] = "rel_L2_grid"
    timed_repeats: int = 3


LEGACY_PROTOCOL = 1
"""Timing protocol of dataset 1.x: one cache per submission, warmed by its accuracy run and
reused by its timed repeats; ``tau_time = alpha_time * t_base``; no t_null."""
PRISTINE_PROTOCOL = 2
"""SPEC §7: every graded run (the accuracy run and each timed repeat) starts from a fresh
work dir and fresh caches, every repeat is checked and gated like the accuracy run;
``tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)``; ``tau_acc <= 1e-2``.
The accuracy run is not timed: ``timed_repeats`` more runs follow it."""
ALL_RUNS_TIMED_PROTOCOL = 3
"""SPEC §7, protocol 3: as :data:`PRISTINE_PROTOCOL` (every run pristine, checked and
gated; the same thresholds rules), and since every run is the same pristine run the
accuracy run is also the first timing sample: ``timed_repeats`` runs in all, the later
ones only after the first passed stages 1-2; ``t`` is the median of all of them. One
run fewer per passing submission."""
PROTOCOLS = (LEGACY_PROTOCOL, PRISTINE_PROTOCOL, ALL_RUNS_TIMED_PROTOCOL)


DEFAULT_BASELINE_RULE = "default-baseline"
"""Thresholds without a selection (datasets 1.x, ``pdeagent calibrate``): the baseline is
the track's calibration solver at its default configuration."""


@define(frozen=True)
class Thresholds:
    e_base: float
    t_base: float
    tau_acc: float
    tau_time: float
    calibrated_on: dict[str, Any] = field(factory=dict)
    """Machine fingerprint the baseline was measured on."""
    protocol: int = LEGACY_PROTOCOL
    """The timing protocol e_base/t_base were measured with; a submission is graded
    against them with the same protocol (see :data:`PRISTINE_PROTOCOL`)."""
    t_null: float | None = None
    """Median time of the track's null program on the same machine, same protocol."""
    t_noise: float | None = None
    """Timing noise: the largest spread (max - min) of the null program's and the
    baseline's timed repeats; the solve allowance of tau_time is never below it
    (:func:`pdeagent.scoring.verdict.thresholds`). Pristine protocol only."""
    selection: dict[str, Any] | None = None
    """How the baseline configuration was chosen (frontier rule, trial table)."""

    @property
    def rule(self) -> str:
        """The rule that chose the baseline: the frontier rule of :attr:`selection`
        (``frontier-1``, ``frontier-2``), else :data:`DEFAULT_BASELINE_RULE`."""
        rule = (self.selection or {}).get("rule")
        return rule if isinstance(rule, str) and rule else DEFAULT_BASELINE_RULE


@define(frozen=True)
class EvaluationMetadata:
    """Evaluator-only data: never shown to an agent, never readable by a solver."""

    construction_method: Literal["manufactured_solution", "reference_numerical"]
    manufactured_solution: dict[str, Expr] | None = None
    """One expression per scored array name (see :attr:`OutputSpec.arrays`)."""
    reference_config: dict[str, Any] | None = None
    calibration_config: dict[str, Any] | None = None
    reference_path: str | None = None
    """Path of the reference arrays (npz) relative to the dataset, for no-exact cases."""
    thresholds: dict[str, Thresholds] = field(factory=dict)
    """Per track name."""


@define(frozen=True)
class Tags:
    structure: str | None = None
    difficulty: str | None = None


@define(frozen=True)
class Case:
    id: str
    pde_classification: PdeClassification
    case_spec: CaseSpec
    evaluation_config: EvaluationConfig
    evaluation_metadata: EvaluationMetadata
    supported_libraries: list[str]
    tags: Tags = field(factory=Tags)
    schema_version: int = SCHEMA_VERSION
    dataset_version: str | None = None
    """``major.minor.patch`` of the dataset (see :mod:`pdeagent.cases.versioning`)."""

    @property
    def family(self) -> str:
        return self.pde_classification.equation_family


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True, omit_if_default=False)

    def _structure_expr_or_vector(obj: Any, _: Any) -> ExprOrVector:
        if isinstance(obj, str):
            return obj
        if isinstance(obj, list) and all(isinstance(o, str) for o in obj):
            return list(obj)
        raise ValueError(f"expected an expression string or a list of them, got {obj!r}")

    def _structure_number_or_expr(obj: Any, _: Any) -> float | str:
        if isinstance(obj, bool):
            raise ValueError(f"expected a number or an expression, got {obj!r}")
        if isinstance(obj, int | float | str):
            return obj
        raise ValueError(f"expected a number or an expression, got {obj!r}")

    conv.register_structure_hook_func(lambda t: t == ExprOrVector, _structure_expr_or_vector)
    conv.register_structure_hook_func(lambda t: t == (float | str), _structure_number_or_expr)
    # the optional entries of an output spec are left out when unset, so a record without
    # them (dataset 1.x, every non-flow case) keeps its exact form and agent view
    conv.register_unstructure_hook(
        OutputSpec,
        make_dict_unstructure_fn(
            OutputSpec,
            conv,
            pressure=override(omit_if_default=True),
            reason=override(omit_if_default=True),
        ),
    )
    return conv


converter = _make_converter()
"""The one converter between case records (JSON-able dicts) and attrs models."""


def case_from_dict(data: dict[str, Any]) -> Case:
    return converter.structure(data, Case)


def case_to_dict(case: Case) -> dict[str, Any]:
    return converter.unstructure(case)
