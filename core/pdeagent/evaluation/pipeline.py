"""The staged evaluation of one source file: prepare -> run -> adapt -> check -> time.

Stages stop at the first failure (SPEC §1). Every execution gets a fresh,
empty working directory, so a stale artifact can never be graded. The same path
serves submissions and calibration baselines (``thresholds=None`` measures
error and runtime without a verdict on them).
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
from pathlib import Path
from typing import Any

from attrs import define

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import Case, Thresholds
from pdeagent.evaluation.reference import reference_fields
from pdeagent.evaluation.report import Report
from pdeagent.evaluation.timing import timed_repeats
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxRequest
from pdeagent.scoring.artifacts import ArtifactError, check_solution, load_solution_npz
from pdeagent.scoring.metrics import compute_metrics, relative_l2
from pdeagent.scoring.verdict import Verdict, staged_verdict
from pdeagent.scoring.verdict import thresholds as compute_thresholds
from pdeagent.stages import Invocation, Track

EXCERPT_CHARS = 2000
EXPLANATION_CHARS = 1500
"""At most this many characters of a track's crash explanation go into a report."""
CACHE_ENV = "XDG_CACHE_HOME"
"""Points at a cache directory private to one submission: its accuracy run warms it
(JIT-compiled kernels) and its timed repeats reuse it; never shared across submissions."""


class EvaluationSetupError(RuntimeError):
    """The harness cannot grade (missing thresholds, a track without a stage hook, ...).
    Never a verdict about the submission."""


@define(frozen=True)
class GradingPolicy:
    """Run-level overrides; None means the case's own ``evaluation_config``."""

    alpha_acc: float | None = None
    alpha_time: float | None = None
    tau_min: float | None = None
    timed_repeats: int | None = None
    timeout_sec: float | None = None
    tau_acc: float | None = None
    """Explicit accuracy threshold (skips e_base)."""
    tau_time: float | None = None
    """Explicit time threshold (skips t_base)."""
    explain_crashes: bool = False
    """After a crash, ask the track to explain it (``pdeagent_explain_crash``)."""


@define(frozen=True)
class ResolvedThresholds:
    tau_acc: float
    tau_time: float
    e_base: float | None
    t_base: float | None
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "tau_acc": self.tau_acc,
            "tau_time": self.tau_time,
            "e_base": self.e_base,
            "t_base": self.t_base,
            "source": self.source,
        }


def resolve_thresholds(
    case: Case,
    track: str,
    policy: GradingPolicy = GradingPolicy(),
    calibration: Thresholds | None = None,
) -> ResolvedThresholds:
    """tau_acc / tau_time for ``case`` on ``track``: explicit overrides, else a local
    calibration when given, else the dataset's shipped thresholds."""
    cfg = case.evaluation_config
    alpha_acc = policy.alpha_acc if policy.alpha_acc is not None else cfg.alpha_acc
    alpha_time = policy.alpha_time if policy.alpha_time is not None else cfg.alpha_time
    tau_min = policy.tau_min if policy.tau_min is not None else cfg.tau_min
    base = calibration
    source = "local calibration"
    if base is None:
        base = case.evaluation_metadata.thresholds.get(track)
        source = "dataset"
    if base is None and (policy.tau_acc is None or policy.tau_time is None):
        raise EvaluationSetupError(
            f"case {case.id} has no calibrated thresholds for track {track!r}; "
            "calibrate it or pass explicit --tau-acc and --tau-time"
        )
    e_base = base.e_base if base is not None else None
    t_base = base.t_base if base is not None else None
    tau_acc = tau_time = math.nan
    if e_base is not None and t_base is not None:
        tau_acc, tau_time = compute_thresholds(
            e_base, t_base, alpha_acc=alpha_acc, alpha_time=alpha_time, tau_min=tau_min
        )
    if policy.tau_acc is not None:
        tau_acc = policy.tau_acc
        source = "explicit" if policy.tau_time is not None else source
    if policy.tau_time is not None:
        tau_time = policy.tau_time
    return ResolvedThresholds(tau_acc, tau_time, e_base, t_base, source)


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


