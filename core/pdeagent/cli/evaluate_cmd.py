"""``pdeagent evaluate``: grade one solver file for one case and print the staged verdict."""

from __future__ import annotations

import math
import time
from contextlib import ExitStack
from pathlib import Path

import typer
from rich.table import Table

from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import (
    CASES_FILE_OPT,
    SANDBOX_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    err_console,
    host,
    print_json,
    user_file,
)
from pdeagent.sandbox.select import get_sandbox
from pdeagent.scratch import scratch_dir

MAX_SOURCE_BYTES = 1024 * 1024


def evaluate(
    solver_file: Path = typer.Argument(..., help="The solver source file to grade."),
    track: str = typer.Option(..., "--track", "-t", help="Track name."),
    case: str = typer.Option(..., "--case", "-c", help="Case id."),
    cases_file: Path | None = CASES_FILE_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    alpha_acc: float | None = typer.Option(None, help="Override alpha_acc (default 10)."),
    alpha_time: float | None = typer.Option(None, help="Override alpha_time (default 3)."),
    tau_min: float | None = typer.Option(None, help="Override tau_min (default 1e-6)."),
    tau_acc: float | None = typer.Option(None, help="Explicit accuracy threshold."),
    tau_time: float | None = typer.Option(None, help="Explicit time threshold in seconds."),
    time_rule: str | None = typer.Option(
        None,
        "--time-rule",
        help="solve: tau_time = t_null + alpha_time*(t_base - t_null); paper: alpha_time*t_base "
        "(the published rule). Default: solve where the thresholds carry t_null.",
    ),
    explain_crashes: bool = typer.Option(
        False, help="After a crash, let the track explain it (deal.II: a debug rebuild)."
    ),
    repeats: int | None = typer.Option(None, help="Timed repeats (default: the case's, 3)."),
    timeout: float | None = typer.Option(None, help="Wall-clock limit per execution, seconds."),
    workdir: Path | None = typer.Option(
        None,
        help="Keep build and execution directories here (must be new or empty); without "
        "it they are removed when the evaluation ends, however it ends.",
    ),
    sandbox_name: str | None = SANDBOX_OPT,
) -> None:
    """Grade SOLVER_FILE for one case: compile/import, run in the sandbox, accuracy, time.
    The stages are shown on stderr as they run (not under --json). Cases come from the
    benchmark dataset unless --cases-file names another.

    Exit code 0 on PASS, 1 on any failing verdict, 2 on bad input or harness errors.

    Example: pdeagent evaluate --track dolfinx --case poisson_star_smooth_mms_008 solver.py
    """
    from pdeagent.cases.io import find_case
    from pdeagent.evaluation.calibration import LocalCalibration, store_path
    from pdeagent.evaluation.pipeline import GradingPolicy, evaluate_source, resolve_thresholds

    with cli_errors():
        from pdeagent.scoring.verdict import TIME_RULES

        if time_rule is not None and time_rule not in TIME_RULES:
            raise CLIError(f"--time-rule must be one of {', '.join(TIME_RULES)}")
        _check_numbers(
            positive={"--alpha-acc": alpha_acc, "--alpha-time": alpha_time,
                      "--tau-acc": tau_acc, "--tau-time": tau_time, "--timeout": timeout},
            nonnegative={"--tau-min": tau_min},
        )  # fmt: skip
        if repeats is not None and repeats < 1:
            raise CLIError(f"--repeats must be >= 1, got {repeats}")
        if not solver_file.is_file():
            raise CLIError(f"solver file not found or not a file: {solver_file}")
        with user_file(solver_file, "solver file"):
            if solver_file.stat().st_size > MAX_SOURCE_BYTES:
                raise CLIError(
                    f"solver file is larger than {MAX_SOURCE_BYTES} bytes: {solver_file}"
                )
            source = solver_file.read_text(encoding="utf-8")
        h = host()
        trk = h.get_track(track)
        cases_path = (cases_file or default_dataset()).resolve()
        the_case = find_case(load(cases_path), case)
        if trk.name not in the_case.supported_libraries:
            raise CLIError(
                f"case {the_case.id} is not offered on track {trk.name!r} "
                f"(supported: {', '.join(the_case.supported_libraries)}); "
                f"`pdeagent cases add-track -t {trk.name}` offers a track the cases it can solve"
            )
        policy = GradingPolicy(
            alpha_acc=alpha_acc,
            alpha_time=alpha_time,
            tau_min=tau_min,
            timed_repeats=repeats,
            timeout_sec=timeout,
            tau_acc=tau_acc,
            tau_time=tau_time,
            time_rule=time_rule,
            explain_crashes=explain_crashes,
        )
        local = LocalCalibration(store_path(cases_path, trk.name))
        thresholds = resolve_thresholds(
            the_case, trk.name, policy, calibration=local.for_case(the_case, trk.name)
        )
        sandbox = get_sandbox(sandbox_name)
        dataset_dir = cases_path.parent
        with ExitStack() as stack:
            root = workdir or stack.enter_context(scratch_dir("pdeagent-eval-"))
            stages = stack.enter_context(_Stages(enabled=not json_out))
            report = evaluate_source(
                h,
                trk,
                the_case,
                source,
                sandbox=sandbox,
                workroot=root,
                thresholds=thresholds,
                policy=policy,
                dataset_dir=dataset_dir,
                progress=stages.start,
            )
        if json_out:
            print_json(report.to_dict())
        else:
            _print_report(report, workdir)
        if report.verdict != "PASS":
            raise typer.Exit(1)


