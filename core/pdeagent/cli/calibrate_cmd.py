"""``pdeagent calibrate``: measure e_base / t_base of the track's baseline on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from pdeagent.cases.selection import SelectionError, select_cases, stratified_sample
from pdeagent.cli.cases_cmd import load
from pdeagent.cli.common import (
    CASES_FILE_OPT,
    SANDBOX_OPT,
    CLIError,
    cli_errors,
    console,
    default_dataset,
    host,
    print_json,
    split_ids,
)
from pdeagent.sandbox.select import get_sandbox

if TYPE_CHECKING:
    from pdeagent.cases.model import Case
    from pdeagent.evaluation.calibration import LocalCalibration
    from pdeagent.plugins import PluginHost
    from pdeagent.sandbox.base import Sandbox
    from pdeagent.stages import Track
from pdeagent.scratch import scratch_dir


def calibrate(
    track: str = typer.Option(..., "--track", "-t", help="Track name."),
    case: list[str] = typer.Option(
        None, "--case", "-c", help="Case ids (repeatable, or comma-separated); default all."
    ),
    family: str | None = typer.Option(None, help="Only this equation family."),
    cases_file: Path | None = CASES_FILE_OPT,
    force: bool = typer.Option(False, "--force", help="Re-measure cases already calibrated."),
    json_out: bool = typer.Option(False, "--json", help="Print the thresholds as JSON."),
    speed_sample: int | None = typer.Option(
        None,
        "--speed-sample",
        min=1,
        help="Instead of every case: re-time N stratified cases' shipped baselines here and "
        "move every case's shipped time thresholds to this machine by the measured speed "
        "ratio (rule speed-sample-1).",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the speed sample's draw."),
    sandbox_name: str | None = SANDBOX_OPT,
) -> None:
    """Calibrate thresholds on this machine: run the track's baseline on each case through
    the sandbox and the timing protocol, store e_base, t_base and the machine fingerprint.
    `pdeagent evaluate` then uses these local thresholds (and says so). Cases come from the
    benchmark dataset unless --cases-file names another. A baseline that fails ends the
    command with one error line (exit 2); the cases measured before it stay stored.

    With --speed-sample N, N cases stand for all: their shipped baselines are re-timed
    here, and every case's shipped t_base and t_null are scaled by the median ratio of
    solve times (a case calibrated on its own keeps its own thresholds; the report names
    the calibration that graded it).

    Example: pdeagent calibrate --track dolfinx --case poisson_star_smooth_mms_008
    Example: pdeagent calibrate --track dolfinx --speed-sample 20
    """
    from pdeagent.evaluation.calibration import (
        CalibrationError,
        LocalCalibration,
        calibrate_case,
        store_path,
    )
    from pdeagent.evaluation.null import NullProgramError, NullTiming, measure_null

    with cli_errors():
        h = host()
        trk = h.get_track(track)
        path = (cases_file or default_dataset()).resolve()
        wanted = split_ids(case)
        try:
            cases = select_cases(
                load(path), trk.name, ids=wanted or None, families=[family] if family else None
            )
        except SelectionError as exc:
            raise CLIError(str(exc)) from None
        store = LocalCalibration(store_path(path, trk.name))
        sandbox = get_sandbox(sandbox_name)
        if speed_sample is not None:
            if wanted:
                raise CLIError("--speed-sample draws its own cases: leave out --case")
            _speed_sample(h, trk, cases, speed_sample, seed, store, sandbox, path, json_out)
            return
        done = []
        null: NullTiming | None = None  # the track's null program, measured once per command
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=True, disable=json_out) as bar:
            task = bar.add_task(f"calibrating {trk.name}", total=len(cases))
            for c in cases:
                if force or store.get(c.id) is None:
                    with scratch_dir("pdeagent-cal-") as d:
                        try:
                            if null is None:
                                null = measure_null(
                                    h, trk, c, sandbox=sandbox, workroot=Path(d) / "null",
                                    dataset_dir=path.parent,
                                )  # fmt: skip
                            measured = calibrate_case(
                                h,
                                trk,
                                c,
                                sandbox=sandbox,
                                workroot=Path(d) / "w",
                                dataset_dir=path.parent,
                                null=null,
                            )
                        except (CalibrationError, NullProgramError) as exc:
                            # The message ends with the program's stderr: its first line
                            # says which case, which program, which stage and why.
                            first = str(exc).strip().splitlines()[0]
                            raise CLIError(f"calibration stopped: {first}") from None
                        store.put(c.id, measured)
                done.append((c.id, store.get(c.id)))
                bar.advance(task)
        if json_out:
            print_json(
                {
                    cid: {
                        "e_base": th.e_base,
                        "t_base": th.t_base,
                        "tau_acc": th.tau_acc,
                        "tau_time": th.tau_time,
                        "t_null": th.t_null,
                        "t_noise": th.t_noise,
                        "protocol": th.protocol,
                    }
                    for cid, th in done
                }
            )
            return
        table = Table(title=f"Local calibration ({store.path})")
        headers = ("case", "e_base", "t_base [s]", "t_null [s]", "t_noise [s]", "tau_acc",
                   "tau_time [s]")  # fmt: skip
        for col in headers:
            table.add_column(col)
        for cid, th in done:
            table.add_row(
                cid,
                f"{th.e_base:.3e}",
                f"{th.t_base:.3f}",
                "-" if th.t_null is None else f"{th.t_null:.3f}",
                "-" if th.t_noise is None else f"{th.t_noise:.3f}",
                f"{th.tau_acc:.3e}",
                f"{th.tau_time:.3f}",
            )
        console.print(table)


def _speed_sample(
    h: PluginHost,
    trk: Track,
    cases: list[Case],
    n: int,
    seed: int,
    store: LocalCalibration,
    sandbox: Sandbox,
    path: Path,
    json_out: bool,
) -> None:
    """``pdeagent calibrate --speed-sample N``: measure, store, show."""
    from pdeagent.cases.model import converter
    from pdeagent.evaluation.calibration import CalibrationError, measure_speed_sample
    from pdeagent.evaluation.null import NullProgramError
    from pdeagent.evaluation.speed_sample import SpeedSampleError, eligible_cases

    pool = eligible_cases(cases, trk.name)
    if not pool:
        raise CLIError(
            f"no case of track {trk.name!r} in {path.name} carries thresholds a speed sample "
            "can move (pristine protocol, t_null recorded): calibrate per case instead"
        )
    if n > len(pool):
        raise CLIError(f"--speed-sample {n}: only {len(pool)} cases can be sampled")
    chosen = stratified_sample(pool, n, seed)  # families take turns, geometries spread
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=console, transient=True, disable=json_out) as bar:
        task = bar.add_task(f"speed sample {trk.name}", total=len(chosen))

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, completed=done, description=stage)

        with scratch_dir("pdeagent-cal-") as d:
            try:
                sample = measure_speed_sample(
                    h, trk, chosen, sandbox=sandbox, workroot=Path(d), dataset_dir=path.parent,
                    seed=seed, progress=progress,
                )  # fmt: skip
            except (CalibrationError, NullProgramError, SpeedSampleError) as exc:
                first = str(exc).strip().splitlines()[0]
                raise CLIError(f"speed sample stopped: {first}") from None
    store.put_speed_sample(sample)
    if json_out:
        print_json(converter.unstructure(sample))
        return
    table = Table(title=f"Speed sample ({store.path})")
    for col in ("case", "shipped solve [s]", "solve here [s]", "ratio"):
        table.add_column(col)
    for c in sample.cases:
        table.add_row(
            c.case,
            f"{c.t_base - c.t_null:.3f}",
            f"{c.t_base_here - sample.t_null:.3f}",
            "- (too short)" if c.ratio is None else f"{c.ratio:.3f}",
        )
    console.print(table)
    console.print(
        f"{sample.label()}; t_null here {sample.t_null:.3f} s. Every case of {trk.name} without "
        "its own local calibration is now graded with its shipped thresholds moved here."
    )
