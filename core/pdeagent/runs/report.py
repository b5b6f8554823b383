"""What finished runs show (``pdeagent report``): pure functions over saved records.

Reads only ``run.json`` and the attempts' ``report.json`` files; nothing is re-run
and no program is graded again. Everything else (threshold sensitivity included)
is recomputed from the numbers the reports saved.

Semantics, per (run, track, model, case):

- the case's outcome is its **last graded** attempt (its first ``PASS`` if it has
  one; feedback mode stops there): an infrastructure failure of a later attempt
  never replaces an earlier verdict (the case counts with that verdict and is
  *interrupted*: ``--resume`` continues it); single-shot and template-guided runs
  have attempt 0 only;
- a case none of whose attempts was graded (every one ``ERROR`` or
  ``infrastructure: true``: sandbox unavailable, no reply from the provider after
  retries) is an infrastructure failure: counted apart and left out of every
  pass-rate denominator; every other case is *graded*. Generation failures that are
  the request's or the model's (F-Gen ``context_length``, ``content_filter``,
  ``invalid_request``, ``no_code``, ...) are graded failures;
- pass rate = ``PASS`` cases / graded cases;
- a ``report.json`` that :func:`~pdeagent.runs.records.read_attempt` rejects
  (truncated, corrupted, foreign schema) is *unreadable*: listed, never trusted;
- a run graded with thresholds calibrated on another machine (its attempts'
  ``calibrated_on`` against the run's ``machine`` fingerprint, see
  :func:`pdeagent.machine.fingerprint_differences`) gets a warning; the calibration's
  sandbox backend is shown ("backend unknown" for records written before it was).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import cattrs
from attrs import define, field

from pdeagent.cases.families import FAMILIES
from pdeagent.machine import calibration_backend, fingerprint_differences
from pdeagent.runs.layout import REPORT_FILE
from pdeagent.runs.records import AttemptReport, read_attempt
from pdeagent.scoring.verdict import TAU_ACC_MAX, thresholds

SUMMARY_SCHEMA_VERSION = 1
RUN_MANIFEST = "run.json"
RUN_SCHEMA_VERSION = 1
MAX_MANIFEST_BYTES = 4_000_000
REPORT_GLOB = f"*/*/*/attempt-*/{REPORT_FILE}"

STAGES = ("PASS", "F-Exec", "F-Acc", "F-Time", "F-Gen")
"""Verdicts of graded cases, in stage order."""
ALL_FAMILIES = "all"
ALPHA_ACC_GRID = (2.0, 5.0, 10.0, 50.0, 100.0)
ALPHA_TIME_GRID = (1.0, 2.0, 3.0, 5.0)
DEFAULT_ALPHAS = {"alpha_acc": 10.0, "alpha_time": 3.0, "tau_min": 1e-6}
"""SPEC §1 defaults, used when neither the report nor the run manifest states a value."""
METRIC_KEYS = ("rmse", "mae", "r_squared")
DIAGNOSTIC_KEYS: dict[str, tuple[str, ...]] = {
    "dofs": ("dofs", "num_dofs"),
    "mesh_resolution": ("mesh_resolution",),
    "element_degree": ("element_degree",),
    "linear_iterations": ("linear_iterations",),
    "newton_iterations": ("newton_iterations",),
    "work_rate": ("work_rate", "work_rate_dof_steps_per_sec"),
    "cfl": ("cfl",),
    "peclet": ("peclet",),
    "total_variation": ("total_variation",),
}
"""Diagnostics column -> the keys it is read from (first present wins), looked up in
``diagnostics`` and then in its ``solver_info`` (where the solver's self-report is)."""


# ------------------------------------------------------------------------ loading


@define(frozen=True)
class Run:
    """One run directory: its manifest, its readable reports, its unreadable ones."""

    path: Path
    manifest: dict[str, Any]
    reports: tuple[AttemptReport, ...]
    unreadable: tuple[str, ...] = ()
    """``report.json`` paths (relative to the run directory) that could not be read."""

    @property
    def config(self) -> dict[str, Any]:
        config = self.manifest.get("config")
        return config if isinstance(config, dict) else {}

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.path.name)

    @property
    def mode(self) -> str | None:
        mode = self.config.get("mode")
        if isinstance(mode, str):
            return mode
        modes = Counter(r.mode for r in self.reports)
        return modes.most_common(1)[0][0] if modes else None


