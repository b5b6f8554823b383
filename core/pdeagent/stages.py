"""Types exchanged between the core and track plugins at each stage.

A track is described by a :class:`Track` record registered through
``pdeagent_register_tracks``; the per-stage work is done by the hooks in
:mod:`pdeagent.hookspecs`, which receive the track and return ``None`` when the
track is not theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from attrs import define, field

Language = Literal["python", "cpp"]


@define(frozen=True)
class Track:
    """A library track: which FEM library a submission must use, and how it is run."""

    name: str
    """Short identifier used on the command line and in case records (``dolfinx``)."""
    library: str
    """Human name of the library (``DOLFINx``)."""
    language: Language
    """Language of submissions; decides the code block extracted from a reply."""
    source_filename: str
    """File name the submission is stored under in its working directory."""
    library_version: str | None = None
    """Library version the track's guide and contract are written for."""
    description: str = ""


@define(frozen=True)
class PromptPieces:
    """Track-specific sections of a prompt (SPEC §9 sections 4 and 6, plus the scaffold)."""

    contract: str
    """Section 4: the implementation contract for this track."""
    guide: str
    """Section 6: the track's versioned API guide (markdown)."""
    scaffold: str | None = None
    """Template-guided mode only: a runnable scaffold with the numerical core left out."""
    input_note: str | None = None
    """Optional note on the form in which the program receives the case_spec."""


@define(frozen=True)
class PrepareResult:
    """Outcome of the compile/import stage.

    ``build_dir`` holds every file an execution needs besides ``case_spec.json``;
    each execution gets a fresh working directory populated from it.
    """

    ok: bool
    build_dir: Path
    reason: str | None = None
    """``compile_error`` or ``import_error`` when ``ok`` is false."""
    message: str = ""
    """Bounded, human-readable summary (first errors) for reports and feedback."""
    log: str = ""
    compile_time_sec: float | None = None


@define(frozen=True)
class Invocation:
    """How to start a prepared submission inside the sandbox."""

    argv: list[str]
    """Command line; relative paths are relative to the working directory."""
    env: dict[str, str] = field(factory=dict)
    """Environment of the untrusted process (nothing else is inherited)."""
    expose: list[Path] = field(factory=list)
    """Host paths the program must be able to read (interpreter, runtime env, libraries)."""
    files: dict[str, bytes] = field(factory=dict)
    """Extra files written into the working directory before the run (e.g. a runner script)."""
    exit_code_reasons: dict[int, str] = field(factory=dict)
    """F-Exec reasons for specific exit codes (e.g. the Python runner's import failure);
    any other non-zero exit is ``runtime_error``."""
    cache_env: list[str] = field(factory=list)
    """Environment variables the pipeline points at the evaluation's writable cache
    directory (shared by the accuracy run and the timed repeats of one evaluation, like
    ``XDG_CACHE_HOME``), for a library whose kernel cache ignores ``XDG_CACHE_HOME``."""


@define(frozen=True)
class AdaptedOutput:
    """Result of the output-adapting stage: the canonical npz, or why there is none."""

    npz_path: Path | None
    reason: str | None = None
    """F-Exec reason (``missing_artifact``, ``bad_shape``, ...) when ``npz_path`` is None."""
    message: str = ""


Diagnostics = dict[str, Any]


@define(frozen=True)
class DoctorCheck:
    """One fact about a track's runtime environment, and how to fix it when it is wrong."""

    name: str
    ok: bool
    detail: str = ""
    fix: str | None = None


class TrackUnavailable(RuntimeError):
    """A track's runtime (library, interpreter, compiler) is not installed here.

    Stage hooks raise it with a message that says how to fix it; the harness
    reports it as a setup problem, never as a verdict about a submission.
    """
