"""pdeagent track plugin for Firedrake 2026.10 (Python ``solve(case_spec)`` contract).

Work in progress (issue #8): the track registers itself, provisions and checks its
runtime (``pdeagent env setup firedrake``, ``pdeagent tracks doctor firedrake``:
see :mod:`pdeagent_firedrake.environment`) and runs submissions in the sandbox with
that runtime. Its guide, scaffolds and calibration / reference solvers are not
written yet, so it gives no prompt pieces and no baseline: a run on this track
fails at the prompt stage, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pdeagent import hookimpl
from pdeagent.contracts.python import prepare_python, python_invocation
from pdeagent.sandbox import Sandbox
from pdeagent.stages import DoctorCheck, Invocation, PrepareResult, Track

TRACK = Track(
    name="firedrake",
    library="Firedrake",
    language="python",
    source_filename="solver.py",
    library_version="2026.10",
    description="Firedrake 2026.10 with PETSc 3.26 (built from PyPI sources here)",
)


def _mine(track: Track) -> bool:
    return track.name == TRACK.name


@hookimpl
def pdeagent_register_tracks(register) -> None:
    register(TRACK)


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
    return python_invocation(
        Path(record["python"]),
        filename=TRACK.source_filename,
        expose=environment.runtime_expose(record),
        env=env,
    )


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
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    if not _mine(track):
        return None
    from pdeagent_firedrake import environment

    return environment.doctor()
