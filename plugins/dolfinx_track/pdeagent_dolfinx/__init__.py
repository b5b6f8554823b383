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
from importlib import resources
from pathlib import Path
from typing import Any

from pdeagent import hookimpl
from pdeagent.contracts.python import contract_text, prepare_python, python_invocation
from pdeagent.sandbox import Sandbox, python_runtime_expose
from pdeagent.stages import (
    Capabilities,
    DoctorCheck,
    Invocation,
    PrepareResult,
    PromptPieces,
    Track,
    TrackUnavailable,
)
from pdeagent_dolfinx.bundle import FAMILIES as SOLVER_FAMILIES

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
    capabilities=Capabilities(
        families=SOLVER_FAMILIES,
    ),
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


def guide() -> str:
    return resources.files(__name__).joinpath("DOLFINX_GUIDE.md").read_text(encoding="utf-8")


def _mine(track: Track) -> bool:
    return track.name == TRACK.name


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


@hookimpl
def pdeagent_prompt_pieces(
    track: Track, case_view: dict[str, Any], mode: str
) -> PromptPieces | None:
    if not _mine(track):
        return None
    scaffold = None
    if mode == "template":
        from pdeagent.cases.families import get_family
        from pdeagent_dolfinx.scaffolds import scaffold as make_scaffold

        family = get_family(case_view["case_spec"]["pde"]["type"])
        scaffold = make_scaffold(family.name, family.title)
    return PromptPieces(contract=contract_text("DOLFINx 0.11"), guide=guide(), scaffold=scaffold)


@hookimpl
def pdeagent_calibration_source(
    track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
) -> str | None:
    """The bundled calibration solver of the case's family; settings from the case's
    ``calibration_config["dolfinx"]`` when given, else the module's DEFAULTS."""
    if not _mine(track):
        return None
    from pdeagent_dolfinx.bundle import bundle

    settings = (calibration_config or {}).get("dolfinx")
    return bundle(case_view["case_spec"]["pde"]["type"], settings)


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Imports what the DOLFINx solvers import (MPI, PETSc, UFL, dolfinx.fem.petsc),
    evaluates a zero P1 field of a coarse unit-box mesh at the grid points (bounding-box
    tree, colliding cells, Function.eval) and writes zeros: the track's start-up cost."""
    if not _mine(track):
        return None
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
def pdeagent_calibration_ladder(
    track: Track, case_view: dict[str, Any]
) -> list[list[dict[str, Any]]] | None:
    """The frontier calibration's configurations for the case (see ``ladder.py``), the
    highest degree first: it usually reaches the target soonest, and the search then skips
    the rungs of the other chains that are slower."""
    if not _mine(track):
        return None
    from pdeagent_dolfinx.ladder import ladder

    return ladder(case_view)[::-1]


@hookimpl
def pdeagent_reference_source(
    track: Track, case_view: dict[str, Any], reference_config: dict[str, Any] | None, fidelity: str
) -> str | None:
    """The bundled family solver at ``fidelity`` (see ``bundle.fidelity_settings``); the
    case's ``reference_config["dolfinx"]`` overrides the module's REFERENCE settings."""
    if not _mine(track):
        return None
    from pdeagent.contracts.python_bundle import reference_overrides
    from pdeagent_dolfinx.bundle import bundle, fidelity_settings

    family = case_view["case_spec"]["pde"]["type"]
    is_3d = case_view["case_spec"]["domain"]["type"] == "unit_cube"
    override = reference_overrides(family, reference_config or {}, is_3d=is_3d, track="dolfinx")
    return bundle(family, fidelity_settings(family, fidelity, override))


@hookimpl
def pdeagent_prepare(
    track: Track, source: str, build_dir: Path, sandbox: Sandbox
) -> PrepareResult | None:
    if not _mine(track):
        return None
    return prepare_python(source, build_dir, TRACK.source_filename)


@hookimpl
def pdeagent_invocation(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> Invocation | None:
    if not _mine(track):
        return None
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
    track: Track, force: bool, log: Callable[[str], None]
) -> list[DoctorCheck] | None:
    if not _mine(track):
        return None
    from pdeagent_dolfinx import environment

    if os.environ.get(ENV_PYTHON):
        raise TrackUnavailable(f"{ENV_PYTHON} is set: the runtime is managed outside pdeagent")
    environment.setup(runtime_dir(), force=force, log=log)
    return environment.doctor(runtime_python_path(), runtime_dir())


@hookimpl
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    if not _mine(track):
        return None
    from pdeagent_dolfinx import environment

    return environment.runtime_packages(runtime_python())


@hookimpl
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    if not _mine(track):
        return None
    from pdeagent_dolfinx import environment

    python = runtime_python_path()
    return environment.doctor(python, python.parent.parent)
