"""The DOLFINx family solvers as single source files (see
:mod:`pdeagent.contracts.python_bundle`): the calibration and reference solvers are
ordinary modules under ``solvers/``, importable and testable in the DOLFINx runtime;
:func:`bundle` inlines the shared runtime modules they import and fixes ``SETTINGS``.
Nothing here imports dolfinx.
"""

from __future__ import annotations

from pdeagent.contracts.python_bundle import PythonBundler

SOLVERS_PACKAGE = "pdeagent_dolfinx.solvers"
BUNDLER = PythonBundler(SOLVERS_PACKAGE, library="DOLFINx", generator=__name__)
FAMILIES = BUNDLER.families
"""The families with a module in ``solvers/``, in the dataset's order (see
:func:`pdeagent.contracts.python_bundle.family_modules`)."""
module_source = BUNDLER.module_source
bundle = BUNDLER.bundle
module_settings = BUNDLER.module_settings
fidelity_settings = BUNDLER.fidelity_settings