def _check_numbers(
    *, positive: dict[str, float | None], nonnegative: dict[str, float | None]
) -> None:
    """Grading options given on the command line: finite, and > 0 (or >= 0)."""
    for strict, group in ((True, positive), (False, nonnegative)):
        for flag, value in group.items():
            if value is None:
                continue
            if not math.isfinite(value) or value < 0 or (strict and value == 0):
                need = "> 0" if strict else ">= 0"
                raise CLIError(f"{flag} must be finite and {need}, got {value}")


class _Stages:
    """The pipeline's stages on stderr as they happen: a spinner on the running stage,
    a line with its duration once it is over."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.current: str | None = None
        self.since = 0.0
        self.status = err_console.status("", spinner="dots") if enabled else None

    def __enter__(self) -> _Stages:
        return self

    def start(self, stage: str) -> None:
        if not self.enabled:
            return
        self._close()
        self.current, self.since = stage, time.monotonic()
        assert self.status is not None
        self.status.update(f"{stage} ...")
        self.status.start()

    def _close(self) -> None:
        if self.current is None:
            return
        assert self.status is not None
        self.status.stop()
        took = time.monotonic() - self.since
        err_console.print(f"  {self.current} [dim]{took:.1f} s[/]", highlight=False)
        self.current = None

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._close()


def _fmt(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def _print_report(report, workdir: Path | None) -> None:
    colour = "green" if report.verdict == "PASS" else "red"
    reason = f" ({report.reason})" if report.reason else ""
    console.print(
        f"[bold {colour}]{report.verdict}{reason}[/]  case {report.case_id} on {report.track}"
    )
    console.print(report.message, highlight=False)
    table = Table(show_header=False)
    table.add_row("relative L2 error", _fmt(report.error))
    if report.thresholds:
        table.add_row("accuracy threshold", _fmt(report.thresholds["tau_acc"]))
        table.add_row("time threshold", _fmt(report.thresholds["tau_time"], " s"))
        table.add_row("thresholds from", str(report.thresholds["source"]))
    table.add_row("runtime (median)", _fmt(report.runtime_sec, " s"))
    table.add_row("timed samples", ", ".join(f"{s:.3f}" for s in report.runtime_samples) or "-")
    table.add_row("accuracy run wall", _fmt(report.accuracy_run_wall_sec, " s"))
    table.add_row("compile time", _fmt(report.compile_time_sec, " s"))
    for key in ("rmse", "mae", "r_squared"):
        if key in report.metrics:
            table.add_row(key, _fmt(report.metrics[key]))
    table.add_row("sandbox", str(report.execution.get("backend", "-")))
    table.add_row("work directory", str(workdir) if workdir else "removed (--workdir DIR keeps it)")
    console.print(table)
    if report.verdict == "F-Exec" and report.stderr_excerpt:
        console.print("[bold]stderr (last lines):[/]")
        console.print(report.stderr_excerpt[-1500:], highlight=False, markup=False)
