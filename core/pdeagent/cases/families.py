"""The 11 PDE families of the benchmark (SPEC §2) as data.

What each family's case_spec must state: its math types, whether it is
transient, which parameters and stated options define it, which quantities a
boundary condition may prescribe and which initial fields a transient case
needs. Used by validation (family/type consistency) and prompt building.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from attrs import define, field

from pdeagent.cases.model import BoundaryConditions

TimeRule = Literal["required", "optional", "forbidden"]


@define(frozen=True)
class Family:
    name: str
    title: str
    math_types: frozenset[str]
    """Math types a case of this family may carry."""
    primary_math_type: str
    """The math type every case of this family carries."""
    time: TimeRule
    required_params: frozenset[str] = frozenset()
    """Parameters every case must state (numbers or expressions)."""
    options: dict[str, frozenset[str]] = field(factory=dict)
    """Stated non-numeric choices (param key -> allowed values); required when listed in
    ``required_options``."""
    required_options: frozenset[str] = frozenset()
    bc_quantities: frozenset[str] = frozenset({"u"})
    """Values allowed for ``BoundaryCondition.quantity`` (None means the primary unknown)."""
    ic_fields: frozenset[str] = frozenset()
    """Initial fields a transient case must give."""
    vector_output: bool = False


MATH_TYPES = frozenset(
    {
        "elliptic",
        "parabolic",
        "hyperbolic",
        "mixed_type",
        "incompressible_flow",
        "reaction_diffusion",
    }
)

FAMILIES: dict[str, Family] = {
    f.name: f
    for f in [
        Family(
            name="poisson",
            title="Poisson",
            math_types=frozenset({"elliptic"}),
            primary_math_type="elliptic",
            time="forbidden",
            required_params=frozenset({"kappa"}),
        ),
        Family(
            name="helmholtz",
            title="Helmholtz",
            math_types=frozenset({"elliptic"}),
            primary_math_type="elliptic",
            time="forbidden",
            required_params=frozenset({"k"}),
        ),
        Family(
            name="biharmonic",
            title="Biharmonic",
            math_types=frozenset({"elliptic"}),
            primary_math_type="elliptic",
            time="forbidden",
            bc_quantities=frozenset({"u", "laplacian_u", "normal_derivative"}),
        ),
        Family(
            name="linear_elasticity",
            title="Linear elasticity",
            math_types=frozenset({"elliptic"}),
            primary_math_type="elliptic",
            time="forbidden",
            options={"model": frozenset({"plane_strain", "plane_stress", "3d"})},
            required_options=frozenset({"model"}),
            bc_quantities=frozenset({"u", "displacement", "traction"}),
            vector_output=True,
        ),
        Family(
            name="heat",
            title="Heat",
            math_types=frozenset({"parabolic"}),
            primary_math_type="parabolic",
            time="required",
            required_params=frozenset({"kappa"}),
            ic_fields=frozenset({"u"}),
        ),
        Family(
            name="convection_diffusion",
            title="Convection-diffusion",
            math_types=frozenset({"elliptic", "parabolic", "mixed_type"}),
            primary_math_type="mixed_type",
            time="optional",
            required_params=frozenset({"epsilon", "beta"}),
            ic_fields=frozenset({"u"}),
        ),
        Family(
            name="reaction_diffusion",
            title="Reaction-diffusion",
            math_types=frozenset({"reaction_diffusion", "elliptic", "parabolic"}),
            primary_math_type="reaction_diffusion",
            time="optional",
            required_params=frozenset({"epsilon", "sigma"}),
            options={"reaction_law": frozenset({"linear", "cubic", "allen_cahn", "logistic"})},
            required_options=frozenset({"reaction_law"}),
            ic_fields=frozenset({"u"}),
        ),
        Family(
            name="stokes",
            title="Stokes",
            math_types=frozenset({"incompressible_flow", "elliptic"}),
            primary_math_type="incompressible_flow",
            time="forbidden",
            required_params=frozenset({"nu"}),
            bc_quantities=frozenset({"velocity", "traction", "pressure"}),
            vector_output=True,
        ),
        Family(
            name="navier_stokes",
            title="Navier-Stokes",
            math_types=frozenset({"incompressible_flow", "mixed_type", "parabolic"}),
            primary_math_type="incompressible_flow",
            time="optional",
            required_params=frozenset({"nu"}),
            bc_quantities=frozenset({"velocity", "traction", "pressure"}),
            ic_fields=frozenset({"velocity"}),
            vector_output=True,
        ),
        Family(
            name="burgers",
            title="Burgers",
            math_types=frozenset({"hyperbolic", "mixed_type", "parabolic"}),
            primary_math_type="mixed_type",
            time="required",
            required_params=frozenset({"nu", "b"}),
            ic_fields=frozenset({"u"}),
        ),
        Family(
            name="wave",
            title="Wave",
            math_types=frozenset({"hyperbolic"}),
            primary_math_type="hyperbolic",
            time="required",
            required_params=frozenset({"c"}),
            ic_fields=frozenset({"u", "u_t"}),
        ),
    ]
}


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise KeyError(f"unknown equation family {name!r} (known: {known})") from None


VELOCITY_QUANTITIES = frozenset({None, "velocity"})
"""Quantities of a flow family's Dirichlet entry that prescribe the velocity."""


def flow_pressure_normalization(
    bc: BoundaryConditions, boundary_tags: Iterable[str]
) -> Literal["zero_mean", "absolute"]:
    """How a flow case's pressure is determined by its boundary conditions.

    ``zero_mean`` when the velocity is prescribed on the whole boundary (velocity
    Dirichlet entries, ``all`` or every tag of ``boundary_tags``, periodic sides counting
    as covered) and no entry involves the pressure or the traction: then the pressure
    is determined only up to an additive constant. ``absolute`` otherwise: a Neumann
    (traction or pressure) or Robin entry, a Dirichlet pressure entry, or a boundary part
    without any condition (which carries the natural condition ``nu du/dn - p n = 0``)
    fixes the constant.
    """
    if bc.neumann or bc.robin:
        return "absolute"
    covered: set[str] = set()
    for cond in bc.dirichlet:
        if cond.quantity not in VELOCITY_QUANTITIES:
            return "absolute"
        covered.update(cond.boundary)
    for periodic in bc.periodic:
        covered.update((periodic.boundary, periodic.partner))
    if "all" in covered or set(boundary_tags) <= covered:
        return "zero_mean"
    return "absolute"
