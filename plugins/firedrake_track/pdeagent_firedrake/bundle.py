"""The Firedrake family solvers as single source files (see
:mod:`pdeagent.contracts.python_bundle`): the calibration and reference solvers are
modules under ``solvers/`` that import the shared runtime code (``_common``,
``_meshing`` and the core's library-neutral ``_geometry``) relatively; :func:`bundle`
inlines them and fixes ``SETTINGS``. Nothing here imports firedrake.
"""

from __future__ import annotations

from pdeagent.contracts.python_bundle import FIDELITIES, BundleError, PythonBundler

SOLVERS_PACKAGE = "pdeagent_firedrake.solvers"
FAMILIES = (
    "poisson",
    "helmholtz",
    "biharmonic",
    "linear_elasticity",
    "heat",
    "convection_diffusion",
    "reaction_diffusion",
    "stokes",
)

BUNDLER = PythonBundler(
    SOLVERS_PACKAGE, FAMILIES, library="Firedrake", generator="pdeagent_firedrake.bundle"
)
module_source = BUNDLER.module_source
bundle = BUNDLER.bundle
module_settings = BUNDLER.module_settings
fidelity_settings = BUNDLER.fidelity_settings

__all__ = [
    "BUNDLER",
    "FAMILIES",
    "FIDELITIES",
    "BundleError",
    "bundle",
    "fidelity_settings",
    "module_settings",
    "module_source",
]
