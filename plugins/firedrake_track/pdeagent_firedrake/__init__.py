"""pdeagent track plugin for Firedrake 2026.10 (Python ``solve(case_spec)`` contract).

The track provisions and checks its runtime (``pdeagent env setup firedrake``,
``pdeagent tracks doctor firedrake``: :mod:`pdeagent_firedrake.environment`), gives
the prompt its contract, the executed ``FIREDRAKE_GUIDE.md`` and a scaffold per family,
runs submissions in the sandbox with the built runtime, and supplies calibration and
reference solvers (``solvers/``, bundled into one file by
:mod:`pdeagent_firedrake.bundle`).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from pdeagent import hookimpl
from pdeagent.contracts.python import contract_text, prepare_python, python_invocation
from pdeagent.sandbox import Sandbox
from pdeagent.stages import (
    Capabilities,
    DoctorCheck,
    Invocation,
    PrepareResult,
    PromptPieces,
    Track,
)
from pdeagent_firedrake.bundle import FAMILIES as SOLVER_FAMILIES

TRACK = Track(
    name="firedrake",
    library="Firedrake",
    language="python",
    source_filename="solver.py",
    library_version="2026.10",
    description="Firedrake 2026.10 with PETSc 3.26 (built from PyPI sources here)",
    runtime_manifest=Path(__file__).with_name("runtime_packages.json"),
    # the 8 families of solvers/ (bundle.FAMILIES), on every domain template, 2-D and
    # 3-D, steady and transient, every output kind and boundary condition
    capabilities=Capabilities(
        families=SOLVER_FAMILIES,
    ),
)


def _mine(track: Track) -> bool:
    return track.name == TRACK.name


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


def guide() -> str:
    return resources.files(__name__).joinpath("FIREDRAKE_GUIDE.md").read_text(encoding="utf-8")


@hookimpl
def pdeagent_prompt_pieces(
    track: Track, case_view: dict[str, Any], mode: str
) -> PromptPieces | None:
    if not _mine(track):
        return None
    scaffold = None
    if mode == "template":
        from pdeagent.cases.families import get_family
        from pdeagent_firedrake.scaffolds import scaffold as make_scaffold

        family = get_family(case_view["case_spec"]["pde"]["type"])
        scaffold = make_scaffold(family.name, family.title)
    return PromptPieces(
        contract=contract_text("Firedrake 2026.10"), guide=guide(), scaffold=scaffold
    )


@hookimpl
def pdeagent_calibration_source(
    track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
) -> str | None:
    """The bundled calibration solver of the case's family; settings from the case's
    ``calibration_config["firedrake"]`` when given, else the module's DEFAULTS."""
    if not _mine(track):
        return None
    from pdeagent_firedrake.bundle import bundle

    settings = (calibration_config or {}).get("firedrake")
    return bundle(case_view["case_spec"]["pde"]["type"], settings)


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Imports Firedrake, samples a zero P1 field on a coarse unit-box mesh at the grid
    points with PointEvaluator (the kernels every Firedrake program compiles to write an
    artifact) and writes zeros: the track's start-up cost, t_null."""
    if not _mine(track):
        return None
    from pdeagent.contracts.python_null import null_source

    return null_source("Firedrake 2026.10", ["import firedrake as fd"], NULL_SAMPLE)


NULL_SAMPLE = """\
    points = _unit_box_points(grid)
    if grid.get("nz"):
        msh = fd.UnitCubeMesh(1, 1, 1)
    else:
        msh = fd.UnitSquareMesh(2, 2)
        points = points[:, :2]
    field = fd.Function(fd.FunctionSpace(msh, "CG", 1))
    evaluator = fd.PointEvaluator(msh, points, tolerance=1e-10, missing_points_behaviour="ignore")
    return evaluator.evaluate(field)
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
    from pdeagent_firedrake.ladder import ladder

    return ladder(case_view)[::-1]


@hookimpl
def pdeagent_reference_source(
    track: Track, case_view: dict[str, Any], reference_config: dict[str, Any] | None, fidelity: str
) -> str | None:
    """The bundled family solver at ``fidelity``; the case's generic reference config
    and ``reference_config["firedrake"]`` override the module's REFERENCE settings."""
    if not _mine(track):
        return None
    from pdeagent.contracts.python_bundle import reference_overrides
    from pdeagent_firedrake.bundle import bundle, fidelity_settings

    family = case_view["case_spec"]["pde"]["type"]
    is_3d = case_view["case_spec"]["domain"]["type"] == "unit_cube"
    config = reference_config or {}
    override = reference_overrides(family, config, is_3d=is_3d, track=TRACK.name)
    return bundle(family, fidelity_settings(family, fidelity, override))


@hookimpl
def pdeagent_prepare(
    track: Track, source: str, build_dir: Path, sandbox: Sandbox
) -> PrepareResult | None:
    if not _mine(track):
        return None
    return prepare_python(source, build_dir, TRACK.source_filename)


@hookimpl
def pdeagent_invocation(track: Track, workdir: Path, case_view: dict) -> Invocation | None:
    if not _mine(track):
        return None
    from pdeagent_firedrake import environment

    record = environment.load_record()
    env = environment.runtime_env(record, home=str(workdir))
    invocation = python_invocation(
        Path(record["python"]),
        filename=TRACK.source_filename,
        expose=environment.runtime_expose(record),
        env=env,
    )
    # Firedrake's kernel caches (PyOP2, TSFC) live under $FIREDRAKE_CACHE_DIR, else
    # under the (read-only) venv or $HOME (the fresh work dir): every run would compile
    # its kernels again. The evaluation's cache dir keeps them from the accuracy run for
    # the timed repeats, as XDG_CACHE_HOME does for other libraries.
    return attrs.evolve(invocation, cache_env=["FIREDRAKE_CACHE_DIR"])


@hookimpl
def pdeagent_setup_environment(
    track: Track, force: bool, log: Callable[[str], None]
) -> list[DoctorCheck] | None:
    if not _mine(track):
        return None
    from pdeagent_firedrake import environment

    environment.setup(force=force, log=log)
    return environment.doctor()


@hookimpl
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    if not _mine(track):
        return None
    from pdeagent_firedrake import environment

    return environment.runtime_packages()


@hookimpl
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    if not _mine(track):
        return None
    from pdeagent_firedrake import environment

    return environment.doctor()
