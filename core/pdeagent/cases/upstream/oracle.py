"""What the published upstream oracles do where a record is silent: defaults and notes."""

from __future__ import annotations

from typing import Any

from attrs import define

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
