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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from attrs import define

from pdeagent.cases.agent_view import agent_view
from pdeagent.cases.model import (
    ALL_RUNS_TIMED_PROTOCOL,
    LEGACY_PROTOCOL,
    PRISTINE_PROTOCOL,
    PROTOCOLS,
    Case,
    Thresholds,
)
from pdeagent.evaluation.reference import reference_fields
from pdeagent.evaluation.report import Report
from pdeagent.evaluation.timing import timed_repeats
from pdeagent.geometry import evaluation_mask, get_geometry
from pdeagent.plugins import PluginHost
from pdeagent.sandbox.base import ExecutionResult, Limits, Sandbox, SandboxRequest
from pdeagent.scoring.artifacts import ArtifactError, check_solution, load_solution_npz
from pdeagent.scoring.metrics import case_error, compute_metrics, group_errors
from pdeagent.scoring.verdict import TAU_ACC_MAX, TIME_RULES, Verdict, staged_verdict
from pdeagent.scoring.verdict import thresholds as compute_thresholds
from pdeagent.stages import Invocation, Track

EXCERPT_CHARS = 2000
EXPLANATION_CHARS = 1500
"""At most this many characters of a track's crash explanation go into a report."""
CACHE_ENV = "XDG_CACHE_HOME"
"""Points at the execution's writable cache directory. Under the pristine protocol every
execution gets a fresh, empty one (nothing a run writes survives it, SPEC §7); under the
legacy protocol one per submission, warmed by its accuracy run and reused by its timed
repeats. Never shared across submissions."""
CURRENT_PROTOCOL = ALL_RUNS_TIMED_PROTOCOL
"""The protocol new calibrations are measured with (and evaluations without thresholds)."""


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
    time_rule: str | None = None
    """``solve`` or ``paper`` (:data:`pdeagent.scoring.verdict.TIME_RULES`); None: ``solve``
    where the thresholds carry ``t_null``, else the rule they were calibrated for (paper)."""
    explain_crashes: bool = False
    """After a crash, ask the track to explain it (``pdeagent_explain_crash``)."""


