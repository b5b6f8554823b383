"""The DOLFINx family solvers as single source files (see
:mod:`pdeagent.contracts.python_bundle`): the calibration and reference solvers are
ordinary modules under ``solvers/``, importable and testable in the DOLFINx runtime;
:func:`bundle` inlines the shared runtime modules they import and fixes ``SETTINGS``.
Nothing here imports dolfinx.
"""

from __future__ import annotations

from pdeagent.contracts.python_bundle import (
    FIDELITIES,
    SETTINGS_MARKER,
    BundleError,
    PythonBundler,
)

SOLVERS_PACKAGE = "pdeagent_dolfinx.solvers"
FAMILIES = (
    "poisson",
    "helmholtz",
    "biharmonic",
    "linear_elasticity",
    "heat",
    "convection_diffusion",
    "reaction_diffusion",
    "stokes",
    "navier_stokes",
    "burgers",
    "wave",
)

BUNDLER = PythonBundler(
    SOLVERS_PACKAGE, FAMILIES, library="DOLFINx", generator="pdeagent_dolfinx.bundle"
)
module_source = BUNDLER.module_source
bundle = BUNDLER.bundle
module_settings = BUNDLER.module_settings
fidelity_settings = BUNDLER.fidelity_settings

__all__ = [
    "BUNDLER",
    "FAMILIES",
    "FIDELITIES",
    "SETTINGS_MARKER",
    "BundleError",
    "bundle",
    "fidelity_settings",
    "module_settings",
    "module_source",
]
