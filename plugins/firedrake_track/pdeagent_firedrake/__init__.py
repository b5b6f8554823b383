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
from pathlib import Path
from typing import Any

import attrs

from pdeagent import hookimpl
from pdeagent.contracts.python import python_invocation
from pdeagent.contracts.python_track import PythonTrackHooks
from pdeagent.stages import Capabilities, DoctorCheck, Invocation, Track
from pdeagent_firedrake.bundle import BUNDLER

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
    capabilities=Capabilities(families=BUNDLER.families),
)


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


HOOKS = PythonTrackHooks(TRACK, package=__name__, guide="FIREDRAKE_GUIDE.md", bundler=BUNDLER)
"""The hooks every bundled Python track shares (:mod:`pdeagent.contracts.python_track`)."""
pdeagent_prompt_pieces = HOOKS.pdeagent_prompt_pieces
pdeagent_prepare = HOOKS.pdeagent_prepare
pdeagent_calibration_source = HOOKS.pdeagent_calibration_source
pdeagent_reference_source = HOOKS.pdeagent_reference_source
pdeagent_calibration_ladder = HOOKS.pdeagent_calibration_ladder
pdeagent_screening_source = HOOKS.pdeagent_screening_source


@hookimpl
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Imports Firedrake, samples a zero P1 field on a coarse unit-box mesh at the grid
    points with PointEvaluator (the kernels every Firedrake program compiles to write an
    artifact) and writes zeros: the track's start-up cost, t_null."""
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
def pdeagent_invocation(track: Track, workdir: Path, case_view: dict) -> Invocation | None:
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
    track: Track, force: bool, log: Callable[[str], None], update_pins: bool
) -> list[DoctorCheck] | None:
    from pdeagent_firedrake import environment

    environment.setup(force=force, log=log, update_pins=update_pins)
    return environment.doctor()


@hookimpl
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    from pdeagent_firedrake import environment

    return environment.runtime_packages()


@hookimpl
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    from pdeagent_firedrake import environment

    return environment.doctor()