@define(frozen=True)
class ResolvedThresholds:
    tau_acc: float
    tau_time: float
    e_base: float | None
    t_base: float | None
    source: str
    t_null: float | None = None
    time_rule: str = "paper"
    """How tau_time was computed (``solve``, ``paper`` or ``explicit``)."""
    protocol: int = LEGACY_PROTOCOL
    """The timing protocol the submission is graded with: the one the thresholds were
    measured with (a gate compares like with like)."""
    t_noise: float | None = None
    """The timing noise floor of the solve allowance (None: not recorded)."""
    rule: str | None = None
    """The rule that chose the baseline behind the thresholds (``frontier-2``, ...,
    :attr:`pdeagent.cases.model.Thresholds.rule`); None: explicit thresholds."""
    calibrated_on: dict[str, Any] | None = None
    """Where the thresholds were measured (their ``calibrated_on``, a copy); None:
    explicit thresholds. Not part of :meth:`as_dict` (a report records it apart)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "tau_acc": self.tau_acc,
            "tau_time": self.tau_time,
            "e_base": self.e_base,
            "t_base": self.t_base,
            "t_null": self.t_null,
            "t_noise": self.t_noise,
            "time_rule": self.time_rule,
            "protocol": self.protocol,
            "rule": self.rule,
            "source": self.source,
        }


def resolve_thresholds(
    case: Case,
    track: str,
    policy: GradingPolicy = GradingPolicy(),
    calibration: Thresholds | None = None,
) -> ResolvedThresholds:
    """tau_acc / tau_time for ``case`` on ``track``: explicit overrides, else a local
    calibration when given, else the dataset's shipped thresholds.

    The time rule is ``solve`` (``tau_time = t_null + alpha_time max(t_base - t_null,
    t_noise)``) when
    the thresholds carry ``t_null``, else ``paper`` (``alpha_time * t_base``, what legacy
    thresholds were calibrated for); ``policy.time_rule`` picks one explicitly (``solve``
    on thresholds without ``t_null`` is a setup error). Pristine-protocol thresholds cap
    tau_acc at :data:`~pdeagent.scoring.verdict.TAU_ACC_MAX`.
    """
    cfg = case.evaluation_config
    alpha_acc = policy.alpha_acc if policy.alpha_acc is not None else cfg.alpha_acc
    alpha_time = policy.alpha_time if policy.alpha_time is not None else cfg.alpha_time
    tau_min = policy.tau_min if policy.tau_min is not None else cfg.tau_min
    if policy.time_rule is not None and policy.time_rule not in TIME_RULES:
        raise EvaluationSetupError(
            f"unknown time rule {policy.time_rule!r}; expected one of {', '.join(TIME_RULES)}"
        )
    base = calibration
    source = "local calibration"
    if base is not None and isinstance(base.calibrated_on.get("calibration"), str):
        source = f"local calibration: {base.calibrated_on['calibration']}"  # a speed sample
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
    t_null = base.t_null if base is not None else None
    t_noise = base.t_noise if base is not None else None
    protocol = base.protocol if base is not None else CURRENT_PROTOCOL
    if protocol not in PROTOCOLS:
        raise EvaluationSetupError(f"case {case.id}: unknown timing protocol {protocol!r}")
    time_rule = policy.time_rule or ("solve" if t_null is not None else "paper")
    if time_rule == "solve" and t_null is None and base is not None and policy.tau_time is None:
        raise EvaluationSetupError(
            f"case {case.id}: the {track} thresholds have no t_null (calibrated with the "
            "paper's rule); grade with --time-rule paper or calibrate again"
        )
    tau_acc = tau_time = math.nan
    if e_base is not None and t_base is not None:
        tau_acc, tau_time = compute_thresholds(
            e_base,
            t_base,
            alpha_acc=alpha_acc,
            alpha_time=alpha_time,
            tau_min=tau_min,
            t_null=t_null if time_rule == "solve" else None,
            tau_acc_max=TAU_ACC_MAX if protocol >= PRISTINE_PROTOCOL else None,
            t_noise=t_noise if time_rule == "solve" else None,
        )
    if policy.tau_acc is not None:
        tau_acc = policy.tau_acc
        source = "explicit" if policy.tau_time is not None else source
    if policy.tau_time is not None:
        tau_time = policy.tau_time
        time_rule = "explicit"
    return ResolvedThresholds(
        tau_acc, tau_time, e_base, t_base, source, t_null, time_rule, protocol, t_noise,
        rule=base.rule if base is not None and source != "explicit" else None,
        calibrated_on=(
            dict(base.calibrated_on) if base is not None and source != "explicit" else None
        ),
    )  # fmt: skip


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
    answer = host.call_track_hook(track, hook, **kwargs)
    if answer is None:
        raise EvaluationSetupError(
            f"no installed plugin implements {hook} for track {track.name!r}"
        )
    return answer


@define
class Executor:
    """Runs the prepared program, each time in a fresh work dir; ``cache_dir`` None gives
    every execution its own fresh, empty cache dir (the pristine protocol)."""

    host: PluginHost
    track: Track
    sandbox: Sandbox
    workroot: Path
    build_dir: Path
    case_view: dict[str, Any]
    limits: Limits
    hide: list[Path]
    cache_dir: Path | None
    count: int = 0
    last_invocation: Invocation | None = None

    def run(self, files: Mapping[str, bytes] | None = None) -> tuple[Path, ExecutionResult]:
        """One execution in ``workroot/exec-N`` (``files``: more inputs written into it
        beside ``case_spec.json``, e.g. a screening job)."""
        n = self.count
        workdir = self.workroot / f"exec-{n}"
        self.count += 1
        # A fresh directory: copy the build files without following symlinks.
        shutil.copytree(self.build_dir, workdir, symlinks=True)
        (workdir / "case_spec.json").write_text(
            json.dumps(self.case_view["case_spec"], indent=2, sort_keys=True), encoding="utf-8"
        )
        for name, content in (files or {}).items():
            (workdir / name).write_bytes(content)
        inv: Invocation = _call_first(
            self.host, "pdeagent_invocation", self.track, workdir=workdir, case_view=self.case_view
        )
        for name, content in inv.files.items():
            target = workdir / name
            if target.is_symlink() or target.exists():
                target.unlink()
            target.write_bytes(content)
        self.last_invocation = inv
        cache_dir = self.cache_dir
        if cache_dir is None:
            cache_dir = self.workroot / f"cache-{n}"
            cache_dir.mkdir()
        env = dict(inv.env)
        for name in (CACHE_ENV, *inv.cache_env):
            env.setdefault(name, str(cache_dir))
        result = self.sandbox.run(
            SandboxRequest(
                argv=inv.argv,
                workdir=workdir,
                env=env,
                writable=[cache_dir],
                expose=inv.expose,
                limits=self.limits,
                hide=self.hide,
            )
        )
        return workdir, result


@define(frozen=True)
class _Checked:
    """The graded output of one execution: ``fields`` or the F-Exec ``reason``."""

    fields: dict[str, Any] | None
    reason: str | None = None
    message: str = ""


def check_output(
    host: PluginHost, track: Track, case: Case, workdir: Path, case_view: dict[str, Any]
) -> _Checked:
    """Adapt and validate one execution's artifact (the same checks for every run)."""
    adapted = _call_first(
        host, "pdeagent_adapt_output", track, workdir=workdir, case_view=case_view
    )
    if adapted.npz_path is None:
        return _Checked(None, adapted.reason or "missing_artifact", adapted.message)
    try:
        arrays = load_solution_npz(adapted.npz_path, workdir=workdir)
    except ArtifactError as exc:
        return _Checked(None, exc.reason, exc.message)
    spec = case.case_spec
    geometry = get_geometry(spec.domain.type, spec.domain.geometry_params)
    mask = evaluation_mask(spec.eval_grid, geometry)
    checked = check_solution(arrays, spec.eval_grid, spec.output, mask.scored)
    if not checked.ok:
        return _Checked(None, checked.reason, checked.message)
    return _Checked(dict(checked.fields))


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
    protocol: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Grade ``source`` for ``case`` on ``track``; returns the report.

    ``workroot`` must not exist or be empty; it receives ``build/`` and one
    ``exec-N/`` (and ``cache-N/``) per execution. ``dataset_dir`` (references) and every
    path in ``hide`` are made unreadable to the program. Raises
    :class:`EvaluationSetupError` or :class:`pdeagent.sandbox.SandboxError` for harness
    problems (never a verdict).

    ``protocol`` (default: the thresholds', else :data:`CURRENT_PROTOCOL`): under the
    pristine protocol every execution starts with a fresh work dir and a fresh, empty
    cache dir, so nothing a run writes survives it; under the legacy protocol one cache
    dir (``cache_dir``, else ``workroot/cache``) serves all executions of the submission.
    Every timed repeat's output is checked like the accuracy run's and its error gated
    by ``tau_acc`` too (without thresholds: it must be finite).
    Dataset builds only (trusted baselines): ``reference`` gives the reference arrays
    directly (a no-exact case before it is packaged); ``cache_dir`` shares one legacy
    cache across a build's runs (refused under the pristine protocol).
    ``timing_gate`` is held around the timed repeats (a run serializes them across
    its workers with it, so no two timed runs share the machine).
    ``progress``, when given, is called with the name of each stage as it starts
    (``"compile"``, ``"accuracy run"``, ``"timed repeat K/N"``).
    """
    note = progress or (lambda stage: None)
    workroot.mkdir(parents=True, exist_ok=True)
    if any(workroot.iterdir()):
        raise EvaluationSetupError(f"work root {workroot} is not empty")
    if protocol is None:
        protocol = thresholds.protocol if thresholds is not None else CURRENT_PROTOCOL
    if protocol not in PROTOCOLS:
        raise EvaluationSetupError(f"unknown timing protocol {protocol!r}")
    if thresholds is not None and thresholds.protocol != protocol:
        raise EvaluationSetupError(
            f"thresholds measured with protocol {thresholds.protocol} cannot grade a run "
            f"under protocol {protocol}"
        )
    if protocol >= PRISTINE_PROTOCOL and cache_dir is not None:
        raise EvaluationSetupError("a shared cache dir contradicts the pristine protocol")
    case_view = agent_view(case, track.name)
    cfg = case.evaluation_config
    timeout = policy.timeout_sec if policy.timeout_sec is not None else cfg.timeout_sec
    repeats = policy.timed_repeats if policy.timed_repeats is not None else cfg.timed_repeats
    limits = limits or Limits(wall_time_sec=timeout)
    if repeats < 0 or (repeats == 0 and thresholds is not None):
        raise EvaluationSetupError(
            f"timed_repeats={repeats}: grading needs at least one timed repeat (0 is for "
            "measuring without thresholds only)"
        )
    report = Report(case_id=case.id, track=track.name, verdict=None, protocol=protocol)
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
    note("compile")
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

    # Stages 2-5: the runs. Under protocol 3 every run is a timing sample, so the timing
    # gate is held from the accuracy run on (else around the timed repeats only).
    all_timed = protocol >= ALL_RUNS_TIMED_PROTOCOL

    def runs() -> Report:
        nonlocal cache_dir, reference
        # Stage 2: the accuracy run.
        if protocol == LEGACY_PROTOCOL and cache_dir is None:
            cache_dir = workroot / "cache"
            cache_dir.mkdir()
        executor = Executor(
            host, track, sandbox, workroot, prepared.build_dir, case_view, limits, hidden, cache_dir
        )
        note("accuracy run")
        workdir, result = executor.run()
        assert executor.last_invocation is not None
        report.execution = _execution_summary(result)
        report.accuracy_run_wall_sec = result.wall_time_sec
        report.stdout_excerpt = _excerpt(result.stdout)
        report.stderr_excerpt = _excerpt(result.stderr)
        failure = classify_execution(result, executor.last_invocation)
        diagnostics: dict[str, Any] = {}
        for contribution in host.call_track_hook(
            track, "pdeagent_diagnostics", workdir=workdir, case_view=case_view, execution=result
        ):
            for key, value in (contribution or {}).items():
                diagnostics.setdefault(key, value)
        report.diagnostics = diagnostics
        if failure is not None:
            reason, message = failure
            if reason == "runtime_error" and policy.explain_crashes:
                explanation = host.call_track_hook(
                    track, "pdeagent_explain_crash", source=source, workroot=workroot / "explain",
                    case_view=case_view, sandbox=sandbox, hide=hidden, execution=result,
                )  # fmt: skip
                if explanation:
                    explanation = str(explanation)[:EXPLANATION_CHARS]
                    diagnostics["crash_explanation"] = explanation
                    message = f"{message}\n{explanation}"
            return finish(reason, message)

        # Stage 3: adapt and validate the artifact.
        checked = check_output(host, track, case, workdir, case_view)
        if checked.fields is None:
            return finish(checked.reason, checked.message)

        # Stage 4: accuracy.
        spec = case.case_spec
        scored = evaluation_mask(
            spec.eval_grid, get_geometry(spec.domain.type, spec.domain.geometry_params)
        ).scored
        if reference is None:
            reference = reference_fields(case, dataset_dir)
        error = float(case_error(checked.fields, reference, scored, spec.output))
        report.error = error
        report.metrics = compute_metrics(checked.fields, reference, scored, output=spec.output)
        if thresholds is not None and not (error <= thresholds.tau_acc):
            text = _error_text(error, report.metrics.get("rel_l2_groups"))
            return finish(None, f"{text} is above the accuracy threshold", error=error)

        if repeats == 0:  # measuring only (a calibration ladder rung): the accuracy run's time
            report.runtime_sec = result.wall_time_sec
            return finish(None, "measured from the accuracy run (no timed repeats)", error=error)

        # Stage 5: time (repeats only after the accuracy gate passed). Every repeat is graded
        # like the accuracy run: a program cannot be accurate once and fast on other runs.
        # Under protocol 3 the accuracy run is the first timed run: repeats - 1 more follow.
        repeat_failure: tuple[str | None, str, float | None] | None = None
        first: list[float] = []
        if all_timed:
            first = [result.wall_time_sec]
            report.repeat_errors.append(error)

        def timed_run() -> ExecutionResult:
            nonlocal repeat_failure
            k = len(report.repeat_errors) + 1
            note(f"timed {'run' if all_timed else 'repeat'} {k}/{repeats}")
            run_dir, run_result = executor.run()
            if not run_result.ok or repeat_failure is not None:
                return run_result
            out = check_output(host, track, case, run_dir, case_view)
            if out.fields is None:
                repeat_failure = (out.reason, f"timed repeat {k}: {out.message}", None)
                return run_result
            run_groups = group_errors(out.fields, reference, scored, spec.output)
            run_error = float(case_error(out.fields, reference, scored, spec.output))
            report.repeat_errors.append(run_error)
            limit = thresholds.tau_acc if thresholds is not None else math.inf
            if not (run_error <= limit):
                repeat_failure = (
                    None,
                    f"timed repeat {k}: {_error_text(run_error, run_groups)} is above the "
                    "accuracy threshold",
                    run_error,
                )
            return run_result

        gate = timing_gate if timing_gate is not None and not all_timed else None
        with gate if gate is not None else contextlib.nullcontext():
            timing = timed_repeats(
                timed_run, repeats - len(first), stop=lambda: repeat_failure is not None,
                first=first,
            )  # fmt: skip
        report.runtime_samples = timing.samples
        if timing.failure is not None:
            report.stderr_excerpt = _excerpt(timing.failure.stderr)
            assert executor.last_invocation is not None
            failed = classify_execution(timing.failure, executor.last_invocation)
            reason, message = failed if failed else ("runtime_error", "timed repeat failed")
            return finish(reason, f"timed repeat failed: {message}", error=error)
        if repeat_failure is not None:
            reason, message, run_error = repeat_failure
            if reason is None and thresholds is None:
                reason = "non_finite"
            report.error = run_error if run_error is not None else error
            return finish(reason, message, error=report.error)
        report.runtime_sec = timing.median
        if thresholds is None:
            return finish(None, "measured (no thresholds applied)", error=error)
        if report.runtime_sec > thresholds.tau_time:
            return finish(
                None, f"runtime {report.runtime_sec:.2f} s is above the time threshold", error=error
            )
        return finish(None, "all stages passed", error=error)

    with timing_gate if timing_gate is not None and all_timed else contextlib.nullcontext():
        return runs()


def _error_text(error: float, groups: dict[str, float | None] | None) -> str:
    """``relative L2 error 1.234e-02``, naming each group's error when the case scores
    several (a flow case's velocity and pressure): the verdict error is the largest."""
    text = f"relative L2 error {error:.3e}"
    if groups and len(groups) > 1:
        parts = ", ".join(
            f"{name} {value:.3e}" if value is not None else f"{name} not finite"
            for name, value in groups.items()
        )
        text += f" (the largest of the groups scored separately: {parts})"
    return text


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
    executor = Executor(
        host, track, sandbox, workroot, prepared.build_dir, case_view, limits, [], cache_dir
    )
    workdir, result = executor.run()
    assert executor.last_invocation is not None
    failure = classify_execution(result, executor.last_invocation)
    if failure is not None:
        raise ProductionError(
            f"{case.id}: {failure[0]}: {failure[1]}\n{_excerpt(result.stderr, 3000)}"
        )
    checked = check_output(host, track, case, workdir, case_view)
    if checked.fields is None:
        raise ProductionError(f"{case.id}: {checked.reason}: {checked.message}")
    return checked.fields