@define(frozen=True)
class RunData:
    runs: tuple[Run, ...]


def load_manifest(run_dir: Path) -> dict[str, Any]:
    """``RUN/run.json`` as a dict; ValueError for anything that is not a run directory."""
    path = run_dir / RUN_MANIFEST
    if not run_dir.is_dir():
        raise ValueError(f"run directory not found: {run_dir}")
    if not path.is_file():
        raise ValueError(f"not a run directory (no {RUN_MANIFEST}): {run_dir}")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ValueError(f"{path} is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"unreadable {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    if data.get("schema_version") != RUN_SCHEMA_VERSION:
        raise ValueError(f"{path}: unknown schema_version {data.get('schema_version')!r}")
    return data


def load_run(run_dir: Path) -> Run:
    manifest = load_manifest(run_dir)
    reports: list[AttemptReport] = []
    unreadable: list[str] = []
    for path in sorted(run_dir.glob(REPORT_GLOB)):
        report = None if path.is_symlink() else read_attempt(path)
        if report is None:
            unreadable.append(path.relative_to(run_dir).as_posix())
        else:
            reports.append(report)
    return Run(run_dir, manifest, tuple(reports), tuple(unreadable))


def load_runs(paths: Iterable[Path]) -> RunData:
    """Every run directory in ``paths`` (each once, in the order given)."""
    seen: set[Path] = set()
    runs: list[Run] = []
    for path in paths:
        resolved = path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            runs.append(load_run(path))
    return RunData(tuple(runs))


# ----------------------------------------------------------------------- outcomes


@define(frozen=True)
class CaseOutcome:
    run: int
    """Index of the run in :attr:`RunData.runs`."""
    track: str
    model: str
    case_id: str
    attempts: tuple[AttemptReport, ...]
    """The readable attempts, by attempt number."""

    @property
    def final(self) -> AttemptReport:
        """The first ``PASS`` attempt, else the last graded one (not an infrastructure
        failure), else the last one."""
        passed = next((r for r in self.attempts if r.passed), None)
        if passed is not None:
            return passed
        graded = [r for r in self.attempts if not _infrastructure(r)]
        return graded[-1] if graded else self.attempts[-1]

    @property
    def first(self) -> AttemptReport | None:
        return next((r for r in self.attempts if r.attempt == 0), None)

    @property
    def passed(self) -> bool:
        return self.final.passed

    @property
    def infrastructure(self) -> bool:
        """No attempt was graded."""
        return _infrastructure(self.final)

    @property
    def interrupted(self) -> bool:
        """Graded, but a later attempt failed on infrastructure (re-runnable)."""
        final = self.final
        return (
            not final.passed and not _infrastructure(final) and (_infrastructure(self.attempts[-1]))
        )


def _infrastructure(report: AttemptReport) -> bool:
    return not report.passed and (report.verdict == "ERROR" or report.infrastructure)


def case_outcomes(data: RunData) -> list[CaseOutcome]:
    outcomes: list[CaseOutcome] = []
    for index, run in enumerate(data.runs):
        grouped: dict[tuple[str, str, str], dict[int, AttemptReport]] = defaultdict(dict)
        for report in run.reports:
            grouped[(report.track, report.model, report.case_id)][report.attempt] = report
        for (track, model, case_id), by_attempt in sorted(grouped.items()):
            attempts = tuple(by_attempt[k] for k in sorted(by_attempt))
            outcomes.append(CaseOutcome(index, track, model, case_id, attempts))
    return outcomes


# ------------------------------------------------------------------------ summary


@define(frozen=True)
class Rate:
    count: int
    total: int

    @property
    def value(self) -> float | None:
        return self.count / self.total if self.total else None


@define(frozen=True)
class Total:
    """A sum over attempts; ``unknown`` attempts had no value (never counted as 0)."""

    value: float | None
    """Sum of the known values; None when no attempt had one."""
    unknown: int = 0


@define(frozen=True)
class Series:
    """One (run, track, model): a column of the pass-rate tables."""

    label: str
    """The model, disambiguated by mode or run id when several runs hold it."""
    track: str
    model: str
    run_id: str
    mode: str | None
    provider: str


@define(frozen=True)
class CalibrationInfo:
    """One place thresholds of a run were calibrated, against the grading machine."""

    backend: str
    """The sandbox backend of the calibration, or ``backend unknown``."""
    cpu: str | None
    cores: int | None
    attempts: int
    """Graded attempts whose thresholds came from here."""
    same_machine: bool | None
    """False: another machine fingerprint; None: the run records no grading machine."""
    differences: dict[str, list[Any]] = field(factory=dict)
    """``{key: [calibration value, grading value]}`` for every differing entry."""
    calibration: str | None = None
    """How the thresholds were moved to this machine, when they were (a speed sample:
    ``speed sample (20 cases, ratio 1.07)``); None: measured per case where shown."""


@define(frozen=True)
class RunInfo:
    run_id: str
    path: str
    mode: str | None
    provider: str | None
    tracks: list[str]
    models: list[str]
    attempts: int | None
    created: str | None
    reports: int
    unreadable: list[str]
    grading: list[str] = field(factory=list)
    """How the run's attempts were graded: timing protocol and time rule (e.g.
    ``protocol 3, solve rule``), one entry per combination found in its reports."""
    calibrations: list[CalibrationInfo] = field(factory=list)
    """Where the thresholds its graded attempts used were calibrated."""
    warnings: list[str] = field(factory=list)
    """E.g. thresholds calibrated on another machine than the one that graded."""


@define(frozen=True)
class FamilyRate:
    track: str
    series: str
    family: str
    """A family name, or ``"all"``."""
    rate: Rate


@define(frozen=True)
class StageRow:
    track: str
    series: str
    graded: int
    infrastructure: int
    counts: dict[str, int]
    """Graded cases per verdict (:data:`STAGES`)."""
    fexec_reasons: dict[str, int]
    pass_rate: Rate
    executability: Rate
    """Cases that ran (not F-Gen, not F-Exec) / graded cases."""
    accuracy: Rate
    """Cases that passed the accuracy gate / cases that ran."""
    time: Rate
    """Cases that passed the time gate / cases that passed the accuracy gate."""
    shares: dict[str, float | None]
    """``counts`` / graded cases."""
    fgen_reasons: dict[str, int] = field(factory=dict)
    """Graded F-Gen cases per reason (``no_code``, ``context_length``, ...)."""
    interrupted: int = 0
    """Graded cases whose later attempt failed on infrastructure (counted with their
    last graded verdict; ``--resume`` continues them)."""

    def stage_rates(self) -> list[Rate]:
        """Each stage's count out of the graded cases, in :data:`STAGES` order."""
        return [Rate(self.counts[stage], self.graded) for stage in STAGES]


@define(frozen=True)
class AuxRow:
    """Medians over the passed cases (paper Table 4)."""

    track: str
    series: str
    passed: int
    medians: dict[str, float | None]
    """``error``, ``runtime_sec``, ``error_over_tau_acc``, ``runtime_over_tau_time``,
    and each of :data:`METRIC_KEYS`."""


@define(frozen=True)
class DiagnosticsRow:
    """Medians of the solver's diagnostics over graded cases of one math type (Table 5)."""

    track: str
    series: str
    math_type: str
    cases: int
    """Cases of this math type that reported diagnostics."""
    medians: dict[str, float]
    """Only the columns of :data:`DIAGNOSTIC_KEYS` some case reported."""


@define(frozen=True)
class SensitivityRow:
    track: str
    series: str
    parameter: str
    """``alpha_acc`` (``alpha_time`` as run) or ``alpha_time`` (``alpha_acc`` as run)."""
    alpha: float
    rate: Rate
    """Cases that pass / graded cases."""
    unknown: int
    """Accurate enough at this alpha but never timed (failed accuracy as run)."""
    no_baseline: int
    """Executed cases without ``e_base``/``t_base`` (explicit thresholds): not passing."""


@define(frozen=True)
class UsageRow:
    track: str
    series: str
    attempts: int
    input_tokens: Total
    output_tokens: Total
    cost_usd: Total


@define(frozen=True)
class FeedbackRow:
    track: str
    series: str
    mode: str | None
    max_attempts: int | None
    graded: int
    pass_at_first: Rate
    """Graded cases whose attempt 0 passed / graded cases."""
    final: Rate


@define(frozen=True)
class Summary:
    runs: list[RunInfo]
    series: list[Series]
    pass_rates: list[FamilyRate]
    stages: list[StageRow]
    auxiliary: list[AuxRow]
    diagnostics: list[DiagnosticsRow]
    sensitivity: list[SensitivityRow]
    usage: list[UsageRow]
    feedback: list[FeedbackRow]
    """Empty unless several runs or a feedback run are summarised."""
    pass_rate_by_attempt: list[Any] = field(factory=list)
    """:class:`~pdeagent.runs.report_attempts.AttemptRateRow` per feedback series."""
    agent: list[Any] = field(factory=list)
    """:class:`~pdeagent.runs.report_agent.AgentRow` per series with agent episodes."""
    agent_cases: list[Any] = field(factory=list)
    """:class:`~pdeagent.runs.report_agent.AgentCase` per case of those series."""
    alpha_acc_grid: list[float] = field(factory=lambda: list(ALPHA_ACC_GRID))
    alpha_time_grid: list[float] = field(factory=lambda: list(ALPHA_TIME_GRID))
    schema_version: int = SUMMARY_SCHEMA_VERSION

    @property
    def tracks(self) -> list[str]:
        return sorted({s.track for s in self.series})

    def to_dict(self) -> dict[str, Any]:
        data = _converter.unstructure(self)
        return {"schema_version": data.pop("schema_version"), **data}


_converter = cattrs.Converter()
_converter.register_unstructure_hook(
    Rate, lambda r: {"count": r.count, "total": r.total, "rate": r.value}
)


def finite_number(value: Any) -> float | None:
    """``value`` as a float when it is a finite int or float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def median_of(values: Iterable[Any]) -> float | None:
    """The median of the finite numbers among ``values`` (None when there are none)."""
    numbers = [n for n in map(finite_number, values) if n is not None]
    return statistics.median(numbers) if numbers else None


def _ratio(numerator: float | None, denominator: Any) -> float | None:
    den = finite_number(denominator)
    if numerator is None or den is None or den <= 0:
        return None
    return numerator / den


def family_order(family: str) -> tuple[int, int, str]:
    """Sort key: the benchmark's families in SPEC order, then others, then ``all``."""
    names = list(FAMILIES)
    if family == ALL_FAMILIES:
        return (2, 0, family)
    return (0, names.index(family), family) if family in names else (1, 0, family)


def _series_labels(keys: Sequence[tuple[int, str, str]], runs: Sequence[Run]) -> list[str]:
    """A label per (run, track, model): the model, unless another run holds it too."""
    labels: list[str] = []
    for run, track, model in keys:
        clash = [k[0] for k in keys if k[1:] == (track, model)]
        label = model
        if len(clash) > 1:
            for tag in (lambda i: runs[i].mode, lambda i: runs[i].run_id):
                tags = [tag(i) for i in clash]
                if len(set(tags)) == len(tags):
                    label = f"{model} [{tag(run)}]"
                    break
            else:
                label = f"{model} [run {run + 1}]"
        labels.append(label)
    return labels


def run_alphas(report: AttemptReport, config: dict[str, Any]) -> dict[str, float]:
    """The ``alpha_acc``, ``alpha_time`` and ``tau_min`` a case was graded with: the
    report's, else the run manifest's config, else the SPEC defaults."""
    out: dict[str, float] = {}
    for key, default in DEFAULT_ALPHAS.items():
        value = finite_number(report.alphas.get(key))
        if value is None:
            value = finite_number(config.get(key))
        out[key] = default if value is None else value
    return out


def sensitivity_outcome(
    report: AttemptReport, *, alpha_acc: float, alpha_time: float, tau_min: float
) -> str:
    """Whether a graded case would pass at other alphas: ``pass``, ``fail``,
    ``unknown`` or ``no_baseline``. Recomputed from the saved numbers only::

        tau_acc  = max(alpha_acc * e_base, tau_min)     (capped at 1e-2 when pristine)
        tau_time = t_null + alpha_time * max(t_base - t_null, t_noise)  (solve rule)
                 = alpha_time * t_base                       (paper rule, as graded)
        pass     iff executed and error <= tau_acc
                     and runtime_sec is not None and runtime_sec <= tau_time

    ``e_base``/``t_base`` come from the report's ``thresholds``; "executed" means an
    error was measured and the verdict is not F-Exec/F-Gen/ERROR. Timed repeats run
    only after the accuracy gate passed at the run's own thresholds, so a case that
    failed accuracy as run has no runtime: when it is accurate enough at a looser
    ``alpha_acc`` its time is ``unknown`` (reported as not passing). An executed case
    graded with explicit thresholds (no usable ``e_base``/``t_base``) is
    ``no_baseline`` (not passing either).
    """
    if report.verdict in ("F-Exec", "F-Gen", "ERROR") or report.error is None:
        return "fail"
    base = report.thresholds or {}
    e_base, t_base = finite_number(base.get("e_base")), finite_number(base.get("t_base"))
    if e_base is None or t_base is None:
        return "no_baseline"
    t_null = finite_number(base.get("t_null")) if base.get("time_rule") == "solve" else None
    t_noise = finite_number(base.get("t_noise")) if t_null is not None else None
    pristine = (report.protocol or finite_number(base.get("protocol")) or 1) >= 2
    try:
        tau_acc, tau_time = thresholds(
            e_base, t_base, alpha_acc=alpha_acc, alpha_time=alpha_time, tau_min=tau_min,
            t_null=t_null, tau_acc_max=TAU_ACC_MAX if pristine else None, t_noise=t_noise,
        )  # fmt: skip
    except ValueError:
        return "no_baseline"
    if report.error > tau_acc:
        return "fail"
    if report.runtime_sec is None:
        return "unknown"
    return "pass" if report.runtime_sec <= tau_time else "fail"


def _lookup(report: AttemptReport, keys: Sequence[str]) -> float | None:
    """The first of ``keys`` with a finite number in ``diagnostics`` or its ``solver_info``."""
    diag = report.diagnostics
    info = diag.get("solver_info")
    for source in [diag, info] if isinstance(info, dict) else [diag]:
        for key in keys:
            value = finite_number(source.get(key))
            if value is not None:
                return value
    return None


def _diagnostic(report: AttemptReport, column: str) -> float | None:
    """One diagnostics column; ``work_rate`` falls back to DOFs * time steps / runtime."""
    value = _lookup(report, DIAGNOSTIC_KEYS[column])
    if value is None and column == "work_rate":
        dofs, steps = _lookup(report, DIAGNOSTIC_KEYS["dofs"]), _lookup(report, ["time_steps"])
        runtime = finite_number(report.runtime_sec)
        if dofs is not None and steps is not None and runtime is not None and runtime > 0:
            value = dofs * steps / runtime
    return value


def _stage_row(track: str, label: str, outcomes: Sequence[CaseOutcome]) -> StageRow:
    graded = [o for o in outcomes if not o.infrastructure]
    counts = Counter(o.final.verdict for o in graded)
    ran = len(graded) - counts["F-Gen"] - counts["F-Exec"]
    accurate = counts["PASS"] + counts["F-Time"]
    reasons = Counter(o.final.reason or "unknown" for o in graded if o.final.verdict == "F-Exec")
    fgen = Counter(o.final.reason or "unknown" for o in graded if o.final.verdict == "F-Gen")
    return StageRow(
        track=track,
        series=label,
        graded=len(graded),
        infrastructure=len(outcomes) - len(graded),
        counts={stage: counts[stage] for stage in STAGES},
        fexec_reasons=dict(sorted(reasons.items())),
        pass_rate=Rate(counts["PASS"], len(graded)),
        executability=Rate(ran, len(graded)),
        accuracy=Rate(accurate, ran),
        time=Rate(counts["PASS"], accurate),
        shares={stage: Rate(counts[stage], len(graded)).value for stage in STAGES},
        fgen_reasons=dict(sorted(fgen.items())),
        interrupted=sum(o.interrupted for o in graded),
    )


def _aux_row(track: str, label: str, graded: Sequence[CaseOutcome]) -> AuxRow:
    passed = [o.final for o in graded if o.passed]
    medians: dict[str, float | None] = {
        "error": median_of(r.error for r in passed),
        "runtime_sec": median_of(r.runtime_sec for r in passed),
        "error_over_tau_acc": median_of(
            _ratio(r.error, (r.thresholds or {}).get("tau_acc")) for r in passed
        ),
        "runtime_over_tau_time": median_of(
            _ratio(r.runtime_sec, (r.thresholds or {}).get("tau_time")) for r in passed
        ),
    }
    for key in METRIC_KEYS:
        medians[key] = median_of(r.metrics.get(key) for r in passed)
    return AuxRow(track, label, len(passed), medians)


def _diagnostics_rows(
    track: str, label: str, graded: Sequence[CaseOutcome]
) -> list[DiagnosticsRow]:
    by_type: dict[str, list[AttemptReport]] = defaultdict(list)
    for outcome in graded:
        report = outcome.final
        if report.diagnostics:
            for math_type in report.math_type or ["unknown"]:
                by_type[math_type].append(report)
    rows = []
    for math_type, reports in sorted(by_type.items()):
        medians = {}
        for column in DIAGNOSTIC_KEYS:
            value = median_of(_diagnostic(r, column) for r in reports)
            if value is not None:
                medians[column] = value
        rows.append(DiagnosticsRow(track, label, math_type, len(reports), medians))
    return rows


def _sensitivity_rows(
    track: str, label: str, graded: Sequence[CaseOutcome], config: dict[str, Any]
) -> list[SensitivityRow]:
    rows = []
    for parameter, grid in (("alpha_acc", ALPHA_ACC_GRID), ("alpha_time", ALPHA_TIME_GRID)):
        for alpha in grid:
            results: Counter[str] = Counter()
            for outcome in graded:
                alphas = run_alphas(outcome.final, config)
                alphas[parameter] = alpha
                results[sensitivity_outcome(outcome.final, **alphas)] += 1
            rows.append(
                SensitivityRow(
                    track=track,
                    series=label,
                    parameter=parameter,
                    alpha=alpha,
                    rate=Rate(results["pass"], len(graded)),
                    unknown=results["unknown"],
                    no_baseline=results["no_baseline"],
                )
            )
    return rows


def total_of(values: Sequence[float | int | None]) -> Total:
    """The sum of the known values and how many were unknown (None)."""
    known = [v for v in values if v is not None]
    return Total(sum(known) if known else None, len(values) - len(known))


def cost_per_pass(cost: Total, passed: int) -> float | None:
    """Cost over passed cases; None (unknown) when any cost is unknown or none passed."""
    if cost.value is None or cost.unknown or passed <= 0:
        return None
    return cost.value / passed


def _usage_row(track: str, label: str, outcomes: Sequence[CaseOutcome]) -> UsageRow:
    attempts = [r for o in outcomes for r in o.attempts]
    return UsageRow(
        track=track,
        series=label,
        attempts=len(attempts),
        input_tokens=total_of([r.tokens.input for r in attempts]),
        output_tokens=total_of([r.tokens.output for r in attempts]),
        cost_usd=total_of([r.cost_usd for r in attempts]),
    )


def _run_info(run: Run) -> RunInfo:
    config = run.config
    calibrations, warnings = _calibrations(run)
    models = config.get("models")
    attempts = config.get("attempts")
    return RunInfo(
        run_id=run.run_id,
        path=str(run.path),
        mode=run.mode,
        provider=str(config["provider"]) if config.get("provider") is not None else None,
        tracks=sorted({r.track for r in run.reports}),
        models=[str(m) for m in models] if isinstance(models, list) else [],
        attempts=attempts if isinstance(attempts, int) else None,
        created=str(run.manifest["created"]) if run.manifest.get("created") else None,
        reports=len(run.reports),
        unreadable=list(run.unreadable),
        grading=sorted({_grading(r) for r in run.reports if r.thresholds}),
        calibrations=calibrations,
        warnings=warnings,
    )


def _calibrations(run: Run) -> tuple[list[CalibrationInfo], list[str]]:
    """Where the graded attempts' thresholds were calibrated, and a warning for every
    calibration on another machine than the run's (``run.json`` ``machine``)."""
    machine = run.manifest.get("machine")
    grading = machine if isinstance(machine, dict) else None
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for report in run.reports:
        if report.thresholds and report.calibrated_on is not None:
            groups[json.dumps(report.calibrated_on, sort_keys=True, default=str)].append(
                report.calibrated_on
            )
    infos: list[CalibrationInfo] = []
    warnings: list[str] = []
    for key in sorted(groups):
        where = groups[key][0]
        backend = calibration_backend(where)
        differences = fingerprint_differences(where, grading) if grading is not None else {}
        same = None if grading is None else not differences
        cores = where.get("cores")
        infos.append(
            CalibrationInfo(
                backend=backend,
                cpu=str(where["cpu"]) if where.get("cpu") is not None else None,
                cores=cores if isinstance(cores, int) and not isinstance(cores, bool) else None,
                attempts=len(groups[key]),
                same_machine=same,
                differences={k: list(v) for k, v in differences.items()},
                calibration=(
                    str(where["calibration"]) if isinstance(where.get("calibration"), str) else None
                ),
            )
        )
        if same is False:
            diff = "; ".join(f"{k}: {a!r} vs {b!r}" for k, (a, b) in differences.items())
            warnings.append(
                f"run {run.run_id}: {len(groups[key])} attempt(s) graded with thresholds "
                f"calibrated on another machine ({backend}; calibration vs grading "
                f"machine: {diff}); runtimes are not comparable, recalibrate with "
                "`pdeagent calibrate`"
            )
    if grading is None and groups:
        warnings.append(
            f"run {run.run_id}: run.json records no grading machine; cannot tell whether "
            "the thresholds were calibrated on it"
        )
    return infos, warnings


def _grading(report: AttemptReport) -> str:
    """``protocol P, R rule, baseline by B`` of one graded attempt: the timing protocol,
    the time rule and the rule that chose the baseline (reports written before protocols
    existed were graded with protocol 1 and the paper's rule; before the baseline rule was
    recorded it is left out)."""
    th = report.thresholds or {}
    protocol = report.protocol or th.get("protocol") or 1
    text = f"protocol {protocol}, {th.get('time_rule') or 'paper'} rule"
    baseline = th.get("rule")
    return f"{text}, baseline by {baseline}" if isinstance(baseline, str) and baseline else text


def summarize(data: RunData) -> Summary:
    """Every table of the report, computed from the runs' saved records."""
    from pdeagent.runs.report_agent import agent_tables  # it imports this module too
    from pdeagent.runs.report_attempts import pass_rate_by_attempt  # it imports this module

    outcomes = case_outcomes(data)
    grouped: dict[tuple[int, str, str], list[CaseOutcome]] = defaultdict(list)
    for outcome in outcomes:
        grouped[(outcome.run, outcome.track, outcome.model)].append(outcome)
    keys = sorted(grouped)
    labels = _series_labels(keys, data.runs)
    with_feedback = len(data.runs) > 1 or any(run.mode == "feedback" for run in data.runs)

    series, pass_rates, stages, auxiliary = [], [], [], []
    diagnostics, sensitivity, usage, feedback = [], [], [], []
    for key, label in zip(keys, labels, strict=True):
        run_index, track, model = key
        run = data.runs[run_index]
        group = grouped[key]
        graded = [o for o in group if not o.infrastructure]
        series.append(Series(label, track, model, run.run_id, run.mode, group[0].final.provider))

        families: dict[str, list[CaseOutcome]] = defaultdict(list)
        for outcome in graded:
            families[outcome.final.family or "unknown"].append(outcome)
        families[ALL_FAMILIES] = graded
        for family in sorted(families, key=family_order):
            members = families[family]
            rate = Rate(sum(o.passed for o in members), len(members))
            pass_rates.append(FamilyRate(track, label, family, rate))

        stage = _stage_row(track, label, group)
        stages.append(stage)
        auxiliary.append(_aux_row(track, label, graded))
        diagnostics.extend(_diagnostics_rows(track, label, graded))
        sensitivity.extend(_sensitivity_rows(track, label, graded, run.config))
        usage.append(_usage_row(track, label, group))
        if with_feedback:
            first_passed = sum(1 for o in graded if o.first is not None and o.first.passed)
            max_attempts = run.config.get("attempts")
            feedback.append(
                FeedbackRow(
                    track=track,
                    series=label,
                    mode=run.mode,
                    max_attempts=max_attempts if isinstance(max_attempts, int) else None,
                    graded=len(graded),
                    pass_at_first=Rate(first_passed, len(graded)),
                    final=stage.pass_rate,
                )
            )
    agent, agent_cases = agent_tables(data.runs, keys, labels, grouped)
    return Summary(
        runs=[_run_info(run) for run in data.runs],
        series=series,
        pass_rates=pass_rates,
        stages=stages,
        auxiliary=auxiliary,
        diagnostics=diagnostics,
        sensitivity=sensitivity,
        usage=usage,
        feedback=feedback,
        pass_rate_by_attempt=pass_rate_by_attempt(data.runs, keys, labels, grouped),
        agent=agent,
        agent_cases=agent_cases,
    )