def _execution_summary(result: ExecutionResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "signal": result.signal,
        "timed_out": result.timed_out,
        "memory_exceeded": result.memory_exceeded,
        "wall_time_sec": result.wall_time_sec,
        "backend": result.backend,
        "stdout_truncated": result.stdout_truncated,
        "stderr_truncated": result.stderr_truncated,
    }


def classify_execution(result: ExecutionResult, invocation: Invocation) -> tuple[str, str] | None:
    """F-Exec reason and message of a finished execution, or None when it succeeded."""
    if result.violation is not None:
        return "sandbox_violation", result.violation
    if result.timed_out:
        return "timeout", f"killed after the wall-clock limit ({result.wall_time_sec:.1f} s)"
    if result.memory_exceeded:
        return "memory", "the program exceeded its memory limit"
    if result.exit_code == 0:
        return None
    if result.exit_code is not None and result.exit_code in invocation.exit_code_reasons:
        reason = invocation.exit_code_reasons[result.exit_code]
        return reason, f"{reason.replace('_', ' ')} (exit code {result.exit_code})"
    if result.signal is not None:
        return "runtime_error", f"killed by signal {result.signal}"
    return "runtime_error", f"exit code {result.exit_code}"


def _call_first(host: PluginHost, hook: str, track: Track, **kwargs: Any) -> Any:
    answer = getattr(host.hook, hook)(track=track, **kwargs)
    if answer is None:
        raise EvaluationSetupError(
            f"no installed plugin implements {hook} for track {track.name!r}"
        )
    return answer


@define
class _Executor:
    host: PluginHost
    track: Track
    sandbox: Sandbox
    workroot: Path
    build_dir: Path
    case_view: dict[str, Any]
    limits: Limits
    hide: list[Path]
    cache_dir: Path
    count: int = 0
    last_invocation: Invocation | None = None

    def run(self) -> tuple[Path, ExecutionResult]:
        workdir = self.workroot / f"exec-{self.count}"
        self.count += 1
        # A fresh directory: copy the build files without following symlinks.
        shutil.copytree(self.build_dir, workdir, symlinks=True)
        (workdir / "case_spec.json").write_text(
            json.dumps(self.case_view["case_spec"], indent=2, sort_keys=True), encoding="utf-8"
        )
        inv: Invocation = _call_first(
            self.host, "pdeagent_invocation", self.track, workdir=workdir, case_view=self.case_view
        )
        for name, content in inv.files.items():
            target = workdir / name
            if target.is_symlink() or target.exists():
                target.unlink()
            target.write_bytes(content)
        self.last_invocation = inv
        env = dict(inv.env)
        for name in (CACHE_ENV, *inv.cache_env):
            env.setdefault(name, str(self.cache_dir))
        result = self.sandbox.run(
            SandboxRequest(
                argv=inv.argv,
                workdir=workdir,
                env=env,
                writable=[self.cache_dir],
                expose=inv.expose,
                limits=self.limits,
                hide=self.hide,
            )
        )
        return workdir, result


