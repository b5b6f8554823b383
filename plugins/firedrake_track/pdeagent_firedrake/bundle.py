"""The Firedrake family solvers as single source files (see
:mod:`pdeagent.contracts.python_bundle`): the calibration and reference solvers are
modules under ``solvers/`` that import the shared runtime code (``_common``,
``_meshing`` and the core's library-neutral ``_geometry``) relatively; :func:`bundle`
inlines them and fixes ``SETTINGS``. Nothing here imports firedrake.
"""

from __future__ import annotations

from pdeagent.contracts.python_bundle import PythonBundler

SOLVERS_PACKAGE = "pdeagent_firedrake.solvers"
BUNDLER = PythonBundler(SOLVERS_PACKAGE, library="Firedrake", generator=__name__)
FAMILIES = BUNDLER.families
"""The families with a module in ``solvers/``, in the dataset's order (see
:func:`pdeagent.contracts.python_bundle.family_modules`)."""
module_source = BUNDLER.module_source
bundle = BUNDLER.bundle
module_settings = BUNDLER.module_settings
fidelity_settings = BUNDLER.fidelity_settings
