"""Hook specifications of pdeagent.

Every hook is prefixed ``pdeagent_``. Registration hooks hand the core objects;
stage hooks receive the :class:`~pdeagent.stages.Track` they are asked about and
return ``None`` when they have nothing to say (``firstresult`` hooks stop at the
first non-None answer). A hook whose spec takes ``track`` reaches only the plugin
that registered that track and the plugins that register no track (the core's
built-ins, extensions); another track's plugin is never called
(:meth:`pdeagent.plugins.PluginHost.call_track_hook`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdeagent import hookspec

if TYPE_CHECKING:
    from pdeagent.plugins import PluginHost
    from pdeagent.providers import Provider
    from pdeagent.sandbox.base import ExecutionResult, Sandbox
    from pdeagent.stages import (
        AdaptedOutput,
        AgentShell,
        Diagnostics,
        DoctorCheck,
        Invocation,
        PrepareResult,
        PromptPieces,
        Track,
    )


@hookspec
def pdeagent_register_tracks(register: Callable[[Track], None]) -> None:
    """Register library tracks.

    Called once when the plugin manager is set up. Call ``register(Track(...))``
    for every track the plugin provides. Must be cheap: never import the FEM
    library or start a compiler here.
    """


@hookspec
def pdeagent_register_providers(register: Callable[[Provider], None], host: PluginHost) -> None:
    """Register LLM providers.

    Called once when the plugin manager is set up. Call ``register(provider)``
    with an object implementing :class:`pdeagent.providers.Provider`. Import the
    vendor SDK lazily (inside ``generate``/``status``), not here. ``host`` is the
    plugin host (optional argument: declare it only if the provider needs other
    plugins, e.g. the offline baseline asks the track for its calibration source);
    tracks are registered before providers.
    """


@hookspec(firstresult=True)
def pdeagent_prompt_pieces(
    track: Track, case_view: dict[str, Any], mode: str
) -> PromptPieces | None:
    """Return the track-specific prompt sections for one case.

    Called while a prompt is built. ``case_view`` is the agent view
    (``{"case_spec": ..., "target_library": ...}``), never the full record;
    ``mode`` is ``single``, ``feedback`` or ``template`` (a scaffold is expected
    only for ``template``). Return None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_prepare(
    track: Track, source: str, build_dir: Path, sandbox: Sandbox, hide: list[Path]
) -> PrepareResult | None:
    """Compile (C++) or check (Python) a submission; the compile/import stage.

    Write the source and everything an execution needs into ``build_dir``. Any
    step that runs untrusted code or a compiler on untrusted source must go
    through ``sandbox``, with ``hide`` (the evaluator data of this evaluation) as
    the request's hidden paths: a compiler can read files too (``#include``).
    A failure is a :class:`PrepareResult` with ``ok=False`` and reason
    ``compile_error`` / ``import_error``, never an exception. Return None if
    ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_invocation(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> Invocation | None:
    """Say how to run a prepared submission; the invocation stage.

    ``workdir`` is a fresh directory already holding the build files and
    ``case_spec.json`` (the agent view's case_spec). Return the command line,
    environment, read-only host paths it needs and extra files. Return None if
    ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_adapt_output(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> AdaptedOutput | None:
    """Turn what the program wrote into the canonical ``solution.npz``.

    Called after a run that exited normally. Treat every file in ``workdir`` as
    hostile (sizes, names, symlinks). Return :class:`AdaptedOutput` with the npz
    path, or with ``npz_path=None`` and an F-Exec reason. Return None if
    ``track`` is not yours; the core's built-in adapter then accepts a plain
    ``solution.npz`` written by the program.
    """


@hookspec
def pdeagent_diagnostics(
    track: Track, workdir: Path, case_view: dict[str, Any], execution: ExecutionResult
) -> Diagnostics | None:
    """Contribute auxiliary diagnostics of one execution (never change a verdict).

    Called after every execution that produced output. Every implementation's
    dict is merged into the report (later plugins do not overwrite earlier
    keys). Read ``meta.json`` and logs as hostile input. Return None if you have
    nothing to add.
    """


@hookspec(firstresult=True)
def pdeagent_agent_shell(
    track: Track, workdir: Path, case_view: dict[str, Any]
) -> AgentShell | None:
    """What a shell of an agent episode (``--mode agent``) gets from the track: its
    environment, the read-only host paths of the runtime (for a compiled track the
    compiler and the library), helper files written into the agent's work dir
    ``workdir`` (e.g. a build script with the grading flags) and a short markdown text
    telling the agent how to build and run its program as the grader will.

    Optional: a track without it gets a shell derived from its
    :func:`pdeagent_invocation` (that environment, those paths and files, the
    interpreter's directory on ``PATH``). Never expose evaluator data. Return None if
    ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_explain_crash(
    track: Track,
    source: str,
    workroot: Path,
    case_view: dict[str, Any],
    sandbox: Sandbox,
    hide: list[Path],
    execution: ExecutionResult,
) -> str | None:
    """Explain an execution that crashed (nonzero exit or a signal; not a timeout or a
    memory kill), e.g. by rebuilding ``source`` against a debug build of the library and
    running it again in ``sandbox`` (with the same ``hide``) under ``workroot`` (a fresh
    directory of the track's own), returning the first failed library assertion.

    Returns a short text (bounded by the caller) that goes into the report's message and
    diagnostics, and so into a feedback prompt; never changes a verdict. Called only
    when the grading policy asks for it (``explain_crashes``: feedback mode by default).
    Return None when the track has nothing to add.
    """


@hookspec(firstresult=True)
def pdeagent_setup_environment(
    track: Track, force: bool, log: Callable[[str], None], update_pins: bool
) -> list[DoctorCheck] | None:
    """Provision the track's runtime (interpreter, library, compiler flags, ...).

    Called by ``pdeagent env setup TRACK``. Idempotent: reuse what is already there
    unless ``force``. A runtime installed with pip installs under the ``pins`` of the
    track's committed manifest (:func:`pdeagent.runtime_packages.load_pins`), so a fresh
    build reproduces it; with ``update_pins`` (``env setup TRACK --update-pins``) build
    afresh from the newest versions the track's requirements allow; the caller then
    rewrites the manifest from the runtime. An implementation may leave ``update_pins``
    out of its signature if it has no pins. Report progress through ``log``; raise
    :class:`~pdeagent.stages.TrackUnavailable` with a clear message when setup is
    impossible here. Return the doctor checks after setup. Return None if
    ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_runtime_packages(track: Track) -> dict[str, Any] | None:
    """Ask the installed runtime what it offers submissions, now.

    Called by ``pdeagent env packages -t TRACK`` (which can write the result to
    ``track.runtime_manifest``). Return the manifest dict of
    :mod:`pdeagent.runtime_packages` (built with ``make_manifest``, or
    ``python_runtime_manifest`` for a Python runtime), queried from the runtime itself,
    never read from the committed file. Raise
    :class:`~pdeagent.stages.TrackUnavailable` when no runtime is installed. Return
    None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_doctor(track: Track) -> list[DoctorCheck] | None:
    """Check the track's runtime environment without changing it.

    Called by ``pdeagent tracks doctor TRACK``. Each check says what is present
    and, when not ok, how to fix it. Return None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_calibration_source(
    track: Track, case_view: dict[str, Any], calibration_config: dict[str, Any] | None
) -> str | None:
    """Return the source code of the track's calibration baseline for one case.

    Called by ``pdeagent calibrate`` (and by the offline baseline provider). The
    source is graded through the same pipeline and timing protocol as any
    submission. ``calibration_config`` is the case's evaluator-side baseline
    configuration (may be None). Return None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_reference_source(
    track: Track,
    case_view: dict[str, Any],
    reference_config: dict[str, Any] | None,
    fidelity: str,
) -> str | None:
    """Return the source of the track's high-fidelity solver for one case.

    Called by the dataset build (``pdeagent cases build``) for cases without an
    exact solution. ``fidelity`` is ``"reference"`` (the solve whose output becomes
    the evaluator's reference arrays: finer mesh, higher order, tighter tolerances
    than the calibration baseline) or ``"intermediate"`` (a solve between the
    calibration baseline and the reference, used by the convergence check).
    ``reference_config`` is the case's evaluator-side reference configuration (may
    be None). The source follows the track's own submission contract. Return None
    if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_null_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Return the source of the track's null program for one case.

    The null program starts the track's runtime, loads the library as a solver would
    (imports, shared libraries) and writes a valid artifact of the right names and
    shapes (zeros at every grid point: only scored points are checked) without solving
    anything. The harness times it with the submission protocol to get ``t_null``, the start-up
    cost the time rule ``tau_time = t_null + alpha_time * (t_base - t_null)`` leaves
    out of the solve budget. Return None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_screening_source(track: Track, case_view: dict[str, Any]) -> str | None:
    """Return the track's calibration baseline for one case as a screening program.

    Optional; a track that answers gets the faster frontier-2 search
    (:mod:`pdeagent.evaluation.screening`), a track that does not is calibrated by
    frontier-1 (every rung a pristine run). The program is prepared and invoked like
    any submission. It reads ``screening_job.json`` from its work dir (the configs of
    one ladder chain, the solve budget, an optional ``max_solve`` and
    ``estimate_target``), solves the first config once to warm up, then solves each
    config ``i`` into ``rung-<i>/`` with the track's usual artifact, timing each solve,
    and keeps ``screening_result.json`` up to date after every rung; the Python tracks'
    driver, :mod:`pdeagent.contracts.python_screening`, documents the format and the
    stop rules. Return None if ``track`` is not yours.
    """


@hookspec(firstresult=True)
def pdeagent_calibration_ladder(
    track: Track, case_view: dict[str, Any]
) -> list[list[dict[str, Any]]] | None:
    """Return the configurations the frontier calibration tries for one case.

    A list of chains; each chain is a list of settings dicts (the same dicts
    ``pdeagent_calibration_source`` accepts as ``calibration_config[track]``) in order
    of increasing cost, e.g. one chain per element degree with the mesh refined along
    it. The search (:mod:`pdeagent.evaluation.frontier`) walks each chain until a rung
    reaches the target error or exceeds the solve budget, then applies the frontier
    rule to every measured trial. Chains are walked in the order given: list the most
    promising first (once a rung reaches the target, the search stops every chain at a
    rung slower than it). Return None if ``track`` is not yours.
    """
