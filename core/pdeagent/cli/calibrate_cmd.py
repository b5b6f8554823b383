"""``pdeagent calibrate``: measure e_base / t_base of the track's baseline on this machine."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

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
    sandbox_name: str | None = SANDBOX_OPT,
) -> None:
    """Calibrate thresholds on this machine: run the track's baseline on each case through
    the sandbox and the timing protocol, store e_base, t_base and the machine fingerprint.
    `pdeagent evaluate` then uses these local thresholds (and says so). Cases come from the
    benchmark dataset unless --cases-file names another. A baseline that fails ends the
    command with one error line (exit 2); the cases measured before it stay stored.

    Example: pdeagent calibrate --track dolfinx --case poisson_star_smooth_mms_008
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
        cases = [
            c
            for c in load(path)
            if trk.name in c.supported_libraries
            and (not wanted or c.id in wanted)
            and (family is None or c.family == family)
        ]
        missing = [i for i in wanted if i not in {c.id for c in cases}]
        if missing:
            raise CLIError(f"not in the dataset for track {trk.name!r}: {', '.join(missing)}")
        if not cases:
            raise CLIError("no case to calibrate")
        store = LocalCalibration(store_path(path, trk.name))
        sandbox = get_sandbox(sandbox_name)
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
