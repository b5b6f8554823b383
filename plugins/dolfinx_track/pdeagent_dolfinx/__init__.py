"""pdeagent track plugin for DOLFINx 0.11 (Python ``solve(case_spec)`` contract).

This package registers the track and implements its prompt, import and
invocation stages on top of the core's Python contract. The runtime environment
(a Python 3.12 venv with the ``dolfinx-solver-real`` wheel) is located through
``PDEAGENT_DOLFINX_PYTHON`` or ``$XDG_DATA_HOME/pdeagent/envs/dolfinx``; the
harness never imports dolfinx itself. Environment provisioning, the full API
guide, scaffolds and calibration solvers are tracked in issue #3.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.contracts.python import python_invocation
from pdeagent.contracts.python_track import PythonTrackHooks
from pdeagent.sandbox import python_runtime_expose
from pdeagent.stages import Capabilities, DoctorCheck, Invocation, Track, TrackUnavailable
from pdeagent_dolfinx.bundle import BUNDLER

TRACK = Track(
    name="dolfinx",
    library="DOLFINx",
    language="python",
    source_filename="solver.py",
    library_version="0.11",
    description="FEniCSx/DOLFINx 0.11 with PETSc (PyPI wheel dolfinx-solver-real)",
    runtime_manifest=Path(__file__).with_name("runtime_packages.json"),
    # the 11 families of solvers/ (bundle.FAMILIES), on every domain template, 2-D and
    # 3-D, steady and transient, every output kind and boundary condition
    capabilities=Capabilities(families=BUNDLER.families),
)

ENV_PYTHON = "PDEAGENT_DOLFINX_PYTHON"


def runtime_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "pdeagent" / "envs" / "dolfinx"


def runtime_python_path() -> Path:
    explicit = os.environ.get(ENV_PYTHON)
    return Path(explicit) if explicit else runtime_dir() / "bin" / "python"


def runtime_python() -> Path:
    """The interpreter of the DOLFINx runtime environment, or TrackUnavailable."""
    explicit = os.environ.get(ENV_PYTHON)
    python = Path(explicit) if explicit else runtime_dir() / "bin" / "python"
    if not python.exists():
        raise TrackUnavailable(
            f"the DOLFINx runtime is not installed ({python} does not exist); create it with "
            f"`python3.12 -m venv {runtime_dir()} && {runtime_dir()}/bin/pip install "
            f"dolfinx-solver-real gmsh scipy sympy` or set {ENV_PYTHON}"
        )
    return python


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


HOOKS = PythonTrackHooks(TRACK, package=__name__, guide="DOLFINX_GUIDE.md", bundler=BUNDLER)
"""The hooks every bundled Python track shares (:mod:`pdeagent.contracts.python_track`)."""
pdeagent_prompt_pieces = HOOKS.pdeagent_prompt_pieces
pdeagent_prepare = HOOKS.pdeagent_prepare
pdeagent_calibration_source = HOOKS.pdeagent_calibration_source
pdeagent_reference_source = HOOKS.pdeagent_reference_source
pdeagent_calibration_ladder = HOOKS.pdeagent_calibration_ladder
pdeagent_screening_source = HOOKS.pdeagent_screening_source


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Imports what the DOLFINx solvers import (MPI, PETSc, UFL, dolfinx.fem.petsc),
    evaluates a zero P1 field of a coarse unit-box mesh at the grid points (bounding-box
    tree, colliding cells, Function.eval) and writes zeros: the track's start-up cost."""
    from pdeagent.contracts.python_null import null_source

    return null_source(
        "DOLFINx 0.11",
        [
            "from mpi4py import MPI  # noqa: F401",
            "from petsc4py import PETSc  # noqa: F401",
            "import basix  # noqa: F401",
            "import ufl  # noqa: F401",
            "import dolfinx  # noqa: F401",
            "import dolfinx.fem.petsc  # noqa: F401",
            "from dolfinx import fem, geometry, mesh",
        ],
        NULL_SAMPLE,
    )


NULL_SAMPLE = """\
    points = _unit_box_points(grid)
    if grid.get("nz"):
        msh = mesh.create_unit_cube(MPI.COMM_WORLD, 1, 1, 1)
    else:
        msh = mesh.create_unit_square(MPI.COMM_WORLD, 2, 2)
    field = fem.Function(fem.functionspace(msh, ("Lagrange", 1)))
    tree = geometry.bb_tree(msh, msh.topology.dim, padding=1e-10)
    candidates = geometry.compute_collisions_points(tree, points)
    colliding = geometry.compute_colliding_cells(msh, candidates, points)
    cells = colliding.array[colliding.offsets[:-1]]
    return field.eval(points, cells)
"""


@hookimpl
def pdeagent_invocation(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> Invocation | None:
    python = runtime_python()
    venv_lib = python.parent.parent / "lib"
    return python_invocation(
        python,
        filename=TRACK.source_filename,
        expose=python_runtime_expose(python),
        # The mpich wheel puts libmpi.so.12 in the venv's lib/; dolfinx needs it found.
        env={"LD_LIBRARY_PATH": str(venv_lib)},
    )


@hookimpl
def pdeagent_setup_environment(
    track: Track, force: bool, log: Callable[[str], None], update_pins: bool
) -> list[DoctorCheck] | None:
    from pdeagent_dolfinx import environment

    if os.environ.get(ENV_PYTHON):
        raise TrackUnavailable(f"{ENV_PYTHON} is set: the runtime is managed outside pdeagent")
    environment.setup(runtime_dir(), force=force, log=log, update_pins=update_pins)
    return environment.doctor(runtime_python_path(), runtime_dir())


@hookimpl
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    from pdeagent_dolfinx import environment

    return environment.runtime_packages(runtime_python())


@hookimpl
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    from pdeagent_dolfinx import environment

    python = runtime_python_path()
    return environment.doctor(python, python.parent.parent)