def evaluate_source(
    host: PluginHost,
    track: Track,
    case: Case,
    source: str,
    *,
    sandbox: Sandbox,
    workroot: Path,
    thresholds: ResolvedThresholds | None,
    policy: GradingPolicy = GradingPolicy(),
    limits: Limits | None = None,
    dataset_dir: Path | None = None,
    hide: list[Path] | None = None,
    cache_dir: Path | None = None,
    reference: dict[str, Any] | None = None,
    timing_gate: contextlib.AbstractContextManager[Any] | None = None,
) -> Report:
    """Grade ``source`` for ``case`` on ``track``; returns the report.

    ``workroot`` must not exist or be empty; it receives ``build/`` and one
    ``exec-N/`` per execution. ``dataset_dir`` (references) and every path in
    ``hide`` are made unreadable to the program. Raises :class:`EvaluationSetupError` or
    :class:`pdeagent.sandbox.SandboxError` for harness problems (never a verdict).
    Dataset builds only (trusted baselines): ``cache_dir`` replaces the private
    per-submission cache (one JIT cache shared by the build's runs) and ``reference``
    gives the reference arrays directly (a no-exact case before it is packaged).
    ``timing_gate`` is held around the timed repeats (a run serializes them across
    its workers with it, so no two timed runs share the machine).
    """
    workroot.mkdir(parents=True, exist_ok=True)
    if any(workroot.iterdir()):
        raise EvaluationSetupError(f"work root {workroot} is not empty")
    case_view = agent_view(case, track.name)
    cfg = case.evaluation_config
    timeout = policy.timeout_sec if policy.timeout_sec is not None else cfg.timeout_sec
    repeats = policy.timed_repeats if policy.timed_repeats is not None else cfg.timed_repeats
    limits = limits or Limits(wall_time_sec=timeout)
    report = Report(case_id=case.id, track=track.name, verdict=None)
    if thresholds is not None:
        report.thresholds = thresholds.as_dict()

    def finish(reason: str | None, message: str, *, error: float | None = None) -> Report:
        if thresholds is None:
            report.verdict = Verdict.F_EXEC.value if reason else None
            report.reason = reason
        else:
            verdict, why = staged_verdict(
                gen_ok=True,
                gen_reason=None,
                exec_reason=reason,
                error=error,
                tau_acc=thresholds.tau_acc,
                runtime=report.runtime_sec,
                tau_time=thresholds.tau_time,
            )
            report.verdict = verdict.value
            report.reason = why
        report.message = message
        return report

    # Stage 1: compile / import.
    build_dir = workroot / "build"
    build_dir.mkdir()
    hidden = [*(hide or []), *([dataset_dir] if dataset_dir is not None else [])]
    prepared = _call_first(
        host,
        "pdeagent_prepare",
        track,
        source=source,
        build_dir=build_dir,
        sandbox=sandbox,
        hide=hidden,
    )
    report.compile_time_sec = prepared.compile_time_sec
    if not prepared.ok:
        report.stderr_excerpt = _excerpt(prepared.log)
        return finish(prepared.reason or "compile_error", prepared.message)

    # Stage 2: the accuracy run.
    if cache_dir is None:
        cache_dir = workroot / "cache"
        cache_dir.mkdir()
    executor = _Executor(
        host, track, sandbox, workroot, prepared.build_dir, case_view, limits, hidden, cache_dir
    )
    workdir, result = executor.run()
    assert executor.last_invocation is not None
    report.execution = _execution_summary(result)
    report.accuracy_run_wall_sec = result.wall_time_sec
    report.stdout_excerpt = _excerpt(result.stdout)
    report.stderr_excerpt = _excerpt(result.stderr)
    failure = classify_execution(result, executor.last_invocation)
    diagnostics: dict[str, Any] = {}
    for contribution in host.hook.pdeagent_diagnostics(
        track=track, workdir=workdir, case_view=case_view, execution=result
    ):
        for key, value in (contribution or {}).items():
            diagnostics.setdefault(key, value)
    report.diagnostics = diagnostics
    if failure is not None:
        reason, message = failure
        if reason == "runtime_error" and policy.explain_crashes:
            explanation = host.hook.pdeagent_explain_crash(
                track=track, source=source, workroot=workroot / "explain",
                case_view=case_view, sandbox=sandbox, hide=hidden, execution=result,
            )  # fmt: skip
            if explanation:
                explanation = str(explanation)[:EXPLANATION_CHARS]
                diagnostics["crash_explanation"] = explanation
                message = f"{message}\n{explanation}"
        return finish(reason, message)

    # Stage 3: adapt and validate the artifact.
    adapted = _call_first(
        host, "pdeagent_adapt_output", track, workdir=workdir, case_view=case_view
    )
    if adapted.npz_path is None:
        return finish(adapted.reason or "missing_artifact", adapted.message)
    try:
        arrays = load_solution_npz(adapted.npz_path, workdir=workdir)
    except ArtifactError as exc:
        return finish(exc.reason, exc.message)
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    mask = evaluation_mask(spec.eval_grid, geometry)
    checked = check_solution(arrays, spec.eval_grid, spec.output, mask.scored)
    if not checked.ok:
        return finish(checked.reason, checked.message)

    # Stage 4: accuracy.
    if reference is None:
        reference = reference_fields(case, dataset_dir)
    error = float(relative_l2(checked.fields, reference, mask.scored))
    report.error = error
    report.metrics = compute_metrics(checked.fields, reference, mask.scored)
    if thresholds is not None and not (error <= thresholds.tau_acc):
        return finish(
            None, f"relative L2 error {error:.3e} is above the accuracy threshold", error=error
        )

    # Stage 5: time (repeats only after the accuracy gate passed).
    with timing_gate if timing_gate is not None else contextlib.nullcontext():
        timing = timed_repeats(lambda: executor.run()[1], repeats)
    report.runtime_samples = timing.samples
    if timing.failure is not None:
        report.stderr_excerpt = _excerpt(timing.failure.stderr)
        assert executor.last_invocation is not None
        failed = classify_execution(timing.failure, executor.last_invocation)
        reason, message = failed if failed else ("runtime_error", "timed repeat failed")
        return finish(reason, f"timed repeat failed: {message}", error=error)
    report.runtime_sec = timing.median
    if thresholds is None:
        return finish(None, "measured (no thresholds applied)", error=error)
    if report.runtime_sec > thresholds.tau_time:
        return finish(
            None, f"runtime {report.runtime_sec:.2f} s is above the time threshold", error=error
        )
    return finish(None, "all stages passed", error=error)


class ProductionError(RuntimeError):
    """A trusted solver (reference or intermediate run of a dataset build) failed."""


def produce_fields(
    host: PluginHost,
    track: Track,
    case: Case,
    source: str,
    *,
    sandbox: Sandbox,
    workroot: Path,
    limits: Limits | None = None,
    cache_dir: Path | None = None,
) -> dict[str, Any]:
    """Run ``source`` once for ``case`` and return its checked output fields on the grid.

    The same stages as :func:`evaluate_source` up to the artifact check (prepare, one
    sandboxed execution, adapt, validate), without scoring: used for the reference
    and intermediate solves of no-exact cases. Raises :class:`ProductionError` with
    the stage, message and a stderr excerpt when any stage fails.
    """
    workroot.mkdir(parents=True, exist_ok=True)
    if any(workroot.iterdir()):
        raise EvaluationSetupError(f"work root {workroot} is not empty")
    case_view = agent_view(case, track.name)
    limits = limits or Limits(wall_time_sec=case.evaluation_config.timeout_sec)
    build_dir = workroot / "build"
    build_dir.mkdir()
    prepared = _call_first(
        host,
        "pdeagent_prepare",
        track,
        source=source,
        build_dir=build_dir,
        sandbox=sandbox,
        hide=[],
    )
    if not prepared.ok:
        raise ProductionError(f"{case.id}: prepare failed: {prepared.message}\n{prepared.log}")
    if cache_dir is None:
        cache_dir = workroot / "cache"
        cache_dir.mkdir()
    executor = _Executor(
        host, track, sandbox, workroot, prepared.build_dir, case_view, limits, [], cache_dir
    )
    workdir, result = executor.run()
    assert executor.last_invocation is not None
    failure = classify_execution(result, executor.last_invocation)
    if failure is not None:
        raise ProductionError(
            f"{case.id}: {failure[0]}: {failure[1]}\n{_excerpt(result.stderr, 3000)}"
        )
    adapted = _call_first(
        host, "pdeagent_adapt_output", track, workdir=workdir, case_view=case_view
    )
    if adapted.npz_path is None:
        raise ProductionError(f"{case.id}: {adapted.reason}: {adapted.message}")
    try:
        arrays = load_solution_npz(adapted.npz_path, workdir=workdir)
    except ArtifactError as exc:
        raise ProductionError(f"{case.id}: {exc.reason}: {exc.message}") from None
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    mask = evaluation_mask(spec.eval_grid, geometry)
    checked = check_solution(arrays, spec.eval_grid, spec.output, mask.scored)
    if not checked.ok:
        raise ProductionError(f"{case.id}: {checked.reason}: {checked.message}")
    return dict(checked.fields)
